/*
 * The exec family, interposed. execve(2) deletes POSIX timers, but a timer
 * signal already pending on the exec'ing thread survives it, and in the
 * new image (handlers reset) the default action of a real-time signal
 * terminates the program. Every wrapper disarms the calling thread's
 * timer and takes any pending instance of the signal off the thread right
 * before the exec, with the signal mask put back as it was, and, if the
 * exec fails and returns, re-arms the timer (sampler_exec_enter/leave).
 * glibc's execv, execvp and execl* reach execve internally, not through
 * the PLT, so each entry point is wrapped: execve, execv, execvp,
 * execvpe, execl, execlp, execle, fexecve and execveat.
 *
 * Wrappers may run in a child after fork() in a multithreaded program, so
 * they are async-signal-safe: the real functions are looked up once at
 * load (constructor), the execl* argument vectors live on the stack (or in
 * an mmap for very long lists), and nothing allocates, locks or prints.
 * These names and profd_agent_* are the library's only global symbols:
 * agent/libprofd-agent.sym lists them (see agent/include.am).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/inproc/sampler.h"

#define EXEC_STACK_ARGS	256		/* execl* vectors up to this on stack */
#define EXEC_MAX_ARGS	(1L << 24)	/* beyond ARG_MAX anyway */

typedef int	exec_ve_fn(const char *, char *const[], char *const[]);
typedef int	exec_vp_fn(const char *, char *const[]);
typedef int	exec_fd_fn(int, char *const[], char *const[]);
typedef int	exec_at_fn(int, const char *, char *const[], char *const[],
		    int);

extern char	**environ;

static exec_ve_fn	*real_execve;
static exec_vp_fn	*real_execvp;
static exec_ve_fn	*real_execvpe;
static exec_fd_fn	*real_fexecve;
static exec_at_fn	*real_execveat;

/* Looks the next definitions up once, before any wrapper can run. */
__attribute__((constructor(101))) static void
exec_resolve(void)
{
	real_execve = (exec_ve_fn *)dlsym(RTLD_NEXT, "execve");
	real_execvp = (exec_vp_fn *)dlsym(RTLD_NEXT, "execvp");
	real_execvpe = (exec_ve_fn *)dlsym(RTLD_NEXT, "execvpe");
	real_fexecve = (exec_fd_fn *)dlsym(RTLD_NEXT, "fexecve");
	real_execveat = (exec_at_fn *)dlsym(RTLD_NEXT, "execveat");
}

/* execve through the next definition, or the system call. */
static int
exec_ve(const char *path, char *const argv[], char *const envp[])
{
	if (real_execve != NULL)
		return real_execve(path, argv, envp);
	return (int)syscall(SYS_execve, path, argv, envp);
}

/* execvpe through the next definition (glibc always has it). */
static int
exec_vpe(const char *file, char *const argv[], char *const envp[])
{
	if (real_execvpe != NULL)
		return real_execvpe(file, argv, envp);
	if (envp == environ && real_execvp != NULL)
		return real_execvp(file, argv);
	errno = ENOSYS;
	return -1;
}

/* execveat through the next definition, or the system call. */
static int
exec_veat(int fd, const char *path, char *const argv[], char *const envp[],
    int flags)
{
	if (real_execveat != NULL)
		return real_execveat(fd, path, argv, envp, flags);
#ifdef SYS_execveat
	return (int)syscall(SYS_execveat, fd, path, argv, envp, flags);
#else
	errno = ENOSYS;
	return -1;
#endif
}

/* execve(2) with the thread's timer off. */
int
execve(const char *path, char *const argv[], char *const envp[])
{
	int slot, token = sampler_exec_enter(&slot), rc;

	rc = exec_ve(path, argv, envp);
	sampler_exec_leave(token, slot);
	return rc;
}

/* execv(3) with the thread's timer off. */
int
execv(const char *path, char *const argv[])
{
	int slot, token = sampler_exec_enter(&slot), rc;

	rc = exec_ve(path, argv, environ);
	sampler_exec_leave(token, slot);
	return rc;
}

/* execvp(3) with the thread's timer off. */
int
execvp(const char *file, char *const argv[])
{
	int slot, token = sampler_exec_enter(&slot), rc;

	if (real_execvp != NULL)
		rc = real_execvp(file, argv);
	else
		rc = exec_vpe(file, argv, environ);
	sampler_exec_leave(token, slot);
	return rc;
}

