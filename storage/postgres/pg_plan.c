/*
 * Time-window merges on the postgresql backend (store_plan): the query's
 * labels resolved, then storage/rollup_plan.c decides which rollups
 * answer which buckets, reading the done marks, rows and profiles here,
 * all in one snapshot (a repeatable-read, read-only transaction). A query without a
 * type has no rollups to use: every profile of its window is a piece.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "storage/postgres/pg_int.h"
#include "storage/rollup_plan.h"

/* What the plan's reads need: the connection, the query, its labels. */
struct pg_plan_src {
	PGconn				*c;
	const struct store_query	*q;
	int64_t				*labels;
	size_t				 nlabels;
	int				 err;	/* the first error's code */
};

/* A read failed with rc: keeps its code (unavailable?), answers -1. */
static int
pg_plan_fail(struct pg_plan_src *ps, int rc)
{
	if (ps->err == 0)
		ps->err = rc;
	return -1;
}

/* rollup_plan_src.profiles: the query's profiles of [a, z) ns. */
static int
pg_plan_profiles(void *arg, struct rollup_plan *p, int64_t a, int64_t z,
    int loose, char **cause)
{
	struct pg_plan_src	*ps = arg;
	struct pg_args		 args = { 0 };
	PGresult		*r;
	char			*sql = NULL, *tmp;
	size_t			 i;
	int			 k, rc, type = 0;

	pg_args_str(&args, ps->q->service);
	pg_args_int(&args, a);
	pg_args_int(&args, z);
	if (ps->q->type != NULL)
		type = pg_args_str(&args, ps->q->type);
	sql = xasprintf("SELECT p.id, p.sample_types, p.created_at FROM "
	    "profiles AS p WHERE %sp.service = $1 AND p.created_at >= "
	    "$2::bigint AND p.created_at < $3::bigint", loose ?
	    "p.rolled <= 0 AND " : "");
	if (type > 0) {
		tmp = xasprintf("%s AND p.type = $%d", sql, type);
		free(sql);
		sql = tmp;
	}
	for (i = 0; i < ps->nlabels; i++) {
		k = pg_args_int(&args, ps->labels[i]);
		tmp = xasprintf("%s AND EXISTS (SELECT 1 FROM profile_labels "
		    "AS pl WHERE pl.label_id = $%d::bigint AND pl.profile_pk = "
		    "p.pk)", sql, k);
		free(sql);
		sql = tmp;
	}
	/* In time order, as the embedded store's index gives them: the
	   same pieces in the same order merge to the same bytes. */
	tmp = xasprintf("%s ORDER BY p.created_at, p.id", sql);
	free(sql);
	sql = tmp;
	rc = pg_args_exec(ps->c, sql, &args, &r, cause, "plan profiles");
	free(sql);
	pg_args_free(&args);
	if (rc != 0)
		return pg_plan_fail(ps, rc);
	for (k = 0; k < PQntuples(r); k++)
		rollup_plan_profile(p, PQgetvalue(r, k, 0), PQgetvalue(r, k, 1),
		    pg_conn_int(r, k, 2));
	PQclear(r);
	return 0;
}

/* rollup_plan_src.rows: one group's rows of a level, by bucket. */
static int
pg_plan_rows(void *arg, struct rollup_plan *p, int64_t label_id, int level,
    int64_t b0, int64_t b1, char **cause)
{
	struct pg_plan_src	*ps = arg;
	PGresult		*r;
	char			 id[24], l[24], a[24], z[24];
	const char		*v[6] = { ps->q->service, ps->q->type,
	    pg_conn_i64(id, label_id), pg_conn_i64(l, level),
	    pg_conn_i64(a, b0), pg_conn_i64(z, b1) };
	int			 i, rc;

	rc = pg_conn_exec(ps->c, "SELECT bucket, rid, profiles, "
	    "sample_types, profile, common, uniform FROM rollups WHERE "
	    "service = $1 AND type = $2 AND label_id = $3::bigint AND level = "
	    "$4::smallint AND bucket >= $5::bigint AND bucket < $6::bigint "
	    "ORDER BY bucket, rid", 6, v, NULL, NULL, &r, cause, "plan rollups");
	if (rc != 0)
		return pg_plan_fail(ps, rc);
	for (i = 0; i < PQntuples(r); i++)
		rollup_plan_row(p, pg_conn_int(r, i, 0), pg_conn_int(r, i, 1),
		    pg_conn_int(r, i, 2), PQgetvalue(r, i, 3),
		    PQgetisnull(r, i, 4) ? NULL : PQgetvalue(r, i, 4),
		    PQgetvalue(r, i, 5), (int)pg_conn_int(r, i, 6));
	PQclear(r);
	return 0;
}

/* rollup_plan_src.done: the done buckets of a level in [b0, b1). */
static int
pg_plan_done(void *arg, int level, int64_t b0, int64_t b1, int64_t **out,
    size_t *n, char **cause)
{
	struct pg_plan_src	*ps = arg;
	int			 rc;

	*out = NULL;
	*n = 0;
	if (ps->q->type == NULL)
		return 0;	/* rollups are by type */
	rc = pg_rollup_done_in(ps->c, ps->q->service, ps->q->type, level, b0,
	    b1, out, n, cause);
	return rc != 0 ? pg_plan_fail(ps, rc) : 0;
}

/* store_plan. */
int
pg_plan_query(struct pg *pg, const struct store_query *q,
    struct store_plan *out, char **cause)
{
	struct pg_plan_src	 ps;
	struct rollup_plan_src	 src = { &ps, pg_plan_profiles,
		    pg_plan_done, pg_plan_rows };
	int64_t			 to;
	int			 rc;

	memset(out, 0, sizeof *out);
	if (q->service == NULL)
		return xcause(cause, "plan: service is required");
	if (q->from > q->to)
		return 0;
	memset(&ps, 0, sizeof ps);
	ps.q = q;
	if ((rc = pg_pool_get(pg->pool, &ps.c, cause)) != 0)
		return rc;
	ps.labels = xcalloc(q->nlabels + 1, sizeof *ps.labels);
	rc = pg_conn_cmd(ps.c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ "
	    "ONLY", cause, "plan: begin");
	if (rc == 0 && (rc = pg_read_label_ids(ps.c, q, ps.labels,
	    cause)) == 0) {
		ps.nlabels = q->nlabels;
		to = q->to == INT64_MAX ? INT64_MAX : q->to + 1;
		rc = rollup_plan_run(&src, ps.labels, ps.nlabels, q->from, to,
		    out, cause);
		if (rc != 0 && ps.err != 0)
			rc = ps.err;
	} else if (rc == 1)
		rc = 0;		/* a pair never stored: nothing matches */
	(void)pg_conn_cmd(ps.c, "COMMIT", NULL, NULL);
	pg_pool_put(pg->pool, ps.c);
	free(ps.labels);
	return rc;
}
