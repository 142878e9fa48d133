/*
 * libprofd-agent lifecycle: profd_agent_start/stop, the LD_PRELOAD
 * constructor, fork and exit handling, and the agent thread.
 *
 * The agent thread owns a private libevent base (no evthread setup, so the
 * host program's own libevent use is untouched) and everything that may
 * block or allocate: it drains the sampler's ring (every 100 ms to 1 s,
 * a quarter of the time the ring takes to fill at worst) into a stack
 * table, ends a window with sampler_stop(), builds and gzips the profile,
 * and hands it to the uploader. Other threads talk to it through a pipe.
 * The application only ever pays for the signal handler.
 *
 * Schedule: the first window starts after a random delay of up to 10% of
 * the period; later ones start period * U(0.9, 1.1) after the previous
 * start, so a fleet drifts apart. window == period means continuous: the
 * timer is never disarmed and each window is cut in place.
 *
 * fork(): timers are not inherited, and the agent thread does not exist in
 * the child, so the pthread_atfork child handler forgets the parent's
 * state without touching it and starts the child's own agent (thread,
 * timers, ring, uploads) with the parent's settings; the child's
 * profiles carry its own pid label. exec'd programs get a fresh agent
 * from the constructor when PROFD_SERVICE is still in their environment.
 *
 * Exit: profd_agent_stop() (also registered with atexit) ends the current
 * window, uploads what is queued for up to 2 s and joins the thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "agent/build.h"
#include "agent/settings.h"
#include "agent/profd_agent.h"
#include "agent/sampler.h"
#include "agent/stacks.h"
#include "agent/unwind.h"
#include "agent/upload.h"
#include "common/xmalloc.h"

#define AGENT_RING_SLOTS	2048
#define AGENT_DRAIN_MIN_MS	100
#define AGENT_DRAIN_MAX_MS	1000
#define AGENT_FLUSH_MS		2000
#define AGENT_JOIN_MS		3000

struct agent {
	struct settings		 cfg;
	pid_t			 pid;
	pthread_t		 thread;
	int			 wake[2];
	struct event_base	*base;
	struct event		*wake_ev;
	struct event		*start_ev;
	struct event		*end_ev;
	struct event		*drain_ev;
	struct event		*flush_ev;
	struct upload		*up;
	struct build		*build;
	struct stacks		 stacks;
	int			 in_window;
	int			 off;		/* the signal taken over */
	int			 stopping;
	struct timespec		 win_mono;	/* window start */
	int64_t			 win_wall_ns;
	uint64_t		 win_drops;	/* sampler_drops() at start */
	uint64_t		 win_lost;	/* sampler_lost() at start */
	struct timespec		 flush_deadline;
	uint64_t		 seq;
	uint64_t		 rng;
	int64_t			 drain_ms;	/* ring drain interval */
};

static pthread_mutex_t	 agent_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct agent	*agent_current;
static pthread_once_t	 agent_once = PTHREAD_ONCE_INIT;

static void	agent_window_start(struct agent *);

/* One line on stderr, prefixed with the pid. */
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

/* xorshift64* for schedule jitter. */
static uint64_t
agent_rand(struct agent *a)
{
	a->rng ^= a->rng >> 12;
	a->rng ^= a->rng << 25;
	a->rng ^= a->rng >> 27;
	return a->rng * 2685821657736338717ULL;
}

/* Milliseconds from a to b. */
static int64_t
agent_ms_between(const struct timespec *a, const struct timespec *b)
{
	return (int64_t)(b->tv_sec - a->tv_sec) * 1000 +
	    (b->tv_nsec - a->tv_nsec) / 1000000;
}

/* Arms a one-shot timer in ms. */
static void
agent_timer(struct event *ev, int64_t ms)
{
	struct timeval tv;

	if (ms < 0)
		ms = 0;
	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	evtimer_add(ev, &tv);
}

