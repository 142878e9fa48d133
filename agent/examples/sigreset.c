/*
 * sigreset: a program that, like many daemons, resets every signal to its
 * default action as soon as it starts (here in a constructor, which runs
 * right after the preloaded agent's), then burns CPU for -s seconds
 * (default 1.5) and prints "ok". Under the agent with a 1-second period the
 * agent's start timer would fire into SIG_DFL and kill it, but for the
 * interposed sigaction, which cancels the pending start
 * (test/e2e/agent_lazy.sh).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Every catchable signal back to SIG_DFL. */
__attribute__((constructor)) static void
sigreset_all(void)
{
	struct sigaction sa;
	int sig;

	for (sig = 1; sig < NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		sa.sa_handler = SIG_DFL;
		sigemptyset(&sa.sa_mask);
		sa.sa_flags = 0;
		sigaction(sig, &sa, NULL);
	}
}

/* CPU time of the process in seconds. */
static double
sigreset_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	volatile unsigned long sink = 0;
	double secs = argc > 2 ? atof(argv[2]) : 1.5, t0 = sigreset_cpu();

	while (sigreset_cpu() - t0 < secs)
		sink++;
	printf("ok\n");
	return 0;
}