/* execvpe(3) with the thread's timer off. */
int
execvpe(const char *file, char *const argv[], char *const envp[])
{
	int slot, token = sampler_exec_enter(&slot), rc;

	rc = exec_vpe(file, argv, envp);
	sampler_exec_leave(token, slot);
	return rc;
}

/* fexecve(3) with the thread's timer off. */
int
fexecve(int fd, char *const argv[], char *const envp[])
{
	int slot, token = sampler_exec_enter(&slot), rc;

	if (real_fexecve != NULL)
		rc = real_fexecve(fd, argv, envp);
	else
		rc = exec_veat(fd, "", argv, envp, AT_EMPTY_PATH);
	sampler_exec_leave(token, slot);
	return rc;
}

/* execveat(2) with the thread's timer off. */
int
execveat(int fd, const char *path, char *const argv[], char *const envp[],
    int flags)
{
	int slot, token = sampler_exec_enter(&slot), rc;

	rc = exec_veat(fd, path, argv, envp, flags);
	sampler_exec_leave(token, slot);
	return rc;
}

/* How the execl* wrappers finish: which exec and which environment. */
enum exec_l_kind {
	EXEC_L,		/* execve(path, argv, environ) */
	EXEC_LE,	/* execve(path, argv, envp after the NULL) */
	EXEC_LP,	/* execvp(file, argv) */
};

/* Runs the exec for a finished vector. */
static int
exec_l_run(enum exec_l_kind kind, const char *path, char **argv,
    char *const envp[])
{
	switch (kind) {
	case EXEC_LE:
		return exec_ve(path, argv, envp);
	case EXEC_LP:
		return real_execvp != NULL ? real_execvp(path, argv) :
		    exec_vpe(path, argv, environ);
	default:
		return exec_ve(path, argv, environ);
	}
}

/*
 * The execl* body: counts the arguments after arg0 (ap), copies them into
 * a vector on the stack or, when long, in an anonymous mapping (mmap is a
 * plain system call, safe after fork), and runs the exec with the timer
 * off. cp is a second copy of the list for the count.
 */
static int
exec_l(enum exec_l_kind kind, const char *path, const char *arg0,
    va_list ap, va_list cp)
{
	char *small[EXEC_STACK_ARGS], **argv = small, *const *envp = NULL;
	size_t n = 1, i, map_len = 0;
	int token, slot, rc;

	if (arg0 != NULL)
		while (va_arg(cp, char *) != NULL)
			if (++n > (size_t)EXEC_MAX_ARGS) {
				errno = E2BIG;
				return -1;
			}
	if (n + 1 > EXEC_STACK_ARGS) {
		map_len = (n + 1) * sizeof *argv;
		argv = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (argv == MAP_FAILED) {
			errno = E2BIG;
			return -1;
		}
	}
	argv[0] = (char *)arg0;
	if (arg0 == NULL)
		n = 0;
	for (i = 1; i <= n; i++)
		argv[i] = va_arg(ap, char *);	/* argv[n] is the NULL */
	if (kind == EXEC_LE)
		envp = va_arg(ap, char *const *);
	token = sampler_exec_enter(&slot);
	rc = exec_l_run(kind, path, argv, envp);
	sampler_exec_leave(token, slot);
	if (map_len != 0) {
		int saved_errno = errno;

		munmap(argv, map_len);
		errno = saved_errno;
	}
	return rc;
}

/* execl(3) with the thread's timer off. */
int
execl(const char *path, const char *arg, ...)
{
	va_list ap, cp;
	int rc;

	va_start(ap, arg);
	va_copy(cp, ap);
	rc = exec_l(EXEC_L, path, arg, ap, cp);
	va_end(cp);
	va_end(ap);
	return rc;
}

/* execle(3) with the thread's timer off. */
int
execle(const char *path, const char *arg, ...)
{
	va_list ap, cp;
	int rc;

	va_start(ap, arg);
	va_copy(cp, ap);
	rc = exec_l(EXEC_LE, path, arg, ap, cp);
	va_end(cp);
	va_end(ap);
	return rc;
}

/* execlp(3) with the thread's timer off. */
int
execlp(const char *file, const char *arg, ...)
{
	va_list ap, cp;
	int rc;

	va_start(ap, arg);
	va_copy(cp, ap);
	rc = exec_l(EXEC_LP, file, arg, ap, cp);
	va_end(cp);
	va_end(ap);
	return rc;
}
