/*
 * Unit tests of collector/pacing.c, the pacing scheduler, under a fake
 * clock: the first poll granted at once, grants spaced 60/rate apart and
 * never more than the rate over ten simulated minutes of busy agents;
 * fair rotation (20 instances all granted within 20 grants, then evenly;
 * the oldest grant first even against arrival order); a grant due with
 * nobody waiting not stored up; busy polls held to the window's end plus
 * slack, cancelled when their client goes (the next instance granted at
 * once) or never sent (freed after the claim time), re-sent after their
 * wait; unknown slots answered at once; an instance in a window not
 * granted another type until it ends; multi-type polls; holds running out;
 * a new poll superseding an instance's held one; instances forgotten
 * after ten minutes unseen; the instance and stream limits; stop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/pacing.h"
#include "test/lib/tap.h"

#define CPU	(1u << 0)
#define HEAP	(1u << 1)
#define S	INT64_C(1000)

static int64_t test_pacing_clock = 1000000;	/* ms */

/* A poll and what it was answered. */
struct tp {
	int			 rc;
	struct pacing_waiter	*w;
	int			 answered;
	struct pacing_answer	 a;
	int64_t			 at;
};

/* The fake clock. */
static int64_t
test_pacing_now(void *arg)
{
	return test_pacing_clock;
}

/* Records an answer in its poll. */
static void
test_pacing_answer(void *arg, void *ctx, const struct pacing_answer *a)
{
	struct tp *t = ctx;

	t->answered++;
	t->a = *a;
	t->at = test_pacing_clock;
	t->w = NULL;
}

/* A scheduler at rate, with limits (0: the defaults). */
static struct pacing *
test_pacing_new(int64_t rate, size_t max_instances, size_t max_streams)
{
	struct pacing_config cfg;
	struct pacing_ops ops = { test_pacing_now, test_pacing_answer };

	memset(&cfg, 0, sizeof cfg);
	cfg.rate = rate;
	cfg.max_instances = max_instances;
	cfg.max_streams = max_streams;
	return pacing_new(&cfg, &ops, NULL);
}

/* A normal poll. */
static int
test_pacing_poll(struct pacing *p, struct tp *t, const char *svc,
    const char *inst, unsigned types, int64_t window_s, int64_t wait_s)
{
	struct pacing_request r;

	memset(t, 0, sizeof *t);
	memset(&r, 0, sizeof r);
	r.service = svc;
	r.instance = inst;
	r.types = types;
	r.window_s = window_s;
	r.wait_ms = wait_s * S;
	t->rc = pacing_poll(p, &r, t, &t->w);
	return t->rc;
}

/* A busy poll of slot. */
static int
test_pacing_busy(struct pacing *p, struct tp *t, const char *svc,
    const char *inst, uint64_t slot, int64_t wait_s)
{
	struct pacing_request r;

	memset(t, 0, sizeof *t);
	memset(&r, 0, sizeof r);
	r.service = svc;
	r.instance = inst;
	r.types = CPU;
	r.window_s = 10;
	r.wait_ms = wait_s * S;
	r.busy = 1;
	r.slot = slot;
	t->rc = pacing_poll(p, &r, t, &t->w);
	return t->rc;
}

/* Moves the clock by ms, running the scheduler when it asks (a perfect
 * timer). */
static void
test_pacing_advance(struct pacing *p, int64_t ms)
{
	int64_t end = test_pacing_clock + ms, w;
	int guard = 0;

	while ((w = pacing_next_wake(p)) <= end && guard++ < 1000000) {
		if (w > test_pacing_clock)
			test_pacing_clock = w;
		pacing_run(p);
	}
	test_pacing_clock = end;
}

/* True if t was answered "profile" of type (index) for window_s. */
static int
test_pacing_granted(const struct tp *t, int type)
{
	return t->answered == 1 && t->a.action == PACING_PROFILE &&
	    t->a.type == type && t->a.slot != 0;
}

/* True if t was answered "wait 0" once. */
static int
test_pacing_waited(const struct tp *t)
{
	return t->answered == 1 && t->a.action == PACING_WAIT &&
	    t->a.delay_ms == 0;
}

/* The figures. */
static struct pacing_stats
test_pacing_stats(struct pacing *p)
{
	struct pacing_stats st;

	pacing_stats(p, &st);
	return st;
}

