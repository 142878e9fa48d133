/*
 * Unit tests for timelines (store_timeline,
 * storage/embedded/meta_timeline.c) on a throw-away store, against a
 * brute-force sum over the same rows kept in the test: random rows over
 * three hours (two types, sample types in either order, labels from small
 * sets, some pairs given twice, rows without totals), random windows to
 * the nanosecond, steps that take the minute rows and steps that do not,
 * no label, one and two label pairs. Then the backfill (rows without
 * totals are pending, then set once), retention (deleting rows takes their
 * sums out; deleting all leaves the timeline table empty) and migrating a
 * schema 1 database.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/stat.h>

#include <ftw.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/store.h"
#include "storage/store_free.h"
#include "test/lib/tap.h"

#define NROWS		1500
#define T0		(1795300000LL * 1000000000LL)	/* ns */
#define SPAN		(3LL * 3600 * 1000000000LL)
#define NQUERIES	300

static char	dir[] = "/tmp/test_timeline.XXXXXX";

/* A TAP comment line. */
#define tdiag(...)	do { printf("# "); printf(__VA_ARGS__); \
			    printf("\n"); } while (0)

/* One stored row as the oracle sees it. */
struct row {
	char	 id[STORE_ID_LEN + 1];
	char	 type[8];
	int64_t	 t;
	int	 swapped;	/* "b/bytes,a/count" */
	int64_t	 a, b;		/* totals of a/count and b/bytes */
	int	 has_totals;
	int	 host, zone;	/* label values; -1 absent */
	int	 live;
};

static struct row	rows[NROWS];
static uint64_t		rng = 88172645463325252ULL;

/* xorshift64. */
static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Removes a file tree (nftw callback). */
static int
rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

/* a / b rounded down. */
static int64_t
floordiv(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return a % b != 0 && a < 0 ? q - 1 : q;
}

/* Stores row r. */
static int
put_row(struct store *st, struct row *r)
{
	struct profile_meta	m;
	struct label		l[4];
	char			totals[64], hv[16], zv[16], *cause = NULL;
	size_t			n = 0;
	int			rc;

	memset(&m, 0, sizeof m);
	memcpy(m.id, r->id, sizeof m.id);
	m.service = (char *)"svc";
	m.type = r->type;
	m.created_at = r->t;
	m.sample_types = (char *)(r->swapped ? "b/bytes,a/count" :
	    "a/count,b/bytes");
	snprintf(totals, sizeof totals, "%lld,%lld%s",
	    (long long)(r->swapped ? r->b : r->a),
	    (long long)(r->swapped ? r->a : r->b), r->swapped ? ";1" : "");
	m.totals = r->has_totals ? totals : NULL;
	snprintf(hv, sizeof hv, "h%d", r->host);
	snprintf(zv, sizeof zv, "z%d", r->zone);
	if (r->host >= 0) {
		l[n].key = (char *)"host";
		l[n++].value = hv;
	}
	if (r->zone >= 0) {
		l[n].key = (char *)"zone";
		l[n++].value = zv;
		if (r->zone == 0) {		/* the same pair twice */
			l[n].key = (char *)"zone";
			l[n++].value = zv;
		}
	}
	m.labels = l;
	m.nlabels = n;
	rc = store_put(st, &m, "x", 1, &cause);
	if (rc != 0)
		tdiag("put %s: %s", r->id, cause);
	free(cause);
	return rc;
}

/* The oracle: the same timeline summed over the rows in the test. */
static void
oracle(const struct store_query *q, int want_host, int want_zone,
    const char *st, struct store_timeline *tl)
{
	size_t i;
	int64_t idx;

	for (i = 0; i < NROWS; i++) {
		struct row *r = &rows[i];

		if (!r->live || !r->has_totals || r->t < q->from ||
		    r->t > q->to || (q->type && strcmp(q->type, r->type)) ||
		    (want_host >= 0 && r->host != want_host) ||
		    (want_zone >= 0 && r->zone != want_zone))
			continue;
		idx = floordiv(floordiv(r->t, 1000000000LL), tl->step) -
		    tl->b0;
		if (idx < 0 || (size_t)idx >= tl->n)
			continue;
		if (strcmp(st, "a/count") == 0)
			tl->value[idx] += r->a;
		else if (strcmp(st, "b/bytes") == 0)
			tl->value[idx] += r->b;
		else
			continue;
		tl->profiles[idx]++;
	}
}

