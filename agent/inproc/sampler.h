/*
 * CPU sampler: per-thread CPU-time timers (timers.c) send a real-time
 * signal whose async-signal-safe handler walks the interrupted thread's
 * stack (unwind.h) into a lock-free ring, drained by the agent thread.
 */
#ifndef PROFD_AGENT_SAMPLER_H
#define PROFD_AGENT_SAMPLER_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/core/pyrt.h"

#define SAMPLER_MAX_FRAMES	64	/* native */
#define SAMPLER_MAX_MIXED	128	/* native and Python, mixed */

/*
 * One captured stack: pcs[0] is the interrupted pc, then return addresses.
 * link is where a frameless leaf keeps its return address (the word at
 * the stack pointer on x86-64, the link register on arm64), or 0; the
 * agent thread decides whether to use it (build_fix_leaf).
 */
struct sampler_stack {
	uint32_t	n;
	uint32_t	weight;		/* 1 + the timer's overrun */
	uintptr_t	link;
	uintptr_t	pcs[SAMPLER_MAX_FRAMES];
	uint32_t	npy;		/* Python frames (pysample.h) */
	uint64_t	pyentries;
	uint64_t	py[PYRT_MAX_FRAMES];
};

/* The default signal: SIGRTMAX-4 (see agent/README.md). */
#define SAMPLER_DEFAULT_SIGNAL	(SIGRTMAX - 4)

/*
 * Installs the handler for the real-time signal signo (which also hands
 * the start timer's signal to starter_fire). Fails if the program already
 * handles signo. Never touches SIGPROF or ITIMER_PROF.
 */
int		sampler_install(int signo, char **cause);
/*
 * sampler_install, and sizes the ring (slots, a power of two; mapped at
 * the first start) and the timer table.
 */
int		sampler_init(int signo, size_t slots, char **cause);
/* True while the agent's signal is still handled by the sampler. */
int		sampler_owns_signal(void);
/* The signal in use (0 before sampler_init). */
int		sampler_signal(void);
/* Arms a CPU-time timer at hz in every thread and lets the handler record. */
int		sampler_start(int hz, char **cause);
/*
 * Agent thread, on each drain tick: arms new threads, deletes the timers
 * of exited ones, counts losses. Returns -1 after stopping everything if
 * the program has installed its own handler for the agent's signal.
 */
int		sampler_tick(void);
/* Deletes the timers; later signals are ignored. */
void		sampler_stop(void);
/* Copies the oldest recorded stack into *out; returns 0 when empty. */
int		sampler_pop(struct sampler_stack *out);
/*
 * How often the agent should drain a ring of slots sampled at hz: a
 * quarter of the time the busiest process takes to fill it, within
 * [min_ms, max_ms].
 */
int64_t		sampler_drain_interval(int hz, size_t slots, int64_t min_ms,
		    int64_t max_ms);
/* Samples dropped because the ring was full, since sampler_init. */
uint64_t	sampler_drops(void);
/* Samples lost because their thread blocked the signal (estimate). */
uint64_t	sampler_lost(void);
/*
 * Deletes the timers for good. Puts back a previous SIG_IGN; never SIG_DFL
 * (a pending signal would kill the program): the handler then stays
 * installed but inert. The ring stays mapped.
 */
void		sampler_fini(void);
/* In a fork child: forget the parent's timers and ring (atfork). */
void		sampler_forget(void);
/*
 * Around an exec (async-signal-safe): enter disarms the calling thread's
 * timer and takes a pending signal off it, returning a token; leave,
 * called only when the exec failed, re-arms it.
 */
int		sampler_exec_enter(int *slot);
void		sampler_exec_leave(int token, int slot);

#endif
