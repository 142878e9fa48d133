/*
 * The pacing scheduler of pacing.h. Services and instances live in two
 * chained hash tables sized for their limits at the start; a service has
 * a stream per profile type polled for (its spacing, the polls waiting for
 * it in arrival order, its windows open). Held polls ("waiters") are on
 * one list for their deadlines and on the queue of each type they list;
 * slots (windows not ended) on one list. pacing_run walks these lists:
 * with the limits at most 20,000 waiters and 10,000 slots, a few
 * microseconds' work, and it runs only when pacing_next_wake says so.
 * Nothing here calls out except through ops: the clock and the answers.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "collector/pacing.h"
#include "common/xmalloc.h"

#define PACING_NEVER	INT64_MIN	/* an instance's type never granted */

struct pacing_service;
struct pacing_instance;
struct pacing_slot;

/* A held poll. */
struct pacing_waiter {
	void				*ctx;
	struct pacing_instance		*inst;
	unsigned			 types;		/* a normal poll's */
	int64_t				 window_s;
	int64_t				 deadline_ms;	/* its wait runs out */
	struct pacing_slot		*slot;		/* a busy poll's */
	int				*answered;	/* set when answered */
	TAILQ_ENTRY(pacing_waiter)	 all;
	TAILQ_ENTRY(pacing_waiter)	 queue[PACING_NTYPES];
};

/* One (service, type). */
struct pacing_stream {
	struct pacing_service		*svc;
	int				 type;
	int64_t				 next_ms;	/* no grant before */
	int				 nslots;	/* windows not ended */
	int				 nwaiters;
	TAILQ_HEAD(, pacing_waiter)	 waiters;	/* by arrival */
	TAILQ_ENTRY(pacing_stream)	 waiting;	/* while nwaiters */
};

struct pacing_service {
	char				*name;
	size_t				 bucket;
	struct pacing_stream		*stream[PACING_NTYPES];
	int				 ninstances;
	struct pacing_service		*next;		/* in its bucket */
	TAILQ_ENTRY(pacing_service)	 all;
};

struct pacing_instance {
	struct pacing_service		*svc;
	char				*name;
	size_t				 bucket;
	int64_t				 seen_ms;
	int64_t				 granted_ms[PACING_NTYPES];
	struct pacing_slot		*slot;		/* its window now */
	struct pacing_waiter		*waiter;	/* its normal poll */
	struct pacing_instance		*next;		/* in its bucket */
	TAILQ_ENTRY(pacing_instance)	 all;
};

/* A window granted and not ended. */
struct pacing_slot {
	uint64_t			 id;
	struct pacing_instance		*inst;
	struct pacing_stream		*stream;
	int64_t				 end_ms;	/* window + slack */
	int64_t				 claim_ms;	/* freed then if no
							   busy poll came */
	struct pacing_waiter		*busy;		/* its busy poll */
	TAILQ_ENTRY(pacing_slot)	 all;
};

struct pacing {
	struct pacing_ops		 ops;
	void				*arg;
	int64_t				 spacing_ms;
	size_t				 max_instances;
	size_t				 max_streams;
	uint64_t			 next_slot;
	struct pacing_service		**services;	/* hash buckets */
	size_t				 nservice_buckets;
	struct pacing_instance		**instances;
	size_t				 ninstance_buckets;
	TAILQ_HEAD(, pacing_service)	 service_list;
	TAILQ_HEAD(, pacing_instance)	 instance_list;
	TAILQ_HEAD(, pacing_waiter)	 waiters;
	TAILQ_HEAD(, pacing_stream)	 waiting;	/* streams with waiters */
	TAILQ_HEAD(, pacing_slot)	 slots;
	struct pacing_stream		**due;		/* pacing_try_due's */
	struct pacing_stats		 stats;
	int64_t				 wake_ms;
	int64_t				 sweep_ms;
};

/* The smallest power of two at least n (and 16). */
static size_t
pacing_pow2(size_t n)
{
	size_t p = 16;

	while (p < n)
		p <<= 1;
	return p;
}