/* Spacing: the first poll at once, the next at exactly 60/rate. */
static void
test_pacing_spacing(void)
{
	struct pacing *p = test_pacing_new(6, 0, 0);	/* 10 s apart */
	struct tp a, ab, b, c;
	int64_t t0 = test_pacing_clock;

	ok(test_pacing_poll(p, &a, "svc", "a", CPU, 10, 30) ==
	    PACING_ANSWERED && test_pacing_granted(&a, 0) &&
	    a.a.duration_s == 10, "spacing: the first poll is granted at once");
	test_pacing_busy(p, &ab, "svc", "a", a.a.slot, 60);
	ok(test_pacing_poll(p, &b, "svc", "b", CPU, 10, 30) == PACING_HELD &&
	    b.answered == 0 && b.w != NULL, "spacing: the second is held");
	ok(test_pacing_poll(p, &c, "other", "c", CPU, 10, 30) ==
	    PACING_ANSWERED && test_pacing_granted(&c, 0),
	    "spacing: another service has its own rate");
	test_pacing_advance(p, 9999);
	ok(b.answered == 0, "spacing: nothing within 60/rate (9.999 s)");
	test_pacing_advance(p, 1);
	ok(test_pacing_granted(&b, 0) && b.at == t0 + 10 * S,
	    "spacing: granted at exactly 10 s (at +%lld ms)",
	    (long long)(b.at - t0));
	ok(a.a.slot != b.a.slot, "spacing: slots have distinct ids");
	ok(test_pacing_stats(p).grants[0] == 3 &&
	    test_pacing_stats(p).held == 1, "spacing: 3 grants counted, a's busy poll held");
	pacing_free(p);
}

/* An agent of the simulation. */
struct test_pacing_agent {
	char		 name[16];
	struct tp	 poll;		/* its poll in flight */
	int		 busy;		/* that poll is a busy poll */
	int		 grants;
	int64_t		 window_s;
};

/* Agents react to answers: a grant is followed by its busy poll, the
 * end of a window or a wait by a new poll. Logs grant times. */
static void
test_pacing_react(struct pacing *p, struct test_pacing_agent *ag, int n,
    int64_t *log, int *nlog, int maxlog, int *who)
{
	int i, again = 1;
	uint64_t slot;

	while (again) {
		again = 0;
		for (i = 0; i < n; i++) {
			struct test_pacing_agent *a = &ag[i];

			if (a->poll.answered == 0)
				continue;
			again = 1;
			if (a->poll.a.action == PACING_PROFILE) {
				if (*nlog < maxlog) {
					who[*nlog] = i;
					log[(*nlog)++] = a->poll.at;
				}
				a->grants++;
				slot = a->poll.a.slot;
				test_pacing_busy(p, &a->poll, "sim", a->name,
				    slot, 120);
				a->busy = 1;
			} else {
				test_pacing_poll(p, &a->poll, "sim", a->name,
				    CPU, a->window_s, 30);
				a->busy = 0;
			}
		}
	}
}

/* Runs the agents for ms of simulated time. */
static void
test_pacing_simulate(struct pacing *p, struct test_pacing_agent *ag, int n,
    int64_t ms, int64_t *log, int *nlog, int maxlog, int *who)
{
	int64_t end = test_pacing_clock + ms, w;

	test_pacing_react(p, ag, n, log, nlog, maxlog, who);
	while ((w = pacing_next_wake(p)) <= end) {
		if (w > test_pacing_clock)
			test_pacing_clock = w;
		pacing_run(p);
		test_pacing_react(p, ag, n, log, nlog, maxlog, who);
	}
	test_pacing_clock = end;
}

/* The rate bound: 5 eager agents for 10 minutes at 6 a minute. */
static void
test_pacing_rate(void)
{
	struct pacing *p = test_pacing_new(6, 0, 0);
	struct test_pacing_agent ag[5];
	int64_t log[200], gap, min_gap = INT64_MAX;
	int who[200], nlog = 0, i, n = 5, per_min = 0, worst = 0, j;

	memset(ag, 0, sizeof ag);
	for (i = 0; i < n; i++) {
		snprintf(ag[i].name, sizeof ag[i].name, "r%d", i);
		ag[i].window_s = 5;
		test_pacing_poll(p, &ag[i].poll, "sim", ag[i].name, CPU, 5, 30);
	}
	test_pacing_simulate(p, ag, n, 600 * S, log, &nlog, 200, who);
	for (i = 1; i < nlog; i++) {
		gap = log[i] - log[i - 1];
		if (gap < min_gap)
			min_gap = gap;
	}
	for (i = 0; i < nlog; i++) {	/* most grants in any 60 s */
		per_min = 0;
		for (j = i; j < nlog && log[j] < log[i] + 60 * S; j++)
			per_min++;
		if (per_min > worst)
			worst = per_min;
	}
	ok(nlog >= 60 && nlog <= 61, "rate: %d grants in 10 minutes at "
	    "6/min (60 or 61)", nlog);
	ok(min_gap == 10 * S, "rate: grants at least 10 s apart (smallest "
	    "gap %lld ms)", (long long)min_gap);
	ok(worst <= 6, "rate: at most 6 in any minute (%d)", worst);
	for (i = 0; i < n; i++) {
		if (ag[i].grants < 11 || ag[i].grants > 13)
			break;
	}
	ok(i == n, "rate: every agent got its share (12 +- 1 each)");
	ok(test_pacing_stats(p).cancelled == 0,
	    "rate: no slot cancelled when every busy poll comes");
	pacing_free(p);
}

