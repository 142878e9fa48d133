/*
 * CPU sampling with a real-time signal (PROFD_SIGNAL, default SIGRTMAX-4)
 * sent by per-thread CPU-time timers (timers.c): each thread is
 * interrupted after every 1/hz of its own CPU time, so samples are
 * charged to the thread that used the CPU. SIGPROF and ITIMER_PROF are
 * left to the program.
 *
 * The handler is async-signal-safe: no malloc, no locks, no stdio. It
 * walks the interrupted context with unwind_walk() (call-frame information
 * tables prepared by the agent thread, frame pointers where there are
 * none; chosen over backtrace(): libgcc's unwinder may take the loader
 * lock and allocate on first use).
 *
 * Only signals from our timers are recorded (si_code SI_TIMER and a live
 * timer in si_value); each sample weighs 1 + si_overrun, so expiries
 * folded into a late delivery still count their CPU time. The start
 * timer's signal (starter.c: the agent thread is created when the first
 * window is due) is handed to starter_fire.
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

#include "agent/inproc/pysample.h"
#include "agent/inproc/sampler.h"
#include "agent/inproc/sigact.h"
#include "agent/inproc/starter.h"
#include "agent/inproc/timers.h"
#include "agent/inproc/unwind.h"
#include "common/xmalloc.h"


struct sampler_slot {
	_Atomic size_t		seq;
	struct sampler_stack	st;
};

static struct sampler_slot	*_Atomic ring;
static size_t			 ring_mask;
static _Atomic size_t		 ring_head;	/* next slot to fill */
static size_t			 ring_tail;	/* next slot to read (consumer) */
static _Atomic uint64_t		 ring_drops;
static _Atomic int		 sampler_on;
static pid_t			 self_pid;
static int			 installed;
static int			 sampler_sig;
static struct sigaction		 old_action;

/* The signal handler: check the source, claim a slot, walk, publish. */
__attribute__((no_sanitize("address")))
static void
sampler_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	struct sampler_slot *slot;
	struct unwind_regs regs;
	uintptr_t link = 0;
	struct sampler_slot *r;
	size_t pos, seq;
	uint32_t weight;
	int saved_errno = errno;

	(void)sig;
	/* Ours: from a live timer of ours (not kill(2), not a stale one). */
	if (si == NULL || si->si_code != SI_TIMER)
		goto out;
	if (starter_is_token(si->si_value.sival_ptr)) {
		starter_fire(uc);
		goto out;
	}
	weight = 1 + (si->si_overrun > 0 ? (uint32_t)si->si_overrun : 0);
	if (!timers_received(si->si_value.sival_ptr, weight) ||
	    !atomic_load_explicit(&sampler_on, memory_order_relaxed) ||
	    (r = atomic_load_explicit(&ring, memory_order_acquire)) == NULL)
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
		slot = &r[pos & ring_mask];
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
	slot->st.npy = pysample_record(slot->st.py, &slot->st.pyentries);
	slot->st.link = link;
	slot->st.weight = weight;
	atomic_store_explicit(&slot->seq, pos + 1, memory_order_release);
out:
	errno = saved_errno;
}

/* The signal's current disposition is ours. */
static int
sampler_is_ours(const struct sigaction *cur)
{
	return (cur->sa_flags & SA_SIGINFO) &&
	    cur->sa_sigaction == sampler_handler;
}

/* Maps and resets the ring (agent thread, before the first timer). */
static int
sampler_ring(char **cause)
{
	struct sampler_slot *r;
	size_t i, slots = ring_mask + 1;

	if (atomic_load(&ring) != NULL)
		return 0;
	r = mmap(NULL, slots * sizeof *r, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r == MAP_FAILED)
		return xcause(cause, "ring of %zu slots: %s", slots,
		    strerror(errno));
	for (i = 0; i < slots; i++)
		atomic_init(&r[i].seq, i);
	atomic_store(&ring_head, 0);
	ring_tail = 0;
	atomic_store(&ring, r);
	return 0;
}

/*
 * Installs the handler for signo, unless the program handles that signal
 * already (also what the start timer needs, before sampler_init).
 * SIGPROF and ITIMER_PROF are never looked at: they belong to the program.
 */
int
sampler_install(int signo, char **cause)
{
	struct sigaction sa, cur;

	if (signo < SIGRTMIN || signo > SIGRTMAX)
		return xcause(cause, "signal %d is not a real-time signal "
		    "(%d..%d)", signo, SIGRTMIN, SIGRTMAX);
	if (installed && signo != sampler_sig)
		return xcause(cause, "the sampler already uses signal %d",
		    sampler_sig);
	if (sigact_real(signo, NULL, &cur) != 0)
		return xcause(cause, "sigaction(%d): %s", signo,
		    strerror(errno));
	if (!sampler_is_ours(&cur) && !(cur.sa_flags & SA_SIGINFO) &&
	    cur.sa_handler != SIG_DFL && cur.sa_handler != SIG_IGN)
		cur.sa_flags |= SA_SIGINFO;	/* a plain handler: taken */
	if (!sampler_is_ours(&cur) && (cur.sa_flags & SA_SIGINFO))
		return xcause(cause, "the program already handles signal %d "
		    "(PROFD_SIGNAL); agent stays off", signo);
	/* Our handler may have been replaced and SIG_DFL put back since. */
	if (!sampler_is_ours(&cur))
		installed = 0;
	if (!installed) {
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = sampler_handler;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		sigemptyset(&sa.sa_mask);
		if (sigact_real(signo, &sa, &old_action) != 0)
			return xcause(cause, "sigaction(%d): %s", signo,
			    strerror(errno));
		installed = 1;
		sampler_sig = signo;
	}
	return 0;
}