/* One query both ways; 1 if they agree (diag otherwise). */
static int
compare(struct store *st, int64_t from, int64_t to, int64_t step,
    const char *type, int host, int zone, const char *sample_type)
{
	struct store_timeline	 a = { 0 }, b = { 0 };
	struct store_query	 q = { 0 };
	struct label		 l[2];
	char			 hv[16], zv[16], *cause = NULL;
	int64_t			 b1;
	size_t			 i;
	int			 same = 1;

	q.service = "svc";
	q.type = type;
	q.from = from;
	q.to = to;
	snprintf(hv, sizeof hv, "h%d", host);
	snprintf(zv, sizeof zv, "z%d", zone);
	if (host >= 0) {
		l[q.nlabels].key = (char *)"host";
		l[q.nlabels++].value = hv;
	}
	if (zone >= 0) {
		l[q.nlabels].key = (char *)"zone";
		l[q.nlabels++].value = zv;
	}
	q.labels = l;
	a.sample_type = b.sample_type = sample_type;
	a.step = b.step = step;
	a.b0 = b.b0 = floordiv(floordiv(from, 1000000000LL), step);
	b1 = floordiv(floordiv(to, 1000000000LL), step);
	a.n = b.n = (size_t)(b1 - a.b0 + 1);
	a.value = calloc(a.n, 8);
	a.profiles = calloc(a.n, 8);
	b.value = calloc(b.n, 8);
	b.profiles = calloc(b.n, 8);
	if (store_timeline(st, &q, &a, &cause) != 0) {
		tdiag("store_timeline: %s", cause);
		same = 0;
	}
	oracle(&q, host, zone, sample_type, &b);
	for (i = 0; same && i < a.n; i++) {
		if (a.value[i] != b.value[i] ||
		    a.profiles[i] != b.profiles[i]) {
			tdiag("from %lld to %lld step %lld type %s host %d "
			    "zone %d %s: bucket %zu: %lld/%lld, want "
			    "%lld/%lld", (long long)from, (long long)to,
			    (long long)step, type ? type : "-", host, zone,
			    sample_type, i, (long long)a.value[i],
			    (long long)a.profiles[i], (long long)b.value[i],
			    (long long)b.profiles[i]);
			same = 0;
		}
	}
	free(cause);
	free(a.value);
	free(a.profiles);
	free(b.value);
	free(b.profiles);
	return same;
}

/* Random queries; returns how many disagreed. */
static int
random_queries(struct store *st, int n)
{
	static const int64_t steps[] = { 1, 7, 60, 120, 300, 3600, 86400 };
	int64_t from, to, step;
	int i, bad = 0, host, zone;

	for (i = 0; i < n; i++) {
		from = T0 - 60000000000LL + (int64_t)(rnd() % (uint64_t)SPAN);
		to = from + (int64_t)(rnd() % (uint64_t)(SPAN / 2));
		if (i % 10 == 0) {
			from = T0 - 3600000000000LL;
			to = T0 + SPAN + 3600000000000LL;
		}
		step = steps[rnd() % 7];
		if ((to - from) / 1000000000LL / step > 9000)
			step = 3600;
		host = (int)(rnd() % 6) - 1;	/* -1: no filter; 4: absent */
		zone = (int)(rnd() % 4) - 1;
		if (!compare(st, from, to, step, i % 3 == 0 ? "heap" : "cpu",
		    host, zone, i % 2 ? "a/count" : "b/bytes"))
			bad++;
	}
	return bad;
}