/* FNV-1a of s, mixed with seed. */
static size_t
pacing_hash(const char *s, uintptr_t seed)
{
	uint64_t h = UINT64_C(1469598103934665603) ^ (uint64_t)seed;

	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= UINT64_C(1099511628211);
	}
	return (size_t)(h ^ (h >> 29));
}

/* The clock. */
static int64_t
pacing_now(const struct pacing *p)
{
	return p->ops.now_ms(p->arg);
}

/* Something is due at t: pacing_run must run by then. */
static void
pacing_wake_at(struct pacing *p, int64_t t)
{
	if (t < p->wake_ms)
		p->wake_ms = t;
}

/* A new scheduler. */
struct pacing *
pacing_new(const struct pacing_config *cfg, const struct pacing_ops *ops,
    void *arg)
{
	struct pacing *p = xcalloc(1, sizeof *p);
	int64_t rate = cfg->rate < 1 ? 1 : cfg->rate;

	p->ops = *ops;
	p->arg = arg;
	p->spacing_ms = 60000 / rate;
	p->max_instances = cfg->max_instances != 0 ? cfg->max_instances :
	    PACING_MAX_INSTANCES;
	p->max_streams = cfg->max_streams != 0 ? cfg->max_streams :
	    PACING_MAX_STREAMS;
	p->next_slot = cfg->first_slot != 0 ? cfg->first_slot : 1;
	p->nservice_buckets = pacing_pow2(p->max_streams);
	p->services = xcalloc(p->nservice_buckets, sizeof *p->services);
	p->ninstance_buckets = pacing_pow2(p->max_instances);
	p->instances = xcalloc(p->ninstance_buckets, sizeof *p->instances);
	p->due = xcalloc(p->max_streams, sizeof *p->due);
	TAILQ_INIT(&p->service_list);
	TAILQ_INIT(&p->instance_list);
	TAILQ_INIT(&p->waiters);
	TAILQ_INIT(&p->waiting);
	TAILQ_INIT(&p->slots);
	p->wake_ms = INT64_MAX;
	p->sweep_ms = INT64_MAX;
	return p;
}

/* The service named name, or NULL. */
static struct pacing_service *
pacing_service_find(struct pacing *p, const char *name)
{
	size_t b = pacing_hash(name, 0) & (p->nservice_buckets - 1);
	struct pacing_service *s;

	for (s = p->services[b]; s != NULL; s = s->next) {
		if (strcmp(s->name, name) == 0)
			return s;
	}
	return NULL;
}

/* A new service named name. */
static struct pacing_service *
pacing_service_new(struct pacing *p, const char *name)
{
	struct pacing_service *s = xcalloc(1, sizeof *s);

	s->name = xstrdup(name);
	s->bucket = pacing_hash(name, 0) & (p->nservice_buckets - 1);
	s->next = p->services[s->bucket];
	p->services[s->bucket] = s;
	TAILQ_INSERT_TAIL(&p->service_list, s, all);
	return s;
}

/*
 * Frees what is idle of a service without instances: streams with no
 * window open whose spacing has passed (a stream forgotten earlier would
 * let a grant come too soon), then the service once it has none.
 */
static void
pacing_service_gc(struct pacing *p, struct pacing_service *s, int64_t now)
{
	struct pacing_service **pp;
	struct pacing_stream *st;
	int t, left = 0;

	if (s->ninstances > 0)
		return;
	for (t = 0; t < PACING_NTYPES; t++) {
		if ((st = s->stream[t]) == NULL)
			continue;
		if (st->nwaiters == 0 && st->nslots == 0 && st->next_ms <= now) {
			free(st);
			s->stream[t] = NULL;
			p->stats.streams--;
		} else
			left++;
	}
	if (left > 0)
		return;
	for (pp = &p->services[s->bucket]; *pp != s; pp = &(*pp)->next)
		;
	*pp = s->next;
	TAILQ_REMOVE(&p->service_list, s, all);
	free(s->name);
	free(s);
}

/* The stream of (s, type), made if need be. */
static struct pacing_stream *
pacing_stream_get(struct pacing *p, struct pacing_service *s, int type)
{
	struct pacing_stream *st = s->stream[type];

	if (st != NULL)
		return st;
	st = xcalloc(1, sizeof *st);
	st->svc = s;
	st->type = type;
	TAILQ_INIT(&st->waiters);
	s->stream[type] = st;
	p->stats.streams++;
	return st;
}

