/*
 * Uploads to the collector, on the agent's own event loop. Profiles wait in
 * a bounded FIFO (the oldest is dropped when it is full, so a collector
 * that is away costs bounded memory) and go out one at a time over one
 * evhttp connection: POST {prefix}/api/0/profiles?service=S&type=cpu&
 * labels=L. A 2xx removes the profile; a 4xx drops it (retrying cannot
 * help); a 5xx or a connection error keeps it and retries after a capped
 * exponential backoff with jitter (1 s doubling to 30 s, each wait drawn
 * from [d/2, d]).
 */
#include <sys/queue.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "agent/upload.h"
#include "common/xmalloc.h"

#define UPLOAD_BACKOFF_MIN_MS	1000
#define UPLOAD_BACKOFF_MAX_MS	30000
#define UPLOAD_TIMEOUT_SEC	10

struct upload_item {
	uint8_t			*data;
	size_t			 len;
	TAILQ_ENTRY(upload_item) entry;
};

struct upload {
	struct event_base		*base;
	struct evhttp_connection	*conn;
	struct event			*retry_ev;
	char				*host;
	int				 port;
	char				*hostport;	/* Host header */
	char				*target;	/* path?query */
	char				*auth;		/* "Bearer ..." */
	TAILQ_HEAD(, upload_item)	 queue;
	size_t				 queued;
	size_t				 queue_max;
	int				 inflight;
	int				 waiting;	/* retry_ev armed */
	int				 attempts;	/* failures in a row */
	int				 flushing;	/* last try before exit */
	int				 gave_up;
	int				 verbose;
	uint64_t			 rng;
	struct upload_stats		 stats;
};

static void	upload_send(struct upload *);

/* Percent-encodes everything but unreserved characters. */
char *
upload_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = xmalloc(3 * strlen(s) + 1), *o = out;
	unsigned char c;

	for (; *s != '\0'; s++) {
		c = (unsigned char)*s;
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.' ||
		    c == '_' || c == '~')
			*o++ = (char)c;
		else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	*o = '\0';
	return out;
}

/*
 * Encodes "k=v,k=v" for the labels parameter: each key and value is
 * percent-encoded on its own, '=' and ',' stay literal (profd splits the
 * raw parameter, then decodes each part).
 */
static char *
upload_escape_labels(const char *labels)
{
	char *copy = xstrdup(labels), *pair, *next, *eq, *k, *v, *out, *tmp;

	out = xstrdup("");
	for (pair = copy; pair != NULL; pair = next) {
		if ((next = strchr(pair, ',')) != NULL)
			*next++ = '\0';
		if ((eq = strchr(pair, '=')) != NULL)
			*eq = '\0';
		k = upload_escape(pair);
		v = upload_escape(eq != NULL ? eq + 1 : "");
		tmp = xasprintf("%s%s%s=%s", out, *out ? "," : "", k, v);
		free(out);
		free(k);
		free(v);
		out = tmp;
	}
	free(copy);
	return out;
}

/* xorshift64*: jitter only, no need for quality. */
static uint64_t
upload_rand(struct upload *u)
{
	u->rng ^= u->rng >> 12;
	u->rng ^= u->rng << 25;
	u->rng ^= u->rng >> 27;
	return u->rng * 2685821657736338717ULL;
}

/* Removes and frees the head of the queue. */
static void
upload_pop(struct upload *u)
{
	struct upload_item *it = TAILQ_FIRST(&u->queue);

	if (it == NULL)
		return;
	TAILQ_REMOVE(&u->queue, it, entry);
	u->queued--;
	free(it->data);
	free(it);
}

/* Retry timer: send the head of the queue again. */
static void
upload_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upload *u = arg;

	(void)fd;
	(void)what;
	u->waiting = 0;
	upload_send(u);
}

