/*
 * Whether the agent's signal handler may start the agent thread at the
 * point it interrupted (see safepoint.c for the reasoning).
 */
#ifndef PROFD_AGENT_SAFEPOINT_H
#define PROFD_AGENT_SAFEPOINT_H

/*
 * Once per process image, in normal context: 0 if a handler may ever
 * start the thread here (glibc's allocator, x86-64), -1 if not.
 */
int	safepoint_prepare(int signo);
/* In the handler: 1 if pthread_create is safe from this context. */
int	safepoint_check(const void *ucontext);

#endif