/* Fair rotation over 20 instances. */
static void
test_pacing_fairness(void)
{
	struct pacing *p = test_pacing_new(60, 0, 0);	/* 1 s apart */
	struct test_pacing_agent ag[20];
	int64_t log[400];
	int who[400], seen[20], nlog = 0, i, n = 20, distinct = 0;
	int lo = INT32_MAX, hi = 0;

	memset(ag, 0, sizeof ag);
	memset(seen, 0, sizeof seen);
	for (i = 0; i < n; i++) {
		snprintf(ag[i].name, sizeof ag[i].name, "f%02d", i);
		ag[i].window_s = 3;	/* shorter than the round */
		test_pacing_poll(p, &ag[i].poll, "sim", ag[i].name, CPU, 3, 30);
	}
	test_pacing_simulate(p, ag, n, 400 * S, log, &nlog, 400, who);
	for (i = 0; i < 20 && i < nlog; i++) {
		if (!seen[who[i]]++)
			distinct++;
	}
	ok(distinct == 20, "fairness: the first 20 grants went to 20 "
	    "instances (%d)", distinct);
	ok(nlog > 0 && who[0] == 0, "fairness: ties go by arrival (f00 "
	    "first)");
	for (i = 0; i < n; i++) {
		if (ag[i].grants < lo)
			lo = ag[i].grants;
		if (ag[i].grants > hi)
			hi = ag[i].grants;
	}
	ok(nlog >= 395 && hi - lo <= 1, "fairness: %d grants, each instance "
	    "%d to %d", nlog, lo, hi);
	for (i = 20; i < nlog; i++) {
		if (who[i] != who[i - 20])
			break;
	}
	ok(i == nlog, "fairness: a steady rotation (each instance every "
	    "20th grant)");
	pacing_free(p);
}

/* The oldest grant wins over arrival order. */
static void
test_pacing_oldest_first(void)
{
	struct pacing *p = test_pacing_new(6, 0, 0);
	struct tp a, b, c;
	int64_t t0 = test_pacing_clock;

	test_pacing_poll(p, &a, "o", "a", CPU, 1, 120);	/* a at 0 */
	test_pacing_poll(p, &b, "o", "b", CPU, 1, 120);
	test_pacing_advance(p, 10 * S);			/* b at 10 */
	ok(test_pacing_granted(&a, 0) && test_pacing_granted(&b, 0) &&
	    b.at == t0 + 10 * S, "oldest: a granted at 0 s, b at 10 s");
	test_pacing_advance(p, 3 * S);	/* windows over (1 s + slack) */
	test_pacing_poll(p, &b, "o", "b", CPU, 1, 120);	/* b first */
	test_pacing_advance(p, 1 * S);
	test_pacing_poll(p, &a, "o", "a", CPU, 1, 120);	/* then a */
	test_pacing_poll(p, &c, "o", "c", CPU, 1, 120);	/* never granted */
	test_pacing_advance(p, 6 * S);				/* 20 s */
	ok(test_pacing_granted(&c, 0) && c.at == t0 + 20 * S &&
	    a.answered == 0 && b.answered == 0,
	    "oldest: never granted goes first, though it came last");
	test_pacing_advance(p, 10 * S);				/* 30 s */
	ok(test_pacing_granted(&a, 0) && a.at == t0 + 30 * S &&
	    b.answered == 0, "oldest: then a (granted at 0 s) before b "
	    "(granted at 10 s), though b waited longer");
	test_pacing_advance(p, 10 * S);
	ok(test_pacing_granted(&b, 0), "oldest: then b");
	pacing_free(p);
}

