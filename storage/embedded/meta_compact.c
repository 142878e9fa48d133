/*
 * Compaction's side of the SQLite metadata: which bucket to roll up next,
 * what each of its rollups merges, and the transaction that records them.
 *
 * The rule every rollup keeps: the rollup of a bucket and group holds
 * exactly the profiles of that group in the bucket that are marked
 * (rolled = 1). A compaction of bucket B takes, for each group, the rows
 * of B's parts that are done (every group present in a done part has a
 * row there, small ones as references to their profiles) and, for parts
 * not done, the profiles themselves (fresh ones, rolled = -1, then
 * marked). Nothing inside B is compacted again once B is done, and a
 * profile arriving later in a done bucket is flagged late (rolled = 0):
 * it stays loose, read as itself by every merge. So a merge may use the
 * rollup of a done bucket plus the loose profiles in it, and count each
 * profile once.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "storage/embedded/meta_rollup.h"
#include "storage/embedded/meta_sqlite_int.h"
#include "storage/rollup_build.h"
#include "storage/store_bucket.h"

#define META_COMPACT_NS		INT64_C(1000000000)
#define META_COMPACT_LATE_BATCH	512	/* late profiles flagged at once */

/* What a compaction reads: one connection, one service and type. */
struct meta_compact_src {
	struct meta_conn	*c;
	const char		*service, *type;
};

/*
 * Takes the profiles of [b0, b1) seconds that belong in a rollup: fresh
 * ones (marked when the compaction commits) and marked ones; late ones
 * stay out.
 */
static int
meta_compact_take_raw(void *arg, struct rollup_build *b, int64_t b0,
    int64_t b1, char **cause)
{
	struct meta_compact_src	*src = arg;
	struct meta_conn	*c = src->c;
	sqlite3_stmt	*s;
	int64_t		 pk = -1, *labels = NULL, rolled = 0;
	size_t		 nl = 0, capl = 0;
	char		*id = NULL, *st = NULL;
	int		 rc;

	s = meta_rollup_prepare(c, "SELECT p.pk, p.id, p.rolled, "
	    "p.sample_types, pl.label_id FROM profiles AS p INDEXED BY "
	    "profiles_service_type_time LEFT JOIN profile_labels AS pl "
	    "ON pl.profile_pk = p.pk WHERE p.service = ?1 AND p.type = ?2 "
	    "AND p.created_at >= ?3 AND p.created_at < ?4 "
	    "ORDER BY p.created_at, p.id", cause);
	if (s == NULL)
		return -1;
	sqlite3_bind_text(s, 1, src->service, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, src->type, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, b0 * META_COMPACT_NS);
	sqlite3_bind_int64(s, 4, b1 * META_COMPACT_NS);
	for (;;) {
		rc = sqlite3_step(s);
		if (rc == SQLITE_ROW && sqlite3_column_int64(s, 0) == pk) {
			if (nl == capl) {
				capl = capl ? capl * 2 : 8;
				labels = xreallocarray(labels, capl,
				    sizeof *labels);
			}
			labels[nl++] = sqlite3_column_int64(s, 4);
			continue;
		}
		/* The previous profile is complete. */
		if (id != NULL)
			rollup_build_profile(b, pk, (int)rolled, id, st,
			    labels, nl);
		free(id);
		free(st);
		id = st = NULL;
		nl = 0;
		if (rc != SQLITE_ROW)
			break;
		pk = sqlite3_column_int64(s, 0);
		id = xstrdup((const char *)sqlite3_column_text(s, 1));
		rolled = sqlite3_column_int64(s, 2);
		st = xstrdup(sqlite3_column_text(s, 3) ?
		    (const char *)sqlite3_column_text(s, 3) : "");
		if (sqlite3_column_type(s, 4) != SQLITE_NULL) {
			if (capl == 0) {
				capl = 8;
				labels = xreallocarray(labels, capl,
				    sizeof *labels);
			}
			labels[nl++] = sqlite3_column_int64(s, 4);
		}
	}
	free(labels);
	if (rc != SQLITE_DONE) {
		meta_conn_error(c->db, cause, "read profiles to roll up");
		sqlite3_finalize(s);
		return -1;
	}
	sqlite3_finalize(s);
	return 0;
}

/* rollup_build_src.done: the done buckets of a level in [b0, b1). */
static int
meta_compact_done_in(void *arg, int level, int64_t b0, int64_t b1,
    int64_t **out, size_t *n, char **cause)
{
	struct meta_compact_src	*src = arg;

	return meta_rollup_done_in(src->c, src->service, src->type, level, b0,
	    b1, out, n, cause);
}

