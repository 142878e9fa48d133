/*
 * Per-thread CPU-time timers for the sampler: one POSIX timer per thread
 * on the thread's own CPU clock, delivering the agent's signal to that
 * thread (SIGEV_THREAD_ID), managed from the agent thread.
 */
#ifndef PROFD_AGENT_TIMERS_H
#define PROFD_AGENT_TIMERS_H

#include <stdint.h>

#define TIMERS_MAX	8192	/* threads sampled at once */

/* Maps the table and remembers the signal; -1 if mmap fails. */
int		timers_init(int signo);
/* Creates a timer firing every ns of CPU time for every thread. */
int		timers_start(long ns);
/* Agent thread, each drain tick: arm new threads, delete gone ones. */
void		timers_tick(void);
/* Deletes every timer. */
void		timers_stop(void);
/*
 * Signal handler: credits weight samples to the timer named by the
 * signal's value. Returns 0 for a signal of a deleted timer.
 */
int		timers_received(void *value, uint32_t weight);
/* Samples lost because a thread blocked the signal (estimate). */
uint64_t	timers_lost(void);
/* Threads that got no timer (table full or RLIMIT_SIGPENDING). */
uint64_t	timers_unarmed(void);
/*
 * Around an exec (async-signal-safe): enter disarms the calling thread's
 * timer and takes a pending signal off it; leave (only when the exec
 * failed) re-arms it.
 */
int		timers_exec_enter(int *slot);
void		timers_exec_leave(int token, int slot);
/* Fork child: forget the parent's timers. */
void		timers_forget(void);

#endif
