/*
 * What the files of rollups share (meta_compact.c builds rollups,
 * meta_rollup_maint.c keeps them, meta_plan.c reads them): small
 * statement helpers and the buckets' done marks. Rollup blob names and
 * label-id sets are storage/rollup_ids.c's. The design is in
 * docs/DESIGN.md, "Rollups".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "storage/embedded/meta_rollup.h"
#include "storage/embedded/meta_sqlite_int.h"

/* Prepares sql on c; NULL with *cause. */
sqlite3_stmt *
meta_rollup_prepare(struct meta_conn *c, const char *sql, char **cause)
{
	sqlite3_stmt	*s = NULL;

	if (sqlite3_prepare_v2(c->db, sql, -1, &s, NULL) != SQLITE_OK) {
		meta_conn_error(c->db, cause, "prepare rollup query");
		return NULL;
	}
	return s;
}
/* Binds service, type, and level (?1..?3). */
void
meta_rollup_bind_key(sqlite3_stmt *s, const char *service, const char *type,
    int level)
{
	sqlite3_bind_text(s, 1, service, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, type, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 3, level);
}
/* The done buckets of a level in [b0, b1); see the header. */
int
meta_rollup_done_in(struct meta_conn *c, const char *service,
    const char *type, int level, int64_t b0, int64_t b1, int64_t **out,
    size_t *n, char **cause)
{
	sqlite3_stmt	*s;
	int		 rc;

	*out = NULL;
	*n = 0;
	s = meta_rollup_prepare(c, "SELECT bucket FROM rollup_buckets "
	    "WHERE service = ?1 AND type = ?2 AND level = ?3 AND bucket >= ?4 "
	    "AND bucket < ?5 AND done = 1 ORDER BY bucket", cause);
	if (s == NULL)
		return -1;
	meta_rollup_bind_key(s, service, type, level);
	sqlite3_bind_int64(s, 4, b0);
	sqlite3_bind_int64(s, 5, b1);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		*out = xreallocarray(*out, *n + 1, sizeof **out);
		(*out)[(*n)++] = sqlite3_column_int64(s, 0);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE) {
		free(*out);
		*out = NULL;
		*n = 0;
		return meta_conn_error(c->db, cause, "read rollup buckets");
	}
	return 0;
}

/* 1 if bucket (level, b) of service and type is done. */
int
meta_rollup_is_done(struct meta_conn *c, const char *service,
    const char *type, int level, int64_t b, char **cause)
{
	sqlite3_stmt	*s;
	int		 rc, done = 0;

	s = meta_rollup_prepare(c, "SELECT done FROM rollup_buckets WHERE "
	    "service = ?1 AND type = ?2 AND level = ?3 AND bucket = ?4",
	    cause);
	if (s == NULL)
		return -1;
	meta_rollup_bind_key(s, service, type, level);
	sqlite3_bind_int64(s, 4, b);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		done = sqlite3_column_int(s, 0) == 1;
	sqlite3_finalize(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return meta_conn_error(c->db, cause, "read rollup bucket");
	return done;
}
/* Runs sql (binding ints) on the writer in a transaction of its own. */
int
meta_rollup_write_ints(struct meta_sqlite *ms, const char *sql,
    const int64_t *v, size_t n, char **cause)
{
	struct meta_conn	*w = ms->writer;
	sqlite3_stmt		*s = NULL;
	size_t			 i;
	int			 ret = -1;

	meta_sqlite_writer_acquire(ms);
	if (meta_conn_exec(w->db, "BEGIN IMMEDIATE", cause, "begin") == -1)
		goto out;
	if ((s = meta_rollup_prepare(w, sql, cause)) == NULL)
		goto rollback;
	for (i = 0; i < n; i++) {
		sqlite3_bind_int64(s, 1, v[i]);
		if (meta_conn_step_done(w, s, cause, "flag profiles") == -1)
			goto rollback;
	}
	sqlite3_finalize(s);
	s = NULL;
	if (meta_conn_exec(w->db, "COMMIT", cause, "commit") == 0) {
		ret = 0;
		goto out;
	}
rollback:
	sqlite3_finalize(s);
	sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
out:
	meta_sqlite_writer_release(ms);
	return ret;
}
/* Deletes the waiting mark of an hour or day that cannot be compacted. */
int
meta_rollup_drop_todo(struct meta_sqlite *ms, const char *service,
    const char *type, int level, int64_t bucket, char **cause)
{
	struct meta_conn	*w = ms->writer;
	sqlite3_stmt		*s;
	int			 ret = -1;

	meta_sqlite_writer_acquire(ms);
	if ((s = meta_rollup_prepare(w, "DELETE FROM rollup_buckets WHERE "
	    "service = ?1 AND type = ?2 AND level = ?3 AND bucket = ?4 AND "
	    "done = 0", cause)) != NULL) {
		meta_rollup_bind_key(s, service, type, level);
		sqlite3_bind_int64(s, 4, bucket);
		if (sqlite3_step(s) == SQLITE_DONE)
			ret = 0;
		else
			meta_conn_error(w->db, cause, "drop rollup bucket");
		sqlite3_finalize(s);
	}
	meta_sqlite_writer_release(ms);
	return ret;
}
