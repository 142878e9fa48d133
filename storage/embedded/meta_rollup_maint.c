/*
 * Keeping rollups: retention (the rollups and done marks of buckets that
 * start before the cutoff), the check at open against the blobs, and the
 * figures /metrics shows (the queue, the oldest profile not compacted).
 */
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "storage/embedded/meta_rollup.h"
#include "storage/embedded/meta_sqlite_int.h"
#include "storage/store_bucket.h"
#include "storage/store_free.h"

#define META_ROLLUP_MAINT_NS	INT64_C(1000000000)

/* Retention of rollups: marks first, then up to batch rows. */
int
meta_rollup_maint_delete_before(struct meta_sqlite *ms, int64_t cutoff,
    size_t batch, char ***names, size_t *nnames, int64_t *bytes,
    int64_t *rows, size_t *n, char **cause)
{
	struct meta_conn	*w = ms->writer;
	sqlite3_stmt		*s = NULL, *d = NULL;
	int64_t			 before;
	char			 name[STORE_ID_LEN + 1];
	int			 rc, ret = -1;

	*names = NULL;
	*nnames = *n = 0;
	*bytes = 0;
	/* Buckets that start before cutoff: bucket * 1e9 < cutoff. */
	before = cutoff / META_ROLLUP_MAINT_NS + (cutoff % META_ROLLUP_MAINT_NS > 0 ? 1 : 0);
	meta_sqlite_writer_acquire(ms);
	if (meta_conn_exec(w->db, "BEGIN IMMEDIATE", cause, "begin") == -1)
		goto out;
	if ((s = meta_rollup_prepare(w, "DELETE FROM rollup_buckets WHERE "
	    "bucket < ?1", cause)) == NULL)
		goto rollback;
	sqlite3_bind_int64(s, 1, before);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	s = NULL;
	if (rc != SQLITE_DONE) {
		meta_conn_error(w->db, cause, "delete rollup buckets");
		goto rollback;
	}
	if ((s = meta_rollup_prepare(w, "SELECT rid, size, profile, level "
	    "FROM rollups INDEXED BY rollups_time WHERE bucket < ?1 LIMIT ?2",
	    cause)) == NULL || (d = meta_rollup_prepare(w, "DELETE FROM "
	    "rollups WHERE rid = ?1", cause)) == NULL)
		goto rollback;
	sqlite3_bind_int64(s, 1, before);
	sqlite3_bind_int64(s, 2, batch == 0 ? -1 : (sqlite3_int64)batch);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		sqlite3_reset(d);
		sqlite3_bind_int64(d, 1, sqlite3_column_int64(s, 0));
		if (sqlite3_step(d) != SQLITE_DONE) {
			rc = SQLITE_ERROR;
			break;
		}
		(*n)++;
		if (sqlite3_column_int(s, 3) >= 0 &&
		    sqlite3_column_int(s, 3) < STORE_ROLLUP_LEVELS)
			rows[sqlite3_column_int(s, 3)]++;
		if (sqlite3_column_type(s, 2) != SQLITE_NULL)
			continue;
		rollup_ids_name(sqlite3_column_int64(s, 0), name);
		*names = xreallocarray(*names, *nnames + 1, sizeof **names);
		(*names)[(*nnames)++] = xstrdup(name);
		*bytes += sqlite3_column_int64(s, 1);
	}
	if (rc != SQLITE_DONE) {
		meta_conn_error(w->db, cause, "delete rollups");
		goto rollback;
	}
	sqlite3_finalize(s);
	sqlite3_finalize(d);
	s = d = NULL;
	if (meta_conn_exec(w->db, "COMMIT", cause, "commit") == 0) {
		ret = 0;
		goto out;
	}
rollback:
	sqlite3_finalize(s);
	sqlite3_finalize(d);
	sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
