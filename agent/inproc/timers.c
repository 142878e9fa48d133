/*
 * Per-thread CPU-time timers: every thread of the process gets a POSIX
 * timer on its own CPU clock that sends the agent's real-time signal to
 * that thread only (SIGEV_THREAD_ID), so a thread's samples come from its
 * own CPU time and a thread that blocks the signal never lends its samples
 * to another one.
 *
 * The agent thread creates the timers for the other threads (the clock of
 * thread tid is the kernel's MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)):
 * no code has to run in the sampled thread, no pthread_create is
 * interposed, and threads started before the agent or by raw clone(2) are
 * covered. It scans /proc/self/task on every drain tick (timers_tick):
 * new threads get a timer, timers of threads that are gone are deleted. A
 * new thread is therefore sampled from the first tick after it starts (one
 * drain interval, 100 ms to 1 s).
 *
 * Each slot's sigev_value carries its index and a generation, so the
 * handler (timers_received) credits the samples it takes to the slot, and
 * a late signal from a deleted timer is recognised and dropped. Every tick
 * compares each thread's CPU time since arming with the samples it
 * received; expiries beyond that (the thread blocks the signal: they stay
 * pending, folded into one overrun count) are the lost samples.
 *
 * The table lives in one anonymous mapping that is never unmapped in the
 * process that armed timers (a late signal may still read it). The gate is
 * shared with the exec wrappers: the agent thread changes the table only
 * while holding GATE_ARMING; an exec wrapper counts itself in, disarms
 * its own thread's timer and drains a pending signal before the exec.
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/inproc/sigmask.h"
#include "agent/inproc/timers.h"

#define TIMERS_HASH		(2 * TIMERS_MAX)
#define TIMERS_GATE_ARMING	(1 << 30)
#define TIMERS_GATE_SPINS	100000
/*
 * Expiries that may still be in flight when a thread is looked at: the
 * kernel checks CPU timers on its tick (100 Hz at least), so up to 10 ms
 * of expiries can be due and not yet sent, plus one being delivered.
 */
#define TIMERS_SLACK_NS		10000000L

struct timers_slot {
	_Atomic int		tid;		/* 0: free */
	_Atomic uint32_t	gen;
	timer_t			id;
	clockid_t		clock;
	int			seen;
	int64_t			cpu0;		/* thread CPU ns when armed */
	_Atomic uint64_t	got;		/* samples received (weights) */
	uint64_t		lost;		/* lost already counted */
};

struct timers_table {
	struct timers_slot	slot[TIMERS_MAX];
	int32_t			hash[TIMERS_HASH];	/* slot + 1, or 0 */
};

static struct timers_table	*tab;
static _Atomic int		 gate;
static int			 sig;
static long			 period_ns;	/* 0: not armed */
static int			 nslots;	/* high-water mark */
static pid_t			 self_pid;
static _Atomic uint64_t		 lost_total;
static _Atomic uint64_t		 unarmed_total;

/* The CPU clock of thread tid (MAKE_THREAD_CPUCLOCK, CPUCLOCK_SCHED). */
static clockid_t
timers_clock(pid_t tid)
{
	return (clockid_t)((~(unsigned)tid << 3) | 4 | 2);
}

