/*
 * timeline_bench DATA_DIR: timelines over a fleet, ours beside the
 * baseline. When DATA_DIR/meta.db does not exist it is filled first with
 * the fleet of the long-range issue: one service, 100 instances, each
 * profiling once a minute for the last 7 days (1,008,000 rows, labels
 * instance_id, env and region, sample types samples/count and
 * cpu/nanoseconds with their totals), through the store's own insert
 * path, so the per-minute rows are written as ingest writes them.
 *
 * Then, for 1 h, 24 h and 7 d windows ending at the fill's end, with no
 * label, one rare pair (instance_id=42), one pair every row has
 * (env=prod) and two pairs, it times RUNS of:
 *  - ours: meta_timeline_query, with the step the API picks for the
 *    window (about 200 buckets), as GET /api/0/timeline runs it;
 *  - baseline: the same sums read from the profile rows of the window
 *    (every row's created_at and totals, the label index for label
 *    pairs), which is what a timeline costs without per-minute rows;
 * checks that both give the same total, and prints the medians and the
 * ratio. Environment: RUNS (default 9).
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "common/xmalloc.h"
#include "storage/embedded/meta_sqlite.h"
#include "storage/embedded/meta_timeline.h"
#include "storage/store_bucket.h"
#include "storage/store_meta.h"

#define TB_INSTANCES	100
#define TB_MINUTES	(7 * 24 * 60)
#define TB_BATCH	(TB_INSTANCES * 60)	/* an hour of the fleet */
#define TB_SEC		1000000000LL

