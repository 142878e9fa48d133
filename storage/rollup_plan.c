/*
 * Time-window merges over rollups: the pieces whose merge equals the
 * merge of every profile a query selects (store_plan), over a
 * backend's rows (rollup_plan.h).
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
 * or not compacted: rolled <= 0) are added as themselves: compaction
 * keeps every rollup equal to the marked profiles of its bucket, so each
 * profile is counted once. Everything is read in one snapshot.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "storage/rollup_ids.h"
#include "storage/rollup_plan.h"
#include "storage/store_bucket.h"
#include "storage/store_free.h"

#define ROLLUP_PLAN_NS	INT64_C(1000000000)

/* A row of a level, for one group. */
struct rollup_plan_row {
	int64_t	 bucket;
	int64_t	 rid;
	int64_t	 profiles;
	char	*sample_types;
	char	*refs;	/* ids of the profiles it refers to, or NULL */
	char	*common;
	int	 uniform;
};

/* A planning in progress. */
struct rollup_plan {
	const struct rollup_plan_src	*src;
	const int64_t			*labels;	/* the query's label ids */
	size_t				 nlabels;
	struct store_plan		*out;
	size_t				 cap;
	int64_t				*covered;	/* [from, to) ns pairs */
	size_t				 ncovered, capcovered;
	int				 loose;		/* profiles: filter */
	struct rollup_plan_row		**sink;		/* rows: append here */
	size_t				*nsink;
	char				*cause;
};