/* A due grant is not stored up. */
static void
test_pacing_no_burst(void)
{
	struct pacing *p = test_pacing_new(6, 0, 0);
	struct tp a, b, c, d;
	int64_t t1;

	test_pacing_poll(p, &a, "n", "a", CPU, 1, 30);
	test_pacing_advance(p, 600 * S);	/* idle: 60 grants' worth */
	t1 = test_pacing_clock;
	test_pacing_poll(p, &b, "n", "b", CPU, 1, 30);
	test_pacing_poll(p, &c, "n", "c", CPU, 1, 30);
	test_pacing_poll(p, &d, "n", "d", CPU, 1, 30);
	ok(test_pacing_granted(&a, 0) && test_pacing_granted(&b, 0) &&
	    c.answered == 0 && d.answered == 0,
	    "no burst: after 10 idle minutes one poll is granted at once, "
	    "the next two held");
	test_pacing_advance(p, 9999);
	ok(c.answered == 0 && d.answered == 0, "no burst: none before the "
	    "spacing");
	test_pacing_advance(p, 1);
	ok(test_pacing_granted(&c, 0) && c.at == t1 + 10 * S &&
	    d.answered == 0, "no burst: the next one 10 s later");
	pacing_free(p);
}

/* Busy polls: held to the end; cancelled; unclaimed; unknown. */
static void
test_pacing_busy_polls(void)
{
	struct pacing *p = test_pacing_new(6, 0, 0);
	struct tp a, ab, b, bb, c, d, x;
	int64_t t0 = test_pacing_clock;

	test_pacing_poll(p, &a, "b", "a", CPU, 10, 30);
	ok(test_pacing_busy(p, &ab, "b", "a", a.a.slot, 120) == PACING_HELD,
	    "busy: the busy poll of a's slot is held");
	ok(test_pacing_busy(p, &x, "b", "a", a.a.slot + 1000, 120) ==
	    PACING_ANSWERED && test_pacing_waited(&x),
	    "busy: an unknown slot is answered wait 0 at once");
	ok(test_pacing_busy(p, &x, "b", "zz", a.a.slot, 120) ==
	    PACING_ANSWERED && test_pacing_waited(&x),
	    "busy: another instance's slot is answered wait 0 at once");
	test_pacing_advance(p, 1 * S);
	test_pacing_poll(p, &b, "b", "b", CPU, 10, 60);
	test_pacing_advance(p, 1 * S);
	ok(b.answered == 0 && ab.answered == 0, "busy: b waits for the "
	    "spacing while a profiles");
	pacing_forget(p, ab.w);		/* a's agent died at 2 s */
	ok(test_pacing_granted(&b, 0) && b.at == t0 + 2 * S,
	    "busy: its busy poll gone, the slot is cancelled and b granted "
	    "at once (+%lld ms)", (long long)(b.at - t0));
	ok(test_pacing_stats(p).cancelled == 1, "busy: 1 cancelled");
	test_pacing_poll(p, &c, "b", "c", CPU, 10, 60);
	test_pacing_advance(p, 4999);
	ok(c.answered == 0, "busy: b's grant stands within the claim time");
	test_pacing_advance(p, 1);
	ok(test_pacing_granted(&c, 0) && c.at == t0 + 7 * S &&
	    test_pacing_stats(p).cancelled == 2,
	    "busy: b sent no busy poll in 5 s: freed, c granted at once");
	/* c's busy poll waits less than the window: answered at its wait,
	 * the slot stays if the next one comes within the claim time. */
	test_pacing_busy(p, &bb, "b", "c", c.a.slot, 4);
	test_pacing_advance(p, 4 * S);
	ok(test_pacing_waited(&bb) && bb.at == t0 + 11 * S,
	    "busy: a busy poll is answered wait 0 at its own wait");
	test_pacing_advance(p, 2 * S);
	ok(test_pacing_busy(p, &bb, "b", "c", c.a.slot, 60) == PACING_HELD,
	    "busy: the next busy poll of the slot is held again");
	test_pacing_advance(p, 10 * S);
	ok(test_pacing_waited(&bb) && bb.at == t0 + 19 * S &&
	    test_pacing_stats(p).cancelled == 2,
	    "busy: held to the window's end plus 2 s (7 + 10 + 2 s), not "
	    "cancelled (+%lld ms)", (long long)(bb.at - t0));
	ok(test_pacing_busy(p, &x, "b", "c", c.a.slot, 60) ==
	    PACING_ANSWERED && test_pacing_waited(&x),
	    "busy: an ended slot is answered wait 0 at once");
	test_pacing_poll(p, &d, "b", "d", CPU, 10, 60);
	ok(test_pacing_granted(&d, 0), "busy: the spacing since c has "
	    "passed: d granted at once");
	test_pacing_busy(p, &x, "b", "d", d.a.slot, 60);
	test_pacing_busy(p, &bb, "b", "d", d.a.slot, 60);
	ok(test_pacing_waited(&x) && bb.answered == 0 &&
	    test_pacing_stats(p).held == 1,
	    "busy: a second busy poll supersedes the first (answered wait 0)");
	pacing_free(p);
}

