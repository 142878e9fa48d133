/*
 * The start timer: under LD_PRELOAD, the agent thread is not created when
 * the process starts (or forks) but when its first window is due, by the
 * handler of a one-shot timer on CLOCK_MONOTONIC that sends the agent's
 * signal to the thread that armed it (the main thread, or the forking
 * thread in a fork child). A process that ends or execs before then
 * (a build's compilers and shells, their command substitutions) never has
 * a second thread: none to create, none for exec or exit to wait for on a
 * busy machine.
 *
 * The handler (sampler.c's, which recognises the timer by its token in
 * si_value) calls starter_fire: if agent/inproc/safepoint.c finds the
 * interrupted context safe, the timer is deleted and the start callback
 * creates the thread there; if not, the timer is re-armed 10 ms later
 * (for a second, then doubling up to 1 s) until it lands on a safe point. Everything here is
 * async-signal-safe (timer_create, timer_settime and timer_delete with
 * SIGEV_THREAD_ID are plain system calls in glibc).
 *
 * exec: the wrappers (sampler_exec_enter) disarm the timer and take a
 * pending signal of it off the thread, and re-arm it if the exec fails.
 * fork: timers are not inherited; the child arms its own.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/inproc/safepoint.h"
#include "agent/inproc/sigmask.h"
#include "agent/inproc/starter.h"

#define STARTER_RETRY_MIN_MS	10
#define STARTER_RETRY_MAX_MS	1000
#define STARTER_RETRY_FAST	100	/* tries 10 ms apart before backing off */

enum {
	STARTER_IDLE,		/* nothing armed */
	STARTER_ARMED,		/* waiting for the timer */
	STARTER_FIRED,		/* the callback ran (or runs) */
};

static const char	 starter_token_obj;
static _Atomic int	 starter_state;
static timer_t		 starter_timer;
static pid_t		 starter_pid;
static int		 starter_sig;
static int64_t		 starter_retry_ms;
static int		 starter_tries;
static starter_cb	*starter_fn;
static void		*starter_arg;

/* Arms the timer in ms from now (relative) or at ms (absolute). */
static int
starter_set(int64_t ms, int absolute)
{
	struct itimerspec it;

	memset(&it, 0, sizeof it);
	if (ms <= 0 && !absolute)
		ms = 1;
	it.it_value.tv_sec = (time_t)(ms / 1000);
	it.it_value.tv_nsec = (long)(ms % 1000) * 1000000;
	if (it.it_value.tv_sec == 0 && it.it_value.tv_nsec == 0)
		it.it_value.tv_nsec = 1;
	return timer_settime(starter_timer, absolute ? TIMER_ABSTIME : 0,
	    &it, NULL);
}

/*
 * Arms the start: at at_ms (CLOCK_MONOTONIC, ms), the agent's signal
 * signo reaches the calling thread and, at a safe point, cb(arg) runs in
 * the handler. -1 (errno set) if no timer could be had.
 */
int
starter_arm(int signo, int64_t at_ms, starter_cb *cb, void *arg)
{
	struct sigevent sev;

	if (atomic_load(&starter_state) != STARTER_IDLE) {
		errno = EBUSY;
		return -1;
	}
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = signo;
	sev.sigev_value.sival_ptr = (void *)(uintptr_t)&starter_token_obj;
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &sev, &starter_timer) != 0)
		return -1;
	starter_sig = signo;
	starter_fn = cb;
	starter_arg = arg;
	starter_pid = getpid();
	starter_retry_ms = STARTER_RETRY_MIN_MS;
	starter_tries = 0;
	sigmask_note_current();
	atomic_store(&starter_state, STARTER_ARMED);
	if (starter_set(at_ms, 1) != 0) {
		atomic_store(&starter_state, STARTER_IDLE);
		timer_delete(starter_timer);
		return -1;
	}
	return 0;
}

/* Whether a signal's si_value is the start timer's. */
int
starter_is_token(const void *value)
{
	return value == (const void *)&starter_token_obj;
}

/*
 * In the agent's handler, for the start timer's signal: runs the start
 * callback if the interrupted context (uc) is a safe point, else tries
 * again a little later.
 */
void
starter_fire(const void *uc)
{
	int armed = STARTER_ARMED;

	if (atomic_load(&starter_state) != STARTER_ARMED ||
	    starter_pid != getpid())
		return;
	if (!safepoint_check(uc)) {
		starter_set(starter_retry_ms, 0);
		if (++starter_tries >= STARTER_RETRY_FAST &&
		    starter_retry_ms < STARTER_RETRY_MAX_MS)
			starter_retry_ms *= 2;
		return;
	}
	if (!atomic_compare_exchange_strong(&starter_state, &armed,
	    STARTER_FIRED))
		return;
	timer_delete(starter_timer);
	starter_fn(starter_arg);
}

/*
 * Normal context: if the start is still armed, cancels it (exit: the
 * thread is not wanted). Returns 1 if it was armed, 0 if it had fired
 * or was never armed.
 */
int
starter_cancel(void)
{
	int armed = STARTER_ARMED;

	if (starter_pid != getpid() ||
	    !atomic_compare_exchange_strong(&starter_state, &armed,
	    STARTER_IDLE))
		return 0;
	timer_delete(starter_timer);
	return 1;
}

/* Whether a start is armed and has not fired in this process. */
int
starter_pending(void)
{
	return starter_pid == getpid() &&
	    atomic_load(&starter_state) == STARTER_ARMED;
}

/* Fork child: the parent's timer is not ours; nothing is armed here. */
void
starter_forget(void)
{
	atomic_store(&starter_state, STARTER_IDLE);
	starter_pid = 0;
}

/*
 * Before an exec (async-signal-safe): disarms an armed start and takes a
 * pending signal of it off the thread (it would survive the exec and kill
 * the new image), the mask put back. Returns 1 if it disarmed one.
 */
int
starter_exec_enter(void)
{
	struct itimerspec zero;
	struct timespec nowait = { 0, 0 };
	sigset_t set, old;
	siginfo_t si;

	if (!starter_pending())
		return 0;
	sigemptyset(&set);
	sigaddset(&set, starter_sig);
	sigmask_real(SIG_BLOCK, &set, &old);
	memset(&zero, 0, sizeof zero);
	timer_settime(starter_timer, 0, &zero, NULL);
	while (sigtimedwait(&set, &si, &nowait) == starter_sig)
		;
	sigmask_real(SIG_SETMASK, &old, NULL);
	return 1;
}

/* After an exec that failed: arms the start again soon. Keeps errno. */
void
starter_exec_leave(int token)
{
	int saved_errno = errno;

	if (token && starter_pending())
		starter_set(STARTER_RETRY_MIN_MS, 0);
	errno = saved_errno;
}
