/*
 * Connection tracking: the cap on open connections and the deadline for
 * receiving a request. See conns.h for how it works with libevent 2.1.
 */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "collector/http/conns.h"
#include "collector/http/evhooks.h"
#include "collector/http/tls.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/xmalloc.h"

struct conn {
	struct bufferevent	*bev;
	int64_t			 since;		/* waiting for a request since */
	int			 busy;		/* a request is being served */
	int			 cut;		/* cut off by the read timeout */
	struct evbuffer		*body;		/* a body being received, or */
	uint8_t			*buf;		/* one of known length, whole */
	size_t			 cap;		/* buf's size */
	uint64_t		 got;		/* its bytes so far */
	uint64_t		 held;		/* bytes counted for it, until
						   the reply */
	TAILQ_ENTRY(conn)	 entry;
};

#define CONNS_FD_PAUSE_MS	250	/* no accepts after an fd-limit error */

struct conns;
/*
 * Every tracker, so the listener's error callback (which libevent hands
 * evhttp's argument, not ours) can find the one whose listener failed.
 * Loop thread only.
 */
static LIST_HEAD(, conns) conns_all = LIST_HEAD_INITIALIZER(conns_all);

struct conns {
	LIST_ENTRY(conns)	 all;		/* conns_all */
	TAILQ_HEAD(, conn)	 list;
	int			 count;
	int			 paused;	/* listener disabled at the cap */
	struct event		*timer;
	struct evhttp_bound_socket *sock;	/* NULL: not accepting */
	int64_t			 max;		/* --max-connections */
	int64_t			 read_timeout;	/* --read-timeout, s */
	int64_t			 fd_pause_until; /* ms: accept() hit the fd limit */
	uint64_t		 fd_errors;	/* accept() failures, for the log */
	struct conn		*last;		/* the last one found */
	uint64_t		 body_max;	/* --max-body-memory, 0: none */
	uint64_t		 body_bytes;	/* held by bodies in flight */
	struct tls		*tls;		/* NULL: plain HTTP */
};

/* Monotonic ms. */
static int64_t
conns_now_ms(void)
{
	return clock_mono_ns() / 1000000;
}

/* Enables or disables accepting, following the count. */
static void
conns_update_listener(struct conns *c)
{
	struct evconnlistener *l;

	if (c->sock == NULL)
		return;
	l = evhttp_bound_socket_get_listener(c->sock);
	if (c->fd_pause_until != 0) {
		if (conns_now_ms() < c->fd_pause_until)
			return;
		c->fd_pause_until = 0;
		if (!c->paused)
			evconnlistener_enable(l);
		if (c->count < c->max / 2 && c->fd_errors > 0) {
			log_info("conns: accepting again after %llu failed "
			    "accepts", (unsigned long long)c->fd_errors);
			c->fd_errors = 0;
		}
	}
	if (!c->paused && c->count >= c->max) {
		evconnlistener_disable(l);
		c->paused = 1;
		log_warn("%s: %d connections open (--max-connections): not "
		    "accepting until one closes", __func__, c->count);
	} else if (c->paused && c->count < c->max) {
		evconnlistener_enable(l);
		c->paused = 0;
	}
}

/* evhttp asks for a bufferevent for a new connection. */
static struct bufferevent *
conns_bev_cb(struct event_base *base, void *arg)
{
	struct conns *c = arg;
	struct conn *conn = xcalloc(1, sizeof *conn);

	if (c->tls != NULL)
		conn->bev = tls_bev_new(c->tls, base);
	else
		conn->bev = bufferevent_socket_new(base, -1,
		    BEV_OPT_CLOSE_ON_FREE);
	/* NULL would make evhttp serve plain HTTP on a TLS port. */
	if (conn->bev == NULL) {
		log_error("%s: cannot make a connection's bufferevent",
		    __func__);
		abort();
	}
	bufferevent_incref(conn->bev);	/* ours, dropped in conns_sweep */
	conn->since = conns_now_ms();
	TAILQ_INSERT_TAIL(&c->list, conn, entry);
	c->count++;
	conns_update_listener(c);
	return conn->bev;
}

/* Finds the tracked connection of req. */
static struct conn *
conns_find(struct conns *c, struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev;
	struct conn *conn;

	if (c == NULL || evcon == NULL ||
	    (bev = evhttp_connection_get_bufferevent(evcon)) == NULL)
		return NULL;
	if (c->last != NULL && c->last->bev == bev)	/* a body's pieces */
		return c->last;
	TAILQ_FOREACH(conn, &c->list, entry) {
		if (conn->bev == bev)
			return c->last = conn;
	}
	return NULL;
}

/* Gives back the bytes conn's body held. */
static void
conns_body_release(struct conns *c, struct conn *conn)
{
	if (conn->body != NULL) {
		evbuffer_free(conn->body);
		conn->body = NULL;
	}
	free(conn->buf);
	conn->buf = NULL;
	conn->cap = 0;
	c->body_bytes -= conn->held;
	conn->held = 0;
	conn->got = 0;
}

