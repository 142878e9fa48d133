/*
 * libprofd-agent lifecycle: profd_agent_start/stop, the LD_PRELOAD
 * constructor, fork and exit handling, and the agent thread.
 *
 * The agent thread owns everything that may block or allocate: it drains
 * the sampler's ring (every 100 ms to 1 s, a quarter of the time the ring
 * takes to fill at worst; the first tick of a window after 100 ms, so the
 * unwind tables the first samples asked for are loaded early) into a
 * stack table, arms the timers of new threads and loads unwind tables at
 * each drain tick, ends a window with
 * sampler_stop(), builds and gzips the profile, and uploads it. It sleeps
 * on a condition variable (CLOCK_MONOTONIC) until its next deadline or a
 * stop request: no event loop, no wake pipe, and no descriptor held
 * between uploads, so a program that closes every inherited descriptor
 * (close_range(3, ~0U)) takes nothing from it. The application only ever
 * pays for the signal handler.
 *
 * Start is cheap: the constructor reads the environment, checks it
 * (the collector URL too), installs the signal handler and arms the
 * start timer (starter.c): the thread is created when the first window
 * is due, from the handler at a safe point (safepoint.c), so a process
 * that ends or execs before then never has a second thread. Where no
 * handler may do that (an allocator other than glibc's, a sanitizer, not
 * x86-64) or in linked mode, the thread starts at once and sleeps until
 * the first window. Only then does the thread do the rest
 * (agent_prepare: its name, the drain interval, the profile builder, the
 * labels and the uploader; sampler_init: the ring and the timer table;
 * symbol tables are read at the first profile). profd_agent_start inits
 * the sampler at once, so a linked program learns of a conflict.
 * At exit, a thread that is idle with no window open and nothing queued
 * is not even woken.
 *
 * Schedule: the first window starts after a random delay of up to 10% of
 * the period; later ones start period * U(0.9, 1.1) after the previous
 * start, so a fleet drifts apart. window == period means continuous: the
 * timer is never disarmed and each window is cut in place. A window with
 * no samples uploads nothing.
 *
 * fork(): timers are not inherited, and the agent thread does not exist in
 * the child, so the pthread_atfork child handler forgets the parent's
 * state without touching it (closing only a socket copy that is still
 * ours) and starts the child's own agent (thread, timers, ring, uploads)
 * with the parent's settings, lazily like the constructor (a start timer
 * of its own: a child that execs or exits at once has no thread); the child's
 * profiles carry its own pid label. exec'd programs get a fresh agent from
 * the constructor when PROFD_SERVICE is still in their environment.
 *
 * Exit: profd_agent_stop() (also registered with atexit) ends the current
 * window and uploads what is queued until exit_timeout_ms (default 200 ms)
 * after the stop, then joins the thread; the program's exit is never held
 * longer (plus a few ms to join).
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/core/build.h"
#include "agent/inproc/heap.h"
#include "agent/inproc/heapprof.h"
#include "agent/inproc/pacer.h"
#include "agent/inproc/pysample.h"
#include "agent/inproc/settings.h"
#include "agent/inproc/profd_agent.h"
#include "agent/inproc/safepoint.h"
#include "agent/inproc/sampler.h"
#include "agent/inproc/sigmask.h"
#include "agent/core/stacks.h"
#include "agent/inproc/starter.h"
#include "agent/inproc/unwind.h"
#include "agent/core/upload.h"
#include "common/xmalloc.h"

#define AGENT_RING_SLOTS	2048
#define AGENT_DRAIN_MIN_MS	100
#define AGENT_DRAIN_MAX_MS	1000
#define AGENT_FIRST_TICK_MS	100	/* the first drain of a window */
#define AGENT_JOIN_SLACK_MS	20
#define AGENT_IDLE_MS		3600000
#define AGENT_PACER_RECHECK_MS	50	/* the pacer's first answer */
#define AGENT_PACER_FIRST_MS	1500	/* is waited for at most this */

