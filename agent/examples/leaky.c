/*
 * leaky: keeps known amounts of memory live from known functions and
 * churns a known amount through another, for the heap profiler's tests
 * (test/e2e/agent_heap.sh): leak_a keeps 64 MiB in 1,000-byte blocks,
 * leak_b 16 MiB in 64 KiB blocks, churn allocates and frees 1 GiB in
 * blocks of 1 to 8,192 bytes. Usage: leaky [SECONDS_BEFORE [SECONDS_AFTER]]
 * (sleeps before and after, so the agent's windows cover the work).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define A_BYTES		(64UL << 20)
#define A_BLOCK		1000UL
#define B_BYTES		(16UL << 20)
#define B_BLOCK		(64UL << 10)
#define CHURN_BYTES	(1UL << 30)

static void	**kept;
static size_t	  nkept;

/* Keeps p live until exit. */
static void
keep(void *p)
{
	if (p == NULL) {
		perror("malloc");
		exit(1);
	}
	memset(p, 1, 64);
	kept[nkept++] = p;
}

/* 64 MiB in 1,000-byte blocks (65,536 x 1024 bytes rounded to blocks). */
__attribute__((noinline)) static void
leak_a(void)
{
	size_t i;

	for (i = 0; i < A_BYTES / A_BLOCK; i++)
		keep(malloc(A_BLOCK));
}

/* 16 MiB in 64 KiB blocks, through calloc. */
__attribute__((noinline)) static void
leak_b(void)
{
	size_t i;

	for (i = 0; i < B_BYTES / B_BLOCK; i++)
		keep(calloc(1, B_BLOCK));
}

/* 1 GiB allocated and freed at once, sizes 1..8192 (mean 4096.5). */
__attribute__((noinline)) static void
churn(void)
{
	size_t done = 0, n;
	unsigned x = 12345;
	volatile char *p;

	while (done < CHURN_BYTES) {
		x = x * 1103515245 + 12345;
		n = ((x >> 8) & 8191) + 1;
		if (done + n > CHURN_BYTES)
			n = CHURN_BYTES - done;
		if ((p = malloc(n)) == NULL)
			exit(1);
		p[0] = 1;
		free((void *)p);
		done += n;
	}
}

int
main(int argc, char **argv)
{
	unsigned before = argc > 1 ? (unsigned)atoi(argv[1]) : 1;
	unsigned after = argc > 2 ? (unsigned)atoi(argv[2]) : 3;

	kept = calloc(A_BYTES / A_BLOCK + B_BYTES / B_BLOCK + 1,
	    sizeof *kept);
	sleep(before);
	leak_a();
	leak_b();
	churn();
	printf("kept %zu blocks\n", nkept);
	fflush(stdout);
	sleep(after);
	return 0;
}
