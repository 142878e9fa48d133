/*
 * Keeping rollups on the postgresql backend: retention (the rollups and
 * marks of buckets that start before the cutoff, in batches, by the
 * collector holding the retention lock), healing (the minutes of a day
 * that holds late profiles reopened, so compaction takes those in), and
 * the figures /metrics shows (profd_rollup_totals, kept by every write,
 * so no count walks the table). A rollup's blob goes with its row, in the
 * same transaction.
 */
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/xmalloc.h"
#include "storage/postgres/pg_int.h"
#include "storage/rollup_ids.h"
#include "storage/store_bucket.h"

#define PG_ROLLUP_MAINT_NS	INT64_C(1000000000)

/*
 * Deletes the rows of rollups a statement's result lists (rid, level,
 * size, has_blob): their blobs, and takes them off the figures.
 */
static int
pg_rollup_maint_forget(PGconn *c, PGresult *r, char **cause)
{
	struct pg_args_array	 names = { 0 }, lv = { 0 }, rows = { 0 },
				 bytes = { 0 };
	int64_t			 nrow[STORE_ROLLUP_LEVELS] = { 0 };
	int64_t			 nbyte[STORE_ROLLUP_LEVELS] = { 0 };
	char			 name[STORE_ID_LEN + 1];
	const char		*v[3];
	int			 i, l, rc = 0;

	for (i = 0; i < PQntuples(r); i++) {
		l = (int)pg_conn_int(r, i, 1);
		if (l < 0 || l >= STORE_ROLLUP_LEVELS)
			continue;
		nrow[l]++;
		if (PQgetvalue(r, i, 3)[0] != 't')
			continue;
		nbyte[l] += pg_conn_int(r, i, 2);
		rollup_ids_name(pg_conn_int(r, i, 0), name);
		pg_args_array_str(&names, name);
	}
	if (names.n > 0)
		rc = pg_blob_table.remove(c, pg_args_array_text(&names), cause);
	for (l = 0; l < STORE_ROLLUP_LEVELS; l++) {
		pg_args_array_int(&lv, l);
		pg_args_array_int(&rows, nrow[l]);
		pg_args_array_int(&bytes, nbyte[l]);
	}
	v[0] = pg_args_array_text(&lv);
	v[1] = pg_args_array_text(&rows);
	v[2] = pg_args_array_text(&bytes);
	if (rc == 0 && PQntuples(r) > 0)
		rc = pg_conn_exec(c, "UPDATE profd_rollup_totals AS t SET "
		    "rows = t.rows - u.rows, bytes = t.bytes - u.bytes FROM "
		    "unnest($1::smallint[], $2::bigint[], $3::bigint[]) AS u "
		    "(level, rows, bytes) WHERE t.level = u.level", 3, v, NULL,
		    NULL, NULL, cause, "count rollups");
	pg_args_array_free(&names);
	pg_args_array_free(&lv);
	pg_args_array_free(&rows);
	pg_args_array_free(&bytes);
	return rc;
}

/* One batch of rollup retention: rows deleted in *n, or an error. */
static int
pg_rollup_maint_expire(PGconn *c, int64_t before, size_t batch, size_t *n,
    char **cause)
{
	PGresult	*r;
	char		 b[24], l[24];
	const char	*v[2];
	int		 rc, locked;

	*n = 0;
	if ((rc = pg_conn_begin_try_lock(c, PG_LOCK_RETENTION, &locked, cause,
	    "lock retention")) != 0)
		return rc;
	if (!locked)
		return pg_conn_cmd(c, "COMMIT", cause, "commit");
	v[0] = pg_conn_i64(b, before);
	v[1] = pg_conn_i64(l, batch > 0 ? (int64_t)batch : INT64_MAX);
	if ((rc = pg_conn_exec(c, "DELETE FROM rollup_buckets WHERE bucket < "
	    "$1::bigint", 1, v, NULL, NULL, NULL, cause,
	    "delete rollup buckets")) != 0)
		goto rollback;
	if ((rc = pg_conn_exec(c, "DELETE FROM rollups WHERE rid IN (SELECT "
	    "rid FROM rollups WHERE bucket < $1::bigint LIMIT $2::bigint) "
	    "RETURNING rid, level, size, profile IS NULL", 2, v, NULL, NULL,
	    &r, cause, "delete rollups")) != 0)
		goto rollback;
	*n = (size_t)PQntuples(r);
	rc = pg_rollup_maint_forget(c, r, cause);
	PQclear(r);
	if (rc == 0 && (rc = pg_conn_cmd(c, "COMMIT", cause, "commit")) == 0)
		return 0;
rollback:
	(void)pg_conn_cmd(c, "ROLLBACK", NULL, NULL);
	*n = 0;
	return rc;
}