/* The instance name of s, or NULL. */
static struct pacing_instance *
pacing_instance_find(struct pacing *p, struct pacing_service *s,
    const char *name)
{
	size_t b = pacing_hash(name, (uintptr_t)s) & (p->ninstance_buckets - 1);
	struct pacing_instance *in;

	for (in = p->instances[b]; in != NULL; in = in->next) {
		if (in->svc == s && strcmp(in->name, name) == 0)
			return in;
	}
	return NULL;
}

/* A new instance name of s. */
static struct pacing_instance *
pacing_instance_new(struct pacing *p, struct pacing_service *s,
    const char *name, int64_t now)
{
	struct pacing_instance *in = xcalloc(1, sizeof *in);
	int t;

	in->svc = s;
	in->name = xstrdup(name);
	in->seen_ms = now;
	for (t = 0; t < PACING_NTYPES; t++)
		in->granted_ms[t] = PACING_NEVER;
	in->bucket = pacing_hash(name, (uintptr_t)s) &
	    (p->ninstance_buckets - 1);
	in->next = p->instances[in->bucket];
	p->instances[in->bucket] = in;
	TAILQ_INSERT_TAIL(&p->instance_list, in, all);
	s->ninstances++;
	p->stats.instances++;
	if (p->sweep_ms == INT64_MAX)
		p->sweep_ms = now + PACING_SWEEP_MS;
	pacing_wake_at(p, p->sweep_ms);
	return in;
}

/* Forgets an instance (no poll held, no window open). */
static void
pacing_instance_free(struct pacing *p, struct pacing_instance *in)
{
	struct pacing_instance **pp;

	for (pp = &p->instances[in->bucket]; *pp != in; pp = &(*pp)->next)
		;
	*pp = in->next;
	TAILQ_REMOVE(&p->instance_list, in, all);
	in->svc->ninstances--;
	p->stats.instances--;
	free(in->name);
	free(in);
}

/* Takes a waiter off every list (it is then the caller's to free). */
static void
pacing_waiter_unlink(struct pacing *p, struct pacing_waiter *w)
{
	struct pacing_stream *st;
	int t;

	TAILQ_REMOVE(&p->waiters, w, all);
	p->stats.held--;
	if (w->slot != NULL) {
		if (w->slot->busy == w)
			w->slot->busy = NULL;
		return;
	}
	for (t = 0; t < PACING_NTYPES; t++) {
		if (!(w->types & (1u << t)))
			continue;
		st = w->inst->svc->stream[t];
		TAILQ_REMOVE(&st->waiters, w, queue[t]);
		if (--st->nwaiters == 0)
			TAILQ_REMOVE(&p->waiting, st, waiting);
	}
	if (w->inst->waiter == w)
		w->inst->waiter = NULL;
}

/* Answers a held poll: takes it off the lists, frees it, calls back. */
static void
pacing_answer(struct pacing *p, struct pacing_waiter *w,
    const struct pacing_answer *a)
{
	void *ctx = w->ctx;

	pacing_waiter_unlink(p, w);
	if (w->answered != NULL)
		*w->answered = 1;
	free(w);
	p->ops.answer(p->arg, ctx, a);
}

/* Answers ctx "wait delay_ms" (a poll held or not). */
static void
pacing_answer_wait(struct pacing *p, struct pacing_waiter *w, void *ctx,
    int64_t delay_ms)
{
	struct pacing_answer a;

	memset(&a, 0, sizeof a);
	a.action = PACING_WAIT;
	a.delay_ms = delay_ms;
	if (w != NULL)
		pacing_answer(p, w, &a);
	else
		p->ops.answer(p->arg, ctx, &a);
}

/* Grants w a window of st's type now. */
static void
pacing_grant(struct pacing *p, struct pacing_stream *st,
    struct pacing_waiter *w, int64_t now)
{
	struct pacing_slot *slot = xcalloc(1, sizeof *slot);
	struct pacing_answer a;