/* Moves everything from the ring into the window's stack table. */
static void
agent_drain(struct agent *a)
{
	struct sampler_stack st;

	unwind_refresh();
	while (sampler_pop(&st)) {
		st.n = build_fix_leaf(a->build, st.pcs, st.n,
		    SAMPLER_MAX_FRAMES, st.link);
		stacks_add(&a->stacks, st.pcs, st.n, st.weight);
	}
}

/*
 * How often to drain the ring: a quarter of the time the busiest process
 * (every CPU busy: ITIMER_PROF then fires hz times per CPU-second per CPU)
 * takes to fill it, within [100 ms, 1 s]. Fewer wake-ups of the agent
 * thread, no drops.
 */
static int64_t
agent_drain_interval(int hz)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int64_t ms;

	if (cpus < 1)
		cpus = 1;
	ms = (int64_t)AGENT_RING_SLOTS * 1000 / 4 / ((int64_t)hz * cpus);
	if (ms < AGENT_DRAIN_MIN_MS)
		ms = AGENT_DRAIN_MIN_MS;
	if (ms > AGENT_DRAIN_MAX_MS)
		ms = AGENT_DRAIN_MAX_MS;
	return ms;
}

/*
 * Periodic drain while a window is open; also arms new threads and, if
 * the program has taken the agent's signal, steps aside for good.
 */
static void
agent_drain_cb(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;

	(void)fd;
	(void)what;
	agent_drain(a);
	if (a->in_window && sampler_tick() != 0) {
		if (a->cfg.verbose)
			agent_say("the program installed its own handler for "
			    "signal %d; agent stops profiling",
			    sampler_signal());
		event_del(a->drain_ev);
		evtimer_del(a->end_ev);
		stacks_reset(&a->stacks);
		a->in_window = 0;
		a->off = 1;
	}
}

/* Writes a profile to the debug output directory. */
static void
agent_write_file(struct agent *a, const uint8_t *data, size_t len)
{
	char *path, *tmp;
	FILE *f;

	path = xasprintf("%s/%s-cpu-%d-%" PRIu64 ".pb.gz", a->cfg.output_dir,
	    a->cfg.service, (int)getpid(), a->seq);
	tmp = xasprintf("%s.tmp", path);
	if ((f = fopen(tmp, "we")) == NULL ||
	    fwrite(data, 1, len, f) != len || fclose(f) != 0 ||
	    rename(tmp, path) != 0)
		agent_say("cannot write %s: %s", path, strerror(errno));
	free(tmp);
	free(path);
}

/* Closes the window: drain, build, queue. */
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
		event_del(a->drain_ev);
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
	if (a->stacks.total == 0 && w.lost == 0) {
		/* A window with no samples (and none lost) uploads nothing. */
	} else if (build_profile(a->build, &a->stacks, &w, &data, &len,
	    &cause) != 0) {
		agent_say("cannot build profile: %s", cause);
		free(cause);
	} else {
		a->seq++;
		if (a->cfg.verbose)
			agent_say("profile %" PRIu64 ": %" PRId64 " samples, "
			    "%zu stacks, %zu bytes", a->seq, a->stacks.total,
			    a->stacks.n, len);
		if (a->cfg.output_dir != NULL)
			agent_write_file(a, data, len);
		if (a->up != NULL)
			upload_push(a->up, data, len);
		else
			free(data);
	}
	stacks_reset(&a->stacks);
	/* The next window of a continuous run starts where this one ended. */
	a->win_mono = now;
	a->win_wall_ns += w.duration_nanos;
	a->win_drops = drops;
	a->win_lost = lost;
}