/* Feeds the rows of a level in [b0, b1) to the build. */
static int
meta_compact_take_rows(void *arg, struct rollup_build *b, int level,
    int64_t b0, int64_t b1, char **cause)
{
	struct meta_compact_src	*src = arg;
	sqlite3_stmt		*s;
	int			 rc;

	s = meta_rollup_prepare(src->c, "SELECT rid, bucket, label_id, "
	    "sample_types, profiles, profile, common, uniform FROM rollups "
	    "INDEXED BY rollups_bucket WHERE service = ?1 AND type = ?2 "
	    "AND level = ?3 AND bucket >= ?4 AND bucket < ?5", cause);
	if (s == NULL)
		return -1;
	meta_rollup_bind_key(s, src->service, src->type, level);
	sqlite3_bind_int64(s, 4, b0);
	sqlite3_bind_int64(s, 5, b1);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		rollup_build_row(b, sqlite3_column_int64(s, 1),
		    sqlite3_column_int64(s, 0),
		    (const char *)sqlite3_column_text(s, 5),
		    sqlite3_column_int64(s, 2),
		    (const char *)sqlite3_column_text(s, 3),
		    sqlite3_column_int64(s, 4),
		    (const char *)sqlite3_column_text(s, 6),
		    sqlite3_column_int(s, 7));
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return meta_conn_error(src->c->db, cause, "read rollups");
	return 0;
}

