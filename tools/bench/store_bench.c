/*
 * store_bench DATA_DIR [SECONDS]: times a store filled by fill_meta.
 * Prints the open time (with the startup check), p50/p99/max of store_list
 * for realistic queries (random service, type, window and label values
 * from the fill_meta distributions), then durable store_put throughput of
 * ~10 KB blobs from 1, 2, 4 and 8 threads (SECONDS each, default 2).
 * The puts land in the filled store under service "bench-put".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/xmalloc.h"
#include "storage/store.h"
#include "storage/store_meta.h"
#include "tools/bench/bench_gen.h"

#define BENCH_REPS	500
#define BENCH_HOUR	(3600LL * 1000000000LL)

/* Monotonic time in ns. */
static int64_t
bench_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Wall time in ns. */
static int64_t
bench_wall(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Sorts latencies. */
static int
bench_cmp(const void *a, const void *b)
{
	int64_t	x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

enum bench_query {
	Q_1H, Q_1H_1L, Q_1H_2L, Q_1H_RARE, Q_24H_SVC, Q_7D_RARE, Q_7D_HOST,
	Q_COUNT
};
static const char *bench_query_name[Q_COUNT] = {
	"service+type, 1h, limit 100",
	"service+type, 1h, env=prod, limit 100",
	"service+type, 1h, env+region, limit 100",
	"service+type, 1h, canary=true (rare)",
	"service only, 24h, limit 100",
	"service+type, 7d, canary=true (rare), limit 100",
	"service, 7d, host=host-NNN, limit 100",
};

/* Runs one kind of query BENCH_REPS times and prints its latencies. */
static int
bench_queries(struct store *st, enum bench_query which, int64_t tmin,
    int64_t tmax, uint64_t *seed)
{
	struct store_query	 q;
	struct label		 l[2];
	struct profile_meta	*out;
	int64_t			 lat[BENCH_REPS], t0, span;
	char			 svc[32], host[32], *cause = NULL;
	size_t			 n, total = 0;
	int			 i;

	for (i = 0; i < BENCH_REPS; i++) {
		memset(&q, 0, sizeof q);
		/* busy services are queried more, as users do */
		snprintf(svc, sizeof svc, "svc-%02d", bench_service(seed));
		q.service = svc;
		q.type = bench_types[bench_type(seed)];
		q.limit = 100;
		span = BENCH_HOUR;
		if (which == Q_24H_SVC) {
			span = 24 * BENCH_HOUR;
			q.type = NULL;
		} else if (which == Q_7D_RARE || which == Q_7D_HOST)
			span = tmax - tmin;
		q.to = tmin + span + (int64_t)(bench_unit(seed) *
		    (double)(tmax - tmin - span));
		q.from = q.to - span;
		l[0].key = (char *)"env";
		l[0].value = (char *)"prod";
		l[1].key = (char *)"region";
		l[1].value = (char *)bench_regions[bench_rand(seed) % 4];
		switch (which) {
		case Q_1H_1L:
			q.nlabels = 1;
			break;
		case Q_1H_2L:
			q.nlabels = 2;
			break;
		case Q_1H_RARE:
		case Q_7D_RARE:
			l[0].key = (char *)"canary";
			l[0].value = (char *)"true";
			q.nlabels = 1;
			break;
		case Q_7D_HOST:
			snprintf(host, sizeof host, "host-%03d",
			    (int)(bench_rand(seed) % BENCH_HOSTS));
			l[0].key = (char *)"host";
			l[0].value = host;
			q.nlabels = 1;
			q.type = NULL;
			break;
		default:
			break;
		}
		q.labels = l;
		t0 = bench_now();
		if (store_list(st, &q, &out, &n, &cause) == -1) {
			fprintf(stderr, "store_bench: %s\n", cause);
			return -1;
		}
		lat[i] = bench_now() - t0;
		total += n;
		store_meta_free_array(out, n);
	}
	qsort(lat, BENCH_REPS, sizeof *lat, bench_cmp);
	printf("  %-48s p50 %6.3f ms  p99 %6.3f ms  max %6.3f ms  "
	    "(avg %.1f rows)\n", bench_query_name[which],
	    (double)lat[BENCH_REPS / 2] / 1e6,
	    (double)lat[BENCH_REPS * 99 / 100] / 1e6,
	    (double)lat[BENCH_REPS - 1] / 1e6,
	    (double)total / BENCH_REPS);
	return 0;
}

struct bench_put {
	struct store	*st;
	int		 thread;
	int64_t		 until;
	size_t		 puts;
	int64_t		*lat;
	size_t		 nlat, cap;
	int		 failed;
};

/* One put thread: ~10 KB blobs until the deadline. */
static void *
bench_put_cb(void *arg)
{
	struct bench_put	*b = arg;
	struct profile_meta	 m;
	struct label		 l = { (char *)"host", (char *)"bench" };
	uint8_t			 blob[10240];
	uint64_t		 seed = 0x1234567ULL + (uint64_t)b->thread;
	char			*cause = NULL;
	int64_t			 t0;
	size_t			 i;

	for (i = 0; i < sizeof blob; i++)
		blob[i] = (uint8_t)bench_rand(&seed);
	while ((t0 = bench_now()) < b->until) {
		memset(&m, 0, sizeof m);
		m.created_at = bench_wall();
		bench_id(m.id, m.created_at, &seed);
		m.service = (char *)"bench-put";
		m.type = (char *)"cpu";
		m.sample_types = (char *)"samples/count,cpu/nanoseconds";
		m.labels = &l;
		m.nlabels = 1;
		if (store_put(b->st, &m, blob, sizeof blob, &cause) == -1) {
			fprintf(stderr, "store_bench: %s\n", cause);
			free(cause);
			b->failed = 1;
			return NULL;
		}
		if (b->nlat == b->cap) {
			b->cap = b->cap ? b->cap * 2 : 1024;
			b->lat = xreallocarray(b->lat, b->cap, sizeof *b->lat);
		}
		b->lat[b->nlat++] = bench_now() - t0;
		b->puts++;
	}
	return NULL;
}

/* Measures durable puts/s with nthreads for the given seconds. */
static int
bench_puts(struct store *st, int nthreads, double seconds)
{
	pthread_t		 t[8];
	struct bench_put	 b[8];
	int64_t			*all = NULL, start, elapsed;
	size_t			 total = 0, nall = 0;
	int			 i, failed = 0;

	memset(b, 0, sizeof b);
	start = bench_now();
	for (i = 0; i < nthreads; i++) {
		b[i].st = st;
		b[i].thread = i;
		b[i].until = start + (int64_t)(seconds * 1e9);
		pthread_create(&t[i], NULL, bench_put_cb, &b[i]);
	}
	for (i = 0; i < nthreads; i++) {
		pthread_join(t[i], NULL);
		total += b[i].puts;
		failed |= b[i].failed;
		all = xreallocarray(all, nall + b[i].nlat + 1, sizeof *all);
		memcpy(all + nall, b[i].lat, b[i].nlat * sizeof *all);
		nall += b[i].nlat;
		free(b[i].lat);
	}
	elapsed = bench_now() - start;
	qsort(all, nall, sizeof *all, bench_cmp);
	if (nall > 0)
		printf("  %d thread%s: %7.0f puts/s  latency p50 %.2f ms  "
		    "p99 %.2f ms\n", nthreads, nthreads == 1 ? " " : "s",
		    (double)total / ((double)elapsed / 1e9),
		    (double)all[nall / 2] / 1e6,
		    (double)all[nall * 99 / 100] / 1e6);
	free(all);
	return failed ? -1 : 0;
}

int
main(int argc, char **argv)
{
	struct store		*st;
	struct store_recovery	 rec;
	struct store_query	 q;
	struct profile_meta	*out = NULL;
	int64_t			 t0, tmax, profiles, bytes;
	uint64_t		 seed = 42;
	char			*cause = NULL;
	size_t			 n;
	double			 seconds = 2;
	int			 i;
	static const int	 threads[] = { 1, 2, 4, 8 };

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: store_bench DATA_DIR [SECONDS]\n");
		return 2;
	}
	if (argc == 3)
		seconds = atof(argv[2]);
	t0 = bench_now();
	if ((st = store_open(argv[1], 64, &rec, &cause)) == NULL) {
		fprintf(stderr, "store_bench: %s\n", cause);
		return 1;
	}
	printf("store_open: %.0f ms (orphans removed %zu, temp files "
	    "removed %zu, rows without blob %zu)\n",
	    (double)(bench_now() - t0) / 1e6, rec.orphan_blobs_removed,
	    rec.temp_files_removed, rec.missing_blobs);
	t0 = bench_now();
	if (store_totals(st, &profiles, &bytes, &cause) == -1) {
		fprintf(stderr, "store_bench: %s\n", cause);
		return 1;
	}
	printf("store_totals (first, counts): %.0f ms: %lld profiles\n",
	    (double)(bench_now() - t0) / 1e6, (long long)profiles);

	/* The newest row of the busiest service bounds the time range. */
	memset(&q, 0, sizeof q);
	q.service = "svc-00";
	q.to = INT64_MAX;
	q.limit = 1;
	if (store_list(st, &q, &out, &n, &cause) == -1 || n != 1) {
		fprintf(stderr, "store_bench: no data (run fill_meta)\n");
		return 1;
	}
	tmax = out[0].created_at;
	store_meta_free_array(out, n);

	printf("store_list, %d queries each:\n", BENCH_REPS);
	for (i = 0; i < Q_COUNT; i++) {
		if (bench_queries(st, (enum bench_query)i,
		    tmax - BENCH_SPAN_NS, tmax, &seed) == -1)
			return 1;
	}
	if (seconds > 0) {
		printf("store_put, durable, 10 KB blobs, %.0f s each:\n",
		    seconds);
		for (i = 0; i < 4; i++) {
			if (bench_puts(st, threads[i], seconds) == -1)
				return 1;
		}
	}
	t0 = bench_now();
	store_close(st);
	printf("store_close: %.0f ms\n", (double)(bench_now() - t0) / 1e6);
	return 0;
}