/* Counts the rows of the timeline table. */
static long long
timeline_rows(void)
{
	sqlite3 *db;
	sqlite3_stmt *s;
	char path[256];
	long long n = -1;

	snprintf(path, sizeof path, "%s/meta.db", dir);
	if (sqlite3_open(path, &db) != SQLITE_OK)
		return -1;
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM timeline", -1, &s,
	    NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		n = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return n;
}

/* Turns meta.db back into schema 1 (no totals, timeline or rollups). */
static int
downgrade(void)
{
	sqlite3 *db;
	char path[256];
	int rc;

	snprintf(path, sizeof path, "%s/meta.db", dir);
	if (sqlite3_open(path, &db) != SQLITE_OK)
		return -1;
	rc = sqlite3_exec(db, "DROP INDEX profiles_no_totals; "
	    "DROP TABLE timeline; ALTER TABLE profiles DROP COLUMN totals; "
	    "DROP INDEX profiles_loose; DROP TABLE rollups; "
	    "DROP TABLE rollup_buckets; ALTER TABLE profiles DROP COLUMN rolled; "
	    "PRAGMA user_version = 1", NULL, NULL, NULL);
	sqlite3_close(db);
	return rc == SQLITE_OK ? 0 : -1;
}

/* Runs the backfill the way collector/backfill.c does, from the oracle. */
static int
backfill(struct store *st, size_t *done)
{
	char **ids = NULL, *after = strdup(""), *cause = NULL;
	char **tot;
	size_t n, i, j;
	int rc = 0;

	*done = 0;
	for (;;) {
		if (store_missing_totals(st, after, 100, &ids, &n,
		    &cause) != 0) {
			tdiag("missing totals: %s", cause);
			rc = -1;
			break;
		}
		if (n == 0)
			break;
		tot = calloc(n, sizeof *tot);
		for (i = 0; i < n; i++) {
			for (j = 0; j < NROWS; j++)
				if (strcmp(rows[j].id, ids[i]) == 0)
					break;
			if (asprintf(&tot[i], "%lld,%lld%s",
			    (long long)(rows[j].swapped ? rows[j].b :
			    rows[j].a), (long long)(rows[j].swapped ?
			    rows[j].a : rows[j].b), rows[j].swapped ? ";1" :
			    "") < 0)
				abort();
			rows[j].has_totals = 1;
		}
		if (store_set_totals(st, ids, tot, n, &cause) != 0) {
			tdiag("set totals: %s", cause);
			rc = -1;
		}
		free(after);
		after = strdup(ids[n - 1]);
		*done += n;
		store_free_strings(ids, n);
		store_free_strings(tot, n);
		if (rc != 0)
			break;
	}
	free(after);
	free(cause);
	return rc;
}

