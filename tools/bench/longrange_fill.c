/*
 * longrange_fill DATA_DIR POOL_DIR [DAYS [INSTANCES]]: fills an embedded
 * store with the fleet of the long-range issue, for tools/bench/longrange.
 * One service ("fleet", type cpu) of INSTANCES instances (default 100),
 * each storing one CPU profile a minute for the last DAYS days (default
 * 7): instance i's profile at minute m is a byte copy of POOL_DIR's
 * (i + m) mod N-th *.pb.gz (sorted by name), labelled instance_id=i,
 * env=prod and region=r(i mod 2), created at the minute plus i half
 * seconds. Blobs are written as store_put writes them (header with the
 * row, then the bytes) but not fsynced, and rows go in 6,000 to a
 * transaction: a direct filler, much faster than uploads, for a bench.
 * The rows carry the summary and totals of their pool file, as an
 * upload's would. DATA_DIR must not hold a store yet.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector/ids.h"
#include "common/xmalloc.h"
#include "proto/pprof.h"
#include "storage/embedded/blobmeta.h"
#include "storage/embedded/blobs.h"
#include "storage/embedded/meta_sqlite.h"

#define LF_MAX_POOL	1000
#define LF_SEC		1000000000LL

/* One pool file: its bytes and what an upload of it would record. */
struct lf_pool {
	uint8_t			*buf;
	size_t			 len;
	struct pprof_summary	 sum;
};

/* Seconds since an arbitrary point. */
static double
lf_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* qsort: C strings. */
static int
lf_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads POOL_DIR's *.pb.gz files, sorted; returns how many. */
static size_t
lf_load_pool(const char *dir, struct lf_pool *pool)
{
	DIR		*d;
	struct dirent	*e;
	char		*names[LF_MAX_POOL], *path, *cause = NULL;
	size_t		 n = 0, i, l;
	FILE		*f;
	struct stat	 st;

	if ((d = opendir(dir)) == NULL)
		return 0;
	while ((e = readdir(d)) != NULL && n < LF_MAX_POOL) {
		l = strlen(e->d_name);
		if (l > 6 && strcmp(e->d_name + l - 6, ".pb.gz") == 0)
			names[n++] = xstrdup(e->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof *names, lf_cmp);
	for (i = 0; i < n; i++) {
		path = xasprintf("%s/%s", dir, names[i]);
		if ((f = fopen(path, "rb")) == NULL || fstat(fileno(f), &st)) {
			fprintf(stderr, "longrange_fill: %s: %s\n", path,
			    strerror(errno));
			exit(1);
		}
		pool[i].len = (size_t)st.st_size;
		pool[i].buf = xmalloc(pool[i].len);
		if (fread(pool[i].buf, 1, pool[i].len, f) != pool[i].len ||
		    pprof_check(pool[i].buf, pool[i].len, 1 << 28,
		    &pool[i].sum, &cause) != 0) {
			fprintf(stderr, "longrange_fill: %s: %s\n", path,
			    cause ? cause : "short read");
			exit(1);
		}
		fclose(f);
		free(path);
		free(names[i]);
	}
	return n;
}

int
main(int argc, char **argv)
{
	static struct lf_pool	 pool[LF_MAX_POOL];
	struct meta_sqlite	*ms;
	struct blobs		*bl;
	struct profile_meta	*rows;
	struct label		(*l)[3];
	char			(*v)[2][16], *path, *cause = NULL;
	uint8_t			*meta;
	size_t			 npool, n = 0, meta_len, batch;
	int64_t			 start, t, minutes, m;
	int			 days = 7, inst = 100, i, fd;
	double			 t0 = lf_now();

	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: longrange_fill DATA_DIR POOL_DIR "
		    "[DAYS [INSTANCES]]\n");
		return 2;
	}
	if (argc > 3)
		days = atoi(argv[3]);
	if (argc > 4)
		inst = atoi(argv[4]);
	if (days < 1 || inst < 1 || inst > 100000)
		return 2;
	if ((npool = lf_load_pool(argv[2], pool)) == 0) {
		fprintf(stderr, "longrange_fill: no *.pb.gz in %s\n", argv[2]);
		return 1;
	}
	path = xasprintf("%s/meta.db", argv[1]);
	if (mkdir(argv[1], 0755) == -1 && errno != EEXIST)
		return 1;
	if (access(path, F_OK) == 0) {
		fprintf(stderr, "longrange_fill: %s exists\n", path);
		return 1;
	}
	if ((ms = meta_sqlite_open(path, &cause)) == NULL ||
	    (bl = blobs_open(argv[1], &cause)) == NULL) {
		fprintf(stderr, "longrange_fill: %s\n", cause);
		return 1;
	}
	batch = (size_t)inst * 60;
	rows = xcalloc(batch, sizeof *rows);
	l = xcalloc(batch, sizeof *l);
	v = xcalloc(batch, sizeof *v);
	minutes = (int64_t)days * 1440;
	start = ((int64_t)time(NULL) / 60 - minutes) * 60 * LF_SEC;
	for (m = 0; m < minutes; m++) {
		for (i = 0; i < inst; i++) {
			struct lf_pool *p = &pool[(size_t)(i + m) % npool];
			struct profile_meta *r = &rows[n];

			t = start + m * 60 * LF_SEC + (int64_t)i * (LF_SEC / 2);
			memset(r, 0, sizeof *r);
			ids_new(t / 1000000, r->id);
			r->service = (char *)"fleet";
			r->type = (char *)"cpu";
			r->created_at = t;
			r->size = (int64_t)p->len;
			r->samples = p->sum.samples;
			r->sample_types = p->sum.sample_types;
			r->totals = p->sum.totals;
			r->duration_ns = p->sum.duration_nanos;
			snprintf(v[n][0], 16, "%d", i);
			snprintf(v[n][1], 16, "r%d", i % 2);
			l[n][0].key = (char *)"env";
			l[n][0].value = (char *)"prod";
			l[n][1].key = (char *)"instance_id";
			l[n][1].value = v[n][0];
			l[n][2].key = (char *)"region";
			l[n][2].value = v[n][1];
			r->labels = l[n];
			r->nlabels = 3;
			blobmeta_encode(r, &meta, &meta_len);
			if (blobs_create(bl, r->id, meta, meta_len, p->buf,
			    p->len, &fd, &cause) == -1) {
				fprintf(stderr, "longrange_fill: %s\n", cause);
				return 1;
			}
			close(fd);
			free(meta);
			if (++n == batch) {
				if (meta_sqlite_insert_many(ms, rows, n,
				    &cause) == -1) {
					fprintf(stderr, "longrange_fill: %s\n",
					    cause);
					return 1;
				}
				n = 0;
			}
		}
	}
	if (n > 0 && meta_sqlite_insert_many(ms, rows, n, &cause) == -1) {
		fprintf(stderr, "longrange_fill: %s\n", cause);
		return 1;
	}
	if (blobs_sync(bl, &cause) == -1)
		fprintf(stderr, "longrange_fill: %s\n", cause);
	printf("# filled %lld profiles (%d instances x %lld minutes, %zu "
	    "pool files) in %.1f s\n", (long long)minutes * inst, inst,
	    (long long)minutes, npool, lf_now() - t0);
	blobs_close(bl);
	meta_sqlite_close(ms);
	free(path);
	return 0;
}
