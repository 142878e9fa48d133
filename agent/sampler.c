/*
 * SIGPROF sampling. ITIMER_PROF counts the CPU time of the whole process
 * and the kernel delivers SIGPROF to the thread that was running, so one
 * timer covers every thread, including ones created later.
 *
 * The handler is async-signal-safe: no malloc, no locks, no stdio. It
 * walks the interrupted context with unwind_walk() (call-frame information
 * tables prepared by the agent thread, frame pointers where there are
 * none; chosen over backtrace(): libgcc's unwinder may take the loader
 * lock and allocate on first use).
 *
 * The timer is set only through a gate shared with the exec wrappers
 * (exec.c): an exec disarms it and the image must not get it back armed
 * from a concurrent window start (sampler_set_timer, sampler_exec_enter).
 *
 * Stacks go into a bounded multi-producer ring (Dmitry Vyukov's sequence
 * number queue): handlers on several threads claim slots with one CAS; a
 * full ring drops the sample and counts it. The agent thread is the only
 * consumer.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#include "agent/sampler.h"
#include "agent/unwind.h"
#include "common/xmalloc.h"

struct sampler_slot {
	_Atomic size_t		seq;
	struct sampler_stack	st;
};

static struct sampler_slot	*ring;
static size_t			 ring_mask;
static _Atomic size_t		 ring_head;	/* next slot to fill */
static size_t			 ring_tail;	/* next slot to read (consumer) */
static _Atomic uint64_t		 ring_drops;
static _Atomic int		 sampler_on;
static pid_t			 self_pid;
static int			 installed;
static struct sigaction		 old_action;

/*
 * The timer gate: GATE_ARMING while one thread sets the timer (the agent
 * thread, or the last exec wrapper to fail), else the number of threads
 * inside an exec wrapper. want_usec is the interval the agent wants (0:
 * disarmed); whoever holds GATE_ARMING applies it.
 */
#define GATE_ARMING		(1 << 30)
#define GATE_SPINS		100000
static _Atomic int		 gate;
static _Atomic long		 want_usec;

/* The SIGPROF handler: claim a slot, walk, publish. */
__attribute__((no_sanitize("address")))
static void
sampler_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	struct sampler_slot *slot;
	struct unwind_regs regs;
	uintptr_t link = 0;
	size_t pos, seq;
	int saved_errno = errno;

	(void)sig;
	(void)si;
	if (!atomic_load_explicit(&sampler_on, memory_order_relaxed) ||
	    ring == NULL)
		goto out;
#if defined(__x86_64__)
	regs.pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	regs.fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
	regs.sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
	regs.pc = (uintptr_t)uc->uc_mcontext.pc;
	regs.fp = (uintptr_t)uc->uc_mcontext.regs[29];
	regs.sp = (uintptr_t)uc->uc_mcontext.sp;
	link = (uintptr_t)uc->uc_mcontext.regs[30];
#else
	(void)uc;
	(void)regs;
	goto out;
#endif
	pos = atomic_load_explicit(&ring_head, memory_order_relaxed);
	for (;;) {
		slot = &ring[pos & ring_mask];
		seq = atomic_load_explicit(&slot->seq, memory_order_acquire);
		if (seq == pos) {
			if (atomic_compare_exchange_weak_explicit(&ring_head,
			    &pos, pos + 1, memory_order_relaxed,
			    memory_order_relaxed))
				break;
		} else if ((intptr_t)(seq - pos) < 0) {
			atomic_fetch_add_explicit(&ring_drops, 1,
			    memory_order_relaxed);
			goto out;
		} else
			pos = atomic_load_explicit(&ring_head,
			    memory_order_relaxed);
	}
	slot->st.n = unwind_walk(&regs, slot->st.pcs, SAMPLER_MAX_FRAMES,
	    &link);
	slot->st.link = link;
	atomic_store_explicit(&slot->seq, pos + 1, memory_order_release);
out:
	errno = saved_errno;
}

