/*
 * Time-window merges over the SQLite metadata's rollups (store_plan): the
 * query's labels resolved, then storage/rollup_plan.c decides, reading the
 * done marks, the rows and the profiles here, all in one snapshot (one
 * read transaction).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "storage/embedded/meta_conn.h"
#include "storage/embedded/meta_rollup.h"
#include "storage/rollup_plan.h"

/* What the plan's reads need: the connection, the query, its labels. */
struct meta_plan_src {
	struct meta_conn		*c;
	const struct store_query	*q;
	int64_t				*labels;	/* the query's label ids */
	size_t				 nlabels;
};

/* Prepares sql; NULL with *cause. */
static sqlite3_stmt *
meta_plan_prepare(struct meta_plan_src *ms, const char *sql, char **cause)
{
	sqlite3_stmt	*s = NULL;

	if (sqlite3_prepare_v2(ms->c->db, sql, -1, &s, NULL) != SQLITE_OK) {
		meta_conn_error(ms->c->db, cause, "prepare plan");
		return NULL;
	}
	return s;
}

/* " AND EXISTS (...)" for each query label, bound from ?first on. */
static char *
meta_plan_label_sql(size_t nlabels, int first)
{
	char	*sql = xstrdup(""), *tmp;
	size_t	 i;

	for (i = 0; i < nlabels; i++) {
		tmp = xasprintf("%s AND EXISTS (SELECT 1 FROM profile_labels "
		    "WHERE label_id = ?%d AND profile_pk = p.pk)", sql,
		    first + (int)i);
		free(sql);
		sql = tmp;
	}
	return sql;
}

/* rollup_plan_src.profiles: the query's profiles of [a, z) ns. */
static int
meta_plan_profiles(void *arg, struct rollup_plan *p, int64_t a, int64_t z,
    int loose, char **cause)
{
	struct meta_plan_src	*ms = arg;
	sqlite3_stmt		*s;
	char			*sql, *lsql;
	size_t			 i;
	int			 rc;

	lsql = meta_plan_label_sql(ms->nlabels, 5);
	if (loose)
		sql = xasprintf("SELECT p.id, p.sample_types, p.created_at "
		    "FROM profiles AS p INDEXED BY profiles_loose WHERE "
		    "p.rolled <= 0 AND p.created_at >= ?3 AND p.created_at < "
		    "?4 AND p.service = ?1 AND p.type = ?2%s", lsql);
	else
		sql = xasprintf("SELECT p.id, p.sample_types, p.created_at "
		    "FROM profiles AS p INDEXED BY profiles_service_type_time "
		    "WHERE p.service = ?1 AND p.type = ?2 AND p.created_at >= "
		    "?3 AND p.created_at < ?4%s", lsql);
	free(lsql);
	s = meta_plan_prepare(ms, sql, cause);
	free(sql);
	if (s == NULL)
		return -1;
	sqlite3_bind_text(s, 1, ms->q->service, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, ms->q->type, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, a);
	sqlite3_bind_int64(s, 4, z);
	for (i = 0; i < ms->nlabels; i++)
		sqlite3_bind_int64(s, 5 + (int)i, ms->labels[i]);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		rollup_plan_profile(p, (const char *)sqlite3_column_text(s, 0),
		    (const char *)sqlite3_column_text(s, 1),
		    sqlite3_column_int64(s, 2));
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return meta_conn_error(ms->c->db, cause, "plan: list");
	return 0;
}

