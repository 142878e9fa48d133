/*
 * Collector-directed pacing, the agent's half (the collector's is
 * collector/pacing.c and collector/api/api_pacing.c; README,
 * "Collector-directed pacing"). Instead of profiling on its own timer,
 * the agent asks the collector when to profile, as Cloud Profiler's
 * agents do, so a service's windows are spread over its replicas at the
 * collector's rate.
 *
 * A thread of its own long-polls POST {prefix}/api/0/agents/poll with
 * the service, an instance id (host, pid and a random part), the types
 * it can take (cpu, and heap when libprofd-heap is loaded) and its
 * window. The first poll is held at most 1 s (and given up after 2 s),
 * so the agent learns soon whether the collector paces: an answer (a grant or "wait") makes the
 * mode PACED; 404 or 405 (pacing off, an older collector, profefe), 400,
 * 401 or 403 make it OWN for good: the agent keeps its own schedule, and
 * says so once. A collector that cannot be reached leaves the mode AWAY
 * (own schedule for now) and the polls go on with a capped backoff; once
 * paced, the agent stays paced through a collector's restart.
 *
 * A grant ({"action":"profile","type":"cpu","duration_s":10,"slot":ID})
 * is handed to the agent thread (pacer_take, and the notify callback to
 * wake it); then the pacer sends busy polls carrying the slot until the
 * window is over, so the collector knows the slot is in use: if the
 * process dies mid-window, the connection closes and the collector gives
 * the slot to another instance at once. "wait" answers are obeyed
 * (delay_ms). The HTTP client is the uploader's (agent/core/upload.c, its own
 * instance: one connection per poll, nothing held between polls), with a
 * hook that cuts a poll short within 50 ms once the agent stops (program
 * exit) or the pacer is stopped.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/inproc/heap.h"
#include "agent/inproc/pacer.h"
#include "agent/core/upload.h"
#include "common/xmalloc.h"

#define PACER_FIRST_WAIT_S	1	/* the first poll's hold */
#define PACER_WAIT_S		30	/* later polls' */
#define PACER_SLACK_MS		10000	/* HTTP timeout beyond the hold */
#define PACER_FIRST_SLACK_MS	1000	/* the first poll's: then AWAY */
#define PACER_BACKOFF_MIN_MS	1000
#define PACER_BACKOFF_MAX_MS	30000
#define PACER_BODY_MAX		512

struct pacer {
	struct upload		*up;
	char			*service;	/* escaped */
	char			*labels;	/* escaped, or NULL */
	char			*types;
	char			 instance[96];
	int			 window_sec;
	int			 verbose;
	pacer_notify_cb		*notify;
	pacer_stopping_cb	*stopping;
	void			*arg;
	pthread_t		 thread;
	int			 started;
	pthread_mutex_t		 lock;		/* the fields below */
	pthread_cond_t		 cond;
	int			 stop;
	int			 mode;
	int			 has_grant;
	struct pacer_grant	 grant;
	char			 slot[32];	/* the window in progress */
	int64_t			 slot_end;	/* its end (ms), 0: none */
};

/* One line on stderr when verbose. */
static void __attribute__((format(printf, 2, 3)))
pacer_log(struct pacer *p, const char *fmt, ...)
{
	va_list ap;

	if (!p->verbose)
		return;
	va_start(ap, fmt);
	upload_vsay(fmt, ap);
	va_end(ap);
}

/* Whether the thread is to end: pacer_stop, or the agent is stopping. */
static int
pacer_stopping(struct pacer *p)
{
	int stop;

	pthread_mutex_lock(&p->lock);
	stop = p->stop;
	pthread_mutex_unlock(&p->lock);
	return stop || p->stopping(p->arg);
}

/* The uploader's hook: cut the poll short once the pacer is stopping. */
static int64_t
pacer_hook(void *arg)
{
	struct pacer *p = arg;

	return pacer_stopping(p) ? upload_now_ms() : 0;
}

