/*
 * forker: a prefork server in miniature. The parent forks N workers (no
 * exec) that each burn CPU for a few seconds in worker_burn, burns CPU
 * itself in parent_burn, and waits for them. Prints "parent PID" and one
 * "worker PID" line per worker.
 *
 * usage: forker [-n WORKERS] [-s SECONDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Keep each function whole: identical bodies must not be folded. */
#if defined(__clang__)
#define FORKER_NOIPA	__attribute__((noinline))
#else
#define FORKER_NOIPA	__attribute__((noipa))
#endif

static volatile unsigned long	forker_sink;

/* Monotonic seconds. */
static double
forker_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Spins for secs of wall time. */
static FORKER_NOIPA void
forker_spin(double secs)
{
	double end = forker_now() + secs;
	unsigned long x = 1, i;

	while (forker_now() < end) {
		for (i = 0; i < 100000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
		forker_sink = x;
	}
}

/* A worker's work. */
static FORKER_NOIPA void
worker_burn(double secs)
{
	forker_spin(secs);
	forker_sink++;
}

/* The parent's work. */
static FORKER_NOIPA void
parent_burn(double secs)
{
	forker_spin(secs);
	forker_sink--;
}

int
main(int argc, char **argv)
{
	double secs = 3;
	int c, i, n = 4;
	pid_t pid;

	while ((c = getopt(argc, argv, "n:s:")) != -1) {
		switch (c) {
		case 'n': n = atoi(optarg); break;
		case 's': secs = atof(optarg); break;
		default:
			fprintf(stderr, "usage: forker [-n N] [-s SECONDS]\n");
			return 2;
		}
	}
	printf("parent %d\n", (int)getpid());
	fflush(stdout);
	for (i = 0; i < n; i++) {
		if ((pid = fork()) == 0) {
			worker_burn(secs);
			exit(0);
		}
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		printf("worker %d\n", (int)pid);
		fflush(stdout);
	}
	parent_burn(secs);
	while (wait(NULL) > 0)
		;
	return 0;
}