out:
	meta_sqlite_writer_release(ms);
	if (ret == -1) {
		store_free_strings(*names, *nnames);
		*names = NULL;
		*nnames = *n = 0;
		*bytes = 0;
	}
	return ret;
}
/* A bucket to drop at open (a blob of it is missing). */
struct meta_rollup_maint_lost {
	char	*service, *type;
	int	 level;
	int64_t	 bucket;
};
/* Drops every row and the done mark of each lost bucket, in the open tx. */
static int
meta_rollup_maint_drop_lost(struct meta_conn *w, const struct meta_rollup_maint_lost *lost,
    size_t nlost, size_t *dropped, char **cause)
{
	sqlite3_stmt	*s = NULL, *d = NULL;
	size_t		 i;
	int		 ret = -1;

	if ((s = meta_rollup_prepare(w, "DELETE FROM rollups WHERE service = "
	    "?1 AND type = ?2 AND level = ?3 AND bucket = ?4", cause)) == NULL ||
	    (d = meta_rollup_prepare(w, "DELETE FROM rollup_buckets WHERE "
	    "service = ?1 AND type = ?2 AND level = ?3 AND bucket = ?4",
	    cause)) == NULL)
		goto out;
	for (i = 0; i < nlost; i++) {
		sqlite3_reset(s);
		sqlite3_reset(d);
		meta_rollup_bind_key(s, lost[i].service, lost[i].type,
		    lost[i].level);
		sqlite3_bind_int64(s, 4, lost[i].bucket);
		meta_rollup_bind_key(d, lost[i].service, lost[i].type,
		    lost[i].level);
		sqlite3_bind_int64(d, 4, lost[i].bucket);
		if (sqlite3_step(s) != SQLITE_DONE ||
		    sqlite3_step(d) != SQLITE_DONE) {
			meta_conn_error(w->db, cause, "drop rollups");
			goto out;
		}
		*dropped += (size_t)sqlite3_changes(w->db) > 0 ? 1 : 0;
	}
	ret = 0;
out:
	sqlite3_finalize(s);
	sqlite3_finalize(d);
	return ret;
}
/* At open: see meta_rollup.h. */
int
meta_rollup_maint_recover(struct meta_sqlite *ms,
    int (*has_blob)(void *, const char *), void *arg, int64_t **rids,
    size_t *nrids, int64_t *maxrid, struct store_rollup_stats *st,
    size_t *dropped, char **cause)
{
	struct meta_conn	*w = ms->writer;
	struct meta_rollup_maint_lost		*lost = NULL;
	sqlite3_stmt		*s = NULL;
	size_t			 nlost = 0, i;
	char			 name[STORE_ID_LEN + 1];
	int			 rc, level, ret = -1;

	*rids = NULL;
	*nrids = *dropped = 0;
	*maxrid = 0;
	memset(st, 0, sizeof *st);
	meta_sqlite_writer_acquire(ms);
	if (meta_conn_exec(w->db, "BEGIN IMMEDIATE", cause, "begin") == -1)
		goto out;
	if ((s = meta_rollup_prepare(w, "SELECT rid, service, type, level, "
	    "bucket, size, profile FROM rollups ORDER BY rid", cause)) == NULL)
		goto rollback;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		*maxrid = sqlite3_column_int64(s, 0);
		level = sqlite3_column_int(s, 3);
		if (level >= 0 && level < STORE_ROLLUP_LEVELS)
			st->rollups[level]++;
		if (sqlite3_column_type(s, 6) != SQLITE_NULL)
			continue;
		rollup_ids_name(sqlite3_column_int64(s, 0), name);
		if (has_blob(arg, name)) {
			*rids = xreallocarray(*rids, *nrids + 1, sizeof **rids);
			(*rids)[(*nrids)++] = sqlite3_column_int64(s, 0);
			st->bytes += sqlite3_column_int64(s, 5);
			continue;
		}
		lost = xreallocarray(lost, nlost + 1, sizeof *lost);
		lost[nlost].service = xstrdup((const char *)
		    sqlite3_column_text(s, 1));
		lost[nlost].type = xstrdup((const char *)
		    sqlite3_column_text(s, 2));
		lost[nlost].level = level;
		lost[nlost].bucket = sqlite3_column_int64(s, 4);
		nlost++;
	}
	sqlite3_finalize(s);
	s = NULL;
	if (rc != SQLITE_DONE) {
		meta_conn_error(w->db, cause, "read rollups");
		goto rollback;
	}
	if (nlost > 0) {
		if (meta_rollup_maint_drop_lost(w, lost, nlost, dropped, cause) == -1)
			goto rollback;
		/* Counts again after the drop: simpler than subtracting. */
		memset(st->rollups, 0, sizeof st->rollups);
		if ((s = meta_rollup_prepare(w, "SELECT level, count(*) FROM "
		    "rollups GROUP BY level", cause)) == NULL)
			goto rollback;
		while (sqlite3_step(s) == SQLITE_ROW) {
			level = sqlite3_column_int(s, 0);
			if (level >= 0 && level < STORE_ROLLUP_LEVELS)
				st->rollups[level] = sqlite3_column_int64(s, 1);
		}
		sqlite3_finalize(s);
		s = NULL;
	}
	if (meta_conn_exec(w->db, "COMMIT", cause, "commit") == 0) {
		ret = 0;
		goto out;
	}
rollback:
	sqlite3_finalize(s);
	sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