int
main(void)
{
	struct store *st;
	struct store_timeline tl = { 0 };
	struct store_query q = { 0 };
	int64_t v[1], p[1], deleted_before;
	size_t i, nd, done;
	char *cause = NULL, *sts[1], *tts[1];
	int bad, rc, pending0 = 0;

	if (mkdtemp(dir) == NULL)
		return 1;
	st = store_open(dir, 16, NULL, &cause);
	ok(st != NULL, "store opens: %s", cause ? cause : "ok");
	if (st == NULL)
		return tap_done();
	bad = 0;
	for (i = 0; i < NROWS; i++) {
		struct row *r = &rows[i];

		snprintf(r->id, sizeof r->id, "%020zu", i);
		snprintf(r->type, sizeof r->type, "%s", rnd() % 3 ? "cpu" :
		    "heap");
		/* Out of order; a few share one nanosecond, some on the
		 * minute boundary exactly. */
		r->t = T0 + (int64_t)(rnd() % (uint64_t)SPAN);
		if (i % 50 == 1)
			r->t = rows[i - 1].t;
		if (i % 37 == 0)
			r->t = floordiv(r->t, 60000000000LL) * 60000000000LL;
		r->swapped = (int)(rnd() % 2);
		r->a = (int64_t)(rnd() % 1000) - 100;	/* negatives too */
		r->b = (int64_t)(rnd() % 100000000);
		r->has_totals = i % 23 != 0;
		pending0 += !r->has_totals;
		r->host = (int)(rnd() % 5) - 1;
		r->zone = (int)(rnd() % 4) - 1;
		r->live = 1;
		bad += put_row(st, r) != 0;
	}
	ok((bad) == 0, "%d rows stored", NROWS);
	ok((random_queries(st, NQUERIES)) == 0,
	    "%d random timelines equal the brute-force sums", NQUERIES);

	/* A sample type no row has, and a label pair never stored. */
	ok(compare(st, T0, T0 + SPAN, 60, "cpu", -1, -1, "c/count"),
	    "an unknown sample type sums to nothing");
	ok(compare(st, T0, T0 + SPAN, 60, "cpu", 9, -1, "a/count"),
	    "an unknown label pair sums to nothing");

	/* Pending rows, then the backfill. */
	q.service = "svc";
	q.type = "cpu";
	q.from = T0;
	q.to = T0 + SPAN;
	tl.sample_type = "a/count";
	tl.step = 86400;
	tl.b0 = floordiv(T0 / 1000000000LL, 86400);
	tl.n = 1;
	tl.value = v;
	tl.profiles = p;
	v[0] = p[0] = 0;
	rc = store_timeline(st, &q, &tl, &cause);
	ok(rc == 0 && tl.pending == pending0, "%d rows without totals are "
	    "pending (store says %lld)", pending0, (long long)tl.pending);
	rc = backfill(st, &done);
	ok(rc == 0 && done == (size_t)pending0,
	    "backfill: %zu rows given totals", done);
	ok((random_queries(st, 60)) == 0, "after the backfill, timelines "
	    "count those rows too");
	/* Setting totals again changes nothing. */
	sts[0] = rows[0].id;
	tts[0] = (char *)"999999,999999";
	ok(store_set_totals(st, sts, tts, 1, &cause) == 0 &&
	    compare(st, T0 - 1, T0 + SPAN, 3600, NULL, -1, -1, "a/count"),
	    "totals of a row are set once only");
	v[0] = p[0] = 0;
	ok(store_timeline(st, &q, &tl, &cause) == 0 && tl.pending == 0,
	    "nothing pending once done");

	/* Retention takes the deleted rows' sums out. */
	deleted_before = T0 + SPAN / 2;
	rc = store_delete_before(st, deleted_before, 0, &nd, &cause);
	ok(rc == 0 && nd > 0, "retention deleted %zu rows", nd);
	for (i = 0; i < NROWS; i++)
		if (rows[i].t < deleted_before)
			rows[i].live = 0;
	ok((random_queries(st, 60)) == 0,
	    "after retention, timelines equal the sums of the rows left");

	/* Schema 1: migrated at open, every row pending, then backfilled. */
	store_close(st);
	ok(downgrade() == 0, "meta.db turned back into schema 1");
	for (i = 0; i < NROWS; i++)
		rows[i].has_totals = 0;
	st = store_open(dir, 16, NULL, &cause);
	ok(st != NULL, "a schema 1 store opens: %s", cause ? cause : "ok");
	if (st == NULL)
		return tap_done();
	ok((random_queries(st, 20)) == 0,
	    "before its backfill, its rows count in no timeline");
	rc = backfill(st, &done);
	ok(rc == 0 && done > 0, "its backfill gives %zu rows totals", done);
	ok((random_queries(st, 60)) == 0,
	    "then timelines equal the brute-force sums");

	rc = store_delete_before(st, INT64_MAX, 0, &nd, &cause);
	ok(rc == 0 && nd > 0, "retention deletes the other %zu rows", nd);
	store_close(st);
	ok((timeline_rows()) == 0, "the timeline table is empty with them");
	free(cause);
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	return tap_done();
}