struct agent {
	struct settings		 cfg;
	pid_t			 pid;
	pthread_t		 thread;	/* valid once running */
	_Atomic int		 running;	/* the thread exists */
	_Atomic int		 spawn_failed;
	pthread_mutex_t		 lock;		/* guards stop_at, busy */
	pthread_cond_t		 cond;
	int64_t			 stop_at;	/* exit deadline (ms), 0: run */
	int			 busy;		/* in agent_step */
	int			 sampler_ready;	/* sampler_init done */
	int			 prepared;	/* agent_prepare done */
	struct upload		*up;
	struct build		*build;
	struct stacks		 stacks;
	struct heapprof		*heap;		/* heap profiling runs */
	int			 window_heap;	/* the CPU window also makes
						   heap profiles (own
						   schedule) */
	struct pacer		*pacer;		/* NULL: no pacing */
	int			 pacing_off;	/* PROFD_PACING=off */
	int			 pacer_news;	/* under lock: wake up */
	int64_t			 pacer_since;	/* the pacer's start (ms) */
	uint64_t		 heap_seq;	/* heap profiles built */
	int64_t			 heap_end_at;	/* a paced heap window's end */
	struct timespec		 heap_mono;	/* its start */
	int64_t			 heap_wall_ns;
	int			 in_window;
	int			 off;		/* the signal taken over */
	int64_t			 start_at;	/* next window (ms), 0: none */
	int64_t			 end_at;	/* end of the open window */
	int64_t			 drain_at;	/* next drain tick */
	struct timespec		 win_mono;	/* window start */
	int64_t			 win_wall_ns;
	uint64_t		 win_drops;	/* sampler_drops() at start */
	uint64_t		 win_lost;	/* sampler_lost() at start */
	uint64_t		 seq;
	uint64_t		 rng;
	int64_t			 drain_ms;	/* ring drain interval */
	int			 tick_soon;	/* unwind tables coming in */
};

static pthread_mutex_t	 agent_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct agent	*agent_current;
static pthread_once_t	 agent_once = PTHREAD_ONCE_INIT;
static int		 agent_pacing_off;	/* PROFD_PACING=off */

static int	agent_start(const struct profd_agent_config *, int, char **);
static int	agent_prepare(struct agent *);

/* One line on stderr, prefixed with the pid (start-up problems only). */
static void __attribute__((format(printf, 1, 2)))
agent_say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	fprintf(stderr, "profd-agent[%d]: %s\n", (int)getpid(), buf);
}

/*
 * A line on stderr only with PROFD_VERBOSE: once the program runs, its
 * stderr is its own (it may even be another file by now).
 */
#define agent_log(a, ...) do {						\
	if ((a)->cfg.verbose)						\
		agent_say(__VA_ARGS__);					\
} while (0)

/* xorshift64* for schedule jitter. */
static uint64_t
agent_rand(struct agent *a)
{
	a->rng ^= a->rng >> 12;
	a->rng ^= a->rng << 25;
	a->rng ^= a->rng >> 27;
	return a->rng * 2685821657736338717ULL;
}

/* Stops profiling for good: the program's masks are its own again. */
static void
agent_turn_off(struct agent *a)
{
	a->off = 1;
	sigmask_guard(0);
}

/* Moves everything from the ring into the window's stack table. */
static void
agent_drain(struct agent *a)
{
	struct sampler_stack st;
	uintptr_t mixed[SAMPLER_MAX_MIXED];
	uint32_t n;

	pysample_drain_begin();
	while (sampler_pop(&st)) {
		st.n = build_fix_leaf(a->build, st.pcs, st.n,
		    SAMPLER_MAX_FRAMES, st.link);
		n = pysample_mix(st.pcs, st.n, st.py, st.npy, st.pyentries,
		    mixed, SAMPLER_MAX_MIXED);
		stacks_add(&a->stacks, mixed, n, st.weight);
	}
}

/*
 * Time to the next drain tick: the drain interval, or AGENT_FIRST_TICK_MS
 * while new unwind tables are coming in (a walk through a newly loaded
 * object may ask for the next), so a window's first samples soon get
 * whole stacks.
 */
static int64_t
agent_next_tick(const struct agent *a)
{
	return a->tick_soon && a->drain_ms > AGENT_FIRST_TICK_MS ?
	    AGENT_FIRST_TICK_MS : a->drain_ms;
}

/*
 * The drain tick: runs every drain interval while a window is open (also
 * between the wait slices of a slow upload). Per-tick work goes here:
 * drain the ring, load the unwind tables the walks asked for, arm new
 * threads' timers and, if the program has taken the agent's signal, step
 * aside for good.
 */
static void
agent_drain_tick(struct agent *a)
{
	agent_drain(a);
	a->tick_soon = unwind_refresh();
	if (a->in_window && sampler_tick() != 0) {
		agent_log(a, "the program installed its own handler for signal "
		    "%d; agent stops profiling", sampler_signal());
		stacks_reset(&a->stacks);
		a->in_window = 0;
		agent_turn_off(a);
	}
}

/* Writes a profile of kind (cpu, heap, allocs) to the output directory. */
static void
agent_write_file(struct agent *a, const char *kind, uint64_t seq,
    const uint8_t *data, size_t len)
{
	char *path, *tmp;
	FILE *f;

	path = xasprintf("%s/%s-%s-%d-%" PRIu64 ".pb.gz", a->cfg.output_dir,
	    a->cfg.service, kind, (int)getpid(), seq);
	tmp = xasprintf("%s.tmp", path);
	if ((f = fopen(tmp, "we")) == NULL ||
	    fwrite(data, 1, len, f) != len || fclose(f) != 0 ||
	    rename(tmp, path) != 0)
		agent_log(a, "cannot write %s: %s", path, strerror(errno));
	free(tmp);
	free(path);
}

