/*
 * The start timer: creates the agent thread when the first window is
 * due, from the agent's signal handler at a safe point (see starter.c).
 */
#ifndef PROFD_AGENT_STARTER_H
#define PROFD_AGENT_STARTER_H

#include <stdint.h>

/* The start callback; may run in a signal handler. */
typedef void	starter_cb(void *arg);

/* Arms the start for at_ms (CLOCK_MONOTONIC ms); -1 if impossible. */
int	starter_arm(int signo, int64_t at_ms, starter_cb *cb, void *arg);
/* Whether si_value is the start timer's (the handler dispatches on it). */
int	starter_is_token(const void *value);
/* In the handler: start at this point if safe, else retry later. */
void	starter_fire(const void *ucontext);
/* Cancels an armed start; 1 if one was armed. */
int	starter_cancel(void);
/* Whether a start is armed in this process. */
int	starter_pending(void);
/* Fork child: forgets the parent's start. */
void	starter_forget(void);
/* Around an exec (async-signal-safe): disarm, and re-arm if it failed. */
int	starter_exec_enter(void);
void	starter_exec_leave(int token);

#endif
