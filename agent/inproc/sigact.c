/*
 * sigaction and signal, interposed: a program that sets its own
 * disposition for the agent's signal while the agent's start is still
 * pending (agent/inproc/starter.c: a one-shot timer that sends that signal when
 * the first window is due) would be killed by the timer's signal if it
 * reset the signal to SIG_DFL (the default action of a real-time signal
 * terminates), and its own handler would get a signal it never asked for
 * otherwise. Programs that reset every signal at start-up (daemons,
 * before an exec in a fork child) do exactly that. So before such a
 * change reaches the kernel the pending start is cancelled: the agent
 * steps aside in that process, as it does when a program takes its signal
 * over during a window (sampler_tick). Queries and other signals pass
 * straight through. The real functions are looked up once at load; in a
 * static program (no next definition) glibc's __sigaction is called.
 * Async-signal-safe, like what they wrap. sigset, sysv_signal and
 * bsd_signal are not covered.
 */
#include <dlfcn.h>
#include <signal.h>
#include <string.h>

#include "agent/inproc/sigact.h"
#include "agent/inproc/sigmask.h"
#include "agent/inproc/starter.h"

typedef int	sigact_fn(int, const struct sigaction *, struct sigaction *);
typedef sighandler_t	sigact_signal_fn(int, sighandler_t);

/* glibc's own, exported beside the weak sigaction it is the body of. */
extern int	__sigaction(int, const struct sigaction *, struct sigaction *);

static sigact_fn	*sigact_next;
static sigact_signal_fn	*sigact_next_signal;

/* Finds the next definitions (libc's, or a sanitizer's) once. */
__attribute__((constructor(101))) static void
sigact_resolve(void)
{
	sigact_next = (sigact_fn *)dlsym(RTLD_NEXT, "sigaction");
	sigact_next_signal = (sigact_signal_fn *)dlsym(RTLD_NEXT, "signal");
}

/* The real sigaction, for the agent's own handler (not watched). */
int
sigact_real(int signum, const struct sigaction *act, struct sigaction *old)
{
	if (sigact_next != NULL)
		return sigact_next(signum, act, old);
	return __sigaction(signum, act, old);
}

/* Before the program changes signum: a pending start on it is cancelled. */
static void
sigact_watch(int signum)
{
	int guarded = sigmask_guarded();

	if (guarded > 0 && signum == guarded)
		(void)starter_cancel();
}

/* Interposed: the program's sigaction. */
int
sigaction(int signum, const struct sigaction *act, struct sigaction *old)
{
	if (act != NULL)
		sigact_watch(signum);
	return sigact_real(signum, act, old);
}

/* Interposed: the program's signal (BSD semantics, as glibc's). */
sighandler_t
signal(int signum, sighandler_t handler)
{
	struct sigaction sa, old;

	sigact_watch(signum);
	if (sigact_next_signal != NULL)
		return sigact_next_signal(signum, handler);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, signum);
	sa.sa_flags = SA_RESTART;
	if (__sigaction(signum, &sa, &old) != 0)
		return SIG_ERR;
	return old.sa_handler;
}
