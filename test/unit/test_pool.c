/*
 * Unit tests of the worker pool (common/pool.c) on a real libevent
 * event_base: work() runs on worker threads and done() on the loop
 * thread; a full queue refuses a job and leaves it with the caller while
 * pool_submit_force never refuses; the queued, in-flight and worker
 * counts; a job handed on to a second pool through pj.next; pool_withdraw
 * taking a queued job back (also one handed on to a second pool) but not
 * a running or finished one; pool_free draining the queue and running the
 * pending done()s; many jobs from several submitting threads at once.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "common/pool.h"
#include "test/lib/tap.h"

/* How long any wait may take before the test gives up. */
#define WAIT_SECONDS	30

/* A gate that blocks a job's work() until the test opens it. */
struct gate {
	pthread_mutex_t	 lock;
	pthread_cond_t	 cond;
	int		 passed;	/* work() calls that reached it */
	int		 open;
};

/* A test job. */
struct tjob {
	struct pool_job	 pj;		/* first member */
	int		 id;
	struct gate	*gate;		/* work() waits for it to open */
	struct pool	*hop;		/* work() passes the job on once */
	int		 works;		/* work() calls */
	pthread_t	 work_thread[2];
	int		 next_set;	/* pj.next was set when work/done ran */
	int		 dones;
	pthread_t	 done_thread;
	int		 free_in_done;	/* done() records, then frees the job */
};

static struct event_base *base;
static pthread_t loop_thread;
static atomic_int works_total;
static int dones_total;			/* loop thread only */

/* Per id, for jobs freed by done(): work() and done() calls seen. */
#define MANY_THREADS	4
#define MANY_PER_THREAD	500
#define MANY_JOBS	(MANY_THREADS * MANY_PER_THREAD)
static int many_works[MANY_JOBS], many_dones[MANY_JOBS];
static int many_bad_thread;		/* loop thread only */

/* Prints a bail-out line and stops the test. */
static void
bail(const char *why)
{
	printf("Bail out! %s\n", why);
	exit(1);
}

/* Sleeps about a millisecond. */
static void
nap(void)
{
	struct timespec ts = { 0, 1000 * 1000 };

	nanosleep(&ts, NULL);
}

/* Prepares a closed gate. */
static void
gate_init(struct gate *g)
{
	memset(g, 0, sizeof *g);
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
}

/* Frees the gate's mutex and condition. */
static void
gate_destroy(struct gate *g)
{
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
}