/*
 * Installs the handler (sampler_install) and prepares the timer table
 * for a ring of slots. The ring is mapped at the first start (a process
 * that ends before its first window never touches it).
 */
int
sampler_init(int signo, size_t slots, char **cause)
{
	if (slots == 0 || (slots & (slots - 1)) != 0)
		return xcause(cause, "ring size %zu is not a power of two",
		    slots);
	if (sampler_install(signo, cause) != 0)
		return -1;
	if (atomic_load(&ring) != NULL && ring_mask + 1 != slots)
		return xcause(cause, "ring already sized %zu", ring_mask + 1);
	ring_mask = slots - 1;
	atomic_store(&ring_drops, 0);
	if (timers_init(signo) != 0)
		return xcause(cause, "timer table: %s", strerror(errno));
	self_pid = getpid();
	return 0;
}

/* True while our handler is still the handler of the agent's signal. */
int
sampler_owns_signal(void)
{
	struct sigaction cur;

	if (!installed || sigact_real(sampler_sig, NULL, &cur) != 0)
		return 0;
	return sampler_is_ours(&cur);
}

/* The signal the sampler uses (0 before sampler_init). */
int
sampler_signal(void)
{
	return sampler_sig;
}

/* Maps the ring if needed and arms every thread at 1/hz of its CPU. */
int
sampler_start(int hz, char **cause)
{
	if (sampler_ring(cause) != 0)
		return -1;
	atomic_store(&sampler_on, 1);
	if (timers_start(1000000000L / (hz > 0 ? hz : 100)) != 0) {
		atomic_store(&sampler_on, 0);
		return xcause(cause, "cannot arm the per-thread timers");
	}
	return 0;
}

/*
 * Agent thread, each drain tick: threads armed and retired, losses
 * counted. Returns -1 (and stops everything) when the program has taken
 * the agent's signal over.
 */
int
sampler_tick(void)
{
	if (!sampler_owns_signal()) {
		sampler_stop();
		return -1;
	}
	timers_tick();
	return 0;
}

/* Deletes the timers and stops recording. */
void
sampler_stop(void)
{
	timers_stop();
	atomic_store(&sampler_on, 0);
}

/*
 * Before an exec (async-signal-safe): see timers_exec_enter and
 * starter_exec_enter. The token holds both results.
 */
int
sampler_exec_enter(int *slot)
{
	int started = starter_exec_enter();

	return timers_exec_enter(slot) | (started << 4);
}

/* After an exec that failed: re-arms the calling thread (and the start). */
void
sampler_exec_leave(int token, int slot)
{
	starter_exec_leave(token >> 4);
	timers_exec_leave(token & 15, slot);
}

/* Pops the oldest published stack, if any (single consumer). */
int
sampler_pop(struct sampler_stack *out)
{
	struct sampler_slot *slot, *r = atomic_load(&ring);
	size_t seq;

	if (r == NULL)
		return 0;
	slot = &r[ring_tail & ring_mask];
	seq = atomic_load_explicit(&slot->seq, memory_order_acquire);
	if (seq != ring_tail + 1)
		return 0;
	out->n = slot->st.n;
	out->link = slot->st.link;
	out->weight = slot->st.weight;
	memcpy(out->pcs, slot->st.pcs, out->n * sizeof out->pcs[0]);
	out->npy = slot->st.npy;
	out->pyentries = slot->st.pyentries;
	memcpy(out->py, slot->st.py, out->npy * sizeof out->py[0]);
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

/* Samples lost to threads that block the signal. */
uint64_t
sampler_lost(void)
{
	return timers_lost();
}

/*
 * Stops sampling for good. A timer signal generated before the timers
 * were deleted may still be pending (its thread was preempted, or blocks
 * the signal), so the default action, which terminates, must never come
 * back: when the old disposition was SIG_DFL our handler stays installed
 * but inert (sampler_on is 0) and a later sampler_init reuses it; SIG_IGN
 * is put back. The ring stays mapped for the same reason.
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
	sigact_real(sampler_sig, &old_action, NULL);
	installed = 0;
}

/*
 * Fork child: no timer and no pending signal is inherited; the handler
 * is. The parent's ring is unmapped (nothing can write it here) so the
 * child's first window maps a clean one instead of copying its pages.
 */
void
sampler_forget(void)
{
	struct sampler_slot *r = atomic_load(&ring);

	atomic_store(&sampler_on, 0);
	timers_forget();
	if (r != NULL)
		munmap(r, (ring_mask + 1) * sizeof *r);
	atomic_store(&ring, NULL);
	atomic_store(&ring_head, 0);
	ring_tail = 0;
	atomic_store(&ring_drops, 0);
	self_pid = getpid();
}

/*
 * How often to drain the ring: a quarter of the time the busiest process
 * (every CPU busy: the timers then fire hz times per CPU-second per CPU)
 * takes to fill it, within [100 ms, 1 s]. Fewer wake-ups of the agent
 * thread, no drops.
 */
int64_t
sampler_drain_interval(int hz, size_t slots, int64_t min_ms, int64_t max_ms)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int64_t ms;

	if (cpus < 1)
		cpus = 1;
	ms = (int64_t)slots * 1000 / 4 / ((int64_t)hz * cpus);
	if (ms < min_ms)
		ms = min_ms;
	if (ms > max_ms)
		ms = max_ms;
	return ms;
}