/* Queues (and writes) one heap profile of kind heap or allocs. */
static void
agent_heap_queue(struct agent *a, const char *kind, uint8_t *data,
    size_t len)
{
	if (data == NULL)
		return;
	agent_log(a, "%s profile %" PRIu64 ": %zu bytes", kind, a->heap_seq,
	    len);
	if (a->cfg.output_dir != NULL)
		agent_write_file(a, kind, a->heap_seq, data, len);
	if (a->up != NULL)
		upload_push_as(a->up, data, len, "heap",
		    strcmp(kind, "heap") == 0 ? "heap=inuse" : "heap=allocs");
	else
		free(data);
}

/*
 * The window's heap profiles: in use now, and allocated during it; with
 * remark, the next window's allocations count from this very moment.
 */
static void
agent_heap_end(struct agent *a, const struct build_window *w, int remark)
{
	uint8_t *heap, *allocs;
	size_t heaplen, allocslen;
	char *cause = NULL;

	/* Heap sampling began during the window: allocations since then. */
	if (a->heap == NULL && heap_enabled())
		a->heap = heapprof_new();
	if (a->heap == NULL)
		return;
	a->heap_seq++;
	if (heapprof_build(a->heap, a->build, w, remark, &heap, &heaplen,
	    &allocs, &allocslen, &cause) != 0) {
		agent_log(a, "cannot build heap profiles: %s", cause);
		free(cause);
		return;
	}
	agent_heap_queue(a, "heap", heap, heaplen);
	agent_heap_queue(a, "allocs", allocs, allocslen);
}

/* Closes the window: drain, and build and queue unless it is empty. */
static void
agent_window_end(struct agent *a, int disarm)
{
	struct build_window w;
	struct timespec now;
	uint64_t drops, lost;
	uint8_t *data = NULL;
	size_t len = 0;
	char *cause = NULL;

	if (!a->in_window)
		return;
	if (disarm) {
		sampler_stop();
		a->in_window = 0;
	}
	agent_drain(a);
	clock_gettime(CLOCK_MONOTONIC, &now);
	drops = sampler_drops();
	lost = sampler_lost();
	w.time_nanos = a->win_wall_ns;
	w.duration_nanos = (int64_t)(now.tv_sec - a->win_mono.tv_sec) *
	    1000000000LL + (now.tv_nsec - a->win_mono.tv_nsec);
	w.hz = a->cfg.hz;
	w.drops = drops - a->win_drops;
	w.lost = lost - a->win_lost;
	if (a->stacks.total == 0 && w.lost == 0)
		agent_log(a, "window without samples: nothing to send");
	else if (build_profile(a->build, &a->stacks, &w, &data, &len,
	    &cause) != 0) {
		agent_log(a, "cannot build profile: %s", cause);
		free(cause);
	} else {
		a->seq++;
		agent_log(a, "profile %" PRIu64 ": %" PRId64 " samples, "
		    "%zu stacks, %zu bytes", a->seq, a->stacks.total,
		    a->stacks.n, len);
		if (a->cfg.output_dir != NULL)
			agent_write_file(a, "cpu", a->seq, data, len);
		if (a->up != NULL)
			upload_push(a->up, data, len);
		else
			free(data);
	}
	if (a->window_heap)
		agent_heap_end(a, &w, !disarm);
	stacks_reset(&a->stacks);
	pysample_window_done();
	/* The next window of a continuous run starts where this one ended. */
	a->win_mono = now;
	a->win_wall_ns += w.duration_nanos;
	a->win_drops = drops;
	a->win_lost = lost;
}

/* The window's time is up: end it and schedule (or begin) the next. */
static void
agent_window_cut(struct agent *a, int64_t now)
{
	int64_t started = (int64_t)a->win_mono.tv_sec * 1000 +
	    a->win_mono.tv_nsec / 1000000, period_ms;

	if (a->pacer != NULL && pacer_mode(a->pacer) == PACER_PACED) {
		/* The collector says when the next one is. */
		agent_window_end(a, 1);
		return;
	}
	if (a->cfg.window_sec >= a->cfg.period_sec && sampler_owns_signal()) {
		agent_window_end(a, 0);
		a->end_at = now + (int64_t)a->cfg.window_sec * 1000;
		return;
	}
	agent_window_end(a, 1);
	period_ms = (int64_t)a->cfg.period_sec * 1000;
	a->start_at = started + period_ms * 9 / 10 +
	    (int64_t)(agent_rand(a) % (uint64_t)(period_ms / 5 + 1));
	if (a->start_at <= now)
		a->start_at = now + 1;
}

/*
 * Opens a CPU window of seconds (heap: with heap profiles at its end, on
 * the agent's own schedule), unless the program took the agent's signal
 * over.
 */
