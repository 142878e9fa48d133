/*
 * heapapi: every allocation function the heap profiler interposes, with
 * their contracts checked (alignment, zeroing, contents kept across
 * realloc, usable sizes), from several threads at once and in a fork
 * child, for test/e2e/agent_heap.sh. Run with PROFD_HEAP_RATE=1 every
 * allocation is a sampled block. Exits 0 when every check held.
 * Usage: heapapi [ROUNDS [THREADS]].
 *
 * heapapi signals SECONDS: allocations from a signal handler while the
 * main thread allocates (under the heap profiler, often inside its
 * sample path): a 1 kHz SIGALRM handler mallocs and frees 24 bytes
 * (glibc's per-thread cache: no lock), the main thread blocks of 4 to
 * 8 KiB (its arena); prints the handler's count and exits 0.
 */
#include <sys/wait.h>

#include <sys/time.h>

#include <errno.h>
#include <signal.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long	rounds = 20000;
static int	failed;

/* Records a failed check. */
static void
fail(const char *what, size_t n)
{
	fprintf(stderr, "heapapi: %s (%zu)\n", what, n);
	__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
}

/* Fills p with a pattern of n bytes from seed; checks it back. */
static void
fill(unsigned char *p, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(seed + i * 7);
}

/* Whether p holds fill's pattern for n bytes. */
static int
filled(const unsigned char *p, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed + i * 7))
			return 0;
	return 1;
}

/* One round of every function. */
static void
round_all(unsigned x)
{
	size_t n = 1 + x % 3000, al = (size_t)16 << (x % 6), i;
	unsigned char *p, *q;
	void *v = NULL;

	if ((p = malloc(n)) == NULL || malloc_usable_size(p) < n)
		fail("malloc", n);
	fill(p, n, x);
	if ((q = realloc(p, 2 * n)) == NULL || !filled(q, n, x))
		fail("realloc grow", n);
	if ((p = realloc(q, n / 2 + 1)) == NULL || !filled(p, n / 2 + 1, x))
		fail("realloc shrink", n);
	free(p);
	if ((p = calloc(n, 3)) == NULL)
		fail("calloc", n);
	for (i = 0; i < 3 * n; i++)
		if (p[i] != 0) {
			fail("calloc not zeroed", n);
			break;
		}
	free(p);
	if ((p = memalign(al, n)) == NULL || (uintptr_t)p % al != 0)
		fail("memalign", al);
	fill(p, n, x);
	free(p);
	if ((p = aligned_alloc(al, al * (1 + n / al))) == NULL ||
	    (uintptr_t)p % al != 0)
		fail("aligned_alloc", al);
	free(p);
	if (posix_memalign(&v, al, n) != 0 || (uintptr_t)v % al != 0)
		fail("posix_memalign", al);
	free(v);
	if (posix_memalign(&v, 24, n) != EINVAL)
		fail("posix_memalign of a bad alignment", 24);
	if ((p = valloc(n)) == NULL || (uintptr_t)p % 4096 != 0)
		fail("valloc", n);
	free(p);
	if ((p = pvalloc(n)) == NULL || (uintptr_t)p % 4096 != 0 ||
	    malloc_usable_size(p) < 4096)
		fail("pvalloc", n);
	free(p);
	if ((p = realloc(NULL, n)) == NULL)
		fail("realloc(NULL)", n);
	/* glibc frees and returns NULL; either is allowed. */
	if ((p = realloc(p, 0)) != NULL)
		free(p);
	free(NULL);
}

/* A thread's rounds. */
static void *
worker(void *arg)
{
	unsigned x = (unsigned)(uintptr_t)arg * 2654435761u;
	long i;

	for (i = 0; i < rounds; i++) {
		x = x * 1103515245 + 12345;
		round_all(x >> 4);
	}
	return NULL;
}

static volatile sig_atomic_t	handled;

/* The SIGALRM handler: a small allocation and its free. */
static void
on_alarm(int sig)
{
	char *p = malloc(24);

	(void)sig;
	if (p != NULL) {
		p[0] = 1;
		free(p);
		handled++;
	}
}

/* heapapi signals SECONDS (see the file comment). */
static int
signals_mode(double seconds)
{
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
	struct timespec t0, t;
	struct sigaction sa;
	unsigned x = 1;
	char *p;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		x = x * 1103515245 + 12345;
		if ((p = malloc(4096 + (x >> 20) % 4096)) == NULL)
			fail("malloc", 4096);
		else {
			p[0] = (char)x;
			free(p);
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) +
	    (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	memset(&it, 0, sizeof it);
	setitimer(ITIMER_REAL, &it, NULL);
	printf("heapapi: signals: %ld allocations in the handler, %s\n",
	    (long)handled, failed ? "FAILED" : "ok");
	return failed;
}

int
main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[2]) : 4, i, status;
	pthread_t t[32];
	pid_t pid;

	if (argc > 2 && strcmp(argv[1], "signals") == 0)
		return signals_mode(atof(argv[2]));
	if (argc > 1)
		rounds = atol(argv[1]);
	if (threads < 1 || threads > 32)
		threads = 4;
	for (i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	/* A fork while the others allocate: the child allocates too. */
	if ((pid = fork()) == 0) {
		worker((void *)(uintptr_t)99);
		_exit(failed);
	}
	/* for the test: which pids may label profiles (the child's too) */
	fprintf(stderr, "heapapi: pids %d %d\n", (int)getpid(), (int)pid);
	for (i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	if (pid < 0 || waitpid(pid, &status, 0) != pid ||
	    !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail("fork child", 0);
	printf("heapapi: %s\n", failed ? "FAILED" : "ok");
	return failed;
}
