/*
 * Time-window merges over rollups: the pieces whose merge equals the
 * merge of every profile a query selects (store_plan).
 *
 * The window is covered from the coarsest level down. A bucket of a level
 * that lies wholly inside the window and is done (compacted) is answered
 * by its rows for the query's group: for no labels the row of every
 * profile (label 0), for one label pair that pair's row, for several the
 * row of a pair whose profiles all carry the others (its common labels
 * hold them all) or all carry one set without them (nothing matches). A
 * done bucket with no row for the pair holds no marked profile with it.
 * Buckets not answered are taken apart at the next level; what is left
 * at the edges below a minute, and minutes not done, are read as
 * profiles. Inside an answered bucket, the loose profiles (arrived late,
 * or not compacted: rolled <= 0) are added as themselves: meta_rollup.c
 * keeps every rollup equal to the marked profiles of its bucket, so each
 * profile is counted once. Everything is read in one snapshot.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "storage/meta_conn.h"
#include "storage/meta_rollup.h"

#define META_PLAN_NS	INT64_C(1000000000)

/* A planning in progress. */
struct meta_plan_state {
	struct meta_conn		*c;
	const struct store_query	*q;
	int64_t				*labels;	/* the query's label ids */
	size_t				 nlabels;
	struct store_plan		*out;
	size_t				 cap;
	int64_t				*covered;	/* [from, to) ns pairs */
	size_t				 ncovered, capcovered;
	char				*cause;
};

/* Appends a piece. */
static void
meta_plan_piece(struct meta_plan_state *ps, const char *id, const char *st,
    int64_t profiles, int rollup)
{
	struct store_piece	*p;

	if (ps->out->n == ps->cap) {
		ps->cap = ps->cap ? ps->cap * 2 : 64;
		ps->out->p = xreallocarray(ps->out->p, ps->cap,
		    sizeof *ps->out->p);
	}
	p = &ps->out->p[ps->out->n++];
	snprintf(p->id, sizeof p->id, "%s", id);
	p->sample_types = xstrdup(st != NULL ? st : "");
	p->profiles = profiles;
	ps->out->profiles += profiles;
	ps->out->rollups += rollup ? 1 : 0;
}

/* Records [a, z) ns as answered by rows (its loose profiles to add). */
static void
meta_plan_cover(struct meta_plan_state *ps, int64_t a, int64_t z)
{
	if (ps->ncovered > 0 && ps->covered[2 * ps->ncovered - 1] == a) {
		ps->covered[2 * ps->ncovered - 1] = z;
		return;
	}
	if (ps->ncovered == ps->capcovered) {
		ps->capcovered = ps->capcovered ? ps->capcovered * 2 : 16;
		ps->covered = xreallocarray(ps->covered, ps->capcovered * 2,
		    sizeof *ps->covered);
	}
	ps->covered[2 * ps->ncovered] = a;
	ps->covered[2 * ps->ncovered + 1] = z;
	ps->ncovered++;
}

