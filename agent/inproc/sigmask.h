/*
 * The signal-mask functions pthread_sigmask and sigprocmask, interposed
 * so that a program's threads keep taking the agent's signal: some block
 * every signal in their worker threads (liblzma does, for xz -T2), which
 * would leave their CPU unsampled. While a signal is guarded, a mask that
 * blocks it is applied without it; the handler is transparent to the
 * thread it interrupts (no locks, errno kept, SA_RESTART).
 */
#ifndef PROFD_AGENT_SIGMASK_H
#define PROFD_AGENT_SIGMASK_H

#include <signal.h>
#include <stdint.h>

/* Keeps signo deliverable from now on (0: stop guarding). */
void	sigmask_guard(int signo);
/* The guarded signal, or 0. */
int	sigmask_guarded(void);
/* The real pthread_sigmask, for the agent's own masks (not filtered). */
int	sigmask_real(int how, const sigset_t *set, sigset_t *old);
/* Remembers the calling thread's current mask as the program's. */
void	sigmask_note_current(void);
/*
 * The calling thread's mask as the program last set it through these
 * functions (signals 1-64: bit n - 1 for signal n); 0 if never seen.
 * Async-signal-safe.
 */
int	sigmask_program(uint64_t *mask);

#endif
