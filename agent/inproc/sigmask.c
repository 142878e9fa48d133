/*
 * pthread_sigmask and sigprocmask, interposed (see sigmask.h). A mask
 * that would block the guarded signal (SIG_BLOCK or SIG_SETMASK) is
 * applied without it; SIG_UNBLOCK and queries pass through. The real
 * functions are looked up once at load (a constructor, like exec.c's):
 * these wrappers may run in a signal handler or after fork, so they must
 * not call dlsym themselves. Without a next definition (a static program)
 * they make the system call, leaving glibc's two internal signals
 * unblocked as glibc does. The guard is one atomic int: async-signal-safe.
 * Masks the kernel sets without these functions (a raw rt_sigprocmask,
 * sigsuspend, pselect's temporary mask) are not filtered: samples lost to
 * them are counted by the sampler.
 *
 * The wrappers also remember, per thread, the mask the program last set
 * (signals 1-64, what it asked for less the guarded signal): a signal
 * handler that finds another mask in its context was delivered inside a
 * handler of the program's (which the kernel runs with more signals
 * blocked), which agent/inproc/safepoint.c needs to know.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/inproc/sigmask.h"

/* glibc's internal SIGCANCEL and SIGSETXID, never blocked by glibc. */
#define SIGMASK_GLIBC_FIRST	32
#define SIGMASK_GLIBC_LAST	33

typedef int	sigmask_fn(int, const sigset_t *, sigset_t *);

static sigmask_fn	*sigmask_next_pthread, *sigmask_next_proc;
static _Atomic int	 sigmask_sig;
/* The calling thread's mask as the program last set it (signals 1-64). */
static __thread uint64_t sigmask_prog
    __attribute__((tls_model("initial-exec")));
static __thread int	 sigmask_prog_known
    __attribute__((tls_model("initial-exec")));

/* Finds the next definitions of both functions (libc's). */
__attribute__((constructor(101))) static void
sigmask_resolve(void)
{
	sigmask_next_pthread = (sigmask_fn *)dlsym(RTLD_NEXT,
	    "pthread_sigmask");
	sigmask_next_proc = (sigmask_fn *)dlsym(RTLD_NEXT, "sigprocmask");
}

/* Keeps signo deliverable (0: stop). */
void
sigmask_guard(int signo)
{
	atomic_store(&sigmask_sig, signo);
}

/* The guarded signal, or 0. */
int
sigmask_guarded(void)
{
	return atomic_load_explicit(&sigmask_sig, memory_order_relaxed);
}

/* The system call, as glibc makes it: errno-style result. */
static int
sigmask_syscall(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy;

	if (set != NULL && how != SIG_UNBLOCK) {
		copy = *set;
		sigdelset(&copy, SIGMASK_GLIBC_FIRST);
		sigdelset(&copy, SIGMASK_GLIBC_LAST);
		set = &copy;
	}
	return (int)syscall(SYS_rt_sigprocmask, how, set, old, _NSIG / 8);
}

/* The real pthread_sigmask: 0 or an error number. */
int
sigmask_real(int how, const sigset_t *set, sigset_t *old)
{
	if (sigmask_next_pthread != NULL)
		return sigmask_next_pthread(how, set, old);
	return sigmask_syscall(how, set, old) == 0 ? 0 : errno;
}

/* set without the guarded signal, in *copy, when it would block it. */
static const sigset_t *
sigmask_filter(int how, const sigset_t *set, sigset_t *copy)
{
	int sig = sigmask_guarded();

	if (sig <= 0 || set == NULL || how == SIG_UNBLOCK ||
	    sigismember(set, sig) != 1)
		return set;
	*copy = *set;
	sigdelset(copy, sig);
	return copy;
}

/* Signals 1-64 of a sigset_t, one bit each (bit n - 1 for signal n). */
static uint64_t
sigmask_word(const sigset_t *set)
{
	uint64_t w;

	memcpy(&w, set, sizeof w);
	return w;
}

/* Remembers the mask that how and set made of prev (after success). */
static void
sigmask_note(int how, const sigset_t *set, const sigset_t *prev)
{
	uint64_t w = sigmask_word(prev);

	if (set != NULL) {
		if (how == SIG_BLOCK)
			w |= sigmask_word(set);
		else if (how == SIG_UNBLOCK)
			w &= ~sigmask_word(set);
		else if (how == SIG_SETMASK)
			w = sigmask_word(set);
	}
	sigmask_prog = w;
	sigmask_prog_known = 1;
}

/* Remembers the calling thread's mask as it is now. */
void
sigmask_note_current(void)
{
	sigset_t cur;

	if (sigmask_syscall(SIG_BLOCK, NULL, &cur) == 0)
		sigmask_note(SIG_BLOCK, NULL, &cur);
}

/* The calling thread's mask as the program last set it; 0 if unknown. */
int
sigmask_program(uint64_t *mask)
{
	if (!sigmask_prog_known)
		return 0;
	*mask = sigmask_prog;
	return 1;
}

/* Interposed: the program's thread masks, never blocking the guard. */
int
pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy, prev;
	int rc;

	set = sigmask_filter(how, set, &copy);
	if ((rc = sigmask_real(how, set, &prev)) == 0) {
		sigmask_note(how, set, &prev);
		if (old != NULL)
			*old = prev;
	}
	return rc;
}

/* Interposed: the same for sigprocmask (0, or -1 and errno). */
int
sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy, prev;
	int rc;

	set = sigmask_filter(how, set, &copy);
	if (sigmask_next_proc != NULL)
		rc = sigmask_next_proc(how, set, &prev);
	else
		rc = sigmask_syscall(how, set, &prev);
	if (rc == 0) {
		sigmask_note(how, set, &prev);
		if (old != NULL)
			*old = prev;
	}
	return rc;
}
