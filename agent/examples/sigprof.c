/*
 * sigprof: a program with its own CPU profiler, to check that the agent
 * leaves it alone. It installs a SIGPROF handler and arms ITIMER_PROF at
 * 100 Hz, burns CPU for a given number of CPU seconds, and prints the
 * ticks it got, the ticks expected (CPU time x 100) and the ITIMER_PROF
 * interval getitimer reads at the end.
 *
 * usage: sigprof [-c CPU_SECONDS] [-r SIGNAL]
 *	-r  after half the work, install a handler of its own for SIGNAL
 *	    (the agent's real-time signal: the agent must step aside)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t	sigprof_ticks;
static volatile sig_atomic_t	sigprof_rt;
static volatile unsigned long	sigprof_sink;

/* The program's own profiler tick. */
static void
sigprof_tick(int sig)
{
	(void)sig;
	sigprof_ticks++;
}

/* The program's own handler for the agent's signal (-r). */
static void
sigprof_rt_handler(int sig)
{
	(void)sig;
	sigprof_rt++;
}

/* CPU seconds of the process. */
static double
sigprof_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	struct sigaction sa;
	struct itimerval it;
	double cpu = 2, start, used;
	unsigned long x = 1, i;
	int c, rt = 0, taken = 0;

	while ((c = getopt(argc, argv, "c:r:")) != -1) {
		switch (c) {
		case 'c': cpu = atof(optarg); break;
		case 'r': rt = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: sigprof [-c CPU] [-r SIG]\n");
			return 2;
		}
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = sigprof_tick;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	memset(&it, 0, sizeof it);
	it.it_interval.tv_usec = 10000;
	it.it_value.tv_usec = 10000;
	setitimer(ITIMER_PROF, &it, NULL);
	start = sigprof_cpu();
	while ((used = sigprof_cpu() - start) < cpu) {
		for (i = 0; i < 100000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
		sigprof_sink = x;
		if (rt != 0 && !taken && used >= cpu / 2) {
			sa.sa_handler = sigprof_rt_handler;
			sigaction(rt, &sa, NULL);
			taken = 1;
		}
	}
	memset(&it, 0, sizeof it);
	getitimer(ITIMER_PROF, &it);
	printf("ticks %d expected %.0f itimer_usec %ld rt %d\n",
	    (int)sigprof_ticks, used * 100,
	    (long)it.it_interval.tv_sec * 1000000 + it.it_interval.tv_usec,
	    (int)sigprof_rt);
	return 0;
}
