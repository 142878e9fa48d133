/*
 * SIGPROF sampler: an async-signal-safe handler that walks the interrupted
 * thread's stack (unwind.h) into a preallocated lock-free ring, drained by
 * the agent thread.
 */
#ifndef PROFD_AGENT_SAMPLER_H
#define PROFD_AGENT_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#define SAMPLER_MAX_FRAMES	64

/*
 * One captured stack: pcs[0] is the interrupted pc, then return addresses.
 * link is where a frameless leaf keeps its return address (the word at
 * the stack pointer on x86-64, the link register on arm64), or 0; the
 * agent thread decides whether to use it (build_fix_leaf).
 */
struct sampler_stack {
	uint32_t	n;
	uintptr_t	link;
	uintptr_t	pcs[SAMPLER_MAX_FRAMES];
};

/*
 * Allocates the ring (slots, a power of two) and installs the SIGPROF
 * handler. Fails if another SIGPROF handler or an ITIMER_PROF is in place
 * (an armed timer under SIG_DFL, inherited across execve, is disarmed).
 */
int		sampler_init(size_t slots, char **cause);
/* True while SIGPROF is still handled by the sampler. */
int		sampler_owns_signal(void);
/* Arms ITIMER_PROF at hz and lets the handler record. */
int		sampler_start(int hz, char **cause);
/* Disarms the timer; later signals are ignored. */
void		sampler_stop(void);
/* Copies the oldest recorded stack into *out; returns 0 when empty. */
int		sampler_pop(struct sampler_stack *out);
/* Samples dropped because the ring was full, since sampler_init. */
uint64_t	sampler_drops(void);
/*
 * Disarms the timer for good. Puts back a previous SIG_IGN; never SIG_DFL
 * (a pending SIGPROF would kill the program): the handler then stays
 * installed but inert. The ring stays mapped.
 */
void		sampler_fini(void);
/* In a fork child: forget everything without freeing (atfork). */
void		sampler_forget(void);
/*
 * Around an exec (async-signal-safe): enter disarms the timer in the
 * process that armed it and returns a token; leave, called only when the
 * exec failed, re-arms it as the agent wants it.
 */
int		sampler_exec_enter(void);
void		sampler_exec_leave(int token);

#endif