/* An instance in a window gets nothing else; multi-type polls. */
static void
test_pacing_one_window(void)
{
	struct pacing *p = test_pacing_new(60, 0, 0);
	struct tp a, ab, ah, b, m;
	int64_t t0 = test_pacing_clock;

	test_pacing_poll(p, &a, "w", "a", CPU, 10, 30);
	test_pacing_busy(p, &ab, "w", "a", a.a.slot, 60);
	test_pacing_poll(p, &ah, "w", "a", HEAP, 10, 30);
	ok(ah.rc == PACING_HELD, "window: a in its cpu window: its heap poll "
	    "is held though heap is due");
	test_pacing_poll(p, &b, "w", "b", HEAP, 10, 30);
	ok(test_pacing_granted(&b, 1), "window: b is granted heap at once");
	test_pacing_advance(p, 11999);
	ok(ah.answered == 0, "window: nothing for a before its window ends");
	test_pacing_advance(p, 1);
	ok(test_pacing_waited(&ab) && test_pacing_granted(&ah, 1) &&
	    ah.at == t0 + 12 * S, "window: at its end (12 s) a's busy poll "
	    "is answered and its heap poll granted");
	test_pacing_advance(p, 13 * S);
	test_pacing_poll(p, &m, "w", "c", CPU | HEAP, 10, 30);
	ok(test_pacing_granted(&m, 0), "multi-type: cpu,heap both due: cpu");
	test_pacing_advance(p, 13 * S);
	test_pacing_poll(p, &a, "w", "a", CPU, 10, 30);	/* cpu taken */
	test_pacing_poll(p, &m, "w", "c", CPU | HEAP, 10, 30);
	ok(test_pacing_granted(&m, 1), "multi-type: cpu not due: heap");
	pacing_free(p);
}

/* Holds run out; a new poll supersedes; stop. */
static void
test_pacing_holds(void)
{
	struct pacing *p = test_pacing_new(1, 0, 0);
	struct tp a, b, b2, c;
	int64_t t0 = test_pacing_clock;

	test_pacing_poll(p, &a, "h", "a", CPU, 10, 30);
	test_pacing_poll(p, &b, "h", "b", CPU, 10, 2);
	test_pacing_advance(p, 1999);
	ok(b.answered == 0, "holds: held until its wait");
	test_pacing_advance(p, 1);
	ok(test_pacing_waited(&b) && b.at == t0 + 2 * S,
	    "holds: answered wait 0 when its wait (2 s) runs out");
	test_pacing_poll(p, &b, "h", "b", CPU, 10, 30);
	test_pacing_poll(p, &b2, "h", "b", CPU, 10, 30);
	ok(test_pacing_waited(&b) && b2.answered == 0 &&
	    test_pacing_stats(p).held == 1,
	    "holds: a new poll of the instance supersedes its held one");
	test_pacing_poll(p, &c, "h", "c", CPU, 10, 30);
	pacing_forget(p, c.w);
	ok(c.answered == 0 && test_pacing_stats(p).held == 1 &&
	    test_pacing_stats(p).cancelled == 0,
	    "holds: a normal poll forgotten is just dropped");
	pacing_stop(p);
	ok(b2.answered == 1 && b2.a.action == PACING_STOP &&
	    test_pacing_stats(p).held == 0, "holds: stop answers every hold");
	pacing_free(p);
}

