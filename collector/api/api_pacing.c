/*
 * The HTTP half of collector-directed pacing: /api/0/agents/poll.
 *
 * A poll is checked, then given to the scheduler (collector/pacing.c)
 * with a hold: the request and a read event on its socket. The scheduler
 * answers it at once or later through api_pacing_answer, which replies
 * with a bare JSON object ({"action":"profile",...} or
 * {"action":"wait",...}; errors keep the usual envelope). libevent stops
 * reading a connection once its request is in, so it would not notice a
 * client that goes away while its request is held: the read event does
 * (EOF or a reset, peeked without consuming), and the hold is forgotten
 * (a busy poll's window cancelled) and answered 499 so libevent frees the
 * connection. Held requests are no httpjob, so --request-timeout does not
 * apply to them, and conns.c counts their connections busy, so
 * --read-timeout does not either: a hold ends with its answer, its
 * `wait`, its client, or the shutdown (503). One loop timer, armed at
 * the scheduler's next wake, runs it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>

#include "collector/api/api_pacing.h"
#include "collector/api/params.h"
#include "collector/config.h"
#include "collector/env.h"
#include "collector/http/conns.h"
#include "collector/http/reply.h"
#include "collector/metrics.h"
#include "collector/pacing.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/parse.h"
#include "common/xmalloc.h"

#define API_PACING_INSTANCE_MAX	128
#define API_PACING_WINDOW_MAX	300	/* seconds */
#define API_PACING_WINDOW	10
#define API_PACING_WAIT_MAX	120
#define API_PACING_WAIT		30

_Static_assert(PACING_NTYPES == PARAMS_NTYPES &&
    METRICS_PACING_TYPES == PARAMS_NTYPES, "one list of profile types");

/* A poll held (or being handed to the scheduler). */
struct api_pacing_hold {
	struct api_pacing		*ap;
	struct evhttp_request		*req;
	struct pacing_waiter		*w;	/* the scheduler's, once held */
	struct event			*watch;	/* the client going away */
	int				 linked;	/* on ap->holds */
	TAILQ_ENTRY(api_pacing_hold)	 entry;
};

struct api_pacing {
	struct env			*env;
	struct pacing			*core;
	struct event			*timer;
	TAILQ_HEAD(, api_pacing_hold)	 holds;
};

/* A poll's parameters, decoded. */
struct api_pacing_args {
	char			*service;
	char			*instance;
	struct pacing_request	 r;
};

/* The scheduler's clock: monotonic milliseconds. */
static int64_t
api_pacing_now_ms(void *arg)
{
	return clock_mono_ns() / 1000000;
}

/* Copies the scheduler's figures to /metrics. */
static void
api_pacing_publish(struct api_pacing *ap)
{
	struct pacing_stats st;
	struct metrics_pacing mp;
	int i;

	pacing_stats(ap->core, &st);
	memset(&mp, 0, sizeof mp);
	for (i = 0; i < PACING_NTYPES; i++) {
		mp.type[i] = params_type_name(i);
		mp.grants[i] = st.grants[i];
	}
	mp.cancelled = st.cancelled;
	mp.held = st.held;
	mp.instances = st.instances;
	metrics_set_pacing(ap->env->metrics, &mp);
}

/* Arms the timer at the scheduler's next wake; publishes the figures. */
static void
api_pacing_arm(struct api_pacing *ap)
{
	int64_t wake = pacing_next_wake(ap->core), ms;
	struct timeval tv;

	api_pacing_publish(ap);
	if (wake == INT64_MAX) {
		evtimer_del(ap->timer);
		return;
	}
	ms = wake - api_pacing_now_ms(NULL);
	if (ms < 0)
		ms = 0;
	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000 * 1000);
	evtimer_add(ap->timer, &tv);
}

/* Loop timer: the scheduler has something due. */
static void
api_pacing_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct api_pacing *ap = arg;

	pacing_run(ap->core);
	api_pacing_arm(ap);
}

