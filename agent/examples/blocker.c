/*
 * blocker: threads that block every signal, the two ways a program can.
 * Thread "masked" blocks them with pthread_sigmask (as liblzma's workers
 * do) and burns CPU in masked_burn; thread "raw" blocks them with the
 * rt_sigprocmask system call itself and burns CPU in raw_burn; the main
 * thread burns in main_burn, then joins both. Under the agent the first
 * is sampled (the agent's signal is kept out of masks set through libc)
 * and the second cannot be (its samples are counted as lost).
 *
 * usage: blocker [-s SECONDS]   (each thread burns SECONDS, default 1.5)
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__clang__)
#define BLOCKER_NOIPA	__attribute__((noinline))
#else
#define BLOCKER_NOIPA	__attribute__((noipa))
#endif

static volatile unsigned long	blocker_sink;
static double			blocker_seconds = 1.5;

/* Thread CPU seconds. */
static double
blocker_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Burns the calling thread's CPU for blocker_seconds. */
static BLOCKER_NOIPA void
blocker_spin(void)
{
	double end = blocker_cpu() + blocker_seconds;
	unsigned long i;

	while (blocker_cpu() < end)
		for (i = 0; i < 100000; i++)
			blocker_sink += i * i;
}

/* The masked thread's work. */
static BLOCKER_NOIPA void
masked_burn(void)
{
	blocker_spin();
}

/* The raw thread's work. */
static BLOCKER_NOIPA void
raw_burn(void)
{
	blocker_spin();
}

/* The main thread's work. */
static BLOCKER_NOIPA void
main_burn(void)
{
	blocker_spin();
}

/* Blocks every signal through libc, then burns. */
static void *
blocker_masked(void *arg)
{
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	masked_burn();
	return NULL;
}

/* Blocks every signal with the system call (libc never sees it), burns. */
static void *
blocker_raw(void *arg)
{
	unsigned long all = ~0UL;

	(void)arg;
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, NULL, sizeof all);
	raw_burn();
	return NULL;
}

int
main(int argc, char **argv)
{
	pthread_t m, r;
	int c;

	while ((c = getopt(argc, argv, "s:")) != -1) {
		if (c == 's')
			blocker_seconds = atof(optarg);
		else {
			fprintf(stderr, "usage: blocker [-s SECONDS]\n");
			return 2;
		}
	}
	pthread_create(&m, NULL, blocker_masked, NULL);
	pthread_create(&r, NULL, blocker_raw, NULL);
	main_burn();
	pthread_join(m, NULL);
	pthread_join(r, NULL);
	printf("done\n");
	return 0;
}