static void
agent_window_start(struct agent *a, int64_t now, int seconds, int heap)
{
	struct timespec wall;
	const char *msg;
	char *cause = NULL;

	if (a->off)
		return;
	if (!a->prepared && agent_prepare(a) != 0) {
		agent_turn_off(a);
		return;
	}
	if (!a->sampler_ready) {
		if (sampler_init(a->cfg.signal, AGENT_RING_SLOTS,
		    &cause) != 0) {
			agent_log(a, "%s", cause);
			free(cause);
			agent_turn_off(a);
			return;
		}
		a->sampler_ready = 1;
	}
	if (!sampler_owns_signal()) {
		agent_log(a, "the program installed its own handler for signal "
		    "%d; agent stops profiling", sampler_signal());
		agent_turn_off(a);
		return;
	}
	/* Samples that arrived after the last window are not ours. */
	agent_drain(a);
	stacks_reset(&a->stacks);
	pysample_window_done();
	if ((msg = pysample_prepare()) != NULL)
		agent_log(a, "%s", msg);
	a->window_heap = heap;
	if (heap && a->heap == NULL && heap_enabled())
		a->heap = heapprof_new();
	if (heap && a->heap != NULL)
		heapprof_mark(a->heap);
	clock_gettime(CLOCK_MONOTONIC, &a->win_mono);
	clock_gettime(CLOCK_REALTIME, &wall);
	a->win_wall_ns = (int64_t)wall.tv_sec * 1000000000LL + wall.tv_nsec;
	a->win_drops = sampler_drops();
	a->win_lost = sampler_lost();
	if (sampler_start(a->cfg.hz, &cause) != 0) {
		agent_log(a, "%s; agent stops profiling", cause);
		free(cause);
		agent_turn_off(a);
		return;
	}
	a->in_window = 1;
	a->drain_at = now + (a->drain_ms < AGENT_FIRST_TICK_MS ? a->drain_ms :
	    AGENT_FIRST_TICK_MS);
	a->end_at = now + (int64_t)seconds * 1000;
}

/* A heap window granted by the collector: allocations count from now. */
static void
agent_heap_window_start(struct agent *a, int64_t now, int seconds)
{
	struct timespec wall;

	if (!heap_enabled() || a->heap_end_at != 0)
		return;
	if (a->heap == NULL)
		a->heap = heapprof_new();
	heapprof_mark(a->heap);
	clock_gettime(CLOCK_MONOTONIC, &a->heap_mono);
	clock_gettime(CLOCK_REALTIME, &wall);
	a->heap_wall_ns = (int64_t)wall.tv_sec * 1000000000LL + wall.tv_nsec;
	a->heap_end_at = now + (int64_t)seconds * 1000;
}

/* The end of a granted heap window: its heap and allocs profiles. */
static void
agent_heap_window_end(struct agent *a)
{
	struct build_window w;
	struct timespec now;

	if (a->heap_end_at == 0)
		return;
	a->heap_end_at = 0;
	clock_gettime(CLOCK_MONOTONIC, &now);
	memset(&w, 0, sizeof w);
	w.time_nanos = a->heap_wall_ns;
	w.duration_nanos = (int64_t)(now.tv_sec - a->heap_mono.tv_sec) *
	    1000000000LL + (now.tv_nsec - a->heap_mono.tv_nsec);
	w.hz = a->cfg.hz;
	agent_heap_end(a, &w, 0);
}

/* The collector granted a window: open it. */
static void
agent_grant(struct agent *a, const struct pacer_grant *g, int64_t now)
{
	if (a->off)
		return;
	if (strcmp(g->type, "heap") == 0) {
		agent_heap_window_start(a, now, g->duration_s);
		return;
	}
	if (strcmp(g->type, "cpu") != 0)
		return;
	if (a->in_window) {
		/* A window of our own is still open: it covers the grant. */
		if (a->end_at < now + (int64_t)g->duration_s * 1000)
			a->end_at = now + (int64_t)g->duration_s * 1000;
		return;
	}
	agent_window_start(a, now, g->duration_s, 0);
}

/* The pacer's thread: whether the agent is stopping (its polls end). */
static int
agent_pacer_stopping(void *arg)
{
	struct agent *a = arg;
	int stopping;

	pthread_mutex_lock(&a->lock);
	stopping = a->stop_at != 0;
	pthread_mutex_unlock(&a->lock);
	return stopping;
}

/* The pacer's thread: a grant came or the mode changed; wake the agent. */
static void
agent_pacer_notify(void *arg)
{
	struct agent *a = arg;

	pthread_mutex_lock(&a->lock);
	a->pacer_news = 1;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
}