/* Appends a piece. */
static void
rollup_plan_piece(struct rollup_plan *ps, const char *id, const char *st,
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
rollup_plan_cover(struct rollup_plan *ps, int64_t a, int64_t z)
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
/* A profile fed by the backend: added unless loose and not covered. */
void
rollup_plan_profile(struct rollup_plan *ps, const char *id, const char *st,
    int64_t at)
{
	size_t	lo, hi, i;

	if (ps->loose) {
		/* In a covered range? (sorted, disjoint) */
		for (lo = 0, hi = ps->ncovered; lo < hi;) {
			i = (lo + hi) / 2;
			if (ps->covered[2 * i + 1] <= at)
				lo = i + 1;
			else
				hi = i;
		}
		if (lo == ps->ncovered || ps->covered[2 * lo] > at)
			return;
	}
	rollup_plan_piece(ps, id, st, 1, 0);
}

/* Reads profiles of [a, z) ns: all of them, or the loose covered ones. */
static int
rollup_plan_profiles(struct rollup_plan *ps, int64_t a, int64_t z, int loose)
{
	int	rc;

	if (a >= z)
		return 0;
	ps->loose = loose;
	rc = ps->src->profiles(ps->src->arg, ps, a, z, loose, &ps->cause);
	ps->loose = 0;
	return rc;
}

/* A row fed by the backend. */
void
rollup_plan_row(struct rollup_plan *ps, int64_t bucket, int64_t rid,
    int64_t profiles, const char *st, const char *refs, const char *common,
    int uniform)
{
	struct rollup_plan_row	*r;

	*ps->sink = xreallocarray(*ps->sink, *ps->nsink + 1, sizeof **ps->sink);
	r = &(*ps->sink)[(*ps->nsink)++];
	r->bucket = bucket;
	r->rid = rid;
	r->profiles = profiles;
	r->sample_types = xstrdup(st != NULL ? st : "");
	r->refs = refs != NULL ? xstrdup(refs) : NULL;
	r->common = xstrdup(common != NULL ? common : "");
	r->uniform = uniform;
}

/* Reads the rows of one group in buckets [b0, b1) of a level. */
static int
rollup_plan_rows(struct rollup_plan *ps, int64_t label_id, int level,
    int64_t b0, int64_t b1, struct rollup_plan_row **out, size_t *n)
{
	int	rc;

	ps->sink = out;
	ps->nsink = n;
	rc = ps->src->rows(ps->src->arg, ps, label_id, level, b0, b1,
	    &ps->cause);
	ps->sink = NULL;
	ps->nsink = NULL;
	return rc;
}

/* Frees rows. */
static void
rollup_plan_rows_free(struct rollup_plan_row *r, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		free(r[i].sample_types);
		free(r[i].refs);
		free(r[i].common);
	}
	free(r);
}
/* Adds one row as pieces: its blob, or the profiles it refers to. */
static void
rollup_plan_row_piece(struct rollup_plan *ps, const struct rollup_plan_row *r)
{
	char	name[STORE_ID_LEN + 1], *copy, *tok, *save;

	if (r->refs != NULL) {
		copy = xstrdup(r->refs);
		for (tok = strtok_r(copy, " ", &save); tok != NULL;
		    tok = strtok_r(NULL, " ", &save))
			rollup_plan_piece(ps, tok, r->sample_types, 1, 0);
		free(copy);
		return;
	}
	rollup_ids_name(r->rid, name);
	rollup_plan_piece(ps, name, r->sample_types, r->profiles, 1);
}
/* The rows of a sorted array at bucket: [*first, *last), from cursor *at. */
static void
rollup_plan_at(const struct rollup_plan_row *rows, size_t n, size_t *at, int64_t bucket,
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
rollup_plan_answer(struct rollup_plan *ps, int64_t bucket, struct rollup_plan_row **rows,
    size_t *nrows, size_t *at, size_t ng)
{
	const struct rollup_plan_row	**cand;
	size_t			  g, i, n, first, last, f0, l0;
	int			  decided, ret = 0;

	rollup_plan_at(rows[ng], nrows[ng], &at[ng], bucket, &f0, &l0);
	if (ps->nlabels == 0) {
		for (i = f0; i < l0; i++)
			rollup_plan_row_piece(ps, &rows[ng][i]);
		return 1;
	}
	cand = xcalloc(l0 - f0 + 1 + nrows[0], sizeof *cand);
	for (g = 0; g < ng; g++) {
		rollup_plan_at(rows[g], nrows[g], &at[g], bucket, &first, &last);
		cand = xreallocarray(cand, last - first + l0 - f0 + 1,
		    sizeof *cand);
		n = 0;
		for (i = first; i < last; i++)
			cand[n++] = &rows[g][i];
		for (i = f0; i < l0; i++) {
			if (rollup_ids_cover(rows[ng][i].common,
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
			if (!cand[i]->uniform && !rollup_ids_cover(
			    cand[i]->common, ps->labels, ps->nlabels))
				decided = 0;
		}
		if (!decided)
			continue;
		for (i = 0; i < n; i++) {
			if (ps->nlabels == 1 || rollup_ids_cover(
			    cand[i]->common, ps->labels, ps->nlabels))
				rollup_plan_row_piece(ps, cand[i]);
		}
		ret = 1;
		break;
	}
	free(cand);
	return ret;
}
/* Covers [a, z) ns from level down. */
static int
rollup_plan_level(struct rollup_plan *ps, int level, int64_t a, int64_t z)
{
	struct rollup_plan_row	**rows;
	size_t		 *nrows, *at, ngroups, g, ndone = 0, d = 0;
	int64_t		  step, first, last, b, run = -1, *done = NULL;
	int		  ret = -1;

	if (a >= z)
		return 0;
	if (level < 0)
		return rollup_plan_profiles(ps, a, z, 0);
	if (a < 0) {
		/* Before 1970: no buckets there. */
		if (rollup_plan_profiles(ps, a, z < 0 ? z : 0, 0) == -1)
			return -1;
		a = 0;
		if (a >= z)
			return 0;
	}
	step = store_bucket_step[level];
	if (a > INT64_MAX - step * ROLLUP_PLAN_NS)
		return rollup_plan_level(ps, level - 1, a, z);
	first = (a + step * ROLLUP_PLAN_NS - 1) / (step * ROLLUP_PLAN_NS);
	last = z / (step * ROLLUP_PLAN_NS);
	if (first >= last)
		return rollup_plan_level(ps, level - 1, a, z);
	if (rollup_plan_level(ps, level - 1, a, first * step * ROLLUP_PLAN_NS) == -1)
		return -1;
	/* rows[0..nlabels): each pair's, rows[nlabels]: every profile's. */
	ngroups = ps->nlabels;
	rows = xcalloc(ngroups + 1, sizeof *rows);
	nrows = xcalloc(ngroups + 1, sizeof *nrows);
	at = xcalloc(ngroups + 1, sizeof *at);
	if (ps->src->done(ps->src->arg, level, first * step, last * step,
	    &done, &ndone, &ps->cause) == -1)
		goto out;
	for (g = 0; ndone > 0 && g <= ngroups; g++) {
		if (rollup_plan_rows(ps, g < ngroups ? ps->labels[g] : 0,
		    level, first * step, last * step, &rows[g],
		    &nrows[g]) == -1)
			goto out;
	}
	/* Walk the done buckets only (a window of centuries costs what its
	 * compacted buckets do); the gaps between answered ones go down. */
	run = first;
	for (d = 0; d < ndone; d++) {
		b = done[d] / step;
		if (!rollup_plan_answer(ps, done[d], rows, nrows, at, ngroups))
			continue;
		if (run < b && rollup_plan_level(ps, level - 1,
		    run * step * ROLLUP_PLAN_NS, b * step * ROLLUP_PLAN_NS) == -1)
			goto out;
		rollup_plan_cover(ps, b * step * ROLLUP_PLAN_NS,
		    (b + 1) * step * ROLLUP_PLAN_NS);
		run = b + 1;
	}
	if (run < last && rollup_plan_level(ps, level - 1,
	    run * step * ROLLUP_PLAN_NS, last * step * ROLLUP_PLAN_NS) == -1)
		goto out;
	ret = rollup_plan_level(ps, level - 1, last * step * ROLLUP_PLAN_NS, z);
out:
	for (g = 0; g <= ngroups; g++)
		rollup_plan_rows_free(rows[g], nrows[g]);
	free(rows);
	free(nrows);
	free(at);
	free(done);
	return ret;
}

/* store_plan over src. */
int
rollup_plan_run(const struct rollup_plan_src *src, const int64_t *labels,
    size_t nlabels, int64_t from, int64_t to, struct store_plan *out,
    char **cause)
{
	struct rollup_plan	ps;
	int			rc;

	memset(out, 0, sizeof *out);
	memset(&ps, 0, sizeof ps);
	ps.src = src;
	ps.labels = labels;
	ps.nlabels = nlabels;
	ps.out = out;
	rc = rollup_plan_level(&ps, STORE_ROLLUP_LEVELS - 1, from, to);
	if (rc == 0 && ps.ncovered > 0)
		rc = rollup_plan_profiles(&ps, ps.covered[0],
		    ps.covered[2 * ps.ncovered - 1], 1);
	if (rc == -1) {
		*cause = ps.cause != NULL ? ps.cause :
		    xstrdup("plan: read failed");
		ps.cause = NULL;
		store_free_plan(out);
	}
	free(ps.covered);
	free(ps.cause);
	return rc;
}