/* Allocates the ring and installs the handler, unless SIGPROF is taken. */
int
sampler_init(size_t slots, char **cause)
{
	struct sigaction sa, cur;
	struct itimerval it;
	size_t i;
	int inherited = 0;

	if (slots == 0 || (slots & (slots - 1)) != 0)
		return xcause(cause, "ring size %zu is not a power of two",
		    slots);
	if (sigaction(SIGPROF, NULL, &cur) != 0)
		return xcause(cause, "sigaction(SIGPROF): %s", strerror(errno));
	if ((cur.sa_flags & SA_SIGINFO) ?
	    cur.sa_sigaction != sampler_handler :
	    (cur.sa_handler != SIG_DFL && cur.sa_handler != SIG_IGN))
		return xcause(cause, "the program already has a SIGPROF "
		    "handler (another profiler?); agent stays off");
	/* Our handler may have been replaced and SIG_DFL put back since. */
	if (!((cur.sa_flags & SA_SIGINFO) &&
	    cur.sa_sigaction == sampler_handler))
		installed = 0;
	/*
	 * An armed ITIMER_PROF under SIG_DFL would kill the program at its
	 * first expiry, so no program arms it that way: it was inherited
	 * across execve(2) from an image that was being profiled (e.g.
	 * `LD_PRELOAD=... taskset prog`). Take it over and disarm it.
	 */
	if (getitimer(ITIMER_PROF, &it) == 0 && !installed &&
	    (it.it_value.tv_sec != 0 || it.it_value.tv_usec != 0)) {
		if ((cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL)
			return xcause(cause, "ITIMER_PROF is already armed by "
			    "the program; agent stays off");
		inherited = 1;
	}

	self_pid = getpid();
	atomic_store(&gate, 0);
	atomic_store(&want_usec, 0);

	/* The ring is never unmapped: a late signal may still write it. */
	if (ring != NULL && ring_mask + 1 != slots)
		return xcause(cause, "ring already sized %zu", ring_mask + 1);
	if (ring == NULL) {
		ring = mmap(NULL, slots * sizeof *ring, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (ring == MAP_FAILED) {
			ring = NULL;
			return xcause(cause, "ring of %zu slots: %s", slots,
			    strerror(errno));
		}
	}
	for (i = 0; i < slots; i++)
		atomic_init(&ring[i].seq, i);
	ring_mask = slots - 1;
	atomic_store(&ring_head, 0);
	ring_tail = 0;
	atomic_store(&ring_drops, 0);

	if (!installed) {
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = sampler_handler;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGPROF, &sa, &old_action) != 0)
			return xcause(cause, "sigaction(SIGPROF): %s",
			    strerror(errno));
		installed = 1;
	}
	if (inherited) {
		memset(&it, 0, sizeof it);
		setitimer(ITIMER_PROF, &it, NULL);
	}
	return 0;
}

/* True while our handler is still the SIGPROF handler. */
int
sampler_owns_signal(void)
{
	struct sigaction cur;

	if (sigaction(SIGPROF, NULL, &cur) != 0)
		return 0;
	return (cur.sa_flags & SA_SIGINFO) &&
	    cur.sa_sigaction == sampler_handler;
}

/* Sets ITIMER_PROF to want_usec (0 disarms); the caller holds the gate. */
static int
sampler_apply(void)
{
	struct itimerval it;
	long usec = atomic_load(&want_usec);

	it.it_interval.tv_sec = usec / 1000000;
	it.it_interval.tv_usec = usec % 1000000;
	it.it_value = it.it_interval;
	if (usec == 0) {
		setitimer(ITIMER_PROF, &it, NULL);
		atomic_store(&sampler_on, 0);
		return 0;
	}
	atomic_store(&sampler_on, 1);
	if (setitimer(ITIMER_PROF, &it, NULL) != 0) {
		atomic_store(&sampler_on, 0);
		atomic_store(&want_usec, 0);
		return -1;
	}
	return 0;
}

/*
 * Agent side of the gate: records usec and applies it, unless an exec
 * wrapper is inside (the timer is off meanwhile, and the last wrapper to
 * come back applies want_usec).
 */
static int
sampler_set_timer(long usec)
{
	int g, rc;

	atomic_store(&want_usec, usec);
	for (;;) {
		g = atomic_load(&gate);
		if (g == 0) {
			if (!atomic_compare_exchange_weak(&gate, &g,
			    GATE_ARMING))
				continue;
			rc = sampler_apply();
			atomic_store(&gate, 0);
			return rc;
		}
		if (!(g & GATE_ARMING))
			return 0;
		sched_yield();
	}
}