/* The exit deadline if a stop was asked for, else 0; else busy := set. */
static int64_t
agent_stop_deadline(struct agent *a, int set)
{
	int64_t at;

	pthread_mutex_lock(&a->lock);
	if ((at = a->stop_at) == 0 && set)
		a->busy = 1;
	pthread_mutex_unlock(&a->lock);
	return at;
}

/* Between an upload's wait slices: keep draining; pass the exit deadline. */
static int64_t
agent_upload_hook(void *arg)
{
	struct agent *a = arg;
	int64_t now = upload_now_ms();

	if (a->in_window && now >= a->drain_at) {
		agent_drain_tick(a);
		a->drain_at = now + agent_next_tick(a);
	}
	return agent_stop_deadline(a, 0);
}

/* Sleeps until wake (monotonic ms) or a stop request. */
static void
agent_sleep_until(struct agent *a, int64_t wake)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(wake / 1000);
	ts.tv_nsec = (long)(wake % 1000) * 1000000;
	pthread_mutex_lock(&a->lock);
	a->busy = 0;
	while (a->stop_at == 0 && !a->pacer_news && upload_now_ms() < wake)
		if (pthread_cond_timedwait(&a->cond, &a->lock, &ts) ==
		    ETIMEDOUT)
			break;
	a->pacer_news = 0;
	pthread_mutex_unlock(&a->lock);
}

/*
 * What only a window needs, done by the thread when the first one opens,
 * so that a process that ends before it (most short-lived ones) never
 * pays for it: the thread's name and signal, the drain interval, the
 * profile builder, the labels (the pid is this process's, also in a fork
 * child) and the uploader. -1 if the uploader cannot be had.
 */
static int
agent_prepare(struct agent *a)
{
	struct upload_tls tls = { a->cfg.ca_file, a->cfg.cert_file,
	    a->cfg.key_file };
	sigset_t set;
	char *labels, *cause = NULL;

	a->prepared = 1;
	/* Sample this thread too: its CPU time is the agent's overhead. */
	sigemptyset(&set);
	sigaddset(&set, a->cfg.signal);
	sigmask_real(SIG_UNBLOCK, &set, NULL);
	pthread_setname_np(pthread_self(), "profd-agent");
	a->build = build_new();
	build_set_namer(a->build, pysample_frame, NULL, "[python]");
	a->drain_ms = sampler_drain_interval(a->cfg.hz, AGENT_RING_SLOTS,
	    AGENT_DRAIN_MIN_MS, AGENT_DRAIN_MAX_MS);
	if (a->cfg.collector == NULL)
		return 0;
	labels = settings_process_labels(a->cfg.labels);
	a->up = upload_new(a->cfg.collector, a->cfg.service, labels,
	    a->cfg.token, &tls, (size_t)a->cfg.queue_max, a->cfg.verbose,
	    &cause);
	free(labels);
	if (a->up == NULL) {
		agent_log(a, "%s", cause);
		free(cause);
		return -1;
	}
	upload_set_hook(a->up, agent_upload_hook, a);
	if (!a->pacing_off) {
		a->pacer = pacer_new(a->cfg.collector, a->cfg.service,
		    a->cfg.labels, a->cfg.token, &tls, heap_enabled() ? "cpu,heap" :
		    "cpu", a->cfg.window_sec, a->cfg.verbose,
		    agent_pacer_notify, agent_pacer_stopping, a, NULL);
		if (a->pacer != NULL && pacer_start(a->pacer) != 0) {
			pacer_free(a->pacer);
			a->pacer = NULL;
		}
		a->pacer_since = upload_now_ms();
	}
	return 0;
}

/*
 * A window of the agent's own schedule is due. The first one prepares
 * (the pacer starts there); while the pacer has not heard from the
 * collector the window waits, at most AGENT_PACER_FIRST_MS (a pacing
 * collector answers the first poll within a second, others at once); a
 * paced agent leaves its schedule to the collector.
 */
static void
agent_own_start(struct agent *a, int64_t now)
{
	int mode;

	if (!a->prepared && agent_prepare(a) != 0) {
		agent_turn_off(a);
		a->start_at = 0;
		return;
	}
	mode = a->pacer != NULL ? pacer_mode(a->pacer) : PACER_OWN;
	if (mode == PACER_UNKNOWN && now < a->pacer_since +
	    AGENT_PACER_FIRST_MS) {
		a->start_at = now + AGENT_PACER_RECHECK_MS;
		return;
	}
	a->start_at = 0;
	if (mode != PACER_PACED)
		agent_window_start(a, now, a->cfg.window_sec, 1);
}