/* A request arrived: its connection is no longer waiting. */
void
conns_request_started(struct conns *c, struct evhttp_request *req)
{
	struct conn *conn = conns_find(c, req);

	if (conn != NULL)
		conn->busy = 1;
}

/* A reply went out: the connection waits for its next request. */
void
conns_request_done(struct conns *c, struct evhttp_request *req)
{
	struct conn *conn = conns_find(c, req);

	if (conn != NULL) {
		conn->busy = 0;
		conn->since = conns_now_ms();
		conns_body_release(c, conn);
	}
}

/* Would n more bytes of bodies pass the limit? */
int
conns_body_full(const struct conns *c, uint64_t n)
{
	return c != NULL && c->body_max != 0 && c->body_bytes + n > c->body_max;
}

/*
 * Counts n more bytes for req's body (a chunked body's whole allowance,
 * before libevent buffers a chunk). Returns 0, or -1 past the limit.
 */
int
conns_body_reserve(struct conns *c, struct evhttp_request *req, uint64_t n)
{
	struct conn *conn = conns_find(c, req);

	if (conn == NULL || conns_body_full(c, n))
		return -1;
	conn->held += n;
	c->body_bytes += n;
	return 0;
}

/*
 * A piece of req's body arrived in piece; total is the body's length when
 * known (Content-Length), else 0. Moves the piece to the connection's body
 * if the bodies in flight stay within the limit. A body of known length is
 * gathered into one buffer of that size, so the handler's contiguous view
 * costs no second copy. Returns 0, or -1 (the piece is dropped and the
 * body's bytes given back) past the limit.
 */
int
conns_body_add(struct conns *c, struct evhttp_request *req,
    struct evbuffer *piece, size_t total)
{
	struct conn *conn = conns_find(c, req);
	size_t n = evbuffer_get_length(piece);
	uint64_t need;

	if (conn == NULL) {
		evbuffer_drain(piece, n);
		return -1;
	}
	if (conn->got + n > conn->held) {
		need = conn->got + n - conn->held;
		if (conns_body_full(c, need)) {
			evbuffer_drain(piece, n);
			conns_body_release(c, conn);
			return -1;
		}
		conn->held += need;
		c->body_bytes += need;
	}
	if (conn->got == 0 && total > 0 && conn->body == NULL) {
		conn->buf = xmalloc(total);
		conn->cap = total;
	}
	if (conn->buf != NULL && conn->got + n <= conn->cap) {
		evbuffer_remove(piece, conn->buf + conn->got, n);
	} else {
		if (conn->body == NULL)
			conn->body = evbuffer_new();
		if (conn->buf != NULL) {	/* longer than announced */
			evbuffer_add(conn->body, conn->buf, conn->got);
			free(conn->buf);
			conn->buf = NULL;
		}
		evbuffer_add_buffer(conn->body, piece);
	}
	conn->got += n;
	return 0;
}

/* Frees a gathered body once its evbuffer lets go of it. */
static void
conns_body_free_cb(const void *data, size_t len, void *arg)
{
	free((void *)data);
}

/* Hands req's body received so far over to into (its bytes stay counted
 * until the reply). */
void
conns_body_take(struct conns *c, struct evhttp_request *req,
    struct evbuffer *into)
{
	struct conn *conn = conns_find(c, req);

	if (conn == NULL)
		return;
	if (conn->buf != NULL) {
		evbuffer_add_reference(into, conn->buf, conn->got,
		    conns_body_free_cb, NULL);
		conn->buf = NULL;
		conn->cap = 0;
	} else if (conn->body != NULL)
		evbuffer_add_buffer(into, conn->body);
}

/* Sets the limit on bytes held by bodies in flight (0: none). */
void
conns_set_body_max(struct conns *c, uint64_t max)
{
	c->body_max = max;
}

/* Bytes held by bodies in flight. */
uint64_t
conns_body_bytes(const struct conns *c)
{
	return c != NULL ? c->body_bytes : 0;
}

/* True while evhttp still owns conn (it clears the callbacks on free). */
static int
conns_alive(const struct conn *conn)
{
	bufferevent_data_cb rcb, wcb;
	bufferevent_event_cb ecb;

	bufferevent_getcb(conn->bev, &rcb, &wcb, &ecb, NULL);
	return rcb != NULL || wcb != NULL || ecb != NULL;
}