out:
	meta_sqlite_writer_release(ms);
	for (i = 0; i < nlost; i++) {
		free(lost[i].service);
		free(lost[i].type);
	}
	free(lost);
	if (ret == -1) {
		free(*rids);
		*rids = NULL;
		*nrids = 0;
	}
	return ret;
}
/* The queue: waiting hours and days, and the oldest fresh profile. */
int
meta_rollup_maint_queue(struct meta_sqlite *ms, struct store_rollup_stats *st,
    char **cause)
{
	struct meta_conn	*c;
	sqlite3_stmt		*s;
	int			 ret = -1;

	if ((c = meta_conn_get(&ms->pool, cause)) == NULL)
		return -1;
	st->todo = st->oldest_fresh = 0;
	if ((s = meta_rollup_prepare(c, "SELECT count(*) FROM rollup_buckets "
	    "INDEXED BY rollup_buckets_todo WHERE done = 0", cause)) == NULL)
		goto out;
	if (sqlite3_step(s) == SQLITE_ROW)
		st->todo = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	if ((s = meta_rollup_prepare(c, "SELECT created_at FROM profiles "
	    "INDEXED BY profiles_loose WHERE rolled <= 0 AND rolled = -1 "
	    "ORDER BY created_at LIMIT 1", cause)) == NULL)
		goto out;
	if (sqlite3_step(s) == SQLITE_ROW)
		st->oldest_fresh = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	ret = 0;
out:
	meta_conn_put(&ms->pool, c);
	return ret;
}

/* The late profiles: how many, and the newest row's pk (0: none). */
int
meta_rollup_maint_late(struct meta_sqlite *ms, int64_t *count, int64_t *maxpk,
    char **cause)
{
	struct meta_conn	*c;
	sqlite3_stmt		*s;
	int			 ret = -1;

	*count = *maxpk = 0;
	if ((c = meta_conn_get(&ms->pool, cause)) == NULL)
		return -1;
	if ((s = meta_rollup_prepare(c, "SELECT count(*), max(pk) FROM "
	    "profiles INDEXED BY profiles_loose WHERE rolled <= 0 AND "
	    "rolled = 0", cause)) != NULL) {
		if (sqlite3_step(s) == SQLITE_ROW) {
			*count = sqlite3_column_int64(s, 0);
			*maxpk = sqlite3_column_int64(s, 1);
			ret = 0;
		} else
			meta_conn_error(c->db, cause, "count late profiles");
		sqlite3_finalize(s);
	}
	meta_conn_put(&ms->pool, c);
	return ret;
}

/*
 * Reopens one bucket (level, b): deletes its rows and done mark (names
 * of deleted blobs appended to *names) and, above the minute, queues it
 * again. In the open transaction.
 */
static int
meta_rollup_maint_reopen_bucket(struct meta_conn *w, const char *service,
    const char *type, int level, int64_t b, char ***names, size_t *nnames,
    struct store_rollup_stats *gone, char **cause)
{
	sqlite3_stmt	*s;
	char		 name[STORE_ID_LEN + 1];
	int		 rc;

	if ((s = meta_rollup_prepare(w, "DELETE FROM rollups WHERE service = "
	    "?1 AND type = ?2 AND level = ?3 AND bucket = ?4 RETURNING rid, "
	    "profile, size", cause)) == NULL)
		return -1;
	meta_rollup_bind_key(s, service, type, level);
	sqlite3_bind_int64(s, 4, b);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		gone->rollups[level]++;
		if (sqlite3_column_type(s, 1) != SQLITE_NULL)
			continue;
		gone->bytes += sqlite3_column_int64(s, 2);
		rollup_ids_name(sqlite3_column_int64(s, 0), name);
		*names = xreallocarray(*names, *nnames + 1, sizeof **names);
		(*names)[(*nnames)++] = xstrdup(name);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return meta_conn_error(w->db, cause, "reopen rollups");
	if ((s = meta_rollup_prepare(w, level == 0 ? "DELETE FROM "
	    "rollup_buckets WHERE service = ?1 AND type = ?2 AND level = ?3 "
	    "AND bucket = ?4" : "INSERT INTO rollup_buckets (service, type, "
	    "level, bucket, done) VALUES (?1, ?2, ?3, ?4, 0) ON CONFLICT "
	    "(service, type, level, bucket) DO UPDATE SET done = 0",
	    cause)) == NULL)
		return -1;
	meta_rollup_bind_key(s, service, type, level);
	sqlite3_bind_int64(s, 4, b);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return meta_conn_error(w->db, cause, "reopen bucket");
	return 0;
}

/*
 * Reopens the minutes of one service, type and day that hold late
 * profiles (the oldest such day): see meta_rollup.h.
 */