/* Takes a hold off the list and stops watching its client. */
static void
api_pacing_release(struct api_pacing_hold *h)
{
	if (h->linked)
		TAILQ_REMOVE(&h->ap->holds, h, entry);
	h->linked = 0;
	if (h->watch != NULL)
		event_free(h->watch);
	h->watch = NULL;
}

/* Sends a bare JSON object (the poll's answers). */
static void
api_pacing_reply(struct env *env, struct evhttp_request *req, json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);

	json_decref(o);
	if (s == NULL) {
		reply_error(env, req, 500, "cannot encode reply");
		return;
	}
	reply_bytes(env, req, (uint8_t *)s, strlen(s), "application/json",
	    NULL);
}

/* The scheduler answers a poll (ctx: its hold): reply, free the hold. */
static void
api_pacing_answer(void *arg, void *ctx, const struct pacing_answer *a)
{
	struct api_pacing *ap = arg;
	struct api_pacing_hold *h = ctx;
	struct env *env = ap->env;
	char slot[24];

	api_pacing_release(h);
	switch (a->action) {
	case PACING_PROFILE:
		snprintf(slot, sizeof slot, "%llu", (unsigned long long)a->slot);
		api_pacing_reply(env, h->req, json_pack("{s:s, s:s, s:I, s:s}",
		    "action", "profile", "type", params_type_name(a->type),
		    "duration_s", (json_int_t)a->duration_s, "slot", slot));
		break;
	case PACING_WAIT:
		api_pacing_reply(env, h->req, json_pack("{s:s, s:I}", "action",
		    "wait", "delay_ms", (json_int_t)a->delay_ms));
		break;
	case PACING_STOP:
		reply_error(env, h->req, 503, "shutting down");
		break;
	}
	free(h);
}

/*
 * The socket of a held poll is readable: its client closed (EOF), reset,
 * or sent more (a pipelined request: no longer watched; its hold's wait
 * still ends it). A client gone is forgotten and answered 499 (libevent
 * then frees the connection).
 */
static void
api_pacing_watch_cb(evutil_socket_t fd, short what, void *arg)
{
	struct api_pacing_hold *h = arg;
	struct api_pacing *ap = h->ap;
	struct evkeyvalq *out;
	ssize_t n;
	char c;

	n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	if (!conns_fd_gone(fd)) {
		/* Bytes (a pipelined request) or nothing yet. */
		if (n > 0)
			event_del(h->watch);
		return;
	}
	api_pacing_release(h);
	pacing_forget(ap->core, h->w);
	out = evhttp_request_get_output_headers(h->req);
	evhttp_add_header(out, "Connection", "close");
	reply_error(ap->env, h->req, 499, "client went away");
	free(h);
	api_pacing_arm(ap);
}

/* Starts watching a held poll's client. */
static void
api_pacing_watch(struct api_pacing_hold *h)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(h->req);
	struct bufferevent *bev;
	evutil_socket_t fd;

	if (evcon == NULL ||
	    (bev = evhttp_connection_get_bufferevent(evcon)) == NULL ||
	    (fd = bufferevent_getfd(bev)) < 0)
		return;
	h->watch = event_new(h->ap->env->base, fd, EV_READ | EV_PERSIST,
	    api_pacing_watch_cb, h);
	event_add(h->watch, NULL);
}

/* An instance id: 1 to 128 bytes of [A-Za-z0-9._:-]. */
static int
api_pacing_instance_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > API_PACING_INSTANCE_MAX)
		return 0;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789._:-") == n;
}

/* Reads "cpu,heap" into a mask of type indices. */
static int
api_pacing_types(const char *list, unsigned *mask, char **cause)
{
	const char *p = list, *comma;
	char *one;
	int t;

	*mask = 0;
	for (;;) {
		comma = strchr(p, ',');
		one = comma != NULL ? xstrndup(p, comma - p) : xstrdup(p);
		t = params_type_index(one);
		if (t < 0) {
			xcause(cause, "parameter types: bad type \"%.32s\" "
			    "(want a comma list of cpu, heap, block, mutex, "
			    "goroutine, threadcreate, other, trace)", one);
			free(one);
			return -1;
		}
		free(one);
		*mask |= 1u << t;
		if (comma == NULL)
			return 0;
		p = comma + 1;
	}
}