/* Arms the retry timer after a failure. */
static void
upload_backoff(struct upload *u)
{
	struct timeval tv;
	uint64_t d = UPLOAD_BACKOFF_MIN_MS;
	int i;

	u->stats.failures++;
	if (u->flushing) {
		/* Exiting: one more try only; never hold the program up. */
		u->gave_up = 1;
		return;
	}
	for (i = 0; i < u->attempts && d < UPLOAD_BACKOFF_MAX_MS; i++)
		d *= 2;
	if (d > UPLOAD_BACKOFF_MAX_MS)
		d = UPLOAD_BACKOFF_MAX_MS;
	u->attempts++;
	d = d / 2 + upload_rand(u) % (d / 2 + 1);
	tv.tv_sec = (time_t)(d / 1000);
	tv.tv_usec = (suseconds_t)(d % 1000) * 1000;
	/* The connection reconnects by itself on the next request. */
	u->waiting = 1;
	evtimer_add(u->retry_ev, &tv);
}

/* The collector answered (req != NULL) or the connection failed. */
static void
upload_done_cb(struct evhttp_request *req, void *arg)
{
	struct upload *u = arg;
	int code = req != NULL ? evhttp_request_get_response_code(req) : 0;
	struct evbuffer *in;
	char msg[200];
	size_t n = 0;

	u->inflight = 0;
	if (code >= 200 && code < 300) {
		u->stats.sent++;
		u->attempts = 0;
		upload_pop(u);
		if (u->verbose)
			fprintf(stderr, "profd-agent[%d]: profile uploaded "
			    "(%d)\n", (int)getpid(), code);
		upload_send(u);
		return;
	}
	if (code >= 400 && code < 500) {
		in = evhttp_request_get_input_buffer(req);
		if (in != NULL)
			n = evbuffer_copyout(in, msg, sizeof msg - 1);
		msg[n > 0 ? n : 0] = '\0';
		fprintf(stderr, "profd-agent[%d]: collector rejected a "
		    "profile with %d, dropped: %s\n", (int)getpid(), code, msg);
		u->stats.rejected++;
		u->attempts = 0;
		upload_pop(u);
		upload_send(u);
		return;
	}
	if (u->verbose)
		fprintf(stderr, "profd-agent[%d]: upload failed (%s %d), "
		    "%s\n", (int)getpid(), code ? "status" : "connection",
		    code, u->flushing ? "giving up" : "retrying");
	upload_backoff(u);
}

/* Sends the head of the queue unless busy or backing off. */
static void
upload_send(struct upload *u)
{
	struct upload_item *it = TAILQ_FIRST(&u->queue);
	struct evhttp_request *req;
	struct evkeyvalq *h;

	if (it == NULL || u->inflight || u->waiting || u->gave_up)
		return;
	if (u->conn == NULL) {
		u->conn = evhttp_connection_base_new(u->base, NULL, u->host,
		    (unsigned short)u->port);
		if (u->conn == NULL) {
			upload_backoff(u);
			return;
		}
		evhttp_connection_set_timeout(u->conn, UPLOAD_TIMEOUT_SEC);
	}
	req = evhttp_request_new(upload_done_cb, u);
	h = evhttp_request_get_output_headers(req);
	evhttp_add_header(h, "Host", u->hostport);
	evhttp_add_header(h, "Content-Type", "application/octet-stream");
	evhttp_add_header(h, "User-Agent", "libprofd-agent/" PACKAGE_VERSION);
	if (u->auth != NULL)
		evhttp_add_header(h, "Authorization", u->auth);
	evbuffer_add(evhttp_request_get_output_buffer(req), it->data, it->len);
	u->inflight = 1;
	if (evhttp_make_request(u->conn, req, EVHTTP_REQ_POST, u->target)
	    != 0) {
		/* libevent freed req. */
		u->inflight = 0;
		upload_backoff(u);
	}
}

