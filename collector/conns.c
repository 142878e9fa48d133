/*
 * Connection tracking: the cap on open connections and the deadline for
 * receiving a request. See conns.h for how it works with libevent 2.1.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <time.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "collector/conns.h"
#include "collector/server.h"
#include "common/log.h"
#include "common/xmalloc.h"

struct conn {
	struct bufferevent	*bev;
	int64_t			 since;		/* waiting for a request since */
	int			 busy;		/* a request is being served */
	TAILQ_ENTRY(conn)	 entry;
};

struct conns {
	TAILQ_HEAD(, conn)	 list;
	int			 count;
	int			 paused;	/* listener disabled at the cap */
	struct event		*timer;
};

/* Monotonic ms. */
static int64_t
conns_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Enables or disables accepting, following the count. */
static void
conns_update_listener(struct server *srv)
{
	struct conns *c = srv->conns;
	struct evconnlistener *l;

	if (srv->sock == NULL)
		return;
	l = evhttp_bound_socket_get_listener(srv->sock);
	if (!c->paused && c->count >= srv->cfg->max_connections) {
		evconnlistener_disable(l);
		c->paused = 1;
		log_warn("%s: %d connections open (--max-connections): not "
		    "accepting until one closes", __func__, c->count);
	} else if (c->paused && c->count < srv->cfg->max_connections) {
		evconnlistener_enable(l);
		c->paused = 0;
	}
}

/* evhttp asks for a bufferevent for a new connection. */
static struct bufferevent *
conns_bev_cb(struct event_base *base, void *arg)
{
	struct server *srv = arg;
	struct conns *c = srv->conns;
	struct conn *conn = xcalloc(1, sizeof *conn);

	conn->bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	bufferevent_incref(conn->bev);	/* ours, dropped in conns_sweep */
	conn->since = conns_now_ms();
	TAILQ_INSERT_TAIL(&c->list, conn, entry);
	c->count++;
	conns_update_listener(srv);
	return conn->bev;
}

/* Finds the tracked connection of req. */
static struct conn *
conns_find(struct server *srv, struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev;
	struct conn *conn;

	if (srv->conns == NULL || evcon == NULL ||
	    (bev = evhttp_connection_get_bufferevent(evcon)) == NULL)
		return NULL;
	TAILQ_FOREACH(conn, &srv->conns->list, entry) {
		if (conn->bev == bev)
			return conn;
	}
	return NULL;
}

/* A request arrived: its connection is no longer waiting. */
void
conns_request_started(struct server *srv, struct evhttp_request *req)
{
	struct conn *conn = conns_find(srv, req);

	if (conn != NULL)
		conn->busy = 1;
}

/* A reply went out: the connection waits for its next request. */
void
conns_request_done(struct server *srv, struct evhttp_request *req)
{
	struct conn *conn = conns_find(srv, req);

	if (conn != NULL) {
		conn->busy = 0;
		conn->since = conns_now_ms();
	}
}

/* Loop timer: reaps freed connections and cuts off slow ones. */
static void
conns_sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;
	struct conns *c = srv->conns;
	struct conn *conn, *next;
	bufferevent_data_cb rcb, wcb;
	bufferevent_event_cb ecb;
	int64_t now = conns_now_ms(), limit = srv->cfg->read_timeout * 1000;
	evutil_socket_t sfd;

	for (conn = TAILQ_FIRST(&c->list); conn != NULL; conn = next) {
		next = TAILQ_NEXT(conn, entry);
		bufferevent_getcb(conn->bev, &rcb, &wcb, &ecb, NULL);
		if (rcb == NULL && wcb == NULL && ecb == NULL &&
		    now - conn->since > 50) {
			/* evhttp has freed the connection */
			TAILQ_REMOVE(&c->list, conn, entry);
			bufferevent_decref(conn->bev);
			free(conn);
			c->count--;
			continue;
		}
		if (!conn->busy && now - conn->since > limit &&
		    (sfd = bufferevent_getfd(conn->bev)) >= 0) {
			log_info("%s: no complete request in %lld s: closing "
			    "connection", __func__, (long long)srv->cfg->read_timeout);
			shutdown(sfd, SHUT_RDWR);
			conn->busy = 1;	/* once */
		}
	}
	conns_update_listener(srv);
}

/* Installs the bufferevent callback and the sweep timer. */
void
conns_init(struct server *srv)
{
	struct conns *c = xcalloc(1, sizeof *c);
	struct timeval tv = { 0, 100000 };

	TAILQ_INIT(&c->list);
	srv->conns = c;
	evhttp_set_bevcb(srv->http, conns_bev_cb, srv);
	c->timer = event_new(srv->base, -1, EV_PERSIST, conns_sweep_cb, srv);
	event_add(c->timer, &tv);
}

/* Drops our references; evhttp_free has freed the connections. */
void
conns_free(struct server *srv)
{
	struct conns *c = srv->conns;
	struct conn *conn;

	if (c == NULL)
		return;
	while ((conn = TAILQ_FIRST(&c->list)) != NULL) {
		TAILQ_REMOVE(&c->list, conn, entry);
		bufferevent_decref(conn->bev);
		free(conn);
	}
	event_free(c->timer);
	free(c);
	srv->conns = NULL;
}

/* Open connections. */
int
conns_count(struct server *srv)
{
	return srv->conns != NULL ? srv->conns->count : 0;
}