	slot->id = p->next_slot++;
	slot->inst = w->inst;
	slot->stream = st;
	slot->end_ms = now + w->window_s * 1000 + PACING_SLACK_MS;
	slot->claim_ms = now + PACING_CLAIM_MS;
	TAILQ_INSERT_TAIL(&p->slots, slot, all);
	p->stats.slots++;
	st->nslots++;
	w->inst->slot = slot;
	w->inst->granted_ms[st->type] = now;
	st->next_ms = now + p->spacing_ms;
	p->stats.grants[st->type]++;
	pacing_wake_at(p, slot->claim_ms);
	pacing_wake_at(p, st->next_ms);
	memset(&a, 0, sizeof a);
	a.action = PACING_PROFILE;
	a.type = st->type;
	a.duration_s = w->window_s;
	a.slot = slot->id;
	pacing_answer(p, w, &a);
}

/*
 * If st's grant is due, grants it to the fairest waiter: the one whose
 * instance got this type longest ago (never: first), the earliest to
 * arrive among equals, skipping instances in a window now.
 */
static void
pacing_stream_try(struct pacing *p, struct pacing_stream *st, int64_t now)
{
	struct pacing_waiter *w, *best = NULL;
	int t = st->type;

	if (st->nwaiters == 0 || now < st->next_ms)
		return;
	TAILQ_FOREACH(w, &st->waiters, queue[t]) {
		if (w->inst->slot != NULL)
			continue;
		if (best == NULL ||
		    w->inst->granted_ms[t] < best->inst->granted_ms[t])
			best = w;
	}
	if (best != NULL)
		pacing_grant(p, st, best, now);
}

/* Tries every stream with waiters whose grant is due. */
static void
pacing_try_due(struct pacing *p, int64_t now)
{
	struct pacing_stream *st;
	size_t i, n = 0;

	/* Collected first: a grant takes its waiter off other streams'
	 * queues, and so maybe a stream off the list being walked. */
	TAILQ_FOREACH(st, &p->waiting, waiting) {
		if (st->next_ms <= now && n < p->max_streams)
			p->due[n++] = st;
	}
	for (i = 0; i < n; i++)
		pacing_stream_try(p, p->due[i], now);
}

/*
 * A window is over: ended (its busy poll, if held, is answered "wait 0")
 * or cancelled (its busy poll went away, or none came): then counted, and
 * the spacing restarts now so the next grant may happen at once.
 */
static void
pacing_slot_end(struct pacing *p, struct pacing_slot *slot, int cancelled,
    int64_t now)
{
	struct pacing_stream *st = slot->stream;

	if (slot->busy != NULL)
		pacing_answer_wait(p, slot->busy, NULL, 0);
	TAILQ_REMOVE(&p->slots, slot, all);
	p->stats.slots--;
	st->nslots--;
	if (slot->inst->slot == slot)
		slot->inst->slot = NULL;
	if (cancelled) {
		p->stats.cancelled++;
		if (st->next_ms > now)
			st->next_ms = now;
	}
	free(slot);
}

/* Forgets instances unseen for PACING_FORGET_MS, then idle services. */
static void
pacing_sweep(struct pacing *p, int64_t now)
{
	struct pacing_instance *in, *nin;
	struct pacing_service *s, *ns;

	for (in = TAILQ_FIRST(&p->instance_list); in != NULL; in = nin) {
		nin = TAILQ_NEXT(in, all);
		if (in->waiter == NULL && in->slot == NULL &&
		    now - in->seen_ms >= PACING_FORGET_MS)
			pacing_instance_free(p, in);
	}
	for (s = TAILQ_FIRST(&p->service_list); s != NULL; s = ns) {
		ns = TAILQ_NEXT(s, all);
		pacing_service_gc(p, s, now);
	}
	p->sweep_ms = TAILQ_EMPTY(&p->service_list) ? INT64_MAX :
	    now + PACING_SWEEP_MS;
}