int
meta_rollup_maint_heal(struct meta_sqlite *ms, char ***names, size_t *nnames,
    size_t *minutes, struct store_rollup_stats *gone, char **cause)
{
	struct meta_conn	*w = ms->writer;
	sqlite3_stmt		*s = NULL, *u = NULL;
	char			*service = NULL, *type = NULL;
	int64_t			 day = 0, m, last = -1, at, b;
	int			 rc, level, ret = -1;

	*names = NULL;
	*nnames = *minutes = 0;
	memset(gone, 0, sizeof *gone);
	meta_sqlite_writer_acquire(ms);
	if (meta_conn_exec(w->db, "BEGIN IMMEDIATE", cause, "begin") == -1)
		goto out;
	if ((s = meta_rollup_prepare(w, "SELECT service, type, created_at "
	    "FROM profiles INDEXED BY profiles_loose WHERE rolled <= 0 AND "
	    "rolled = 0 ORDER BY created_at LIMIT 1", cause)) == NULL)
		goto rollback;
	if ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		service = xstrdup((const char *)sqlite3_column_text(s, 0));
		type = xstrdup((const char *)sqlite3_column_text(s, 1));
		day = store_bucket_of(sqlite3_column_int64(s, 2),
		    store_bucket_step[STORE_ROLLUP_LEVELS - 1]);
	}
	sqlite3_finalize(s);
	s = NULL;
	if (rc != SQLITE_ROW) {
		ret = rc == SQLITE_DONE ? 0 : meta_conn_error(w->db, cause,
		    "find late profiles");
		goto rollback;
	}
	day *= store_bucket_step[STORE_ROLLUP_LEVELS - 1];
	/* The day's late profiles, minute by minute. */
	if ((s = meta_rollup_prepare(w, "SELECT created_at FROM profiles "
	    "INDEXED BY profiles_loose WHERE rolled <= 0 AND rolled = 0 AND "
	    "created_at >= ?1 AND created_at < ?2 AND service = ?3 AND "
	    "type = ?4 ORDER BY created_at", cause)) == NULL ||
	    (u = meta_rollup_prepare(w, "UPDATE profiles SET rolled = -1 "
	    "WHERE service = ?1 AND type = ?2 AND created_at >= ?3 AND "
	    "created_at < ?4 AND rolled IN (0, 1)", cause)) == NULL)
		goto rollback;
	sqlite3_bind_int64(s, 1, day * META_ROLLUP_MAINT_NS);
	sqlite3_bind_int64(s, 2, (day + store_bucket_step[
	    STORE_ROLLUP_LEVELS - 1]) * META_ROLLUP_MAINT_NS);
	sqlite3_bind_text(s, 3, service, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 4, type, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		at = sqlite3_column_int64(s, 0);
		m = store_bucket_of(at, store_bucket_step[0]) *
		    store_bucket_step[0];
		if (m == last)
			continue;
		last = m;
		(*minutes)++;
		/* Its profiles fresh again, every bucket over it reopened. */
		sqlite3_reset(u);
		sqlite3_bind_text(u, 1, service, -1, SQLITE_STATIC);
		sqlite3_bind_text(u, 2, type, -1, SQLITE_STATIC);
		sqlite3_bind_int64(u, 3, m * META_ROLLUP_MAINT_NS);
		sqlite3_bind_int64(u, 4, (m + store_bucket_step[0]) *
		    META_ROLLUP_MAINT_NS);
		if (sqlite3_step(u) != SQLITE_DONE) {
			meta_conn_error(w->db, cause, "reopen profiles");
			goto rollback;
		}
		for (level = 0; level < STORE_ROLLUP_LEVELS; level++) {
			b = m - m % store_bucket_step[level];
			if (meta_rollup_maint_reopen_bucket(w, service, type,
			    level, b, names, nnames, gone, cause) == -1)
				goto rollback;
		}
	}
	if (rc != SQLITE_DONE) {
		meta_conn_error(w->db, cause, "read late profiles");
		goto rollback;
	}
	sqlite3_finalize(s);
	sqlite3_finalize(u);
	s = u = NULL;
	if (meta_conn_exec(w->db, "COMMIT", cause, "commit") == 0) {
		ret = 0;
		goto out;
	}
rollback:
	sqlite3_finalize(s);
	sqlite3_finalize(u);
	sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
	if (ret == -1) {
		store_free_strings(*names, *nnames);
		*names = NULL;
		*nnames = *minutes = 0;
	}
	memset(gone, 0, sizeof *gone);
out:
	meta_sqlite_writer_release(ms);
	free(service);
	free(type);
	return ret;
}