/* Reads an optional parameter: 1 and *v, or 0 (absent or empty), -1. */
static int
api_pacing_get(const struct params *p, const char *key, char **v,
    char **cause)
{
	int rc = params_get(p, key, v, cause);

	if (rc == 1 && **v == '\0') {
		free(*v);
		*v = NULL;
		rc = 0;
	}
	return rc;
}

/* Reads an optional integer parameter within min..max (else dflt). */
static int
api_pacing_int(const struct params *p, const char *key, int64_t min,
    int64_t max, int64_t dflt, int64_t *out, char **cause)
{
	char *v = NULL, *why = NULL;
	int rc;

	*out = dflt;
	if ((rc = api_pacing_get(p, key, &v, cause)) <= 0)
		return rc;
	rc = parse_int(v, min, max, out, &why);
	if (rc < 0) {
		xcause(cause, "parameter %s: %s", key, why);
		free(why);
	}
	free(v);
	return rc < 0 ? -1 : 0;
}

/* Reads an optional slot id (decimal); *busy when given. */
static int
api_pacing_slot(const struct params *p, struct pacing_request *r,
    char **cause)
{
	char *v = NULL, *end;
	int rc;

	if ((rc = api_pacing_get(p, "slot", &v, cause)) <= 0)
		return rc;
	errno = 0;
	r->slot = strtoull(v, &end, 10);
	if (*v < '0' || *v > '9' || *end != '\0' || errno != 0) {
		xcause(cause, "parameter slot: \"%.32s\" is not a slot id "
		    "(the decimal number a grant gave)", v);
		free(v);
		return -1;
	}
	r->busy = 1;
	free(v);
	return 0;
}

/* Checks the labels as an upload would, and drops them. */
static int
api_pacing_labels(struct env *env, const struct params *p, char **cause)
{
	struct label *l = NULL;
	const char *raw, *dup;
	char *why = NULL;
	size_t n = 0;
	int rc = 0;

	if ((raw = params_raw(p, "labels")) == NULL)
		return 0;
	if (params_labels(raw, (size_t)env->cfg->max_labels, &l, &n,
	    &why) < 0) {
		xcause(cause, "parameter labels: %s", why);
		free(why);
		return -1;
	}
	if (params_labels_dup_key(l, n, &dup)) {
		xcause(cause, "parameter labels: key \"%s\" given twice", dup);
		rc = -1;
	}
	params_labels_free(l, n);
	return rc;
}

/* Reads and checks a poll's parameters. */
static int
api_pacing_args(struct env *env, const struct params *p,
    struct api_pacing_args *a, char **cause)
{
	char *types = NULL;
	int64_t window, wait;
	int rc = -1;

	memset(a, 0, sizeof *a);
	if (params_get(p, "service", &a->service, cause) < 0 ||
	    params_get(p, "instance", &a->instance, cause) < 0 ||
	    params_get(p, "types", &types, cause) < 0)
		goto out;
	if (a->service == NULL || *a->service == '\0') {
		xcause(cause, "missing parameter: service");
		goto out;
	}
	if (!params_service_valid(a->service)) {
		xcause(cause, "bad service name (want 1 to %d bytes of UTF-8, "
		    "no control characters)", PARAMS_MAX_SERVICE);
		goto out;
	}
	if (a->instance == NULL || *a->instance == '\0') {
		xcause(cause, "missing parameter: instance");
		goto out;
	}
	if (!api_pacing_instance_valid(a->instance)) {
		xcause(cause, "parameter instance: want 1 to %d characters of "
		    "A-Z a-z 0-9 . _ : -", API_PACING_INSTANCE_MAX);
		goto out;
	}
	if (types == NULL || *types == '\0') {
		xcause(cause, "missing parameter: types");
		goto out;
	}
	if (api_pacing_types(types, &a->r.types, cause) < 0 ||
	    api_pacing_int(p, "window", 1, API_PACING_WINDOW_MAX,
	    API_PACING_WINDOW, &window, cause) < 0 ||
	    api_pacing_int(p, "wait", 1, API_PACING_WAIT_MAX, API_PACING_WAIT,
	    &wait, cause) < 0 ||
	    api_pacing_slot(p, &a->r, cause) < 0 ||
	    api_pacing_labels(env, p, cause) < 0)
		goto out;
	a->r.service = a->service;
	a->r.instance = a->instance;
	a->r.window_s = window;
	a->r.wait_ms = wait * 1000;
	rc = 0;
out:
	free(types);
	return rc;
}

