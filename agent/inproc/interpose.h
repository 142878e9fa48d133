/*
 * The wrappers libprofd-agent interposes (exec family, signal masks and
 * dispositions) under second, profd_agent_* names, for libprofd-heap's
 * forwarders (heapfwd.c). LD_PRELOAD=libprofd-heap.so loads
 * libprofd-agent as its dependency, after the program's own libraries:
 * libc's definitions then come first in the search order and the
 * agent's wrappers would never be called (liblzma's workers would block
 * the agent's signal through libc's pthread_sigmask, and their samples
 * be lost). libprofd-heap, which is preloaded, defines the names and
 * forwards here. Not a public interface (profd_agent.h is).
 */
#ifndef PROFD_AGENT_INTERPOSE_H
#define PROFD_AGENT_INTERPOSE_H

#include <signal.h>
#include <stdarg.h>

/* execl's kinds for profd_agent_exec_l. */
#define PROFD_AGENT_EXEC_L	0	/* execl: the caller's environ */
#define PROFD_AGENT_EXEC_LE	1	/* execle: envp after the NULL */
#define PROFD_AGENT_EXEC_LP	2	/* execlp: a search of PATH */

int	profd_agent_pthread_sigmask(int, const sigset_t *, sigset_t *);
int	profd_agent_sigprocmask(int, const sigset_t *, sigset_t *);
int	profd_agent_sigaction(int, const struct sigaction *,
	    struct sigaction *);
sighandler_t profd_agent_signal(int, sighandler_t);
int	profd_agent_execve(const char *, char *const[], char *const[]);
int	profd_agent_execv(const char *, char *const[]);
int	profd_agent_execvp(const char *, char *const[]);
int	profd_agent_execvpe(const char *, char *const[], char *const[]);
int	profd_agent_fexecve(int, char *const[], char *const[]);
int	profd_agent_execveat(int, const char *, char *const[], char *const[],
	    int);
/* The execl* body: arg0, then ap (cp: a copy of ap, for the count). */
int	profd_agent_exec_l(int kind, const char *path, const char *arg0,
	    va_list ap, va_list cp);

#endif