/* Arms ITIMER_PROF with a 1/hz interval. */
int
sampler_start(int hz, char **cause)
{
	if (sampler_set_timer(1000000L / (hz > 0 ? hz : 100)) != 0)
		return xcause(cause, "setitimer(ITIMER_PROF): %s",
		    strerror(errno));
	return 0;
}

/* Disarms the timer and stops recording. */
void
sampler_stop(void)
{
	sampler_set_timer(0);
}

/*
 * Before an exec: async-signal-safe, no locks. Only the process that
 * armed the timer has one (fork and vfork children do not inherit it, and
 * a vfork child shares our memory, so it must not touch the gate): there
 * the timer is disarmed and the sampler marked off. Returns the token for
 * sampler_exec_leave.
 */
int
sampler_exec_enter(void)
{
	struct itimerval zero;
	int g, spins = 0;

	if (self_pid == 0 || getpid() != self_pid)
		return 0;
	for (;;) {
		g = atomic_load(&gate);
		if ((g & GATE_ARMING) && spins++ < GATE_SPINS) {
			sched_yield();
			continue;
		}
		/* Past the bound (re-entered from a handler?): go anyway. */
		if (atomic_compare_exchange_weak(&gate, &g,
		    (g & ~GATE_ARMING) + 1))
			break;
	}
	memset(&zero, 0, sizeof zero);
	setitimer(ITIMER_PROF, &zero, NULL);
	atomic_store(&sampler_on, 0);
	return 1;
}

/*
 * After an exec that failed: the last wrapper out re-arms the timer as
 * the agent wants it. Keeps errno.
 */
void
sampler_exec_leave(int token)
{
	int g, saved_errno = errno;

	if (!token)
		return;
	for (;;) {
		g = atomic_load(&gate);
		if (g <= 1) {
			if (!atomic_compare_exchange_weak(&gate, &g,
			    GATE_ARMING))
				continue;
			sampler_apply();
			atomic_store(&gate, 0);
			break;
		}
		if (atomic_compare_exchange_weak(&gate, &g, g - 1))
			break;
	}
	errno = saved_errno;
}

/* Pops the oldest published stack, if any (single consumer). */
int
sampler_pop(struct sampler_stack *out)
{
	struct sampler_slot *slot;
	size_t seq;

	if (ring == NULL)
		return 0;
	slot = &ring[ring_tail & ring_mask];
	seq = atomic_load_explicit(&slot->seq, memory_order_acquire);
	if (seq != ring_tail + 1)
		return 0;
	out->n = slot->st.n;
	out->link = slot->st.link;
	memcpy(out->pcs, slot->st.pcs, out->n * sizeof out->pcs[0]);
	atomic_store_explicit(&slot->seq, ring_tail + ring_mask + 1,
	    memory_order_release);
	ring_tail++;
	return 1;
}

/* Samples lost to a full ring. */
uint64_t
sampler_drops(void)
{
	return atomic_load(&ring_drops);
}

/*
 * Stops sampling for good. A SIGPROF generated before the timer was
 * disarmed may still be pending (its thread was preempted, or the expiry
 * is sent on the thread's next return to user mode), so the default
 * action must never come back: it would kill the program with "Profiling
 * timer expired". When the old disposition was SIG_DFL our handler stays
 * installed but inert (sampler_on is 0) and a later sampler_init reuses
 * it; SIG_IGN, or a handler the program had, is put back. The ring stays
 * mapped (and is reused by the next sampler_init) for the same reason.
 */
void
sampler_fini(void)
{
	sampler_stop();
	if (!installed || !sampler_owns_signal()) {
		installed = 0;
		return;
	}
	if (!(old_action.sa_flags & SA_SIGINFO) &&
	    old_action.sa_handler == SIG_DFL)
		return;
	sigaction(SIGPROF, &old_action, NULL);
	installed = 0;
}

/* Fork child: the parent's timer is not inherited; stay silent. */
void
sampler_forget(void)
{
	atomic_store(&sampler_on, 0);
	atomic_store(&want_usec, 0);
	atomic_store(&gate, 0);
	self_pid = 0;
}