/* Window timer: end the window and schedule (or begin) the next. */
static void
agent_end_cb(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;
	struct timespec start = a->win_mono, now;
	int64_t period_ms, next_ms;

	(void)fd;
	(void)what;
	if (a->cfg.window_sec >= a->cfg.period_sec && sampler_owns_signal()) {
		agent_window_end(a, 0);
		agent_timer(a->end_ev, (int64_t)a->cfg.window_sec * 1000);
		return;
	}
	agent_window_end(a, 1);
	clock_gettime(CLOCK_MONOTONIC, &now);
	period_ms = (int64_t)a->cfg.period_sec * 1000;
	next_ms = period_ms * 9 / 10 +
	    (int64_t)(agent_rand(a) % (uint64_t)(period_ms / 5 + 1));
	agent_timer(a->start_ev, next_ms - agent_ms_between(&start, &now));
}

/* Start timer. */
static void
agent_start_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	agent_window_start(arg);
}

/* Opens a window, unless the program took the agent's signal over. */
static void
agent_window_start(struct agent *a)
{
	struct timeval tv;
	struct timespec wall;
	char *cause = NULL;

	if (a->stopping || a->off)
		return;
	if (!sampler_owns_signal()) {
		if (a->cfg.verbose)
			agent_say("the program installed its own handler for "
			    "signal %d; agent stops profiling",
			    sampler_signal());
		a->off = 1;
		return;
	}
	/* Samples that arrived after the last window are not ours. */
	agent_drain(a);
	stacks_reset(&a->stacks);
	clock_gettime(CLOCK_MONOTONIC, &a->win_mono);
	clock_gettime(CLOCK_REALTIME, &wall);
	a->win_wall_ns = (int64_t)wall.tv_sec * 1000000000LL + wall.tv_nsec;
	a->win_drops = sampler_drops();
	a->win_lost = sampler_lost();
	if (sampler_start(a->cfg.hz, &cause) != 0) {
		agent_say("%s; agent stops profiling", cause);
		free(cause);
		a->off = 1;
		return;
	}
	a->in_window = 1;
	tv.tv_sec = (time_t)(a->drain_ms / 1000);
	tv.tv_usec = (suseconds_t)(a->drain_ms % 1000) * 1000;
	event_add(a->drain_ev, &tv);
	agent_timer(a->end_ev, (int64_t)a->cfg.window_sec * 1000);
}

/* While stopping: quit once uploads are done or the deadline passed. */
static void
agent_flush_cb(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;
	struct timespec now;

	(void)fd;
	(void)what;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (a->up == NULL || upload_idle(a->up) ||
	    agent_ms_between(&now, &a->flush_deadline) <= 0) {
		event_base_loopbreak(a->base);
		return;
	}
	agent_timer(a->flush_ev, 20);
}

/* The stop request: finish the window and flush. */
static void
agent_wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;
	char c;

	(void)what;
	while (read(fd, &c, 1) == 1)
		;
	if (a->stopping)
		return;
	a->stopping = 1;
	evtimer_del(a->start_ev);
	evtimer_del(a->end_ev);
	agent_window_end(a, 1);
	sampler_stop();
	clock_gettime(CLOCK_MONOTONIC, &a->flush_deadline);
	a->flush_deadline.tv_sec += AGENT_FLUSH_MS / 1000;
	if (a->up != NULL)
		upload_flush(a->up);
	agent_timer(a->flush_ev, 0);
}

/* The agent thread: run the loop until stopped. */
static void *
agent_main(void *arg)
{
	struct agent *a = arg;
	sigset_t set;

	/* Sample this thread too: its CPU time is the agent's overhead. */
	sigemptyset(&set);
	sigaddset(&set, a->cfg.signal);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	event_base_dispatch(a->base);
	return NULL;
}

/* Frees an agent whose thread is gone (or never started). */
static void
agent_free(struct agent *a)
{
	if (a->up != NULL)
		upload_free(a->up);
	if (a->wake_ev != NULL)
		event_free(a->wake_ev);
	if (a->start_ev != NULL)
		event_free(a->start_ev);
	if (a->end_ev != NULL)
		event_free(a->end_ev);
	if (a->drain_ev != NULL)
		event_free(a->drain_ev);
	if (a->flush_ev != NULL)
		event_free(a->flush_ev);
	if (a->base != NULL)
		event_base_free(a->base);
	if (a->wake[0] != -1)
		close(a->wake[0]);
	if (a->wake[1] != -1)
		close(a->wake[1]);
	build_free(a->build);
	stacks_free(&a->stacks);
	settings_clear(&a->cfg);
	free(a);
}