/* Parses the URL and prepares the request target. */
struct upload *
upload_new(struct event_base *base, const char *url, const char *service,
    const char *labels, const char *token, size_t queue_max, int verbose,
    char **cause)
{
	struct evhttp_uri *uri;
	struct upload *u;
	const char *scheme, *host, *path;
	char *esvc, *elab = NULL;
	size_t plen;
	int port;

	if ((uri = evhttp_uri_parse(url)) == NULL) {
		xcause(cause, "collector URL \"%s\" does not parse", url);
		return NULL;
	}
	scheme = evhttp_uri_get_scheme(uri);
	host = evhttp_uri_get_host(uri);
	port = evhttp_uri_get_port(uri);
	path = evhttp_uri_get_path(uri);
	if (scheme == NULL || strcasecmp(scheme, "http") != 0 ||
	    host == NULL || *host == '\0' || evhttp_uri_get_query(uri) != NULL) {
		xcause(cause, "collector URL \"%s\" must be "
		    "http://host[:port][/prefix]", url);
		evhttp_uri_free(uri);
		return NULL;
	}
	u = xcalloc(1, sizeof *u);
	u->base = base;
	u->host = xstrdup(host);
	u->port = port > 0 ? port : 80;
	u->hostport = port > 0 ? xasprintf("%s:%d", host, port) :
	    xstrdup(host);
	if (path == NULL)
		path = "";
	plen = strlen(path);
	while (plen > 0 && path[plen - 1] == '/')
		plen--;
	esvc = upload_escape(service);
	if (labels != NULL && *labels != '\0')
		elab = upload_escape_labels(labels);
	u->target = xasprintf("%.*s/api/0/profiles?service=%s&type=cpu%s%s",
	    (int)plen, path, esvc, elab ? "&labels=" : "", elab ? elab : "");
	free(esvc);
	free(elab);
	evhttp_uri_free(uri);
	if (token != NULL && *token != '\0')
		u->auth = xasprintf("Bearer %s", token);
	TAILQ_INIT(&u->queue);
	u->queue_max = queue_max > 0 ? queue_max : 8;
	u->verbose = verbose;
	u->rng = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL) ^
	    (uint64_t)(uintptr_t)u;
	if (u->rng == 0)
		u->rng = 1;
	u->retry_ev = evtimer_new(base, upload_retry_cb, u);
	return u;
}

/* Queues one profile; drops the oldest waiting one if full. */
void
upload_push(struct upload *u, uint8_t *data, size_t len)
{
	struct upload_item *it, *old;

	if (u->queued >= u->queue_max) {
		old = TAILQ_FIRST(&u->queue);
		/* The head may be on the wire; drop the next one then. */
		if (u->inflight && old != NULL)
			old = TAILQ_NEXT(old, entry);
		if (old != NULL) {
			TAILQ_REMOVE(&u->queue, old, entry);
			u->queued--;
			free(old->data);
			free(old);
			u->stats.dropped++;
		}
	}
	it = xcalloc(1, sizeof *it);
	it->data = data;
	it->len = len;
	TAILQ_INSERT_TAIL(&u->queue, it, entry);
	u->queued++;
	upload_send(u);
}

/* Cancels a backoff wait and sends now; the next failure ends trying. */
void
upload_flush(struct upload *u)
{
	u->flushing = 1;
	if (u->waiting) {
		evtimer_del(u->retry_ev);
		u->waiting = 0;
	}
	upload_send(u);
}

/* True when there is nothing left to send. */
int
upload_idle(const struct upload *u)
{
	return (u->queued == 0 && !u->inflight) || u->gave_up;
}

/* Copies the counters. */
void
upload_stats(const struct upload *u, struct upload_stats *st)
{
	*st = u->stats;
}

/* The request target (for logs and tests). */
const char *
upload_target(const struct upload *u)
{
	return u->target;
}

/* Frees everything; an in-flight request is abandoned. */
void
upload_free(struct upload *u)
{
	if (u == NULL)
		return;
	if (u->conn != NULL)
		evhttp_connection_free(u->conn);
	event_free(u->retry_ev);
	while (!TAILQ_EMPTY(&u->queue))
		upload_pop(u);
	free(u->host);
	free(u->hostport);
	free(u->target);
	free(u->auth);
	free(u);
}