/* 1 if bucket (level, b) or a bucket around it is done. */
static int
meta_compact_covered(struct meta_conn *c, const char *service,
    const char *type, int level, int64_t b, char **cause)
{
	int	l, rc;

	for (l = level; l < STORE_ROLLUP_LEVELS; l++) {
		rc = meta_rollup_is_done(c, service, type, l,
		    b - b % store_bucket_step[l], cause);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/*
 * The oldest fresh profile older than before (ns) whose minute may be
 * compacted: 1 with *service, *type, *minute set; late ones met on the
 * way are flagged (and traces set never to be rolled up); 0 none.
 */
static int
meta_compact_next_minute(struct meta_sqlite *ms, struct meta_conn *c,
    int64_t before, int64_t after, char **service, char **type,
    int64_t *minute, char **cause)
{
	sqlite3_stmt	*s;
	int64_t		 late[META_COMPACT_LATE_BATCH], never[META_COMPACT_LATE_BATCH];
	int64_t		 at = after - 1, pk = INT64_MAX, m;
	size_t		 nlate = 0, nnever = 0;
	const char	*sv, *ty;
	int		 rc, found = 0, ret = -1;

	s = meta_rollup_prepare(c, "SELECT pk, service, type, created_at "
	    "FROM profiles INDEXED BY profiles_loose WHERE rolled <= 0 "
	    "AND rolled = -1 AND created_at < ?1 AND (created_at, pk) > "
	    "(?2, ?3) ORDER BY created_at, pk LIMIT 1", cause);
	if (s == NULL)
		return -1;
	while (nlate < META_COMPACT_LATE_BATCH && nnever < META_COMPACT_LATE_BATCH) {
		sqlite3_reset(s);
		sqlite3_bind_int64(s, 1, before);
		sqlite3_bind_int64(s, 2, at);
		sqlite3_bind_int64(s, 3, pk);
		if ((rc = sqlite3_step(s)) != SQLITE_ROW) {
			if (rc != SQLITE_DONE) {
				meta_conn_error(c->db, cause, "find profiles "
				    "to roll up");
				goto out;
			}
			break;
		}
		pk = sqlite3_column_int64(s, 0);
		sv = (const char *)sqlite3_column_text(s, 1);
		ty = (const char *)sqlite3_column_text(s, 2);
		at = sqlite3_column_int64(s, 3);
		if (ty != NULL && strcmp(ty, "trace") == 0) {
			never[nnever++] = pk;
			continue;
		}
		m = store_bucket_of(at, store_bucket_step[0]) *
		    store_bucket_step[0];
		rc = meta_compact_covered(c, sv ? sv : "", ty ? ty : "", 0, m,
		    cause);
		if (rc == -1)
			goto out;
		if (rc == 1) {
			late[nlate++] = pk;
			continue;
		}
		*service = xstrdup(sv ? sv : "");
		*type = xstrdup(ty ? ty : "");
		*minute = m;
		found = 1;
		break;
	}
	ret = found;
out:
	sqlite3_finalize(s);
	if (nlate > 0 && meta_rollup_write_ints(ms, "UPDATE profiles SET "
	    "rolled = 0 WHERE pk = ?1 AND rolled = -1", late, nlate,
	    ret == -1 ? NULL : cause) == -1)
		ret = -1;
	if (nnever > 0 && ret != -1 && meta_rollup_write_ints(ms, "UPDATE "
	    "profiles SET rolled = 2 WHERE pk = ?1 AND rolled = -1", never,
	    nnever, cause) == -1)
		ret = -1;
	if (ret == -1 && found) {
		free(*service);
		free(*type);
	}
	if (ret == 0 && (nlate > 0 || nnever > 0))
		ret = 2;	/* flagged some: look again */
	return ret;
}

/*
 * The oldest waiting bucket of level that ended before `before` (s): 1
 * with *service, *type, *bucket, 0 none.
 */
static int
meta_compact_next_todo(struct meta_conn *c, int level, int64_t before,
    char **service, char **type, int64_t *bucket, char **cause)
{
	sqlite3_stmt	*s;
	int		 rc;

	s = meta_rollup_prepare(c, "SELECT service, type, bucket FROM "
	    "rollup_buckets INDEXED BY rollup_buckets_todo WHERE done = 0 "
	    "AND level = ?1 AND bucket <= ?2 ORDER BY bucket LIMIT 1", cause);
	if (s == NULL)
		return -1;
	sqlite3_bind_int(s, 1, level);
	sqlite3_bind_int64(s, 2, before - store_bucket_step[level]);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*service = xstrdup((const char *)sqlite3_column_text(s, 0));
		*type = xstrdup((const char *)sqlite3_column_text(s, 1));
		*bucket = sqlite3_column_int64(s, 2);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return meta_conn_error(c->db, cause, "find rollup buckets");
	return rc == SQLITE_ROW;
}

/* Finds the next bucket to compact and collects its rollups. */
static int
meta_compact_find(struct meta_sqlite *ms, struct meta_conn *c, int64_t now_ns,
    int64_t delay_ns, int64_t after_ns, struct store_compaction **out,
    char **cause)
{
	struct meta_compact_src	 src;
	struct rollup_build_src	 ops = { &src, meta_compact_take_raw,
		    meta_compact_done_in, meta_compact_take_rows };
	struct rollup_build	*b;
	char		*service = NULL, *type = NULL;
	int64_t		 bucket = 0, before = now_ns - delay_ns;
	int		 level, l, rc;

	do {
		rc = meta_compact_next_minute(ms, c, before, after_ns > 0 ?
		    after_ns : INT64_MIN + 1, &service, &type, &bucket, cause);
	} while (rc == 2);
	if (rc == -1)
		return -1;
	if (rc == 0 && after_ns > 0)
		return 0;	/* a batch of minutes ends */
	level = 0;
	for (l = 1; rc == 0 && l < STORE_ROLLUP_LEVELS; l++) {
		for (;;) {
			rc = meta_compact_next_todo(c, l,
			    store_bucket_of(before, 1), &service, &type,
			    &bucket, cause);
			if (rc != 1)
				break;
			if ((rc = meta_compact_covered(c, service, type, l,
			    bucket, cause)) == 0) {
				rc = 1;
				level = l;
				break;
			}
			if (rc == 1)
				rc = meta_rollup_drop_todo(ms, service, type,
				    l, bucket, cause);
			free(service);
			free(type);
			service = type = NULL;
			if (rc == -1)
				return -1;
		}
		if (rc == -1)
			return -1;
	}
	if (rc == 0)
		return 0;
	src.c = c;
	src.service = service;
	src.type = type;
	b = rollup_build_new();
	/* One snapshot: the done marks and rows read agree. */
	rc = meta_conn_exec(c->db, "BEGIN", cause, "begin");
	if (rc == 0)
		rc = rollup_build_collect(b, &ops, level, bucket,
		    bucket + store_bucket_step[level], cause);
	sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
	if (rc == 0)
		*out = rollup_build_finish(b, service, type, level, bucket);
	else
		rollup_build_free(b);
	free(service);
	free(type);
	return rc;
}

/* store_compact_next. */
int
meta_compact_next(struct meta_sqlite *ms, int64_t now_ns, int64_t delay_ns,
    int64_t after_ns, struct store_compaction **out, char **cause)
{
	struct meta_conn	*c;
	int			 rc;

	*out = NULL;
	if ((c = meta_conn_get(&ms->pool, cause)) == NULL)
		return -1;
	rc = meta_compact_find(ms, c, now_ns, delay_ns, after_ns, out, cause);
	meta_conn_put(&ms->pool, c);
	return rc == -1 ? -1 : 0;
}

/* The ids a refs rollup refers to, separated by spaces. */
static char *
meta_compact_refs(const struct store_rollup *r)
{
	char	*s = xcalloc(r->npieces, STORE_ID_LEN + 1);
	size_t	 i, at = 0;

	for (i = 0; i < r->npieces; i++)
		at += (size_t)sprintf(s + at, "%s%.*s", i ? " " : "",
		    STORE_ID_LEN, r->pieces[i]);
	return s;
}

/* Inserts the rows of c, marks, and the bucket's marks, in the open tx. */
static int
meta_compact_write(struct meta_conn *w, const struct store_compaction *c,
    char **cause)
{
	sqlite3_stmt	*s;
	size_t		 i;
	char		*refs;
	int		 rc;

	if ((rc = meta_rollup_is_done(w, c->service, c->type, c->level,
	    c->bucket, cause)) != 0)
		return rc == 1 ? xcause(cause, "bucket already compacted") : -1;
	if ((s = meta_rollup_prepare(w, "INSERT INTO rollups (rid, service, "
	    "type, level, bucket, label_id, sample_types, profiles, size, "
	    "profile, common, uniform) VALUES (?4, ?1, ?2, ?3, ?5, ?6, ?7, "
	    "?8, ?9, ?10, ?11, ?12)", cause)) == NULL)
		return -1;
	for (i = 0; i < c->n; i++) {
		const struct store_rollup *r = &c->r[i];

		sqlite3_reset(s);
		meta_rollup_bind_key(s, c->service, c->type, c->level);
		sqlite3_bind_int64(s, 4, r->rid);
		sqlite3_bind_int64(s, 5, c->bucket);
		sqlite3_bind_int64(s, 6, r->label_id);
		sqlite3_bind_text(s, 7, r->sample_types, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 8, r->profiles);
		sqlite3_bind_int64(s, 9, r->refs ? 0 : (int64_t)r->len);
		if (r->refs) {
			refs = meta_compact_refs(r);
			sqlite3_bind_text(s, 10, refs, -1, free);
		} else
			sqlite3_bind_null(s, 10);
		sqlite3_bind_text(s, 11, r->common, -1, SQLITE_STATIC);
		sqlite3_bind_int(s, 12, r->uniform);
		if (sqlite3_step(s) != SQLITE_DONE) {
			meta_conn_error(w->db, cause, "insert rollup");
			sqlite3_finalize(s);
			return -1;
		}
	}
	sqlite3_finalize(s);
	if ((s = meta_rollup_prepare(w, "UPDATE profiles SET rolled = 1 "
	    "WHERE pk = ?1 AND rolled = -1", cause)) == NULL)
		return -1;
	for (i = 0; i < c->nmark; i++) {
		sqlite3_reset(s);
		sqlite3_bind_int64(s, 1, c->mark[i]);
		if (sqlite3_step(s) != SQLITE_DONE) {
			meta_conn_error(w->db, cause, "mark profiles");
			sqlite3_finalize(s);
			return -1;
		}
	}
	sqlite3_finalize(s);
	if ((s = meta_rollup_prepare(w, "INSERT INTO rollup_buckets (service, "
	    "type, level, bucket, done) VALUES (?1, ?2, ?3, ?4, ?5) ON "
	    "CONFLICT (service, type, level, bucket) DO UPDATE SET done = "
	    "max(done, excluded.done)", cause)) == NULL)
		return -1;
	meta_rollup_bind_key(s, c->service, c->type, c->level);
	sqlite3_bind_int64(s, 4, c->bucket);
	sqlite3_bind_int(s, 5, 1);
	rc = sqlite3_step(s);
	if (rc == SQLITE_DONE && c->level + 1 < STORE_ROLLUP_LEVELS) {
		/* The parent waits for its end. */
		sqlite3_reset(s);
		meta_rollup_bind_key(s, c->service, c->type, c->level + 1);
		sqlite3_bind_int64(s, 4, c->bucket - c->bucket %
		    store_bucket_step[c->level + 1]);
		sqlite3_bind_int(s, 5, 0);
		rc = sqlite3_step(s);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return meta_conn_error(w->db, cause, "mark rollup bucket");
	return 0;
}

/* store_compact_commit's transaction: n compactions, all or none. */
int
meta_compact_commit(struct meta_sqlite *ms, struct store_compaction **c,
    size_t n, char **cause)
{
	struct meta_conn	*w = ms->writer;
	size_t			 i;
	int			 ret = -1;

	meta_sqlite_writer_acquire(ms);
	if (meta_conn_exec(w->db, "BEGIN IMMEDIATE", cause, "begin") == 0) {
		for (i = 0; i < n; i++) {
			if (meta_compact_write(w, c[i], cause) == -1)
				break;
		}
		if (i == n && meta_conn_exec(w->db, "COMMIT", cause,
		    "commit") == 0)
			ret = 0;
		else
			sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
	}
	meta_sqlite_writer_release(ms);
	return ret;
}

/* store_compact_abandon. */
int
meta_compact_abandon(struct meta_sqlite *ms, struct store_compaction *c,
    char **cause)
{
	if (c->level > 0)
		return meta_rollup_drop_todo(ms, c->service, c->type, c->level,
		    c->bucket, cause);
	return meta_rollup_write_ints(ms, "UPDATE profiles SET rolled = 0 "
	    "WHERE pk = ?1 AND rolled = -1", c->mark, c->nmark, cause);
}

