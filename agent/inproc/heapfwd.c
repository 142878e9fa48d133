/*
 * libprofd-heap's copies of the names libprofd-agent interposes (the exec
 * family, pthread_sigmask, sigprocmask, sigaction, signal), each handing
 * the call to the agent's wrapper (interpose.h). Preloaded, libprofd-heap
 * comes before libc in the search order; libprofd-agent, its dependency,
 * comes after, so without these the program would reach libc's functions
 * and not the agent's (a multithreaded program's workers blocking the
 * agent's signal lost every sample). With libprofd-agent preloaded too,
 * its own definitions come first and these are not used.
 */
#include <signal.h>
#include <stdarg.h>
#include <unistd.h>

#include "agent/inproc/interpose.h"

/* Interposed: to the agent's pthread_sigmask. */
int
pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	return profd_agent_pthread_sigmask(how, set, old);
}

/* Interposed: to the agent's sigprocmask. */
int
sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	return profd_agent_sigprocmask(how, set, old);
}

/* Interposed: to the agent's sigaction. */
int
sigaction(int signum, const struct sigaction *act, struct sigaction *old)
{
	return profd_agent_sigaction(signum, act, old);
}

/* Interposed: to the agent's signal. */
sighandler_t
signal(int signum, sighandler_t handler)
{
	return profd_agent_signal(signum, handler);
}

/* Interposed: to the agent's execve. */
int
execve(const char *path, char *const argv[], char *const envp[])
{
	return profd_agent_execve(path, argv, envp);
}

/* Interposed: to the agent's execv. */
int
execv(const char *path, char *const argv[])
{
	return profd_agent_execv(path, argv);
}

/* Interposed: to the agent's execvp. */
int
execvp(const char *file, char *const argv[])
{
	return profd_agent_execvp(file, argv);
}

/* Interposed: to the agent's execvpe. */
int
execvpe(const char *file, char *const argv[], char *const envp[])
{
	return profd_agent_execvpe(file, argv, envp);
}

/* Interposed: to the agent's fexecve. */
int
fexecve(int fd, char *const argv[], char *const envp[])
{
	return profd_agent_fexecve(fd, argv, envp);
}

/* Interposed: to the agent's execveat. */
int
execveat(int fd, const char *path, char *const argv[], char *const envp[],
    int flags)
{
	return profd_agent_execveat(fd, path, argv, envp, flags);
}

/* Interposed: execl, through the agent's execl* body. */
int
execl(const char *path, const char *arg, ...)
{
	va_list ap, cp;
	int rc;

	va_start(ap, arg);
	va_copy(cp, ap);
	rc = profd_agent_exec_l(PROFD_AGENT_EXEC_L, path, arg, ap, cp);
	va_end(cp);
	va_end(ap);
	return rc;
}

/* Interposed: execle, through the agent's execl* body. */
int
execle(const char *path, const char *arg, ...)
{
	va_list ap, cp;
	int rc;

	va_start(ap, arg);
	va_copy(cp, ap);
	rc = profd_agent_exec_l(PROFD_AGENT_EXEC_LE, path, arg, ap, cp);
	va_end(cp);
	va_end(ap);
	return rc;
}

/* Interposed: execlp, through the agent's execl* body. */
int
execlp(const char *file, const char *arg, ...)
{
	va_list ap, cp;
	int rc;

	va_start(ap, arg);
	va_copy(cp, ap);
	rc = profd_agent_exec_l(PROFD_AGENT_EXEC_LP, file, arg, ap, cp);
	va_end(cp);
	va_end(ap);
	return rc;
}