/*
 * Fork child: the agent thread does not exist here; forget the parent's
 * agent (its copy is left as is) and start the child's own with the same
 * settings. Only the thread is started here; it maps the ring and creates
 * timers at its first window, so a child that execs at once pays for one
 * pthread_create.
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
	close(parent->wake[0]);
	close(parent->wake[1]);
	agent_current = NULL;
	if (parent->off || parent->stopping)
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
	if (profd_agent_start(&cfg, &cause) != 0) {
		if (cfg.verbose)
			agent_say("%s; profiling off in this child", cause);
		free(cause);
	}
}

/*
 * The labels sent with each profile: the configured ones plus pid and
 * exe (the executable's base name), unless configured already.
 */
static char *
agent_labels(const char *labels)
{
	char exe[PATH_MAX], *base, *p, *out;
	ssize_t r;
	int has_pid, has_exe;

	has_pid = labels != NULL && (strncmp(labels, "pid=", 4) == 0 ||
	    strstr(labels, ",pid=") != NULL);
	has_exe = labels != NULL && (strncmp(labels, "exe=", 4) == 0 ||
	    strstr(labels, ",exe=") != NULL);
	if ((r = readlink("/proc/self/exe", exe, sizeof exe - 1)) <= 0)
		r = 0;
	exe[r] = '\0';
	base = strrchr(exe, '/') != NULL ? strrchr(exe, '/') + 1 : exe;
	if (strlen(base) > 200)
		base[200] = '\0';
	for (p = base; *p != '\0'; p++) {
		if (*p == ',' || *p == '=' || (unsigned char)*p < 0x20)
			*p = '_';
	}
	out = xstrdup(labels != NULL ? labels : "");
	if (!has_pid) {
		p = xasprintf("%s%spid=%d", out, *out ? "," : "",
		    (int)getpid());
		free(out);
		out = p;
	}
	if (!has_exe && *base != '\0') {
		p = xasprintf("%s%sexe=%s", out, *out ? "," : "", base);
		free(out);
		out = p;
	}
	return out;
}

/* Exit: flush and stop. */
static void
agent_atexit(void)
{
	profd_agent_stop();
}

/* Registers the fork and exit hooks once per process. */
static void
agent_hooks_once(void)
{
	pthread_atfork(NULL, NULL, agent_atfork_child);
	atexit(agent_atexit);
}