/* POST|GET /api/0/agents/poll */
void
api_pacing_poll(struct env *env, struct evhttp_request *req,
    const struct params *p)
{
	struct api_pacing *ap = env->pacing;
	struct api_pacing_args a;
	struct api_pacing_hold *h;
	struct pacing_waiter *w;
	char *cause = NULL;
	int rc;

	if (api_pacing_args(env, p, &a, &cause) < 0) {
		reply_error(env, req, 400, "%s", cause);
		free(cause);
		goto out;
	}
	if (ap == NULL) {
		/* An agent takes this for "keep your own schedule". */
		reply_error(env, req, 404, "pacing is off on this collector "
		    "(--profile-rate 0)");
		goto out;
	}
	h = xcalloc(1, sizeof *h);
	h->ap = ap;
	h->req = req;
	rc = pacing_poll(ap->core, &a.r, h, &w);
	if (rc == PACING_FULL) {
		free(h);
		log_warn("%s: pacing tracks too many instances or (service, "
		    "type) pairs: refused", __func__);
		reply_error(env, req, 503, "too many agent instances (%d) or "
		    "(service, type) pairs (%d) polling: retry later",
		    PACING_MAX_INSTANCES, PACING_MAX_STREAMS);
	} else if (rc == PACING_HELD) {
		h->w = w;
		h->linked = 1;
		TAILQ_INSERT_TAIL(&ap->holds, h, entry);
		api_pacing_watch(h);
	}
	api_pacing_arm(ap);
out:
	free(a.service);
	free(a.instance);
}

/* The scheduler on env's loop. */
struct api_pacing *
api_pacing_new(struct env *env)
{
	struct api_pacing *ap = xcalloc(1, sizeof *ap);
	struct pacing_config cfg;
	struct pacing_ops ops = { api_pacing_now_ms, api_pacing_answer };

	memset(&cfg, 0, sizeof cfg);
	cfg.rate = env->cfg->profile_rate;
	/* Slot ids differ across restarts: a busy poll of a slot granted
	 * before one never matches a slot of the next. */
	cfg.first_slot = (uint64_t)(clock_now_ns() / 1000000);
	ap->env = env;
	ap->core = pacing_new(&cfg, &ops, ap);
	ap->timer = evtimer_new(env->base, api_pacing_timer_cb, ap);
	TAILQ_INIT(&ap->holds);
	api_pacing_publish(ap);
	return ap;
}

/* Answers every held poll 503 (shutdown). */
void
api_pacing_stop(struct api_pacing *ap)
{
	if (ap == NULL)
		return;
	pacing_stop(ap->core);
	api_pacing_arm(ap);
}

/* Frees the holds left (their requests go with evhttp) and the rest. */
void
api_pacing_free(struct api_pacing *ap)
{
	struct api_pacing_hold *h;

	if (ap == NULL)
		return;
	while ((h = TAILQ_FIRST(&ap->holds)) != NULL) {
		api_pacing_release(h);
		free(h);
	}
	pacing_free(ap->core);
	event_free(ap->timer);
	free(ap);
}