/* A busy poll: held until its slot's window ends, or answered now. */
static int
pacing_poll_busy(struct pacing *p, const struct pacing_request *r,
    void *ctx, struct pacing_waiter **held, int64_t now)
{
	struct pacing_service *s = pacing_service_find(p, r->service);
	struct pacing_instance *in = s != NULL ?
	    pacing_instance_find(p, s, r->instance) : NULL;
	struct pacing_slot *slot;
	struct pacing_waiter *w;

	if (in != NULL)
		in->seen_ms = now;
	if (in == NULL || (slot = in->slot) == NULL || slot->id != r->slot ||
	    now >= slot->end_ms) {
		pacing_answer_wait(p, NULL, ctx, 0);	/* unknown, over */
		return PACING_ANSWERED;
	}
	if (slot->busy != NULL)		/* superseded: a new connection */
		pacing_answer_wait(p, slot->busy, NULL, 0);
	w = xcalloc(1, sizeof *w);
	w->ctx = ctx;
	w->inst = in;
	w->slot = slot;
	w->deadline_ms = now + r->wait_ms;
	TAILQ_INSERT_TAIL(&p->waiters, w, all);
	p->stats.held++;
	slot->busy = w;
	slot->claim_ms = INT64_MAX;
	pacing_wake_at(p, w->deadline_ms);
	pacing_wake_at(p, slot->end_ms);
	*held = w;
	return PACING_HELD;
}

/* Streams r would add to s. */
static size_t
pacing_streams_needed(const struct pacing_service *s, unsigned types)
{
	size_t n = 0;
	int t;

	for (t = 0; t < PACING_NTYPES; t++) {
		if ((types & (1u << t)) && (s == NULL || s->stream[t] == NULL))
			n++;
	}
	return n;
}

/* Takes a poll. */
int
pacing_poll(struct pacing *p, const struct pacing_request *r, void *ctx,
    struct pacing_waiter **held)
{
	int64_t now = pacing_now(p);
	struct pacing_service *s;
	struct pacing_instance *in = NULL;
	struct pacing_waiter *w;
	unsigned types = r->types & ((1u << PACING_NTYPES) - 1);
	int t, answered = 0;

	*held = NULL;
	if (r->busy)
		return pacing_poll_busy(p, r, ctx, held, now);
	s = pacing_service_find(p, r->service);
	if (s != NULL)
		in = pacing_instance_find(p, s, r->instance);
	if (in == NULL && (size_t)p->stats.instances >= p->max_instances) {
		pacing_sweep(p, now);	/* it may free s */
		s = pacing_service_find(p, r->service);
	}
	if (types == 0 || (in == NULL &&
	    (size_t)p->stats.instances >= p->max_instances) ||
	    (size_t)p->stats.streams + pacing_streams_needed(s, types) >
	    p->max_streams)
		return PACING_FULL;
	if (s == NULL)
		s = pacing_service_new(p, r->service);
	if (in == NULL)
		in = pacing_instance_new(p, s, r->instance, now);
	in->seen_ms = now;
	if (in->waiter != NULL)		/* superseded: a new connection */
		pacing_answer_wait(p, in->waiter, NULL, 0);
	w = xcalloc(1, sizeof *w);
	w->ctx = ctx;
	w->inst = in;
	w->types = types;
	w->window_s = r->window_s;
	w->deadline_ms = now + r->wait_ms;
	w->answered = &answered;
	TAILQ_INSERT_TAIL(&p->waiters, w, all);
	p->stats.held++;
	in->waiter = w;
	for (t = 0; t < PACING_NTYPES; t++) {
		struct pacing_stream *st;

		if (!(types & (1u << t)))
			continue;
		st = pacing_stream_get(p, s, t);
		TAILQ_INSERT_TAIL(&st->waiters, w, queue[t]);
		if (st->nwaiters++ == 0)
			TAILQ_INSERT_TAIL(&p->waiting, st, waiting);
		if (st->next_ms > now)
			pacing_wake_at(p, st->next_ms);
	}
	pacing_wake_at(p, w->deadline_ms);
	for (t = 0; t < PACING_NTYPES && !answered; t++) {
		if (types & (1u << t))
			pacing_stream_try(p, s->stream[t], now);
	}
	if (answered)
		return PACING_ANSWERED;
	w->answered = NULL;
	*held = w;
	return PACING_HELD;
}