/* Loop timer: reaps freed connections and cuts off slow ones. */
static void
conns_sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conns *c = arg;
	struct conn *conn, *next;
	int64_t now = conns_now_ms(), limit = c->read_timeout * 1000;
	evutil_socket_t sfd;

	for (conn = TAILQ_FIRST(&c->list); conn != NULL; conn = next) {
		next = TAILQ_NEXT(conn, entry);
		if (!conns_alive(conn) && now - conn->since > 50) {
			/* evhttp has freed the connection */
			/* evhttp's own read timeout may have closed it */
			if (c->tls != NULL)
				tls_bev_done(c->tls, conn->bev, conn->cut ||
				    (!conn->busy && now - conn->since >= limit));
			conns_body_release(c, conn);
			if (c->last == conn)
				c->last = NULL;
			TAILQ_REMOVE(&c->list, conn, entry);
			evhooks_unwatch_input(bufferevent_get_input(conn->bev));
			bufferevent_decref(conn->bev);
			free(conn);
			c->count--;
			continue;
		}
		if (evbuffer_get_length(bufferevent_get_output(conn->bev)) > 0) {
			/* A reply is still being written: the wait for the
			 * next request starts when it is out (a stalled
			 * reader is libevent's write timeout's to cut). */
			conn->since = now;
			continue;
		}
		if (!conn->busy && now - conn->since > limit &&
		    (sfd = bufferevent_getfd(conn->bev)) >= 0) {
			log_info("%s: no complete request in %lld s: closing "
			    "connection", __func__, (long long)c->read_timeout);
			shutdown(sfd, SHUT_RDWR);
			conn->busy = 1;	/* once */
			conn->cut = 1;
		}
	}
	conns_update_listener(c);
}

/* Installs the bufferevent callback and the sweep timer. */
struct conns *
conns_new(struct event_base *base, struct evhttp *http, int64_t max,
    int64_t read_timeout)
{
	struct conns *c = xcalloc(1, sizeof *c);
	struct timeval tv = { 0, 100000 };

	TAILQ_INIT(&c->list);
	LIST_INSERT_HEAD(&conns_all, c, all);
	c->max = max;
	c->read_timeout = read_timeout;
	evhttp_set_bevcb(http, conns_bev_cb, c);
	c->timer = event_new(base, -1, EV_PERSIST, conns_sweep_cb, c);
	event_add(c->timer, &tv);
	return c;
}

/*
 * accept() failed (libevent's listener calls this instead of logging each
 * failure). Out of file descriptors, the pending connection stays in the
 * backlog and accept() would fail again at once: stop accepting for a
 * moment (the sweep timer resumes) and log once per episode, instead of
 * spinning a core and writing a line per attempt.
 */
static void
conns_accept_error_cb(struct evconnlistener *l, void *arg)
{
	struct conns *c;
	int err = EVUTIL_SOCKET_ERROR();

	LIST_FOREACH(c, &conns_all, all) {
		if (c->sock != NULL &&
		    evhttp_bound_socket_get_listener(c->sock) == l)
			break;
	}
	if (c == NULL) {
		evconnlistener_disable(l);	/* not ours: never spin */
		return;
	}
	if (c->fd_errors++ == 0)
		log_warn("conns: accept: %s (%d connections open): pausing "
		    "accepts; raise the fd limit (ulimit -n) or lower "
		    "--max-connections", evutil_socket_error_to_string(err),
		    c->count);
	evconnlistener_disable(l);
	c->fd_pause_until = conns_now_ms() + CONNS_FD_PAUSE_MS;
}

/* Serves TLS with t on connections accepted from now on (NULL: plain). */
void
conns_set_tls(struct conns *c, struct tls *t)
{
	c->tls = t;
}

/* The listener to pause at the cap (NULL once accepting has stopped). */
void
conns_set_listener(struct conns *c, struct evhttp_bound_socket *sock)
{
	c->sock = sock;
	c->paused = 0;
	c->fd_pause_until = 0;
	if (sock != NULL)
		evconnlistener_set_error_cb(
		    evhttp_bound_socket_get_listener(sock),
		    conns_accept_error_cb);
	conns_update_listener(c);
}

/* Drops our references; evhttp_free has freed the connections. */
void
conns_free(struct conns *c)
{
	struct conn *conn;

	if (c == NULL)
		return;
	while ((conn = TAILQ_FIRST(&c->list)) != NULL) {
		conns_body_release(c, conn);
		TAILQ_REMOVE(&c->list, conn, entry);
		evhooks_unwatch_input(bufferevent_get_input(conn->bev));
		bufferevent_decref(conn->bev);
		free(conn);
	}
	event_free(c->timer);
	LIST_REMOVE(c, all);
	free(c);
}

/*
 * Connections with reply bytes not yet written to the socket. Counted from
 * the connections themselves rather than per reply: libevent 2.1 frees a
 * request whose write fails (a client that resets mid-download) without
 * calling its completion callback, so a count kept per reply would leak.
 */
int
conns_unsent(const struct conns *c)
{
	const struct conn *conn;
	int n = 0;

	if (c == NULL)
		return 0;
	TAILQ_FOREACH(conn, &c->list, entry) {
		if (conns_alive(conn) &&
		    evbuffer_get_length(bufferevent_get_output(conn->bev)) > 0)
			n++;
	}
	return n;
}

/* The peer has shut its side down, or the socket failed (see conns.h). */
int
conns_fd_gone(int fd)
{
	struct pollfd p = { fd, POLLRDHUP, 0 };

	if (poll(&p, 1, 0) < 0)
		return 0;
	return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

/* Open connections. */
int
conns_count(const struct conns *c)
{
	return c != NULL ? c->count : 0;
}