/* rollup_plan_src.rows: one group's rows of a level, by bucket. */
static int
meta_plan_rows(void *arg, struct rollup_plan *p, int64_t label_id, int level,
    int64_t b0, int64_t b1, char **cause)
{
	struct meta_plan_src	*ms = arg;
	sqlite3_stmt		*s;
	int			 rc;

	s = meta_plan_prepare(ms, "SELECT bucket, rid, profiles, "
	    "sample_types, profile, common, uniform FROM rollups INDEXED BY "
	    "rollups_group WHERE service = ?1 AND type = ?2 AND label_id = ?3 "
	    "AND level = ?4 AND bucket >= ?5 AND bucket < ?6 ORDER BY bucket",
	    cause);
	if (s == NULL)
		return -1;
	sqlite3_bind_text(s, 1, ms->q->service, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, ms->q->type, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, label_id);
	sqlite3_bind_int(s, 4, level);
	sqlite3_bind_int64(s, 5, b0);
	sqlite3_bind_int64(s, 6, b1);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		rollup_plan_row(p, sqlite3_column_int64(s, 0),
		    sqlite3_column_int64(s, 1), sqlite3_column_int64(s, 2),
		    (const char *)sqlite3_column_text(s, 3),
		    (const char *)sqlite3_column_text(s, 4),
		    (const char *)sqlite3_column_text(s, 5),
		    sqlite3_column_int(s, 6));
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return meta_conn_error(ms->c->db, cause, "plan: rollups");
	return 0;
}

/* rollup_plan_src.done: the done buckets of a level in [b0, b1). */
static int
meta_plan_done(void *arg, int level, int64_t b0, int64_t b1, int64_t **out,
    size_t *n, char **cause)
{
	struct meta_plan_src	*ms = arg;

	return meta_rollup_done_in(ms->c, ms->q->service, ms->q->type, level,
	    b0, b1, out, n, cause);
}

/* Resolves the query's labels: 1 if a pair does not exist (no match). */
static int
meta_plan_labels(struct meta_plan_src *ms, char **cause)
{
	sqlite3_stmt	*s;
	size_t		 i;
	int		 rc;

	ms->labels = xcalloc(ms->q->nlabels + 1, sizeof *ms->labels);
	s = meta_plan_prepare(ms, "SELECT label_id FROM labels WHERE "
	    "key = ?1 AND value = ?2", cause);
	if (s == NULL)
		return -1;
	for (i = 0; i < ms->q->nlabels; i++) {
		sqlite3_reset(s);
		sqlite3_bind_text(s, 1, ms->q->labels[i].key ?
		    ms->q->labels[i].key : "", -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 2, ms->q->labels[i].value ?
		    ms->q->labels[i].value : "", -1, SQLITE_STATIC);
		rc = sqlite3_step(s);
		if (rc == SQLITE_DONE) {
			sqlite3_finalize(s);
			return 1;
		}
		if (rc != SQLITE_ROW) {
			meta_conn_error(ms->c->db, cause, "find label");
			sqlite3_finalize(s);
			return -1;
		}
		ms->labels[ms->nlabels++] = sqlite3_column_int64(s, 0);
	}
	sqlite3_finalize(s);
	return 0;
}

/* store_plan. */
int
meta_plan_query(struct meta_pool *pool, const struct store_query *q,
    struct store_plan *out, char **cause)
{
	struct meta_plan_src	 ms;
	struct rollup_plan_src	 src = { &ms, meta_plan_profiles,
		    meta_plan_done, meta_plan_rows };
	int64_t			 to;
	int			 rc = -1;

	memset(out, 0, sizeof *out);
	if (q->service == NULL || q->type == NULL)
		return xcause(cause, "plan: service and type are required");
	if (q->from > q->to)
		return 0;
	memset(&ms, 0, sizeof ms);
	ms.q = q;
	if ((ms.c = meta_conn_get(pool, cause)) == NULL)
		return -1;
	if (meta_conn_exec(ms.c->db, "BEGIN", cause, "plan: begin") == -1)
		goto out;
	to = q->to == INT64_MAX ? INT64_MAX : q->to + 1;
	if ((rc = meta_plan_labels(&ms, cause)) == 0)
		rc = rollup_plan_run(&src, ms.labels, ms.nlabels, q->from, to,
		    out, cause);
	else if (rc == 1)
		rc = 0;		/* nothing can match */
	sqlite3_exec(ms.c->db, "COMMIT", NULL, NULL, NULL);
out:
	meta_conn_put(pool, ms.c);
	free(ms.labels);
	return rc;
}