/* Seconds since an arbitrary point. */
static double
tb_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The fleet's end (ns): the fill's newest minute, stored in the db. */
static int64_t
tb_end(sqlite3 *db)
{
	sqlite3_stmt	*s;
	int64_t		 v = 0;

	if (sqlite3_prepare_v2(db, "SELECT max(created_at) FROM profiles",
	    -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

/* Fills the fleet: TB_INSTANCES rows a minute for TB_MINUTES minutes. */
static int
tb_fill(struct meta_sqlite *ms)
{
	struct profile_meta	*rows = xcalloc(TB_BATCH, sizeof *rows);
	struct label		(*l)[3] = xcalloc(TB_BATCH, sizeof *l);
	char			(*v)[2][32] = xcalloc(TB_BATCH, sizeof *v);
	char			(*tot)[48] = xcalloc(TB_BATCH, sizeof *tot);
	char			*cause = NULL;
	int64_t			 start, samples;
	uint64_t		 seed = 0x2545f4914f6cdd1dULL;
	size_t			 n = 0;
	int			 m, i, k = 0;
	double			 t0 = tb_now();

	start = ((int64_t)time(NULL) / 60 - TB_MINUTES) * 60 * TB_SEC;
	for (m = 0; m < TB_MINUTES; m++) {
		for (i = 0; i < TB_INSTANCES; i++, n++) {
			struct profile_meta *r = &rows[n];

			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			memset(r, 0, sizeof *r);
			snprintf(r->id, sizeof r->id, "%08x%012d",
			    (unsigned)m, k++);
			r->service = (char *)"fleet";
			r->type = (char *)"cpu";
			r->created_at = start + (int64_t)m * 60 * TB_SEC +
			    (int64_t)i * (TB_SEC / 2);
			r->size = 10000;
			samples = 90 + (int64_t)(seed % 21);
			r->samples = samples;
			r->sample_types = (char *)"samples/count,cpu/nanoseconds";
			snprintf(tot[n], sizeof tot[n], "%lld,%lld",
			    (long long)samples, (long long)samples * 10000000);
			r->totals = tot[n];
			r->duration_ns = 10 * TB_SEC;
			snprintf(v[n][0], 32, "%d", i);
			snprintf(v[n][1], 32, "r%d", i % 2);
			l[n][0].key = (char *)"env";
			l[n][0].value = (char *)"prod";
			l[n][1].key = (char *)"instance_id";
			l[n][1].value = v[n][0];
			l[n][2].key = (char *)"region";
			l[n][2].value = v[n][1];
			r->labels = l[n];
			r->nlabels = 3;
		}
		if (n == TB_BATCH || m == TB_MINUTES - 1) {
			if (meta_sqlite_insert_many(ms, rows, n, &cause) == -1) {
				fprintf(stderr, "timeline_bench: %s\n", cause);
				return -1;
			}
			n = 0;
		}
	}
	printf("# filled %d rows in %.1f s\n", TB_INSTANCES * TB_MINUTES,
	    tb_now() - t0);
	free(rows);
	free(l);
	free(v);
	free(tot);
	return 0;
}

/* The API's step for a window (api_timeline.c: about 200 buckets). */
static int64_t
tb_step(int64_t from, int64_t to)
{
	static const int64_t steps[] = { 1, 2, 5, 10, 15, 30, 60, 120, 300,
	    600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400 };
	int64_t span = (to - from) / TB_SEC + 1, want = (span + 199) / 200;
	size_t i;

	for (i = 0; i < sizeof steps / sizeof steps[0]; i++)
		if (steps[i] >= want)
			return steps[i];
	return (want + 86399) / 86400 * 86400;
}

/* The baseline: the window's profile rows summed into tl. */
static int
tb_baseline(sqlite3 *db, const struct store_query *q, struct store_timeline *tl)
{
	sqlite3_stmt	*s;
	char		*sql, *tmp;
	int64_t		 v, idx;
	size_t		 i;
	int		 rc;

	if (q->nlabels == 0)
		sql = xasprintf("SELECT created_at, sample_types, totals FROM "
		    "profiles INDEXED BY profiles_service_type_time WHERE "
		    "service = ?1 AND type = ?2 AND created_at BETWEEN ?3 AND ?4");
	else
		sql = xasprintf("SELECT p.created_at, p.sample_types, p.totals "
		    "FROM profile_labels AS pl0 CROSS JOIN profiles AS p "
		    "WHERE pl0.label_id = (SELECT label_id FROM labels WHERE "
		    "key = ?5 AND value = ?6) AND pl0.service = ?1 AND "
		    "pl0.created_at BETWEEN ?3 AND ?4 AND p.pk = pl0.profile_pk "
		    "AND p.type = ?2");
	for (i = 1; i < q->nlabels; i++) {
		tmp = xasprintf("%s AND EXISTS (SELECT 1 FROM profile_labels "
		    "AS x JOIN labels AS y ON y.label_id = x.label_id WHERE "
		    "x.profile_pk = p.pk AND y.key = ?%zu AND y.value = ?%zu)",
		    sql, 5 + 2 * i, 6 + 2 * i);
		free(sql);
		sql = tmp;
	}
	rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
	free(sql);
	if (rc != SQLITE_OK)
		return -1;
	sqlite3_bind_text(s, 1, q->service, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, q->type, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, q->from);
	sqlite3_bind_int64(s, 4, q->to);
	for (i = 0; i < q->nlabels; i++) {
		sqlite3_bind_text(s, 5 + 2 * (int)i, q->labels[i].key, -1,
		    SQLITE_STATIC);
		sqlite3_bind_text(s, 6 + 2 * (int)i, q->labels[i].value, -1,
		    SQLITE_STATIC);
	}
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (!store_meta_totals_value(
		    (const char *)sqlite3_column_text(s, 1),
		    (const char *)sqlite3_column_text(s, 2), tl->sample_type,
		    &v))
			continue;
		idx = store_bucket_of(sqlite3_column_int64(s, 0),
		    tl->step) - tl->b0;
		if (idx >= 0 && (size_t)idx < tl->n) {
			tl->value[idx] += v;
			tl->profiles[idx]++;
		}
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* Sorts doubles (qsort). */
static int
tb_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* One query, RUNS times each way, interleaved; prints a table row. */
static int
tb_row(struct meta_sqlite *ms, sqlite3 *db, const char *wname,
    int64_t span, int64_t end, const struct label *l, size_t nl,
    const char *lname, int runs)
{
	struct store_query	 q = { 0 };
	struct store_timeline	 tl = { 0 };
	double			*ours = xcalloc((size_t)runs, sizeof *ours);
	double			*base = xcalloc((size_t)runs, sizeof *base);
	double			 t;
	int64_t			 tot_o = 0, tot_b = 0, prof = 0;
	char			*cause = NULL;
	size_t			 i;
	int			 r;

	q.service = "fleet";
	q.type = "cpu";
	q.to = end;
	q.from = end - span + 1;
	q.labels = l;
	q.nlabels = nl;
	tl.sample_type = "cpu/nanoseconds";
	tl.step = tb_step(q.from, q.to);
	tl.b0 = store_bucket_of(q.from, tl.step);
	tl.n = (size_t)(store_bucket_of(q.to, tl.step) - tl.b0 + 1);
	tl.value = xcalloc(tl.n, sizeof *tl.value);
	tl.profiles = xcalloc(tl.n, sizeof *tl.profiles);
	for (r = 0; r < runs; r++) {
		memset(tl.value, 0, tl.n * sizeof *tl.value);
		memset(tl.profiles, 0, tl.n * sizeof *tl.profiles);
		t = tb_now();
		if (meta_timeline_query(meta_sqlite_readers(ms), &q, &tl, &cause) != 0) {
			fprintf(stderr, "timeline_bench: %s\n", cause);
			return -1;
		}
		ours[r] = tb_now() - t;
		for (tot_o = prof = 0, i = 0; i < tl.n; i++) {
			tot_o += tl.value[i];
			prof += tl.profiles[i];
		}
		memset(tl.value, 0, tl.n * sizeof *tl.value);
		memset(tl.profiles, 0, tl.n * sizeof *tl.profiles);
		t = tb_now();
		if (tb_baseline(db, &q, &tl) != 0) {
			fprintf(stderr, "timeline_bench: baseline: %s\n",
			    sqlite3_errmsg(db));
			return -1;
		}
		base[r] = tb_now() - t;
		for (tot_b = 0, i = 0; i < tl.n; i++)
			tot_b += tl.value[i];
	}
	qsort(ours, (size_t)runs, sizeof *ours, tb_cmp);
	qsort(base, (size_t)runs, sizeof *base, tb_cmp);
	printf("| %-4s | %-26s | %9lld | %5llds x %3zu | %9.2f | %11.2f | "
	    "%6.1fx | %s |\n", wname, lname, (long long)prof,
	    (long long)tl.step, tl.n, ours[runs / 2] * 1e3,
	    base[runs / 2] * 1e3, base[runs / 2] / ours[runs / 2],
	    tot_o == tot_b ? "same" : "DIFFER");
	free(ours);
	free(base);
	free(tl.value);
	free(tl.profiles);
	return tot_o == tot_b ? 0 : -1;
}

int
main(int argc, char **argv)
{
	static const struct label rare[] = { { "instance_id", "42" } };
	static const struct label common[] = { { "env", "prod" } };
	static const struct label two[] = { { "instance_id", "42" },
	    { "region", "r0" } };
	static const struct {
		const char	*name;
		int64_t		 span;
	} win[] = { { "1h", 3600 * TB_SEC }, { "24h", 86400 * TB_SEC },
	    { "7d", 7 * 86400 * TB_SEC } };
	struct meta_sqlite	*ms;
	sqlite3			*db;
	char			*path, *cause = NULL;
	int64_t			 end;
	int			 runs = 9, fill, bad = 0;
	size_t			 w;

	if (argc != 2) {
		fprintf(stderr, "usage: timeline_bench DATA_DIR\n");
		return 2;
	}
	if (getenv("RUNS") != NULL && atoi(getenv("RUNS")) > 0)
		runs = atoi(getenv("RUNS"));
	if (mkdir(argv[1], 0755) == -1 && errno != EEXIST) {
		fprintf(stderr, "timeline_bench: %s: %s\n", argv[1],
		    strerror(errno));
		return 1;
	}
	path = xasprintf("%s/meta.db", argv[1]);
	fill = access(path, F_OK) != 0;
	if ((ms = meta_sqlite_open(path, &cause)) == NULL) {
		fprintf(stderr, "timeline_bench: %s\n", cause);
		return 1;
	}
	if (fill && tb_fill(ms) != 0)
		return 1;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) !=
	    SQLITE_OK)
		return 1;
	sqlite3_exec(db, "PRAGMA mmap_size = 268435456", NULL, NULL, NULL);
	end = tb_end(db);
	printf("| window | labels | profiles | step x buckets | ours ms | "
	    "baseline ms | ratio | totals |\n");
	printf("|---|---|---:|---:|---:|---:|---:|---|\n");
	for (w = 0; w < 3; w++) {
		bad |= tb_row(ms, db, win[w].name, win[w].span, end, NULL, 0,
		    "none", runs);
		bad |= tb_row(ms, db, win[w].name, win[w].span, end, rare, 1,
		    "instance_id=42", runs);
		bad |= tb_row(ms, db, win[w].name, win[w].span, end, common, 1,
		    "env=prod (every row)", runs);
		bad |= tb_row(ms, db, win[w].name, win[w].span, end, two, 2,
		    "instance_id=42,region=r0", runs);
	}
	sqlite3_close(db);
	meta_sqlite_close(ms);
	free(path);
	return bad ? 1 : 0;
}
