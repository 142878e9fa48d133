/*
 * scan_bench: times the upload check's parts on corpus files, for
 * tools/bench/scan, which builds it twice (against this tree's proto/ and
 * against a baseline's) and prints both side by side.
 *
 *   scan_bench RUNS FILE...
 *
 * For each file prints one line: name, gzipped and raw bytes, then the
 * median thread CPU time in microseconds of pprof_inflate, pprof_scan (on
 * the inflated bytes) and the whole pprof_check, and the verdict (code,
 * samples, sample types or cause) so both builds can be seen to agree.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/pprof.h"
#include "proto/pprof_scan.h"
#include "test/lib/readfile.h"

#define MAX_INFLATED	((size_t)64 * 1024 * 1024)

/* CPU time of this thread in seconds (the machine is shared). */
static double
bench_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Orders doubles. */
static int
bench_cmp(const void *a, const void *b)
{
	double	x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median of n times, in microseconds. */
static double
bench_median(double *t, int n)
{
	qsort(t, (size_t)n, sizeof *t, bench_cmp);
	return 1e6 * (n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2);
}

/* Times one file and prints its line. */
static void
bench_file(const char *path, int runs)
{
	struct pprof_summary	 sum;
	uint8_t			*body, *raw, *r2;
	size_t			 len, rawlen, l2;
	double			*t, inf, scan, check, t0;
	const char		*name;
	char			*cause = NULL;
	int			 i, code;

	if ((body = read_file(path, &len)) == NULL) {
		printf("%s\tunreadable\n", path);
		return;
	}
	if (pprof_inflate(body, len, MAX_INFLATED, &raw, &rawlen, &cause)
	    != 0) {
		printf("%s\tinflate failed: %s\n", path, cause);
		free(cause);
		free(body);
		return;
	}
	t = calloc((size_t)runs, sizeof *t);
	for (i = 0; i < runs; i++) {
		t0 = bench_now();
		(void)pprof_inflate(body, len, MAX_INFLATED, &r2, &l2, NULL);
		t[i] = bench_now() - t0;
		free(r2);
	}
	inf = bench_median(t, runs);
	for (i = 0; i < runs; i++) {
		t0 = bench_now();
		(void)pprof_scan(raw, rawlen, &sum, NULL);
		t[i] = bench_now() - t0;
		pprof_summary_free(&sum);
	}
	scan = bench_median(t, runs);
	for (i = 0; i < runs; i++) {
		t0 = bench_now();
		(void)pprof_check(body, len, MAX_INFLATED, &sum, NULL);
		t[i] = bench_now() - t0;
		pprof_summary_free(&sum);
	}
	check = bench_median(t, runs);
	code = pprof_check(body, len, MAX_INFLATED, &sum, &cause);
	name = strrchr(path, '/') != NULL ? strrchr(path, '/') + 1 : path;
	printf("%s\t%zu\t%zu\t%.1f\t%.1f\t%.1f\t%d %" PRId64 " %s\n", name,
	    len, rawlen, inf, scan, check, code, sum.samples,
	    code == 0 ? sum.sample_types : cause);
	pprof_summary_free(&sum);
	free(cause);
	free(t);
	free(raw);
	free(body);
}

int
main(int argc, char **argv)
{
	int	runs, i;

	if (argc < 3 || (runs = atoi(argv[1])) < 1) {
		fprintf(stderr, "usage: scan_bench RUNS FILE...\n");
		return 2;
	}
	for (i = 2; i < argc; i++)
		bench_file(argv[i], runs);
	return 0;
}