/* A new pacer (see pacer.h). */
struct pacer *
pacer_new(const char *url, const char *service, const char *labels,
    const char *token, const struct upload_tls *tls, const char *types,
    int window_sec, int verbose,
    pacer_notify_cb *notify, pacer_stopping_cb *stopping, void *arg,
    char **cause)
{
	struct pacer *p = xcalloc(1, sizeof *p);
	pthread_condattr_t ca;
	char host[64];
	struct timespec ts;

	if ((p->up = upload_new(url, service, NULL, token, tls, 1, 0,
	    cause)) == NULL) {
		free(p);
		return NULL;
	}
	upload_set_hook(p->up, pacer_hook, p);
	p->service = upload_escape(service);
	if (labels != NULL && *labels != '\0')
		p->labels = upload_escape(labels);
	p->types = xstrdup(types);
	p->window_sec = window_sec;
	p->verbose = verbose;
	p->notify = notify;
	p->stopping = stopping;
	p->arg = arg;
	if (gethostname(host, sizeof host) != 0)
		snprintf(host, sizeof host, "host");
	host[sizeof host - 1] = '\0';
	host[strspn(host, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstu"
	    "vwxyz0123456789.-_")] = '\0';
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(p->instance, sizeof p->instance, "%s:%d:%08lx",
	    host[0] != '\0' ? host : "host", (int)getpid(),
	    (unsigned long)(((uint64_t)ts.tv_nsec * 2654435761u) ^
	    (uint64_t)(uintptr_t)p) & 0xffffffffUL);
	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cond, &ca);
	pthread_condattr_destroy(&ca);
	return p;
}

/*
 * Where the value of "key" starts in a flat JSON object (the collector's
 * answers: bare objects of strings and numbers), or NULL.
 */
static const char *
pacer_json_value(const char *body, const char *key)
{
	char pat[40];
	const char *v;

	snprintf(pat, sizeof pat, "\"%s\"", key);
	if ((v = strstr(body, pat)) == NULL)
		return NULL;
	v += strlen(pat);
	v += strspn(v, " \t\r\n");
	if (*v++ != ':')
		return NULL;
	return v + strspn(v, " \t\r\n");
}

/* The value of "key": a string into out (size bytes); -1 if none. */
static int
pacer_json_str(const char *body, const char *key, char *out, size_t size)
{
	const char *v = pacer_json_value(body, key), *end;

	if (v == NULL || *v++ != '"' || (end = strchr(v, '"')) == NULL ||
	    (size_t)(end - v) >= size)
		return -1;
	memcpy(out, v, (size_t)(end - v));
	out[end - v] = '\0';
	return 0;
}

/* The value of "key": a number (-1 if none or negative). */
static int64_t
pacer_json_int(const char *body, const char *key)
{
	const char *v = pacer_json_value(body, key);
	char *end;
	long long n;

	if (v == NULL)
		return -1;
	errno = 0;
	n = strtoll(v, &end, 10);
	if (end == v || errno != 0 || n < 0)
		return -1;
	return (int64_t)n;
}

/* Sets the mode (under the lock); tells the agent when it changed. */
static void
pacer_set_mode(struct pacer *p, int mode)
{
	int changed;

	pthread_mutex_lock(&p->lock);
	changed = p->mode != mode;
	p->mode = mode;
	pthread_mutex_unlock(&p->lock);
	if (changed)
		p->notify(p->arg);
}

/* Sleeps ms, or less if the pacer is stopping; 1 if stopping. */
static int
pacer_sleep(struct pacer *p, int64_t ms)
{
	int64_t until = upload_now_ms() + ms, slice;
	struct timespec ts;

	while (!pacer_stopping(p) && upload_now_ms() < until) {
		slice = upload_now_ms() + 50;
		if (slice > until)
			slice = until;
		ts.tv_sec = (time_t)(slice / 1000);
		ts.tv_nsec = (long)(slice % 1000) * 1000000;
		pthread_mutex_lock(&p->lock);
		if (!p->stop)
			pthread_cond_timedwait(&p->cond, &p->lock, &ts);
		pthread_mutex_unlock(&p->lock);
	}
	return pacer_stopping(p);
}

/* A grant: hand it over and remember the slot for the busy polls. */
static void
pacer_granted(struct pacer *p, const char *body)
{
	struct pacer_grant g;
	char slot[32];
	int64_t d = pacer_json_int(body, "duration_s");

	memset(&g, 0, sizeof g);
	if (pacer_json_str(body, "type", g.type, sizeof g.type) != 0 ||
	    pacer_json_str(body, "slot", slot, sizeof slot) != 0 || d <= 0 ||
	    d > 3600) {
		pacer_log(p, "pacing: an answer not understood: %.200s", body);
		return;
	}
	g.duration_s = (int)d;
	pthread_mutex_lock(&p->lock);
	p->grant = g;
	p->has_grant = 1;
	snprintf(p->slot, sizeof p->slot, "%s", slot);
	p->slot_end = upload_now_ms() + d * 1000;
	pthread_mutex_unlock(&p->lock);
	pacer_log(p, "pacing: granted a %s window of %d s (slot %s)", g.type,
	    g.duration_s, slot);
	p->notify(p->arg);
}

