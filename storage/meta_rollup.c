/*
 * What the files of rollups share (meta_compact.c builds rollups,
 * meta_rollup_maint.c keeps them, meta_plan.c reads them): rollup blob
 * names, label-id sets as text, and small statement helpers. The design
 * is in docs/DESIGN.md, "Rollups".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "storage/meta_rollup.h"
#include "storage/meta_sqlite_int.h"

/*
 * The blob name of rollup rid: two capitals (rid mod 676, so the blobs
 * spread over that many directories) and 18 digits. Profile ids are
 * lower case: the two never meet.
 */
void
meta_rollup_name(int64_t rid, char out[STORE_ID_LEN + 1])
{
	snprintf(out, STORE_ID_LEN + 1, "%c%c%018" PRId64,
	    'A' + (int)(rid % 26), 'A' + (int)(rid / 26 % 26), rid);
}
/* rid of a rollup blob name; 0 if it is not one. */
int64_t
meta_rollup_rid(const char *name)
{
	int64_t	 v = 0;
	size_t	 i;
	char	 check[STORE_ID_LEN + 1];

	if (name == NULL || strlen(name) != STORE_ID_LEN ||
	    name[0] < 'A' || name[0] > 'Z')
		return 0;
	for (i = 2; i < STORE_ID_LEN; i++) {
		if (name[i] < '0' || name[i] > '9')
			return 0;
		v = v * 10 + (name[i] - '0');
	}
	meta_rollup_name(v, check);
	return v > 0 && strcmp(check, name) == 0 ? v : 0;
}
/* qsort: int64. */
int
meta_rollup_cmp_i64(const void *a, const void *b)
{
	int64_t	x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}
/* Parses "3,17,40" into a new sorted array; returns the count. */
size_t
meta_rollup_ids_parse(const char *s, int64_t **v)
{
	size_t	 n = 0;
	char	*end;

	*v = NULL;
	while (s != NULL && *s != '\0') {
		*v = xreallocarray(*v, n + 1, sizeof **v);
		(*v)[n++] = strtoll(s, &end, 10);
		if (end == s)
			break;
		s = *end == ',' ? end + 1 : end;
	}
	if (n > 0)
		qsort(*v, n, sizeof **v, meta_rollup_cmp_i64);
	return n;
}
/* 1 if every id of want is in the set s. */
int
meta_rollup_ids_cover(const char *s, const int64_t *want, size_t nwant)
{
	int64_t	*v;
	size_t	 n = meta_rollup_ids_parse(s, &v), i;
	int	 ok = 1;

	for (i = 0; i < nwant && ok; i++)
		ok = n > 0 && bsearch(&want[i], v, n, sizeof *v,
		    meta_rollup_cmp_i64) != NULL;
	free(v);
	return ok;
}
/* Formats a sorted id set as text. */
char *
meta_rollup_ids_format(const int64_t *v, size_t n)
{
	char	*s = xcalloc(1, n * 21 + 1);
	size_t	 i, at = 0;

	for (i = 0; i < n; i++)
		at += (size_t)sprintf(s + at, "%s%" PRId64, i ? "," : "", v[i]);
	return s;
}
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
/* 1 if id is in the sorted set v. */
int
meta_rollup_has(const int64_t *v, size_t n, int64_t id)
{
	return n > 0 && bsearch(&id, v, n, sizeof *v,
	    meta_rollup_cmp_i64) != NULL;
}