/* One pass of the thread: what is due now; returns when to wake next. */
static int64_t
agent_step(struct agent *a)
{
	int64_t now = upload_now_ms(), wake, retry;
	struct pacer_grant g;

	if (a->start_at != 0 && now >= a->start_at)
		agent_own_start(a, now);
	if (a->pacer != NULL && pacer_take(a->pacer, &g))
		agent_grant(a, &g, now);
	if (a->heap_end_at != 0 && now >= a->heap_end_at)
		agent_heap_window_end(a);
	if (a->in_window && now >= a->drain_at) {
		agent_drain_tick(a);
		a->drain_at = now + agent_next_tick(a);
	}
	if (a->in_window && now >= a->end_at)
		agent_window_cut(a, now);
	retry = a->up != NULL ? upload_run(a->up) : -1;
	now = upload_now_ms();
	wake = now + AGENT_IDLE_MS;
	if (a->start_at != 0 && a->start_at < wake)
		wake = a->start_at;
	if (a->heap_end_at != 0 && a->heap_end_at < wake)
		wake = a->heap_end_at;
	if (a->in_window && a->drain_at < wake)
		wake = a->drain_at;
	if (a->in_window && a->end_at < wake)
		wake = a->end_at;
	if (retry >= 0 && now + retry < wake)
		wake = now + retry;
	return wake;
}

/* The agent thread: windows and uploads until stopped, then the last. */
static void *
agent_main(void *arg)
{
	struct agent *a = arg;
	int64_t deadline;

	heap_exclude_thread();
	while ((deadline = agent_stop_deadline(a, 1)) == 0)
		agent_sleep_until(a, agent_step(a));
	/* The pacer winds down while the last profiles are built and sent. */
	pacer_stop(a->pacer);
	agent_window_end(a, 1);
	agent_heap_window_end(a);
	if (a->sampler_ready)
		sampler_stop();
	if (a->up != NULL)
		upload_flush(a->up, deadline);
	pacer_free(a->pacer);
	a->pacer = NULL;
	return NULL;
}

/*
 * Creates the agent thread, every signal blocked in it (the program's
 * signals never land there; agent_prepare unblocks the agent's own).
 * Also runs in the signal handler, at a safe point (starter.c): nothing
 * here allocates or locks but pthread_create itself.
 */
static int
agent_spawn(struct agent *a)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	sigmask_real(SIG_SETMASK, &all, &old);
	rc = pthread_create(&a->thread, NULL, agent_main, a);
	sigmask_real(SIG_SETMASK, &old, NULL);
	if (rc == 0)
		atomic_store(&a->running, 1);
	else
		atomic_store(&a->spawn_failed, 1);
	return rc;
}

/* The start timer's callback (in the handler): the thread, now. */
static void
agent_start_cb(void *arg)
{
	struct agent *a = arg;

	if (agent_spawn(a) != 0)
		agent_turn_off(a);
}

/*
 * Whether the agent has a thread. A start that fired on another thread
 * may still be creating it: waits for the outcome (a few microseconds).
 */
static int
agent_has_thread(struct agent *a)
{
	int spins;

	for (spins = 0; spins < 100000; spins++) {
		if (atomic_load(&a->running))
			return 1;
		if (atomic_load(&a->spawn_failed) || starter_pending())
			return 0;
		sched_yield();
	}
	return 0;
}