/* One poll: builds it, sends it, acts on the answer; returns the delay. */
static int64_t
pacer_poll(struct pacer *p, int first, int *failures)
{
	char body[PACER_BODY_MAX], action[16], slot[32], *target;
	int64_t wait_s = first ? PACER_FIRST_WAIT_S : PACER_WAIT_S, left;
	int64_t delay, d;
	int code, mode;

	pthread_mutex_lock(&p->lock);
	slot[0] = '\0';
	left = p->slot_end - upload_now_ms();
	if (p->slot_end != 0 && left > 0) {
		snprintf(slot, sizeof slot, "%s", p->slot);
		wait_s = left / 1000 + 5;
		if (wait_s > 120)
			wait_s = 120;
	} else
		p->slot_end = 0;
	mode = p->mode;
	pthread_mutex_unlock(&p->lock);
	target = xasprintf("/api/0/agents/poll?service=%s&instance=%s&types=%s"
	    "&window=%d&wait=%lld%s%s%s%s", p->service, p->instance, p->types,
	    p->window_sec, (long long)wait_s, slot[0] ? "&slot=" : "", slot,
	    p->labels ? "&labels=" : "", p->labels ? p->labels : "");
	code = upload_request(p->up, "POST", target, wait_s * 1000 +
	    (first ? PACER_FIRST_SLACK_MS : PACER_SLACK_MS), body,
	    sizeof body);
	free(target);
	if (code == 200) {
		*failures = 0;
		if (mode != PACER_PACED) {
			pacer_log(p, "pacing: the collector paces this agent's "
			    "windows (instance %s)", p->instance);
			pacer_set_mode(p, PACER_PACED);
		}
		if (pacer_json_str(body, "action", action, sizeof action) != 0)
			action[0] = '\0';
		if (strcmp(action, "profile") == 0) {
			pacer_granted(p, body);
			return 0;
		}
		if ((delay = pacer_json_int(body, "delay_ms")) < 0)
			delay = 0;
		return delay > 60000 ? 60000 : delay;
	}
	if (code == 404 || code == 405 || code == 400 || code == 401 ||
	    code == 403) {
		pacer_log(p, "pacing: the collector answered %d: the agent "
		    "keeps its own schedule", code);
		pacer_set_mode(p, PACER_OWN);
		return -1;
	}
	/* Unreachable, 5xx, or cut short: try again later. */
	if (mode == PACER_UNKNOWN)
		pacer_set_mode(p, PACER_AWAY);
	for (d = PACER_BACKOFF_MIN_MS, code = 0; code < *failures &&
	    d < PACER_BACKOFF_MAX_MS; code++)
		d *= 2;
	(*failures)++;
	return d > PACER_BACKOFF_MAX_MS ? PACER_BACKOFF_MAX_MS : d;
}

/* The thread: polls until stopped or told pacing is not offered. */
static void *
pacer_main(void *arg)
{
	struct pacer *p = arg;
	int first = 1, failures = 0;
	int64_t delay;

	heap_exclude_thread();	/* the agent's own allocations: not sampled */
	while (!pacer_stopping(p)) {
		delay = pacer_poll(p, first, &failures);
		first = 0;
		if (delay < 0 || (delay > 0 && pacer_sleep(p, delay)))
			break;
	}
	return NULL;
}

/* Starts the thread. */
int
pacer_start(struct pacer *p)
{
	if (pthread_create(&p->thread, NULL, pacer_main, p) != 0)
		return -1;
	p->started = 1;
	return 0;
}

/* The mode. */
int
pacer_mode(struct pacer *p)
{
	int mode;

	pthread_mutex_lock(&p->lock);
	mode = p->mode;
	pthread_mutex_unlock(&p->lock);
	return mode;
}

/* Takes the waiting grant. */
int
pacer_take(struct pacer *p, struct pacer_grant *g)
{
	int had;

	pthread_mutex_lock(&p->lock);
	if ((had = p->has_grant) != 0)
		*g = p->grant;
	p->has_grant = 0;
	pthread_mutex_unlock(&p->lock);
	return had;
}

/* The instance id. */
const char *
pacer_instance(const struct pacer *p)
{
	return p->instance;
}

/* Asks the thread to end (its poll is cut within 50 ms); no wait. */
void
pacer_stop(struct pacer *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

/* Stops the thread, waits for it and frees. */
void
pacer_free(struct pacer *p)
{
	if (p == NULL)
		return;
	pacer_stop(p);
	if (p->started)
		pthread_join(p->thread, NULL);
	upload_free(p->up);
	free(p->service);
	free(p->labels);
	free(p->types);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