/* Retention of rollups: every row of buckets before cutoff (ns). */
int
pg_rollup_maint_delete_before(struct pg *pg, int64_t cutoff, size_t batch,
    char **cause)
{
	PGconn	*c;
	int64_t	 before;
	size_t	 n;
	int	 rc;

	/* Buckets that start before cutoff: bucket * 1e9 < cutoff. */
	before = cutoff / PG_ROLLUP_MAINT_NS +
	    (cutoff % PG_ROLLUP_MAINT_NS > 0 ? 1 : 0);
	if ((rc = pg_pool_get(pg->pool, &c, cause)) != 0)
		return rc;
	do {
		rc = pg_rollup_maint_expire(c, before, batch, &n, cause);
	} while (rc == 0 && n == batch && batch > 0);
	pg_pool_put(pg->pool, c);
	return rc;
}

/* Reopens bucket (level, b): its rows gone, queued again above minutes. */
static int
pg_rollup_maint_reopen(PGconn *c, const char *service, const char *type,
    int level, int64_t b, char **cause)
{
	PGresult	*r;
	char		 l[24], bb[24];
	const char	*v[4] = { service, type, pg_conn_i64(l, level),
	    pg_conn_i64(bb, b) };
	int		 rc;

	rc = pg_conn_exec(c, "DELETE FROM rollups WHERE service = $1 AND "
	    "type = $2 AND level = $3::smallint AND bucket = $4::bigint "
	    "RETURNING rid, level, size, profile IS NULL", 4, v, NULL, NULL,
	    &r, cause, "reopen rollups");
	if (rc != 0)
		return rc;
	rc = pg_rollup_maint_forget(c, r, cause);
	PQclear(r);
	if (rc != 0)
		return rc;
	return pg_conn_exec(c, level == 0 ? "DELETE FROM rollup_buckets WHERE "
	    "service = $1 AND type = $2 AND level = $3::smallint AND bucket = "
	    "$4::bigint" : "INSERT INTO rollup_buckets (service, type, level, "
	    "bucket, done) VALUES ($1, $2, $3::smallint, $4::bigint, 0) ON "
	    "CONFLICT (service, type, level, bucket) DO UPDATE SET done = 0",
	    4, v, NULL, NULL, NULL, cause, "reopen bucket");
}

/*
 * Reopens every minute of the oldest day (of one service and type) that
 * holds late profiles, in the open transaction: *minutes reopened.
 */
static int
pg_rollup_maint_reopen_day(PGconn *c, size_t *minutes, char **cause)
{
	PGresult	*r;
	char		*service, *type, a[24], z[24], m0[24], m1[24];
	const char	*v[4];
	int64_t		 day, m, last = -1;
	int		 i, l, rc;

	rc = pg_conn_exec(c, "SELECT service, type, created_at FROM profiles "
	    "WHERE rolled <= 0 AND rolled = 0 ORDER BY created_at, pk LIMIT 1",
	    0, NULL, NULL, NULL, &r, cause, "find late profiles");
	if (rc != 0 || PQntuples(r) == 0) {
		if (rc == 0)
			PQclear(r);
		return rc;
	}
	service = pg_conn_str(r, 0, 0);
	type = pg_conn_str(r, 0, 1);
	day = store_bucket_of(pg_conn_int(r, 0, 2),
	    store_bucket_step[STORE_ROLLUP_LEVELS - 1]) *
	    store_bucket_step[STORE_ROLLUP_LEVELS - 1];
	PQclear(r);
	v[0] = service;
	v[1] = type;
	v[2] = pg_conn_i64(a, day * PG_ROLLUP_MAINT_NS);
	v[3] = pg_conn_i64(z, (day + store_bucket_step[STORE_ROLLUP_LEVELS -
	    1]) * PG_ROLLUP_MAINT_NS);
	rc = pg_conn_exec(c, "SELECT created_at FROM profiles WHERE rolled <= "
	    "0 AND rolled = 0 AND service = $1 AND type = $2 AND created_at >= "
	    "$3::bigint AND created_at < $4::bigint ORDER BY created_at", 4, v,
	    NULL, NULL, &r, cause, "read late profiles");
	if (rc != 0) {
		free(service);
		free(type);
		return rc;
	}
	for (i = 0; rc == 0 && i < PQntuples(r); i++) {
		m = store_bucket_of(pg_conn_int(r, i, 0),
		    store_bucket_step[0]) * store_bucket_step[0];
		if (m == last)
			continue;
		last = m;
		(*minutes)++;
		/* Its profiles fresh again, every bucket over it reopened. */
		v[2] = pg_conn_i64(m0, m * PG_ROLLUP_MAINT_NS);
		v[3] = pg_conn_i64(m1, (m + store_bucket_step[0]) *
		    PG_ROLLUP_MAINT_NS);
		rc = pg_conn_exec(c, "UPDATE profiles SET rolled = -1 WHERE "
		    "service = $1 AND type = $2 AND created_at >= $3::bigint "
		    "AND created_at < $4::bigint AND rolled IN (0, 1)", 4, v,
		    NULL, NULL, NULL, cause, "reopen profiles");
		for (l = 0; rc == 0 && l < STORE_ROLLUP_LEVELS; l++)
			rc = pg_rollup_maint_reopen(c, service, type, l,
			    m - m % store_bucket_step[l], cause);
	}
	PQclear(r);
	free(service);
	free(type);
	return rc;
}

