/*
 * A CPU loop for the host agent's tests: two functions burn the time
 * given in seconds (argv[1]), one exported in .dynsym (so a stripped
 * copy still names it) and one static (a stripped copy shows its
 * address). Built plain, stripped, and static for the chroot test.
 */
#include <stdlib.h>
#include <time.h>

volatile unsigned long hot_sink;

/* Exported: named from .dynsym even when stripped. */
__attribute__((noinline, visibility("default"))) void
hot_exported(void)
{
	unsigned long i, x = hot_sink;

	for (i = 0; i < 2000000; i++)
		x = x * 6364136223846793005UL + i;
	hot_sink = x;
}

/* Static: no name left once stripped. */
__attribute__((noinline)) static void
hot_static(void)
{
	unsigned long i, x = hot_sink;

	for (i = 0; i < 2000000; i++)
		x ^= (x << 7) + i;
	hot_sink = x;
}

int
main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		hot_exported();
		hot_static();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) +
	    (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
