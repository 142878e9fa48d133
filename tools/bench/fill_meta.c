/*
 * fill_meta DATA_DIR N: bulk-inserts N synthetic profile rows (no blobs)
 * into DATA_DIR/meta.db for store_bench, 50,000 rows per transaction.
 * Rows arrive roughly in time order with some minutes of jitter, as they
 * would from many agents. See bench_gen.h for the distributions.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/xmalloc.h"
#include "storage/embedded/meta_sqlite.h"
#include "tools/bench/bench_gen.h"

#define FILL_BATCH	50000

/* Seconds since an arbitrary point. */
static double
fill_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Fills one synthetic row; label strings live in the given buffers. */
static void
fill_row(struct profile_meta *m, struct label *l, char (*vals)[32],
    int64_t t, uint64_t *s)
{
	static char	*keys[] = { "env", "region", "host", "version" };
	int		 order[4] = { 0, 1, 2, 3 }, i, j, tmp, n;

	memset(m, 0, sizeof *m);
	bench_id(m->id, t, s);
	snprintf(vals[4], 32, "svc-%02d", bench_service(s));
	m->service = vals[4];
	m->type = (char *)bench_types[bench_type(s)];
	m->created_at = t;
	m->size = 5000 + (int64_t)(bench_rand(s) % 200000);
	m->samples = (int64_t)(bench_rand(s) % 5000);
	m->sample_types = (char *)"samples/count,cpu/nanoseconds";
	m->duration_ns = 10000000000LL;
	for (i = 3; i > 0; i--) {
		j = (int)(bench_rand(s) % (uint64_t)(i + 1));
		tmp = order[i];
		order[i] = order[j];
		order[j] = tmp;
	}
	n = 1 + (int)(bench_rand(s) % 4);
	for (i = 0; i < n; i++) {
		l[i].key = keys[order[i]];
		switch (order[i]) {
		case 0:
			snprintf(vals[i], 32, "%s",
			    bench_envs[bench_rand(s) % 3]);
			break;
		case 1:
			snprintf(vals[i], 32, "%s",
			    bench_regions[bench_rand(s) % 4]);
			break;
		case 2:
			snprintf(vals[i], 32, "host-%03d",
			    (int)(bench_rand(s) % BENCH_HOSTS));
			break;
		default:
			snprintf(vals[i], 32, "v1.%d",
			    (int)(bench_rand(s) % 20));
			break;
		}
		l[i].value = vals[i];
	}
	if (bench_rand(s) % 1000 == 0) {	/* rare: 0.1% */
		l[n].key = (char *)"canary";
		l[n].value = (char *)"true";
		n++;
	}
	m->labels = l;
	m->nlabels = (size_t)n;
}

int
main(int argc, char **argv)
{
	struct meta_sqlite	*ms;
	struct profile_meta	*rows;
	struct label		(*labels)[5];
	char			(*vals)[5][32];
	char			*path, *cause = NULL, *end;
	long long		 total, done = 0;
	int64_t			 base, t;
	uint64_t		 seed = 0x9e3779b97f4a7c15ULL;
	size_t			 i, n;
	double			 start;

	if (argc != 3) {
		fprintf(stderr, "usage: fill_meta DATA_DIR N\n");
		return 2;
	}
	total = strtoll(argv[2], &end, 10);
	if (*end != '\0' || total <= 0) {
		fprintf(stderr, "fill_meta: bad N: %s\n", argv[2]);
		return 2;
	}
	if (mkdir(argv[1], 0755) == -1 && errno != EEXIST) {
		fprintf(stderr, "fill_meta: %s: %s\n", argv[1],
		    strerror(errno));
		return 1;
	}
	path = xasprintf("%s/meta.db", argv[1]);
	if ((ms = meta_sqlite_open(path, &cause)) == NULL) {
		fprintf(stderr, "fill_meta: %s\n", cause);
		return 1;
	}
	rows = xcalloc(FILL_BATCH, sizeof *rows);
	labels = xcalloc(FILL_BATCH, sizeof *labels);
	vals = xcalloc(FILL_BATCH, sizeof *vals);
	base = (int64_t)time(NULL) * 1000000000LL - BENCH_SPAN_NS;
	start = fill_now();
	while (done < total) {
		n = (size_t)(total - done < FILL_BATCH ? total - done :
		    FILL_BATCH);
		for (i = 0; i < n; i++) {
			t = base + (int64_t)((double)(done + (long long)i) /
			    (double)total * (double)BENCH_SPAN_NS);
			/* up to 5 minutes late or early */
			t += (int64_t)(bench_rand(&seed) % 600000000000ULL) -
			    300000000000LL;
			fill_row(&rows[i], labels[i], vals[i], t, &seed);
		}
		if (meta_sqlite_insert_many(ms, rows, n, &cause) == -1) {
			fprintf(stderr, "fill_meta: %s\n", cause);
			return 1;
		}
		done += (long long)n;
	}
	printf("fill_meta: %lld rows in %.1f s\n", total,
	    fill_now() - start);
	meta_sqlite_close(ms);
	free(rows);
	free(labels);
	free(vals);
	free(path);
	return 0;
}