/*
 * Heals late profiles once none has arrived for quiet_ns: the caller
 * leads compaction. *minutes: OUT minutes reopened.
 */
int
pg_rollup_maint_heal(struct pg *pg, int64_t quiet_ns, size_t *minutes,
    char **cause)
{
	PGresult	*r;
	PGconn		*c;
	int64_t		 count, maxpk, now = clock_mono_ns();
	int		 rc, quiet;

	*minutes = 0;
	if ((rc = pg_pool_get(pg->pool, &c, cause)) != 0)
		return rc;
	rc = pg_conn_exec(c, "SELECT count(*), coalesce(max(pk), 0) FROM "
	    "profiles WHERE rolled <= 0 AND rolled = 0", 0, NULL, NULL, NULL,
	    &r, cause, "count late profiles");
	if (rc != 0)
		goto out;
	count = pg_conn_int(r, 0, 0);
	maxpk = pg_conn_int(r, 0, 1);
	PQclear(r);
	pthread_mutex_lock(&pg->lead_mu);
	if (count > 0 && maxpk != pg->late_maxpk) {
		pg->late_maxpk = maxpk;
		pg->late_since = now;
	}
	quiet = count > 0 && now - pg->late_since >= quiet_ns;
	pthread_mutex_unlock(&pg->lead_mu);
	if (!quiet)
		goto out;
	if ((rc = pg_conn_cmd(c, "BEGIN", cause, "begin")) != 0)
		goto out;
	rc = pg_rollup_maint_reopen_day(c, minutes, cause);
	if (rc == 0)
		rc = pg_conn_cmd(c, "COMMIT", cause, "commit heal");
	if (rc != 0) {
		(void)pg_conn_cmd(c, "ROLLBACK", NULL, NULL);
		*minutes = 0;
	}
out:
	pg_pool_put(pg->pool, c);
	return rc;
}

/* Rollup figures: rows and bytes by level, the queue, the oldest fresh. */
int
pg_rollup_maint_stats(struct pg *pg, struct store_rollup_stats *st,
    char **cause)
{
	PGresult	*r;
	PGconn		*c;
	int		 i, l, rc;

	memset(st, 0, sizeof *st);
	if ((rc = pg_pool_get(pg->pool, &c, cause)) != 0)
		return rc;
	rc = pg_conn_exec(c, "SELECT level, rows, bytes FROM "
	    "profd_rollup_totals", 0, NULL, NULL, NULL, &r, cause,
	    "read rollup totals");
	if (rc == 0) {
		for (i = 0; i < PQntuples(r); i++) {
			l = (int)pg_conn_int(r, i, 0);
			if (l < 0 || l >= STORE_ROLLUP_LEVELS)
				continue;
			st->rollups[l] = pg_conn_int(r, i, 1);
			st->bytes += pg_conn_int(r, i, 2);
		}
		PQclear(r);
		rc = pg_conn_exec(c, "SELECT (SELECT count(*) FROM "
		    "rollup_buckets WHERE done = 0), (SELECT created_at FROM "
		    "profiles WHERE rolled <= 0 AND rolled = -1 ORDER BY "
		    "created_at, pk LIMIT 1)", 0, NULL, NULL, NULL, &r, cause,
		    "read rollup queue");
	}
	if (rc == 0) {
		st->todo = pg_conn_int(r, 0, 0);
		st->oldest_fresh = pg_conn_int(r, 0, 1);
		PQclear(r);
	}
	pg_pool_put(pg->pool, c);
	return rc;
}