/* Called by work(): announces itself, then waits until the gate opens. */
static void
gate_pass(struct gate *g)
{
	pthread_mutex_lock(&g->lock);
	g->passed++;
	pthread_cond_broadcast(&g->cond);
	while (!g->open)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

/* Waits until n work() calls have reached the gate. */
static void
gate_wait_passed(struct gate *g, int n)
{
	struct timespec until;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WAIT_SECONDS;
	pthread_mutex_lock(&g->lock);
	while (g->passed < n && rc == 0)
		rc = pthread_cond_timedwait(&g->cond, &g->lock, &until);
	pthread_mutex_unlock(&g->lock);
	if (g->passed < n)
		bail("a job never reached its gate");
}

/* Opens the gate for every work() waiting at it and to come. */
static void
gate_open(struct gate *g)
{
	pthread_mutex_lock(&g->lock);
	g->open = 1;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

/* work(): on a worker thread. */
static void
tjob_work(struct pool_job *pj)
{
	struct tjob *j = (struct tjob *)pj;

	if (j->gate != NULL)
		gate_pass(j->gate);
	if (pj->next != NULL)
		j->next_set = 1;
	if (j->works < 2)
		j->work_thread[j->works] = pthread_self();
	j->works++;
	if (j->hop != NULL) {
		pj->next = j->hop;
		j->hop = NULL;
	}
	atomic_fetch_add(&works_total, 1);
}

/* done(): on the loop thread (or the one calling pool_free). */
static void
tjob_done(struct pool_job *pj)
{
	struct tjob *j = (struct tjob *)pj;

	if (pj->next != NULL)
		j->next_set = 1;
	j->dones++;
	j->done_thread = pthread_self();
	dones_total++;
	if (j->free_in_done) {
		many_works[j->id] += j->works;
		many_dones[j->id]++;
		if (!pthread_equal(j->done_thread, loop_thread) ||
		    pthread_equal(j->work_thread[0], loop_thread))
			many_bad_thread++;
		free(j);
	}
}

/* A fresh job with the given id. */
static void
tjob_init(struct tjob *j, int id)
{
	memset(j, 0, sizeof *j);
	j->pj.work = tjob_work;
	j->pj.done = tjob_done;
	j->id = id;
}

/* Ends the loop run of loop_until when its time is up. */
static void
loop_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	*(int *)arg = 1;
}

/* Runs the loop until dones_total reaches want; 0 if it timed out. */
static int
loop_until(int want)
{
	struct timeval tv = { WAIT_SECONDS, 0 };
	struct event *timer;
	int timed_out = 0;

	timer = evtimer_new(base, loop_timeout_cb, &timed_out);
	evtimer_add(timer, &tv);
	while (dones_total < want && !timed_out)
		event_base_loop(base, EVLOOP_ONCE);
	event_free(timer);
	return dones_total >= want;
}

/* Waits (without running the loop) until works_total reaches want. */
static void
wait_works(int want)
{
	int i;

	for (i = 0; i < WAIT_SECONDS * 1000; i++) {
		if (atomic_load(&works_total) >= want)
			return;
		nap();
	}
	bail("work() calls never came");
}

/* Waits (without running the loop) until pool_inflight(pool) is want. */
static void
wait_inflight(struct pool *pool, int want)
{
	int i;

	for (i = 0; i < WAIT_SECONDS * 1000; i++) {
		if (pool_inflight(pool) == want)
			return;
		nap();
	}
	bail("pool_inflight never settled");
}

/* Resets the global counters between tests. */
static void
counters_reset(void)
{
	atomic_store(&works_total, 0);
	dones_total = 0;
}

/* work() on worker threads, done() on the loop thread, the counts. */
static void
test_threads(void)
{
	enum { N = 16 };
	struct tjob jobs[N];
	struct pool *pool;
	int i, accepted = 0, on_worker = 1, on_loop = 1, once = 1;

	counters_reset();
	pool = pool_new(base, 2, 64);
	ok(pool_workers(pool) == 2, "pool_workers is 2");
	ok(pool_queued(pool) == 0 && pool_inflight(pool) == 0,
	    "a new pool has nothing queued or in flight");
	for (i = 0; i < N; i++) {
		tjob_init(&jobs[i], i);
		accepted += pool_submit(pool, &jobs[i].pj) == 0;
	}
	ok(accepted == N, "%d jobs accepted", N);

	/* The loop is not running: every done() is still pending. */
	wait_works(N);
	ok(pool_inflight(pool) == N && pool_queued(pool) == 0,
	    "work done, done() pending: %d in flight, none queued "
	    "(inflight %d, queued %d)", N, pool_inflight(pool),
	    pool_queued(pool));
	ok(dones_total == 0, "no done() runs before the loop does");

	ok(loop_until(N), "the loop runs all %d done()s", N);
	for (i = 0; i < N; i++) {
		if (pthread_equal(jobs[i].work_thread[0], loop_thread))
			on_worker = 0;
		if (!pthread_equal(jobs[i].done_thread, loop_thread))
			on_loop = 0;
		if (jobs[i].works != 1 || jobs[i].dones != 1)
			once = 0;
	}
	ok(on_worker, "every work() ran on a worker thread");
	ok(on_loop, "every done() ran on the loop thread");
	ok(once, "each job's work() and done() ran once");
	ok(pool_inflight(pool) == 0 && pool_queued(pool) == 0,
	    "afterwards nothing is queued or in flight");
	pool_free(pool);
}

/* A full queue refuses; pool_submit_force does not. */
static void
test_full_queue(void)
{
	enum { QMAX = 2, NFORCE = 3 };
	struct tjob blocker, queued[QMAX], refused, copy, forced[NFORCE];
	struct gate gate;
	struct pool *pool;
	int i, rc, ran = 1;

	counters_reset();
	gate_init(&gate);
	pool = pool_new(base, 1, QMAX);
	ok(pool_workers(pool) == 1, "pool_workers is 1");

	/* The only worker waits at the gate, so later jobs stay queued. */
	tjob_init(&blocker, 0);
	blocker.gate = &gate;
	ok(pool_submit(pool, &blocker.pj) == 0, "blocking job accepted");
	gate_wait_passed(&gate, 1);
	ok(pool_queued(pool) == 0 && pool_inflight(pool) == 1,
	    "while it runs: 0 queued, 1 in flight");
	for (i = 0; i < QMAX; i++) {
		tjob_init(&queued[i], 1 + i);
		ok(pool_submit(pool, &queued[i].pj) == 0,
		    "job %d of a queue of %d accepted", i + 1, QMAX);
	}
	ok(pool_queued(pool) == QMAX && pool_inflight(pool) == QMAX + 1,
	    "queue full: %d queued, %d in flight (%d, %d)", QMAX, QMAX + 1,
	    pool_queued(pool), pool_inflight(pool));

	tjob_init(&refused, 10);
	memcpy(&copy, &refused, sizeof copy);
	rc = pool_submit(pool, &refused.pj);
	ok(rc == -1, "a full queue refuses the next job (%d)", rc);
	ok(memcmp(&copy, &refused, sizeof copy) == 0,
	    "the refused job is untouched");
	ok(pool_queued(pool) == QMAX && pool_inflight(pool) == QMAX + 1,
	    "the refusal changes no count");

	for (i = 0; i < NFORCE; i++) {
		tjob_init(&forced[i], 20 + i);
		pool_submit_force(pool, &forced[i].pj);
	}
	ok(pool_queued(pool) == QMAX + NFORCE &&
	    pool_inflight(pool) == QMAX + NFORCE + 1,
	    "pool_submit_force queues %d more past the limit (%d queued)",
	    NFORCE, pool_queued(pool));

	gate_open(&gate);
	ok(loop_until(1 + QMAX + NFORCE), "all accepted jobs finish");
	for (i = 0; i < QMAX; i++)
		ran &= queued[i].works == 1 && queued[i].dones == 1;
	for (i = 0; i < NFORCE; i++)
		ran &= forced[i].works == 1 && forced[i].dones == 1;
	ok(ran && blocker.dones == 1, "queued and forced jobs all ran");
	ok(refused.works == 0 && refused.dones == 0,
	    "the refused job never ran");
	ok(pool_queued(pool) == 0 && pool_inflight(pool) == 0,
	    "afterwards nothing is queued or in flight");

	/* The caller still owns the refused job and may submit it again. */
	ok(pool_submit(pool, &refused.pj) == 0 &&
	    loop_until(1 + QMAX + NFORCE + 1) && refused.works == 1 &&
	    refused.dones == 1, "the refused job, submitted again, runs");
	pool_free(pool);
	gate_destroy(&gate);
}

/* A job whose work() sets pj.next runs work() there, then done(). */
static void
test_next(void)
{
	struct pool *a, *b;
	struct tjob probe_a, probe_b, j;

	counters_reset();
	a = pool_new(base, 1, 8);
	b = pool_new(base, 1, 8);

	/* Learn each pool's (only) worker thread. */
	tjob_init(&probe_a, 0);
	tjob_init(&probe_b, 1);
	pool_submit(a, &probe_a.pj);
	pool_submit(b, &probe_b.pj);
	ok(loop_until(2), "a job on each pool finishes");

	tjob_init(&j, 2);
	j.hop = b;
	ok(pool_submit(a, &j.pj) == 0, "job with a hop accepted on pool A");
	/* The loop is not running: the hand-off does without it. */
	wait_works(4);
	wait_inflight(a, 0);
	ok(j.works == 2, "work() ran on both pools while the loop was idle "
	    "(%d calls)", j.works);
	ok(pthread_equal(j.work_thread[0], probe_a.work_thread[0]) &&
	    pthread_equal(j.work_thread[1], probe_b.work_thread[0]),
	    "first on pool A's worker, then on pool B's");
	ok(pool_inflight(a) == 0 && pool_inflight(b) == 1,
	    "in flight: 0 on A, 1 on B (done() pending there)");
	ok(j.dones == 0, "done() waits for the loop");
	ok(loop_until(3), "the loop runs its done()");
	ok(j.dones == 1 && pthread_equal(j.done_thread, loop_thread),
	    "done() ran once, on the loop thread");
	ok(!j.next_set, "pj.next is cleared when the job moves");
	ok(pool_inflight(a) == 0 && pool_inflight(b) == 0 &&
	    pool_queued(a) == 0 && pool_queued(b) == 0,
	    "afterwards nothing is queued or in flight in either pool");
	pool_free(a);
	pool_free(b);
}

/* pool_withdraw takes back queued jobs only. */
static void
test_withdraw(void)
{
	struct tjob blocker, a, b, c, hopper, probe;
	struct gate gate, gate_b;
	struct pool *pool, *other;

	counters_reset();
	gate_init(&gate);
	gate_init(&gate_b);
	pool = pool_new(base, 1, 8);
	other = pool_new(base, 1, 8);

	tjob_init(&blocker, 0);
	blocker.gate = &gate;
	pool_submit(pool, &blocker.pj);
	gate_wait_passed(&gate, 1);
	tjob_init(&a, 1);
	tjob_init(&b, 2);
	tjob_init(&c, 3);
	pool_submit(pool, &a.pj);
	pool_submit(pool, &b.pj);
	pool_submit(pool, &c.pj);
	ok(pool_queued(pool) == 3 && pool_inflight(pool) == 4,
	    "three jobs queued behind a running one");
	ok(pool_withdraw(&blocker.pj) == -1,
	    "the running job cannot be withdrawn");
	ok(pool_withdraw(&b.pj) == 0, "a queued job (the middle one) is "
	    "withdrawn");
	ok(pool_queued(pool) == 2 && pool_inflight(pool) == 3,
	    "it no longer counts as queued or in flight (%d, %d)",
	    pool_queued(pool), pool_inflight(pool));
	ok(pool_withdraw(&b.pj) == -1, "withdrawing it again fails");
	gate_open(&gate);
	ok(loop_until(3), "the others finish");
	ok(a.works == 1 && a.dones == 1 && c.works == 1 && c.dones == 1 &&
	    b.works == 0 && b.dones == 0,
	    "the withdrawn job never ran and its done() was never called");
	ok(pool_withdraw(&a.pj) == -1, "a finished job cannot be withdrawn");
	ok(pool_inflight(pool) == 0 && pool_queued(pool) == 0,
	    "afterwards nothing is queued or in flight");

	/* A job handed on to a busy pool waits in that pool's queue. */
	counters_reset();
	tjob_init(&probe, 10);
	probe.gate = &gate_b;
	pool_submit(other, &probe.pj);
	gate_wait_passed(&gate_b, 1);
	tjob_init(&hopper, 11);
	hopper.hop = other;
	pool_submit(pool, &hopper.pj);
	wait_works(1);
	wait_inflight(pool, 0);
	ok(pool_queued(other) == 1, "a job handed on waits in the second "
	    "pool's queue");
	ok(pool_withdraw(&hopper.pj) == 0 && pool_queued(other) == 0 &&
	    pool_inflight(other) == 1, "it is withdrawn from there");
	gate_open(&gate_b);
	ok(loop_until(1), "the busy job finishes");
	ok(hopper.works == 1 && hopper.dones == 0,
	    "the withdrawn job ran only its first phase, and no done()");
	pool_free(pool);
	pool_free(other);
	gate_destroy(&gate);
	gate_destroy(&gate_b);
}

#define PROBES_MAX	500

/* Submits probe jobs until the pool refuses (it is stopping). */
struct prober {
	struct pool	*pool;
	struct gate	*gate;
	struct tjob	 probes[PROBES_MAX];
	int		 nprobes;	/* accepted */
};

/* Prober thread: once pool_free has begun, opens the gate. */
static void *
prober_main(void *arg)
{
	struct prober *pr = arg;

	while (pr->nprobes < PROBES_MAX) {
		tjob_init(&pr->probes[pr->nprobes], 100 + pr->nprobes);
		if (pool_submit(pr->pool, &pr->probes[pr->nprobes].pj) != 0)
			break;
		pr->nprobes++;
		nap();
	}
	gate_open(pr->gate);
	return NULL;
}

/* pool_free drains the queue and runs the pending done()s. */
static void
test_free_drains(void)
{
	enum { K = 5 };
	static struct prober pr;
	struct tjob blocker, queued[K];
	struct gate gate;
	pthread_t t;
	int i, all = 1;

	counters_reset();
	gate_init(&gate);
	memset(&pr, 0, sizeof pr);
	pr.pool = pool_new(base, 1, 1024);
	pr.gate = &gate;
	tjob_init(&blocker, 0);
	blocker.gate = &gate;
	pool_submit(pr.pool, &blocker.pj);
	gate_wait_passed(&gate, 1);
	for (i = 0; i < K; i++) {
		tjob_init(&queued[i], 1 + i);
		pool_submit(pr.pool, &queued[i].pj);
	}
	ok(pool_queued(pr.pool) == K, "%d jobs queued behind a busy worker",
	    K);

	/*
	 * The worker stays at the gate until pool_free has marked the pool
	 * stopping (the prober sees its submit refused), so pool_free starts
	 * with a job running and K or more waiting.
	 */
	if (pthread_create(&t, NULL, prober_main, &pr) != 0)
		bail("pthread_create");
	pool_free(pr.pool);
	pthread_join(t, NULL);
	ok(pr.nprobes < PROBES_MAX,
	    "a stopping pool refuses new jobs (%d accepted before)",
	    pr.nprobes);
	all = blocker.works == 1 && blocker.dones == 1;
	for (i = 0; i < K; i++)
		all &= queued[i].works == 1 && queued[i].dones == 1;
	for (i = 0; i < pr.nprobes; i++)
		all &= pr.probes[i].works == 1 && pr.probes[i].dones == 1;
	ok(all, "pool_free ran work() and done() of every accepted job "
	    "(%d)", 1 + K + pr.nprobes);
	ok(dones_total == 1 + K + pr.nprobes, "no done() ran twice");
	ok(pthread_equal(queued[K - 1].done_thread, loop_thread),
	    "the pending done()s ran on the thread calling pool_free");
	gate_destroy(&gate);
}

/* One submitting thread of test_many. */
struct submitter {
	struct pool	*pool;
	int		 first;		/* its first job id */
	int		 refused;	/* pool_submit refusals */
	int		 max_queued;	/* largest pool_queued it saw */
};

/* Submitter thread: MANY_PER_THREAD jobs, retrying when refused. */
static void *
submitter_main(void *arg)
{
	struct submitter *s = arg;
	struct tjob *j;
	int i, q;

	for (i = 0; i < MANY_PER_THREAD; i++) {
		j = malloc(sizeof *j);
		if (j == NULL)
			bail("malloc");
		tjob_init(j, s->first + i);
		j->free_in_done = 1;
		while (pool_submit(s->pool, &j->pj) != 0) {
			s->refused++;
			nap();
		}
		q = pool_queued(s->pool);
		if (q > s->max_queued)
			s->max_queued = q;
	}
	return NULL;
}

/* Several threads submit many jobs while the loop runs. */
static void
test_many(void)
{
	enum { QMAX = 16 };
	struct submitter subs[MANY_THREADS];
	pthread_t t[MANY_THREADS];
	struct pool *pool;
	int i, once = 1, refused = 0, max_queued = 0;

	counters_reset();
	pool = pool_new(base, 3, QMAX);
	for (i = 0; i < MANY_THREADS; i++) {
		memset(&subs[i], 0, sizeof subs[i]);
		subs[i].pool = pool;
		subs[i].first = i * MANY_PER_THREAD;
		if (pthread_create(&t[i], NULL, submitter_main, &subs[i]) != 0)
			bail("pthread_create");
	}
	ok(loop_until(MANY_JOBS), "%d jobs from %d threads all finish",
	    MANY_JOBS, MANY_THREADS);
	for (i = 0; i < MANY_THREADS; i++) {
		pthread_join(t[i], NULL);
		refused += subs[i].refused;
		if (subs[i].max_queued > max_queued)
			max_queued = subs[i].max_queued;
	}
	for (i = 0; i < MANY_JOBS; i++)
		if (many_works[i] != 1 || many_dones[i] != 1)
			once = 0;
	ok(once, "each job's work() and done() ran exactly once");
	ok(many_bad_thread == 0, "work() on workers, done() on the loop, "
	    "for all of them");
	ok(max_queued <= QMAX, "the queue never held more than %d (at most "
	    "%d seen; %d refusals retried)", QMAX, max_queued, refused);
	ok(pool_queued(pool) == 0 && pool_inflight(pool) == 0,
	    "afterwards nothing is queued or in flight");
	pool_free(pool);
}

int
main(void)
{
	evthread_use_pthreads();
	base = event_base_new();
	if (base == NULL)
		bail("event_base_new");
	loop_thread = pthread_self();
	test_threads();
	test_full_queue();
	test_next();
	test_withdraw();
	test_free_drains();
	test_many();
	event_base_free(base);
	libevent_global_shutdown();
	return tap_done();
}
