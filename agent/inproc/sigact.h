/*
 * sigaction and signal, interposed so that a program changing the
 * agent's signal cancels a pending start first (see sigact.c).
 */
#ifndef PROFD_AGENT_SIGACT_H
#define PROFD_AGENT_SIGACT_H

#include <signal.h>

/* The real sigaction, for the agent's own handler. */
int	sigact_real(int signum, const struct sigaction *act,
	    struct sigaction *old);

#endif