/* A held poll's client went away. */
void
pacing_forget(struct pacing *p, struct pacing_waiter *w)
{
	int64_t now = pacing_now(p);
	struct pacing_slot *slot = w->slot;

	pacing_waiter_unlink(p, w);
	free(w);
	if (slot == NULL)
		return;
	/* Before its end the agent died in its window: cancelled. */
	pacing_slot_end(p, slot, now < slot->end_ms, now);
	pacing_try_due(p, now);
}

/* Does what is due. */
void
pacing_run(struct pacing *p)
{
	int64_t now = pacing_now(p), wake = INT64_MAX;
	struct pacing_slot *slot, *nslot;
	struct pacing_waiter *w, *nw;
	struct pacing_stream *st;

	for (slot = TAILQ_FIRST(&p->slots); slot != NULL; slot = nslot) {
		nslot = TAILQ_NEXT(slot, all);
		if (now >= slot->end_ms)
			pacing_slot_end(p, slot, 0, now);
		else if (slot->busy == NULL && now >= slot->claim_ms)
			pacing_slot_end(p, slot, 1, now);
	}
	for (w = TAILQ_FIRST(&p->waiters); w != NULL; w = nw) {
		nw = TAILQ_NEXT(w, all);
		if (now < w->deadline_ms)
			continue;
		slot = w->slot;
		pacing_answer_wait(p, w, NULL, 0);
		if (slot != NULL)	/* the next busy poll must come soon */
			slot->claim_ms = now + PACING_CLAIM_MS;
	}
	pacing_try_due(p, now);
	if (now >= p->sweep_ms)
		pacing_sweep(p, now);

	TAILQ_FOREACH(slot, &p->slots, all) {
		if (slot->end_ms < wake)
			wake = slot->end_ms;
		if (slot->busy == NULL && slot->claim_ms < wake)
			wake = slot->claim_ms;
	}
	TAILQ_FOREACH(w, &p->waiters, all) {
		if (w->deadline_ms < wake)
			wake = w->deadline_ms;
	}
	TAILQ_FOREACH(st, &p->waiting, waiting) {
		if (st->next_ms > now && st->next_ms < wake)
			wake = st->next_ms;
	}
	if (p->sweep_ms < wake)
		wake = p->sweep_ms;
	p->wake_ms = wake;
}

/* When pacing_run next has work. */
int64_t
pacing_next_wake(const struct pacing *p)
{
	return p->wake_ms;
}

/* Answers every held poll "stop". */
void
pacing_stop(struct pacing *p)
{
	struct pacing_answer a;
	struct pacing_waiter *w;

	memset(&a, 0, sizeof a);
	a.action = PACING_STOP;
	while ((w = TAILQ_FIRST(&p->waiters)) != NULL)
		pacing_answer(p, w, &a);
}

/* The figures for /metrics. */
void
pacing_stats(const struct pacing *p, struct pacing_stats *out)
{
	*out = p->stats;
}

/* Frees everything; held polls get no answer. */
void
pacing_free(struct pacing *p)
{
	struct pacing_waiter *w;
	struct pacing_slot *slot;
	struct pacing_instance *in;
	struct pacing_service *s;
	int t;

	if (p == NULL)
		return;
	while ((w = TAILQ_FIRST(&p->waiters)) != NULL) {
		pacing_waiter_unlink(p, w);
		free(w);
	}
	while ((slot = TAILQ_FIRST(&p->slots)) != NULL) {
		TAILQ_REMOVE(&p->slots, slot, all);
		free(slot);
	}
	while ((in = TAILQ_FIRST(&p->instance_list)) != NULL) {
		TAILQ_REMOVE(&p->instance_list, in, all);
		free(in->name);
		free(in);
	}
	while ((s = TAILQ_FIRST(&p->service_list)) != NULL) {
		TAILQ_REMOVE(&p->service_list, s, all);
		for (t = 0; t < PACING_NTYPES; t++)
			free(s->stream[t]);
		free(s->name);
		free(s);
	}
	free(p->services);
	free(p->instances);
	free(p->due);
	free(p);
}