/* Instances unseen for 10 minutes are forgotten. */
static void
test_pacing_expiry(void)
{
	struct pacing *p = test_pacing_new(60, 0, 0);
	struct tp a, b;
	int i;

	test_pacing_poll(p, &a, "e", "a", CPU, 1, 30);
	test_pacing_advance(p, 60 * S);
	for (i = 0; i < 17; i++) {	/* b polls on and on */
		test_pacing_poll(p, &b, "e", "b", HEAP, 1, 30);
		test_pacing_advance(p, 30 * S);
	}
	ok(test_pacing_stats(p).instances == 2, "expiry: 2 instances after "
	    "9.5 minutes (a last seen at 0 s)");
	test_pacing_poll(p, &b, "e", "b", HEAP, 1, 30);
	test_pacing_advance(p, 40 * S);
	ok(test_pacing_stats(p).instances == 1, "expiry: a forgotten by the "
	    "next sweep, b kept");
	test_pacing_advance(p, 11 * 60 * S);
	ok(test_pacing_stats(p).instances == 0 &&
	    test_pacing_stats(p).streams == 0, "expiry: then b and the "
	    "service's streams (%d)", test_pacing_stats(p).streams);
	ok(pacing_next_wake(p) == INT64_MAX, "expiry: nothing left to wake "
	    "for");
	test_pacing_poll(p, &a, "e", "a", CPU, 1, 30);
	ok(test_pacing_granted(&a, 0), "expiry: a forgotten instance polls "
	    "anew");
	pacing_free(p);
}

/* The limits. */
static void
test_pacing_limits(void)
{
	struct pacing *p = test_pacing_new(1, 3, 2);
	struct tp t[8];

	ok(test_pacing_poll(p, &t[0], "l", "a", CPU | HEAP, 1, 30) !=
	    PACING_FULL && test_pacing_poll(p, &t[1], "l", "b", CPU, 1, 30) ==
	    PACING_HELD && test_pacing_poll(p, &t[2], "l", "c", HEAP, 1, 30)
	    != PACING_FULL, "limits: 3 instances, 2 streams taken");
	ok(test_pacing_poll(p, &t[3], "l", "d", CPU, 1, 30) == PACING_FULL &&
	    t[3].answered == 0, "limits: a 4th instance is refused");
	ok(test_pacing_poll(p, &t[4], "l", "b", CPU, 1, 30) == PACING_HELD,
	    "limits: a known instance still polls");
	ok(test_pacing_poll(p, &t[5], "l", "c", 1u << 3, 1, 30) ==
	    PACING_FULL && test_pacing_poll(p, &t[6], "m", "c", CPU, 1, 30) ==
	    PACING_FULL, "limits: a 3rd stream (new type or service) is "
	    "refused");
	ok(test_pacing_stats(p).instances == 3 &&
	    test_pacing_stats(p).streams == 2, "limits: nothing kept of the "
	    "refused polls");
	test_pacing_advance(p, 11 * 60 * S);
	ok(test_pacing_poll(p, &t[3], "l", "d", CPU, 1, 30) != PACING_FULL,
	    "limits: room again once the others are forgotten");
	pacing_free(p);
	/* Full, a poll sweeps out its own service's last instance (and the
	 * service): what it looked up before must not be used after. */
	p = test_pacing_new(60, 1, 0);
	test_pacing_poll(p, &t[0], "only", "a", CPU, 1, 30);
	test_pacing_advance(p, 5 * S);		/* its window is over */
	test_pacing_clock += 11 * 60 * S;	/* no sweep has run since */
	ok(test_pacing_poll(p, &t[1], "only", "b", CPU, 1, 30) ==
	    PACING_ANSWERED && test_pacing_granted(&t[1], 0) &&
	    test_pacing_stats(p).instances == 1,
	    "limits: full, a stale instance is swept out for a new one");
	pacing_free(p);
	p = test_pacing_new(600, 0, 0);
	ok(p != NULL, "limits: the default limits (10,000 instances)");
	{
		char name[16];
		int i, full = 0;

		for (i = 0; i < PACING_MAX_INSTANCES + 1; i++) {
			snprintf(name, sizeof name, "i%d", i);
			if (test_pacing_poll(p, &t[7], "big", name, CPU, 1, 1)
			    == PACING_FULL)
				full++;
			if (t[7].rc == PACING_HELD)
				pacing_forget(p, t[7].w);
		}
		ok(full == 1 && test_pacing_stats(p).instances ==
		    PACING_MAX_INSTANCES, "limits: instance 10,001 refused");
	}
	pacing_free(p);
}

/* Runs the tests. */
int
main(void)
{
	test_pacing_spacing();
	test_pacing_rate();
	test_pacing_fairness();
	test_pacing_oldest_first();
	test_pacing_no_burst();
	test_pacing_busy_polls();
	test_pacing_one_window();
	test_pacing_holds();
	test_pacing_expiry();
	test_pacing_limits();
	return tap_done();
}
