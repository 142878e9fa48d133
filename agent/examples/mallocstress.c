/*
 * mallocstress: an allocator stress test for the heap profiler's
 * overhead benchmark (tools/bench/agent-overhead -P malloc). Each
 * thread keeps a ring of 4,096 live blocks and replaces one per step:
 * frees the oldest, allocates 8 to 2,048 bytes (malloc, calloc or
 * realloc) and touches it.
 * Usage: mallocstress [MILLION_STEPS [THREADS]]; prints the checksum.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RING	4096

static long	steps = 20000000;

/* One thread's loop. */
static void *
stress(void *arg)
{
	unsigned x = (unsigned)(uintptr_t)arg * 2654435761u + 1;
	char **ring = calloc(RING, sizeof *ring);
	unsigned long sum = 0;
	size_t n;
	long i;

	for (i = 0; i < steps; i++) {
		char **slot = &ring[i & (RING - 1)];

		x = x * 1103515245 + 12345;
		n = 8 + ((x >> 8) & 2047);
		switch ((x >> 20) & 7) {
		case 0:
			free(*slot);
			*slot = calloc(1, n);
			break;
		case 1:
			*slot = realloc(*slot, n);
			break;
		default:
			free(*slot);
			*slot = malloc(n);
		}
		if (*slot == NULL)
			abort();
		(*slot)[0] = (char)i;
		sum += (unsigned char)(*slot)[0];
	}
	for (i = 0; i < RING; i++)
		free(ring[i]);
	free(ring);
	return (void *)sum;
}

int
main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[2]) : 1, i;
	pthread_t t[64];
	unsigned long sum = 0;
	void *r;

	if (argc > 1)
		steps = atol(argv[1]) * 1000000L;
	if (threads < 1 || threads > 64)
		threads = 1;
	for (i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, stress, (void *)(uintptr_t)i);
	for (i = 0; i < threads; i++) {
		pthread_join(t[i], &r);
		sum += (unsigned long)r;
	}
	printf("%lu\n", sum);
	return 0;
}