/* Frees an agent whose thread is gone (or never started). */
static void
agent_free(struct agent *a)
{
	pacer_free(a->pacer);
	if (a->up != NULL)
		upload_free(a->up);
	build_free(a->build);
	heapprof_free(a->heap);
	stacks_free(&a->stacks);
	settings_clear(&a->cfg);
	pthread_cond_destroy(&a->cond);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

/*
 * Fork child: the agent thread does not exist here; forget the parent's
 * agent (its copy is left as is) and start the child's own with the same
 * settings, lazily: only the thread is started here, and it maps the ring
 * and creates timers at its first window, so a child that execs at once
 * pays for one pthread_create.
 */
static void
agent_atfork_child(void)
{
	struct profd_agent_config cfg;
	struct agent *parent = agent_current;
	char *cause = NULL;

	pthread_mutex_init(&agent_mutex, NULL);
	if (parent == NULL)
		return;
	sampler_forget();
	starter_forget();
	upload_atfork_child(parent->up);
	agent_current = NULL;	/* the parent's copy is left as is */
	if (parent->off)
		return;
	memset(&cfg, 0, sizeof cfg);
	cfg.collector_url = parent->cfg.collector;
	cfg.no_upload = parent->cfg.collector == NULL;
	cfg.service = parent->cfg.service;
	cfg.labels = parent->cfg.labels;
	cfg.token = parent->cfg.token;
	cfg.output_dir = parent->cfg.output_dir;
	cfg.hz = parent->cfg.hz;
	cfg.window_sec = parent->cfg.window_sec;
	cfg.period_sec = parent->cfg.period_sec;
	cfg.queue_max = parent->cfg.queue_max;
	cfg.verbose = parent->cfg.verbose;
	cfg.signal = parent->cfg.signal;
	cfg.exit_timeout_ms = parent->cfg.exit_timeout_ms == 0 ? -1 :
	    parent->cfg.exit_timeout_ms;
	sigmask_guard(0);
	if (agent_start(&cfg, 1, &cause) != 0) {
		if (cfg.verbose)
			agent_say("%s; profiling off in this child", cause);
		free(cause);
	}
}

/*
 * Exit. When the agent thread sleeps with no window open and nothing
 * queued (a short process before its first window), there is nothing to
 * send: mark it stopped without waking it, detach it and let the process
 * end (a is not freed; the thread, should it wake, only sees the stop and
 * returns).
 * That costs the exit one lock instead of a thread wake-up and join, which
 * on a busy machine waits for a CPU. Otherwise flush and stop.
 */
static void
agent_atexit(void)
{
	struct agent *a;
	int idle;

	pthread_mutex_lock(&agent_mutex);
	a = agent_current;
	if (a != NULL && a->pid == getpid() && starter_cancel()) {
		/* No thread yet and none wanted now (a is left as is). */
		agent_current = NULL;
		a = NULL;
	}
	if (a != NULL && a->pid == getpid() && !agent_has_thread(a)) {
		agent_current = NULL;
		a = NULL;
	}
	if (a != NULL && a->pid == getpid()) {
		pthread_mutex_lock(&a->lock);
		/* in_window and the queue are the thread's; it is idle. */
		idle = !a->busy && !a->in_window && a->heap_end_at == 0 &&
		    (a->up == NULL || upload_idle(a->up));
		if (idle) {
			a->stop_at = upload_now_ms();
			agent_current = NULL;
			pthread_detach(a->thread);
		}
		pthread_mutex_unlock(&a->lock);
	}
	pthread_mutex_unlock(&agent_mutex);
	profd_agent_stop();
}

/* Registers the fork and exit hooks once per process. */
static void
agent_hooks_once(void)
{
	/*
	 * The heap tables' lock first: its child handler (run first) frees
	 * it before ours allocates in the child.
	 */
	heap_atfork_register();
	pthread_atfork(NULL, NULL, agent_atfork_child);
	atexit(agent_atexit);
}

/*
 * Starts the agent thread with cfg. lazy (LD_PRELOAD's constructor):
 * sampler_init (the ring, the handler) waits for the first window, so a
 * process that ends before it never pays for them.
 */
static int
agent_start(const struct profd_agent_config *cfg, int lazy, char **errstr)
{
	struct agent *a;
	pthread_condattr_t ca;
	struct timespec now;
	char *cause = NULL, *ignored = NULL;
	int rc;

	a = xcalloc(1, sizeof *a);
	pthread_mutex_init(&a->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (settings_check(cfg, &a->cfg, errstr) != 0) {
		agent_free(a);
		return -1;
	}
	a->pacing_off = agent_pacing_off;
	pthread_mutex_lock(&agent_mutex);
	if (agent_current != NULL) {
		pthread_mutex_unlock(&agent_mutex);
		agent_free(a);
		return xcause(errstr, "the agent is already running");
	}
	if (!lazy) {
		if (sampler_init(a->cfg.signal, AGENT_RING_SLOTS, &cause) != 0)
			goto fail;
		a->sampler_ready = 1;
	}
	/* The uploader itself waits for the first window (agent_prepare). */
	if (a->cfg.collector != NULL &&
	    upload_check_url(a->cfg.collector, &cause) != 0)
		goto fail_sampler;
	a->pid = getpid();
	clock_gettime(CLOCK_REALTIME, &now);
	a->rng = ((uint64_t)a->pid << 32) ^ (uint64_t)now.tv_nsec ^
	    (uint64_t)(uintptr_t)a;
	if (a->rng == 0)
		a->rng = 1;
	a->start_at = upload_now_ms() + (int64_t)(agent_rand(a) %
	    ((uint64_t)a->cfg.period_sec * 100 + 1));

	pthread_once(&agent_once, agent_hooks_once);
	/* From now on the program's masks leave the agent's signal alone. */
	sigmask_guard(a->cfg.signal);
	/*
	 * Lazily: the thread when the first window is due (starter.c), if
	 * a handler may create it here; else (or linked) at once.
	 */
	if (lazy && sampler_install(a->cfg.signal, &ignored) == 0 &&
	    safepoint_prepare(a->cfg.signal) == 0 &&
	    starter_arm(a->cfg.signal, a->start_at, agent_start_cb, a) == 0)
		rc = 0;
	else
		rc = agent_spawn(a);
	free(ignored);
	if (rc != 0) {
		sigmask_guard(0);
		xcause(&cause, "pthread_create: %s", strerror(rc));
		goto fail_sampler;
	}
	agent_current = a;
	pthread_mutex_unlock(&agent_mutex);
	agent_log(a, "profiling %s at %d Hz, %d s every %d s, to %s%s%s",
	    a->cfg.service, a->cfg.hz, a->cfg.window_sec, a->cfg.period_sec,
	    a->cfg.collector != NULL ? a->cfg.collector : "(no upload)",
	    a->cfg.output_dir ? " and " : "",
	    a->cfg.output_dir ? a->cfg.output_dir : "");
	return 0;

fail_sampler:
	if (a->sampler_ready)
		sampler_fini();
fail:
	pthread_mutex_unlock(&agent_mutex);
	agent_free(a);
	if (errstr != NULL)
		*errstr = cause;
	else
		free(cause);
	return -1;
}

/* Starts the agent thread with cfg; the sampler is ready on return. */
int
profd_agent_start(const struct profd_agent_config *cfg, char **errstr)
{
	return agent_start(cfg, 0, errstr);
}

/* Stops the agent: last window, flush until the exit deadline, join. */
void
profd_agent_stop(void)
{
	struct agent *a;
	struct timespec deadline;
	int64_t ms;
	int rc;

	pthread_mutex_lock(&agent_mutex);
	a = agent_current;
	agent_current = NULL;
	pthread_mutex_unlock(&agent_mutex);
	if (a == NULL || a->pid != getpid())
		return;
	if (starter_cancel() || !agent_has_thread(a)) {
		/* No thread was started: nothing to send. */
		if (a->sampler_ready)
			sampler_fini();
		agent_free(a);
		return;
	}
	if (pthread_equal(a->thread, pthread_self()))
		return;	/* never from the agent's own thread */
	pthread_mutex_lock(&a->lock);
	a->stop_at = upload_now_ms() + a->cfg.exit_timeout_ms;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
	clock_gettime(CLOCK_REALTIME, &deadline);
	ms = a->cfg.exit_timeout_ms + AGENT_JOIN_SLACK_MS;
	deadline.tv_sec += (time_t)(ms / 1000);
	deadline.tv_nsec += (long)(ms % 1000) * 1000000;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	rc = pthread_timedjoin_np(a->thread, NULL, &deadline);
	if (rc != 0) {
		/* Still building: it ends with the process; a is not freed. */
		agent_log(a, "agent thread did not stop in %d ms; leaving it",
		    a->cfg.exit_timeout_ms);
		return;
	}
	if (a->sampler_ready)
		sampler_fini();
	if (a->cfg.verbose && a->up != NULL) {
		struct upload_stats st;

		upload_stats(a->up, &st);
		agent_say("stopped: %" PRIu64 " profiles sent, %" PRIu64
		    " dropped, %" PRIu64 " rejected, %" PRIu64 " failed "
		    "attempts, %" PRIu64 " samples lost, %" PRIu64 " sockets "
		    "closed by the program", st.sent, st.dropped, st.rejected,
		    st.failures, sampler_drops(), st.fds_lost);
	}
	agent_free(a);
}

/*
 * Whether this copy of the agent is the one the loader's search order
 * reaches first. libprofd-heap holds a copy of its own, so a program
 * linked with -lprofd-agent and run with libprofd-heap preloaded maps two;
 * the program's profd_agent_* calls and the interposed functions reach
 * the first (the preloaded one), and only that one may start. Asked with
 * profd_agent_heap_start, whose address no program takes (a non-PIE
 * program's PLT entry would stand for a function it takes the address of).
 */
static int
agent_is_first(void)
{
	Dl_info mine, first;
	void *fn;

	if ((fn = dlsym(RTLD_DEFAULT, "profd_agent_heap_start")) == NULL ||
	    dladdr((void *)agent_is_first, &mine) == 0 ||
	    dladdr(fn, &first) == 0)
		return 1;
	return mine.dli_fbase == first.dli_fbase;
}

/*
 * LD_PRELOAD mode: start from PROFD_* when PROFD_SERVICE is set. After
 * the wrappers' look-ups (101), before libprofd-heap's heapwrap_init
 * (103), which asks whether the agent runs: in one object, constructors
 * of a priority run in its order, those of none after all of them.
 */
__attribute__((constructor(102))) static void
agent_env_start(void)
{
	struct profd_agent_config cfg;
	char *cause = NULL;
	int rc, heap_rate = 0, python = 1;

	if (!agent_is_first())
		return;
	if ((rc = settings_from_env(&cfg, &cause)) == 0)
		return;
	if (rc < 0 || settings_heap_rate(&heap_rate, &cause) != 0 ||
	    settings_pacing_off(&agent_pacing_off, &cause) != 0 ||
	    settings_python_frames(&python, &cause) != 0 ||
	    agent_start(&cfg, 1, &cause) != 0) {
		agent_say("%s; profiling off", cause);
		free(cause);
		return;
	}
	if (!python)
		pysample_disable();
	/* libprofd-heap, when preloaded, starts sampling after this. */
	heap_arm(heap_rate);
}