/* Prepares sql; NULL with ps->cause. */
static sqlite3_stmt *
meta_plan_prepare(struct meta_plan_state *ps, const char *sql)
{
	sqlite3_stmt	*s = NULL;

	if (sqlite3_prepare_v2(ps->c->db, sql, -1, &s, NULL) != SQLITE_OK) {
		meta_conn_error(ps->c->db, &ps->cause, "prepare plan");
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

/*
 * Adds profiles of [a, z) ns matching the query: all of them, or (loose)
 * only those no rollup holds that lie in a covered range.
 */
static int
meta_plan_profiles(struct meta_plan_state *ps, int64_t a, int64_t z, int loose)
{
	sqlite3_stmt	*s;
	char		*sql, *lsql;
	int64_t		 at;
	size_t		 i, lo, hi;
	int		 rc;

	if (a >= z)
		return 0;
	lsql = meta_plan_label_sql(ps->nlabels, 5);
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
	s = meta_plan_prepare(ps, sql);
	free(sql);
	if (s == NULL)
		return -1;
	sqlite3_bind_text(s, 1, ps->q->service, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, ps->q->type, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, a);
	sqlite3_bind_int64(s, 4, z);
	for (i = 0; i < ps->nlabels; i++)
		sqlite3_bind_int64(s, 5 + (int)i, ps->labels[i]);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (loose) {
			/* In a covered range? (sorted, disjoint) */
			at = sqlite3_column_int64(s, 2);
			for (lo = 0, hi = ps->ncovered; lo < hi;) {
				i = (lo + hi) / 2;
				if (ps->covered[2 * i + 1] <= at)
					lo = i + 1;
				else
					hi = i;
			}
			if (lo == ps->ncovered || ps->covered[2 * lo] > at)
				continue;
		}
		meta_plan_piece(ps, (const char *)sqlite3_column_text(s, 0),
		    (const char *)sqlite3_column_text(s, 1), 1, 0);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return meta_conn_error(ps->c->db, &ps->cause, "plan: list");
	return 0;
}

/* A row of a level, for one group. */
struct meta_plan_row {
	int64_t	 bucket;
	int64_t	 label_id;
	int64_t	 rid;
	int64_t	 profiles;
	char	*sample_types;
	char	*refs;	/* ids of the profiles it refers to, or NULL */
	char	*common;
	int	 uniform;
};

/* Frees rows. */
static void
meta_plan_rows_free(struct meta_plan_row *r, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		free(r[i].sample_types);
		free(r[i].refs);
		free(r[i].common);
	}
	free(r);
}

/* Reads the rows of one group in buckets [b0, b1) of a level, by bucket. */
static int
meta_plan_rows(struct meta_plan_state *ps, int64_t label_id, int level, int64_t b0,
    int64_t b1, struct meta_plan_row **out, size_t *n)
{
	sqlite3_stmt	*s;
	struct meta_plan_row	*r;
	const char	*v;
	int		 rc;

	s = meta_plan_prepare(ps, "SELECT bucket, rid, profiles, "
	    "sample_types, profile, common, uniform FROM rollups INDEXED BY "
	    "rollups_group WHERE service = ?1 AND type = ?2 AND label_id = ?3 "
	    "AND level = ?4 AND bucket >= ?5 AND bucket < ?6 ORDER BY bucket");
	if (s == NULL)
		return -1;
	sqlite3_bind_text(s, 1, ps->q->service, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, ps->q->type, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, label_id);
	sqlite3_bind_int(s, 4, level);
	sqlite3_bind_int64(s, 5, b0);
	sqlite3_bind_int64(s, 6, b1);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		*out = xreallocarray(*out, *n + 1, sizeof **out);
		r = &(*out)[(*n)++];
		r->bucket = sqlite3_column_int64(s, 0);
		r->label_id = label_id;
		r->rid = sqlite3_column_int64(s, 1);
		r->profiles = sqlite3_column_int64(s, 2);
		v = (const char *)sqlite3_column_text(s, 3);
		r->sample_types = xstrdup(v ? v : "");
		v = (const char *)sqlite3_column_text(s, 4);
		r->refs = v ? xstrdup(v) : NULL;
		v = (const char *)sqlite3_column_text(s, 5);
		r->common = xstrdup(v ? v : "");
		r->uniform = sqlite3_column_int(s, 6);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return meta_conn_error(ps->c->db, &ps->cause, "plan: rollups");
	return 0;
}

/* The done buckets of a level in [b0, b1), sorted. */
static int
meta_plan_done(struct meta_plan_state *ps, int level, int64_t b0, int64_t b1,
    int64_t **out, size_t *n)
{
	sqlite3_stmt	*s;
	int		 rc;

	*out = NULL;
	*n = 0;
	s = meta_plan_prepare(ps, "SELECT bucket FROM rollup_buckets WHERE "
	    "service = ?1 AND type = ?2 AND level = ?3 AND bucket >= ?4 AND "
	    "bucket < ?5 AND done = 1 ORDER BY bucket");
	if (s == NULL)
		return -1;
	sqlite3_bind_text(s, 1, ps->q->service, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, ps->q->type, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 3, level);
	sqlite3_bind_int64(s, 4, b0);
	sqlite3_bind_int64(s, 5, b1);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		*out = xreallocarray(*out, *n + 1, sizeof **out);
		(*out)[(*n)++] = sqlite3_column_int64(s, 0);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return meta_conn_error(ps->c->db, &ps->cause, "plan: buckets");
	return 0;
}

/* Adds one row as pieces: its blob, or the profiles it refers to. */
static void
meta_plan_row_piece(struct meta_plan_state *ps, const struct meta_plan_row *r)
{
	char	name[STORE_ID_LEN + 1], *copy, *tok, *save;

	if (r->refs != NULL) {
		copy = xstrdup(r->refs);
		for (tok = strtok_r(copy, " ", &save); tok != NULL;
		    tok = strtok_r(NULL, " ", &save))
			meta_plan_piece(ps, tok, r->sample_types, 1, 0);
		free(copy);
		return;
	}
	meta_rollup_name(r->rid, name);
	meta_plan_piece(ps, name, r->sample_types, r->profiles, 1);
}

/* The rows of a sorted array at bucket: [*first, *last), from cursor *at. */
static void
meta_plan_at(const struct meta_plan_row *rows, size_t n, size_t *at, int64_t bucket,
    size_t *first, size_t *last)
{
	while (*at < n && rows[*at].bucket < bucket)
		(*at)++;
	*first = *last = *at;
	while (*last < n && rows[*last].bucket == bucket)
		(*last)++;
}

/*
 * Answers a done bucket from its rows: 1 answered (pieces added), 0 not
 * (take it apart). rows[g] holds the rows of the query's pair g, rows[ng]
 * the rows of every profile (label 0), each sorted by bucket, at[] their
 * cursors. A pair's rows are its own and the rows of every profile that
 * all carry it (compaction stores those once).
 */
static int
meta_plan_answer(struct meta_plan_state *ps, int64_t bucket, struct meta_plan_row **rows,
    size_t *nrows, size_t *at, size_t ng)
{
	const struct meta_plan_row	**cand;
	size_t			  g, i, n, first, last, f0, l0;
	int			  decided, ret = 0;

	meta_plan_at(rows[ng], nrows[ng], &at[ng], bucket, &f0, &l0);
	if (ps->nlabels == 0) {
		for (i = f0; i < l0; i++)
			meta_plan_row_piece(ps, &rows[ng][i]);
		return 1;
	}
	cand = xcalloc(l0 - f0 + 1 + nrows[0], sizeof *cand);
	for (g = 0; g < ng; g++) {
		meta_plan_at(rows[g], nrows[g], &at[g], bucket, &first, &last);
		cand = xreallocarray(cand, last - first + l0 - f0 + 1,
		    sizeof *cand);
		n = 0;
		for (i = first; i < last; i++)
			cand[n++] = &rows[g][i];
		for (i = f0; i < l0; i++) {
			if (meta_rollup_ids_cover(rows[ng][i].common,
			    &ps->labels[g], 1))
				cand[n++] = &rows[ng][i];
		}
		if (n == 0) {
			ret = 1;	/* no profile carries this pair */
			break;
		}
		/* Every row must decide: all of its profiles match, or
		 * (carrying one set of labels) none does. */
		decided = 1;
		for (i = 0; i < n && decided && ps->nlabels > 1; i++) {
			if (!cand[i]->uniform && !meta_rollup_ids_cover(
			    cand[i]->common, ps->labels, ps->nlabels))
				decided = 0;
		}
		if (!decided)
			continue;
		for (i = 0; i < n; i++) {
			if (ps->nlabels == 1 || meta_rollup_ids_cover(
			    cand[i]->common, ps->labels, ps->nlabels))
				meta_plan_row_piece(ps, cand[i]);
		}
		ret = 1;
		break;
	}
	free(cand);
	return ret;
}

/* Covers [a, z) ns from level down. */
static int
meta_plan_level(struct meta_plan_state *ps, int level, int64_t a, int64_t z)
{
	struct meta_plan_row	**rows;
	size_t		 *nrows, *at, ngroups, g, ndone = 0, d = 0;
	int64_t		  step, first, last, b, run = -1, *done = NULL;
	int		  ret = -1;

	if (a >= z)
		return 0;
	if (level < 0)
		return meta_plan_profiles(ps, a, z, 0);
	if (a < 0) {
		/* Before 1970: no buckets there. */
		if (meta_plan_profiles(ps, a, z < 0 ? z : 0, 0) == -1)
			return -1;
		a = 0;
		if (a >= z)
			return 0;
	}
	step = store_rollup_step[level];
	if (a > INT64_MAX - step * META_PLAN_NS)
		return meta_plan_level(ps, level - 1, a, z);
	first = (a + step * META_PLAN_NS - 1) / (step * META_PLAN_NS);
	last = z / (step * META_PLAN_NS);
	if (first >= last)
		return meta_plan_level(ps, level - 1, a, z);
	if (meta_plan_level(ps, level - 1, a, first * step * META_PLAN_NS) == -1)
		return -1;
	/* rows[0..nlabels): each pair's, rows[nlabels]: every profile's. */
	ngroups = ps->nlabels;
	rows = xcalloc(ngroups + 1, sizeof *rows);
	nrows = xcalloc(ngroups + 1, sizeof *nrows);
	at = xcalloc(ngroups + 1, sizeof *at);
	if (meta_plan_done(ps, level, first * step, last * step, &done,
	    &ndone) == -1)
		goto out;
	for (g = 0; ndone > 0 && g <= ngroups; g++) {
		if (meta_plan_rows(ps, g < ngroups ? ps->labels[g] : 0,
		    level, first * step, last * step, &rows[g],
		    &nrows[g]) == -1)
			goto out;
	}
	/* Walk the done buckets only (a window of centuries costs what its
	 * compacted buckets do); the gaps between answered ones go down. */
	run = first;
	for (d = 0; d < ndone; d++) {
		b = done[d] / step;
		if (!meta_plan_answer(ps, done[d], rows, nrows, at, ngroups))
			continue;
		if (run < b && meta_plan_level(ps, level - 1,
		    run * step * META_PLAN_NS, b * step * META_PLAN_NS) == -1)
			goto out;
		meta_plan_cover(ps, b * step * META_PLAN_NS,
		    (b + 1) * step * META_PLAN_NS);
		run = b + 1;
	}
	if (run < last && meta_plan_level(ps, level - 1,
	    run * step * META_PLAN_NS, last * step * META_PLAN_NS) == -1)
		goto out;
	ret = meta_plan_level(ps, level - 1, last * step * META_PLAN_NS, z);
out:
	for (g = 0; g <= ngroups; g++)
		meta_plan_rows_free(rows[g], nrows[g]);
	free(rows);
	free(nrows);
	free(at);
	free(done);
	return ret;
}

/* Resolves the query's labels: 1 if a pair does not exist (no match). */
static int
meta_plan_labels(struct meta_plan_state *ps)
{
	sqlite3_stmt	*s;
	size_t		 i;
	int		 rc;

	ps->labels = xcalloc(ps->q->nlabels + 1, sizeof *ps->labels);
	s = meta_plan_prepare(ps, "SELECT label_id FROM labels WHERE "
	    "key = ?1 AND value = ?2");
	if (s == NULL)
		return -1;
	for (i = 0; i < ps->q->nlabels; i++) {
		sqlite3_reset(s);
		sqlite3_bind_text(s, 1, ps->q->labels[i].key ?
		    ps->q->labels[i].key : "", -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 2, ps->q->labels[i].value ?
		    ps->q->labels[i].value : "", -1, SQLITE_STATIC);
		rc = sqlite3_step(s);
		if (rc == SQLITE_DONE) {
			sqlite3_finalize(s);
			return 1;
		}
		if (rc != SQLITE_ROW) {
			meta_conn_error(ps->c->db, &ps->cause, "find label");
			sqlite3_finalize(s);
			return -1;
		}
		ps->labels[ps->nlabels++] = sqlite3_column_int64(s, 0);
	}
	sqlite3_finalize(s);
	return 0;
}

/* store_plan. */
int
meta_plan_query(struct meta_pool *pool, const struct store_query *q,
    struct store_plan *out, char **cause)
{
	struct meta_plan_state	 ps;
	int64_t		 to;
	int		 rc = -1;

	memset(out, 0, sizeof *out);
	if (q->service == NULL || q->type == NULL)
		return xcause(cause, "plan: service and type are required");
	if (q->from > q->to)
		return 0;
	memset(&ps, 0, sizeof ps);
	ps.q = q;
	ps.out = out;
	if ((ps.c = meta_conn_get(pool, cause)) == NULL)
		return -1;
	if (meta_conn_exec(ps.c->db, "BEGIN", cause, "plan: begin") == -1)
		goto out;
	to = q->to == INT64_MAX ? INT64_MAX : q->to + 1;
	if ((rc = meta_plan_labels(&ps)) == 0) {
		rc = meta_plan_level(&ps, STORE_ROLLUP_LEVELS - 1, q->from, to);
		if (rc == 0 && ps.ncovered > 0)
			rc = meta_plan_profiles(&ps, ps.covered[0],
			    ps.covered[2 * ps.ncovered - 1], 1);
	} else if (rc == 1)
		rc = 0;		/* nothing can match */
	sqlite3_exec(ps.c->db, "COMMIT", NULL, NULL, NULL);
	if (rc == -1) {
		*cause = ps.cause;
		ps.cause = NULL;
		store_plan_clear(out);
	}
out:
	meta_conn_put(pool, ps.c);
	free(ps.labels);
	free(ps.covered);
	free(ps.cause);
	return rc;
}