/* Nanoseconds of a clock, or -1. */
static int64_t
timers_now(clockid_t c)
{
	struct timespec ts;

	if (clock_gettime(c, &ts) != 0)
		return -1;
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The hash bucket of tid holding its slot, or the empty one for it. */
static int32_t *
timers_bucket(pid_t tid)
{
	uint32_t h = (uint32_t)tid * 2654435761u;
	size_t i;

	for (i = 0; i < TIMERS_HASH; i++) {
		int32_t *b = &tab->hash[(h + i) % TIMERS_HASH];

		if (*b == 0 || atomic_load_explicit(
		    &tab->slot[*b - 1].tid, memory_order_relaxed) == tid)
			return b;
	}
	return NULL;
}

/* Rebuilds the hash from the live slots (agent thread, gate held). */
static void
timers_rehash(void)
{
	int32_t *b;
	int i, tid;

	memset(tab->hash, 0, sizeof tab->hash);
	for (i = 0; i < nslots; i++) {
		tid = atomic_load_explicit(&tab->slot[i].tid,
		    memory_order_relaxed);
		if (tid != 0 && (b = timers_bucket(tid)) != NULL)
			*b = i + 1;
	}
}

/* Prepares the table and the signal; no timer is created yet. */
int
timers_init(int signo)
{
	if (tab == NULL) {
		tab = mmap(NULL, sizeof *tab, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (tab == MAP_FAILED) {
			tab = NULL;
			return -1;
		}
	}
	sig = signo;
	self_pid = getpid();
	return 0;
}

/* Takes the gate for the agent thread; waits out exec wrappers (bounded). */
static int
timers_lock(int wait)
{
	int g, spins = 0;

	for (;;) {
		g = 0;
		if (atomic_compare_exchange_weak(&gate, &g,
		    TIMERS_GATE_ARMING))
			return 0;
		if (!wait || spins++ > 2000)
			return -1;
		usleep(1000);
	}
}

/* Releases the gate. */
static void
timers_unlock(void)
{
	atomic_store(&gate, 0);
}

/* The value of slot i's timer: one period, or zero. */
static void
timers_value(struct itimerspec *it, long ns)
{
	it->it_interval.tv_sec = ns / 1000000000L;
	it->it_interval.tv_nsec = ns % 1000000000L;
	it->it_value = it->it_interval;
}

/* Creates and arms a timer for tid in a free slot (gate held). */
static void
timers_add(pid_t tid)
{
	struct sigevent sev;
	struct itimerspec it;
	struct timers_slot *s = NULL;
	int32_t *b;
	uint32_t gen;
	int i;

	for (i = 0; i < TIMERS_MAX; i++) {
		if (atomic_load(&tab->slot[i].tid) == 0) {
			s = &tab->slot[i];
			break;
		}
	}
	if (s == NULL || (b = timers_bucket(tid)) == NULL) {
		atomic_fetch_add(&unarmed_total, 1);
		return;
	}
	gen = atomic_load(&s->gen);
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = sig;
	sev.sigev_value.sival_ptr = (void *)(uintptr_t)
	    ((uint64_t)gen << 32 | (uint32_t)i);
	sev._sigev_un._tid = tid;
	s->clock = timers_clock(tid);
	if (timer_create(s->clock, &sev, &s->id) != 0) {
		if (errno == EAGAIN)	/* RLIMIT_SIGPENDING */
			atomic_fetch_add(&unarmed_total, 1);
		return;
	}
	s->cpu0 = timers_now(s->clock);
	atomic_store(&s->got, 0);
	s->lost = 0;
	s->seen = 1;
	atomic_store(&s->tid, tid);
	timers_value(&it, period_ns);
	if (s->cpu0 < 0 || timer_settime(s->id, 0, &it, NULL) != 0) {
		timer_delete(s->id);
		atomic_store(&s->tid, 0);
		return;
	}
	*b = i + 1;
	if (i + 1 > nslots)
		nslots = i + 1;
}

/* Adds the samples slot s lost since the last look to the total. */
static void
timers_account(struct timers_slot *s)
{
	int64_t now = timers_now(s->clock);
	uint64_t due, got, lost, slack = 1 + TIMERS_SLACK_NS / period_ns;

	if (now < 0 || now < s->cpu0)
		return;
	due = (uint64_t)((now - s->cpu0) / period_ns);
	got = atomic_load(&s->got);
	lost = due > got + slack ? due - got - slack : 0;
	if (lost > s->lost) {
		atomic_fetch_add(&lost_total, lost - s->lost);
		s->lost = lost;
	}
}

/* Deletes slot s's timer and frees the slot (gate held). */
static void
timers_del(struct timers_slot *s)
{
	timer_delete(s->id);
	atomic_fetch_add(&s->gen, 1);
	atomic_store(&s->tid, 0);
}

/* Scans /proc/self/task: arm new threads, drop gone ones (gate held). */
static void
timers_scan(void)
{
	struct dirent *de;
	DIR *d;
	int32_t *b;
	pid_t tid;
	int i, changed = 0;

	if ((d = opendir("/proc/self/task")) == NULL)
		return;
	for (i = 0; i < nslots; i++)
		tab->slot[i].seen = 0;
	while ((de = readdir(d)) != NULL) {
		tid = (pid_t)atoi(de->d_name);
		if (tid <= 0)
			continue;
		b = timers_bucket(tid);
		if (b != NULL && *b != 0)
			tab->slot[*b - 1].seen = 1;
		else
			timers_add(tid);
	}
	closedir(d);
	for (i = 0; i < nslots; i++) {
		struct timers_slot *s = &tab->slot[i];

		if (atomic_load(&s->tid) == 0)
			continue;
		if (!s->seen) {
			timers_del(s);
			changed = 1;
		} else
			timers_account(s);
	}
	if (changed)
		timers_rehash();
}

/* Arms every thread at ns per sample. */
int
timers_start(long ns)
{
	if (tab == NULL || ns <= 0)
		return -1;
	if (timers_lock(1) != 0)
		return -1;
	period_ns = ns;
	timers_scan();
	timers_unlock();
	return 0;
}

/* A drain tick: new threads armed, exited ones deleted, losses counted. */
void
timers_tick(void)
{
	if (tab == NULL || period_ns == 0)
		return;
	if (timers_lock(0) != 0)
		return;		/* an exec wrapper is inside: next tick */
	if (period_ns != 0)
		timers_scan();
	timers_unlock();
}

/* Deletes every timer (their losses counted first). */
void
timers_stop(void)
{
	int i;

	if (tab == NULL)
		return;
	if (timers_lock(1) != 0)
		return;
	for (i = 0; i < nslots; i++) {
		if (atomic_load(&tab->slot[i].tid) == 0)
			continue;
		if (period_ns != 0)
			timers_account(&tab->slot[i]);
		timers_del(&tab->slot[i]);
	}
	nslots = 0;
	period_ns = 0;
	memset(tab->hash, 0, sizeof tab->hash);
	timers_unlock();
}

/* Handler side: credits weight to the slot in v; 0 if v is stale. */
int
timers_received(void *v, uint32_t weight)
{
	uint64_t x = (uint64_t)(uintptr_t)v;
	uint32_t i = (uint32_t)x, gen = (uint32_t)(x >> 32);
	struct timers_slot *s;

	if (tab == NULL || i >= TIMERS_MAX)
		return 0;
	s = &tab->slot[i];
	if (atomic_load_explicit(&s->gen, memory_order_relaxed) != gen ||
	    atomic_load_explicit(&s->tid, memory_order_relaxed) == 0)
		return 0;
	atomic_fetch_add_explicit(&s->got, weight, memory_order_relaxed);
	return 1;
}

/* Samples lost to threads that block the signal, since timers_init. */
uint64_t
timers_lost(void)
{
	return atomic_load(&lost_total);
}

/* Threads left unsampled (table full, RLIMIT_SIGPENDING). */
uint64_t
timers_unarmed(void)
{
	return atomic_load(&unarmed_total);
}

/*
 * Before an exec (async-signal-safe): in the process that armed timers,
 * blocks the signal, waits out the agent thread, disarms the calling
 * thread's timer, takes any instance of the signal already pending on
 * the thread (it would survive the exec and kill the new image: the
 * default action of a real-time signal is to terminate), and puts the
 * mask back. Returns a token for timers_exec_leave: 0 nothing done,
 * 1 gate counted, 2 gate counted and a timer disarmed (slot in *slotp).
 */
int
timers_exec_enter(int *slotp)
{
	struct itimerspec zero;
	struct timespec nowait = { 0, 0 };
	sigset_t set, old;
	siginfo_t si;
	int32_t *b;
	int g, spins = 0, token = 1;
	pid_t tid;

	*slotp = -1;
	if (tab == NULL || self_pid == 0 || getpid() != self_pid)
		return 0;
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigmask_real(SIG_BLOCK, &set, &old);
	for (;;) {
		g = atomic_load(&gate);
		if ((g & TIMERS_GATE_ARMING) && spins++ < TIMERS_GATE_SPINS) {
			sched_yield();
			continue;
		}
		/* Past the bound (re-entered from a handler?): go anyway. */
		if (atomic_compare_exchange_weak(&gate, &g,
		    (g & ~TIMERS_GATE_ARMING) + 1))
			break;
	}
	tid = (pid_t)syscall(SYS_gettid);
	b = timers_bucket(tid);
	if (b != NULL && *b != 0) {
		memset(&zero, 0, sizeof zero);
		if (timer_settime(tab->slot[*b - 1].id, 0, &zero, NULL) == 0) {
			*slotp = *b - 1;
			token = 2;
		}
	}
	while (sigtimedwait(&set, &si, &nowait) == sig)
		;
	sigmask_real(SIG_SETMASK, &old, NULL);
	return token;
}

/* After an exec that failed: re-arms the thread's timer. Keeps errno. */
void
timers_exec_leave(int token, int slot)
{
	struct itimerspec it;
	int saved_errno = errno;

	if (token == 0)
		return;
	if (token == 2 && slot >= 0 && period_ns != 0 &&
	    atomic_load(&tab->slot[slot].tid) != 0) {
		timers_value(&it, period_ns);
		timer_settime(tab->slot[slot].id, 0, &it, NULL);
	}
	atomic_fetch_sub(&gate, 1);
	errno = saved_errno;
}

/*
 * Fork child: no timer and no pending signal is inherited. Drops the
 * parent's table (unmapped: nothing can signal into it here) so the
 * child's first start maps a clean one without copying pages.
 */
void
timers_forget(void)
{
	if (tab != NULL)
		munmap(tab, sizeof *tab);
	tab = NULL;
	nslots = 0;
	period_ns = 0;
	self_pid = 0;
	atomic_store(&gate, 0);
	atomic_store(&lost_total, 0);
	atomic_store(&unarmed_total, 0);
}
