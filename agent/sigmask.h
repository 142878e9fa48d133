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

/* Keeps signo deliverable from now on (0: stop guarding). */
void	sigmask_guard(int signo);
/* The guarded signal, or 0. */
int	sigmask_guarded(void);
/* The real pthread_sigmask, for the agent's own masks (not filtered). */
int	sigmask_real(int how, const sigset_t *set, sigset_t *old);

#endif