/* Starts the agent thread with cfg. */
int
profd_agent_start(const struct profd_agent_config *cfg, char **errstr)
{
	struct agent *a;
	struct timespec now;
	sigset_t all, old;
	int64_t delay_ms;
	char *cause = NULL, *labels;
	int rc;

	a = xcalloc(1, sizeof *a);
	a->wake[0] = a->wake[1] = -1;
	if (settings_check(cfg, &a->cfg, errstr) != 0) {
		agent_free(a);
		return -1;
	}
	pthread_mutex_lock(&agent_mutex);
	if (agent_current != NULL) {
		pthread_mutex_unlock(&agent_mutex);
		agent_free(a);
		return xcause(errstr, "the agent is already running");
	}
	if (sampler_init(a->cfg.signal, AGENT_RING_SLOTS, &cause) != 0)
		goto fail;
	if (pipe2(a->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
		xcause(&cause, "pipe: %s", strerror(errno));
		goto fail_sampler;
	}
	if ((a->base = event_base_new()) == NULL) {
		xcause(&cause, "event_base_new failed");
		goto fail_sampler;
	}
	labels = agent_labels(a->cfg.labels);
	if (a->cfg.collector != NULL && (a->up = upload_new(a->base,
	    a->cfg.collector, a->cfg.service, labels, a->cfg.token,
	    (size_t)a->cfg.queue_max, a->cfg.verbose, &cause)) == NULL) {
		free(labels);
		goto fail_sampler;
	}
	free(labels);
	a->wake_ev = event_new(a->base, a->wake[0], EV_READ | EV_PERSIST,
	    agent_wake_cb, a);
	a->start_ev = evtimer_new(a->base, agent_start_cb, a);
	a->end_ev = evtimer_new(a->base, agent_end_cb, a);
	a->drain_ev = event_new(a->base, -1, EV_PERSIST, agent_drain_cb, a);
	a->flush_ev = evtimer_new(a->base, agent_flush_cb, a);
	event_add(a->wake_ev, NULL);
	a->build = build_new();
	a->drain_ms = agent_drain_interval(a->cfg.hz);
	a->pid = getpid();
	clock_gettime(CLOCK_REALTIME, &now);
	a->rng = ((uint64_t)a->pid << 32) ^ (uint64_t)now.tv_nsec ^
	    (uint64_t)(uintptr_t)a;
	if (a->rng == 0)
		a->rng = 1;
	delay_ms = (int64_t)(agent_rand(a) %
	    ((uint64_t)a->cfg.period_sec * 100 + 1));
	agent_timer(a->start_ev, delay_ms);

	pthread_once(&agent_once, agent_hooks_once);
	/* The agent thread takes no signal meant for the program. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&a->thread, NULL, agent_main, a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		xcause(&cause, "pthread_create: %s", strerror(rc));
		goto fail_sampler;
	}
	pthread_setname_np(a->thread, "profd-agent");
	agent_current = a;
	pthread_mutex_unlock(&agent_mutex);
	if (a->cfg.verbose)
		agent_say("profiling %s at %d Hz, %d s every %d s, to %s%s%s",
		    a->cfg.service, a->cfg.hz, a->cfg.window_sec,
		    a->cfg.period_sec, a->up != NULL ? upload_target(a->up) :
		    "(no upload)", a->cfg.output_dir ? " and " : "",
		    a->cfg.output_dir ? a->cfg.output_dir : "");
	return 0;

fail_sampler:
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

/* Stops the agent: last window, flush (bounded), join. */
void
profd_agent_stop(void)
{
	struct agent *a;
	struct timespec deadline;
	int rc;

	pthread_mutex_lock(&agent_mutex);
	a = agent_current;
	agent_current = NULL;
	pthread_mutex_unlock(&agent_mutex);
	if (a == NULL || a->pid != getpid())
		return;
	if (pthread_equal(a->thread, pthread_self()))
		return;	/* never from the agent's own thread */
	(void)write(a->wake[1], "s", 1);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += AGENT_JOIN_MS / 1000;
	rc = pthread_timedjoin_np(a->thread, NULL, &deadline);
	if (rc != 0) {
		agent_say("agent thread did not stop in time; leaving it");
		return;
	}
	sampler_fini();
	if (a->cfg.verbose && a->up != NULL) {
		struct upload_stats st;

		upload_stats(a->up, &st);
		agent_say("stopped: %" PRIu64 " profiles sent, %" PRIu64
		    " dropped, %" PRIu64 " rejected, %" PRIu64 " failed "
		    "attempts, %" PRIu64 " samples lost", st.sent, st.dropped,
		    st.rejected, st.failures, sampler_drops());
	}
	agent_free(a);
}

/* LD_PRELOAD mode: start from PROFD_* when PROFD_SERVICE is set. */
__attribute__((constructor)) static void
agent_env_start(void)
{
	struct profd_agent_config cfg;
	char *cause = NULL;
	int rc;

	if ((rc = settings_from_env(&cfg, &cause)) == 0)
		return;
	if (rc < 0 || profd_agent_start(&cfg, &cause) != 0) {
		agent_say("%s; profiling off", cause);
		free(cause);
	}
}
