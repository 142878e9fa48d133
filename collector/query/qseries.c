/*
 * SelectSeries of Pyroscope's query API, on the CPU pool: one sample
 * type's totals per time bucket, per group of group_by label values,
 * summed (or averaged per profile) from the metadata, never from blobs.
 * Without group_by and with only name="value" matchers it reads the
 * store's timeline (rollups: any window), the numbers GET
 * /api/0/timeline answers; otherwise the matching rows' totals, bucket
 * by bucket (qfind_cands' bound). Buckets start at multiples of step
 * seconds since the epoch, as the timeline's do; only buckets with
 * profiles become points.
 */
#include <stdlib.h>
#include <string.h>

#include "collector/env.h"
#include "collector/http/httpjob.h"
#include "collector/query/qconnect.h"
#include "collector/query/qfind.h"
#include "collector/query/qseries.h"
#include "collector/query/qsel.h"
#include "common/arena.h"
#include "common/clock.h"
#include "common/xmalloc.h"
#include "querier/v1/querier.pb-c.h"
#include "storage/store_bucket.h"
#include "storage/store_meta.h"
#include "types/v1/types.pb-c.h"

#define QSERIES_MAX_POINTS	11000	/* buckets over the window */
#define QSERIES_MAX_GROUPS	10000
#define QSERIES_MAX_STEP	(366.0 * 86400)
#define QSERIES_BUCKETS		200	/* step 0: about this many */
#define QSERIES_SECOND		1000000000LL

struct qseries_args {
	struct qconnect_call	 call;
};

/* One series being summed. */
struct qseries_group {
	char		**values;	/* one per group_by name */
	int64_t		 *sum;
	int64_t		 *count;
	int64_t		  total;
};

/* Frees the arguments. */
static void
qseries_args_free(void *arg)
{
	struct qseries_args *sa = arg;

	qconnect_clear(&sa->call);
	free(sa);
}

/* The group of a candidate's values, added when new; NULL past the cap. */
static struct qseries_group *
qseries_group(struct qseries_group **g, size_t *ng, char **by, size_t nby,
    const struct qfind_cand *c, size_t npoints)
{
	size_t i, j;

	for (i = 0; i < *ng; i++) {
		for (j = 0; j < nby; j++)
			if (strcmp((*g)[i].values[j], qfind_value(c, by[j])) != 0)
				break;
		if (j == nby)
			return &(*g)[i];
	}
	if (*ng == QSERIES_MAX_GROUPS)
		return NULL;
	*g = xreallocarray(*g, *ng + 1, sizeof **g);
	memset(&(*g)[*ng], 0, sizeof **g);
	(*g)[*ng].values = xcalloc(nby + 1, sizeof (char *));
	for (j = 0; j < nby; j++)
		(*g)[*ng].values[j] = xstrdup(qfind_value(c, by[j]));
	(*g)[*ng].sum = xcalloc(npoints, sizeof (int64_t));
	(*g)[*ng].count = xcalloc(npoints, sizeof (int64_t));
	return &(*g)[(*ng)++];
}

/* Frees what groups hold (not the array). */
static void
qseries_groups_clear(struct qseries_group *g, size_t ng, size_t nby)
{
	size_t i, j;

	for (i = 0; i < ng; i++) {
		for (j = 0; j < nby; j++)
			free(g[i].values[j]);
		free(g[i].values);
		free(g[i].sum);
		free(g[i].count);
	}
}

/* Frees the groups. */
static void
qseries_groups_free(struct qseries_group *g, size_t ng, size_t nby)
{
	qseries_groups_clear(g, ng, nby);
	free(g);
}

/* Sums the matching rows into groups; -1 with the job answered. */
static int
qseries_rows(struct httpjob *job, const struct qfind *f, char **by,
    size_t nby, int64_t step, int64_t b0, size_t npoints,
    struct qseries_group **g, size_t *ng)
{
	struct qfind_cand *c = NULL;
	struct profile_meta *rows = NULL;
	struct qseries_group *grp;
	size_t nc = 0, nrows = 0, i;
	int64_t v, b;
	char *st;

	if (qfind_cands(job, f, &c, &nc, &rows, &nrows) != 0)
		return -1;
	st = xasprintf("%s/%s", f->pt->sample_type, f->pt->sample_unit);
	for (i = 0; i < nc; i++) {
		if (store_meta_totals_value(c[i].m->sample_types,
		    c[i].m->totals, st, &v) != 1)
			continue;	/* totals not known yet */
		b = store_bucket_of(c[i].m->created_at, step) - b0;
		if (b < 0 || (size_t)b >= npoints)
			continue;
		if ((grp = qseries_group(g, ng, by, nby, &c[i], npoints)) ==
		    NULL) {
			httpjob_error(job, 413, "more than %d series; group by "
			    "fewer labels", QSERIES_MAX_GROUPS);
			free(st);
			qfind_free(c, nc, rows, nrows);
			return -1;
		}
		grp->sum[b] += v;
		grp->count[b]++;
		grp->total += v;
	}
	free(st);
	qfind_free(c, nc, rows, nrows);
	return 0;
}

/* The store's timeline as the one group; 1 when rows are needed. */
static int
qseries_timeline(struct httpjob *job, const struct qfind *f, int64_t step,
    int64_t b0, size_t npoints, struct qseries_group **g, size_t *ng)
{
	struct store_timeline tl;
	size_t i;
	int rc;

	memset(&tl, 0, sizeof tl);
	tl.sample_type = xasprintf("%s/%s", f->pt->sample_type,
	    f->pt->sample_unit);
	tl.step = step;
	tl.b0 = b0;
	tl.n = npoints;
	tl.value = xcalloc(npoints, sizeof *tl.value);
	tl.profiles = xcalloc(npoints, sizeof *tl.profiles);
	if ((rc = qfind_timeline(job, f, &tl)) == 0) {
		*g = xcalloc(1, sizeof **g);
		(*g)->values = xcalloc(1, sizeof (char *));
		(*g)->sum = tl.value;
		(*g)->count = tl.profiles;
		for (i = 0; i < npoints; i++)
			(*g)->total += tl.value[i];
		*ng = 1;
	} else {
		free(tl.value);
		free(tl.profiles);
	}
	free((char *)tl.sample_type);
	return rc;
}

/* The sum per bucket of f (no grouping); see qseries.h. */
int
qseries_sums(struct httpjob *job, const struct qfind *f, int64_t step,
    int64_t b0, size_t npoints, int64_t **sum)
{
	struct qseries_group *g = NULL;
	size_t ng = 0;
	int rc;

	*sum = NULL;
	if ((rc = qseries_timeline(job, f, step, b0, npoints, &g, &ng)) == 1)
		rc = qseries_rows(job, f, NULL, 0, step, b0, npoints, &g, &ng);
	if (rc != 0)
		return -1;
	if (ng == 1) {
		*sum = g[0].sum;
		g[0].sum = NULL;
	} else
		*sum = xcalloc(npoints + 1, sizeof **sum);
	qseries_groups_free(g, ng, 0);
	return 0;
}

/* The step in whole seconds: given (rounded up), or about 200 buckets. */
int64_t
qseries_step(double step, int64_t from, int64_t to)
{
	int64_t span = (to - from) / QSERIES_SECOND + 1, s;

	if (step > 0) {
		s = (int64_t)step;
		return (double)s < step ? s + 1 : s;
	}
	s = span / QSERIES_BUCKETS + (span % QSERIES_BUCKETS != 0);
	return s < 1 ? 1 : s;
}

/* qsort_r: groups by their values, in order (arg: how many). */
static int
qseries_cmp(const void *a, const void *b, void *arg)
{
	const struct qseries_group *x = a, *y = b;
	size_t j, nby = *(const size_t *)arg;
	int c;

	for (j = 0; j < nby; j++)
		if ((c = strcmp(x->values[j], y->values[j])) != 0)
			return c;
	return 0;
}

/* qsort: groups by total, largest first. */
static int
qseries_cmp_total(const void *a, const void *b)
{
	const struct qseries_group *x = a, *y = b;

	return x->total > y->total ? -1 : x->total < y->total;
}

/* A copy of s in the arena. */
static char *
qseries_str(struct arena *a, const char *s)
{
	char *v = arena_alloc(a, strlen(s) + 1);

	strcpy(v, s);
	return v;
}

/* Whether a group has no profile in any bucket. */
static int
qseries_empty(const struct qseries_group *g, size_t npoints)
{
	size_t i;

	for (i = 0; i < npoints; i++)
		if (g->count[i] != 0)
			return 0;
	return 1;
}

/* The Series message of a group, in the arena. */
static Types__V1__Series *
qseries_message(struct arena *a, const struct qseries_group *g, char **by,
    size_t nby, int64_t step, int64_t b0, size_t npoints, int average)
{
	Types__V1__Series *s = arena_alloc(a, sizeof *s);
	Types__V1__LabelPair *p;
	Types__V1__Point *pt;
	size_t i, j;

	types__v1__series__init(s);
	s->labels = arena_alloc(a, (nby + 1) * sizeof *s->labels);
	for (j = 0; j < nby; j++) {
		if (*g->values[j] == '\0')
			continue;	/* the group without this label */
		p = arena_alloc(a, sizeof *p);
		types__v1__label_pair__init(p);
		p->name = qseries_str(a, by[j]);
		p->value = qseries_str(a, g->values[j]);
		s->labels[s->n_labels++] = p;
	}
	s->points = arena_alloc(a, (npoints + 1) * sizeof *s->points);
	for (i = 0; i < npoints; i++) {
		if (g->count[i] == 0)
			continue;
		pt = arena_alloc(a, sizeof *pt);
		types__v1__point__init(pt);
		pt->timestamp = (b0 + (int64_t)i) * step * 1000;
		pt->value = average ? (double)g->sum[i] / (double)g->count[i] :
		    (double)g->sum[i];
		s->points[s->n_points++] = pt;
	}
	return s;
}

/* Worker: SelectSeries. */
static void
qseries_work(struct httpjob *job)
{
	struct qseries_args *sa = job->arg;
	Querier__V1__SelectSeriesResponse resp =
	    QUERIER__V1__SELECT_SERIES_RESPONSE__INIT;
	Querier__V1__SelectSeriesRequest *req;
	ProtobufCMessage *in;
	struct qsel_ptype pt;
	struct qsel sel;
	struct qfind f;
	struct qseries_group *g = NULL;
	struct arena *a;
	char *cause = NULL;
	int64_t step, b0, b1;
	size_t ng = 0, npoints, i, nby;
	int rc;

	if (qconnect_decode(job, &sa->call,
	    &querier__v1__select_series_request__descriptor, &in) != 0)
		return;
	req = (Querier__V1__SelectSeriesRequest *)in;
	memset(&pt, 0, sizeof pt);
	memset(&sel, 0, sizeof sel);
	memset(&f, 0, sizeof f);
	nby = req->n_group_by;
	if (qsel_ptype_parse(req->profile_typeid, &pt, &cause) != 0 ||
	    qsel_parse(req->label_selector, &sel, &cause) != 0 ||
	    qsel_window(req->start, req->end, clock_now_ns(), &f.from, &f.to,
	    &cause) != 0) {
		httpjob_error(job, 400, "%s", cause);
		goto out;
	}
	if (!(req->step >= 0 && req->step <= QSERIES_MAX_STEP)) {
		httpjob_error(job, 400, "step %g: want seconds in 0..%g",
		    req->step, QSERIES_MAX_STEP);
		goto out;
	}
	f.pt = &pt;
	f.sels = sel.n > 0 ? &sel : NULL;
	f.nsels = sel.n > 0 ? 1 : 0;
	step = qseries_step(req->step, f.from, f.to);
	b0 = store_bucket_of(f.from, step);
	b1 = store_bucket_of(f.to, step);
	if (b1 - b0 >= QSERIES_MAX_POINTS) {
		httpjob_error(job, 400, "step %llds gives %lld points over the "
		    "window; at most %d", (long long)step,
		    (long long)(b1 - b0 + 1), QSERIES_MAX_POINTS);
		goto out;
	}
	npoints = (size_t)(b1 - b0 + 1);
	rc = nby == 0 ? qseries_timeline(job, &f, step, b0, npoints, &g,
	    &ng) : 1;
	if (rc == 1)
		rc = qseries_rows(job, &f, req->group_by, nby, step, b0,
		    npoints, &g, &ng);
	if (rc != 0)
		goto out;
	if (req->limit > 0 && (size_t)req->limit < ng) {
		qsort(g, ng, sizeof *g, qseries_cmp_total);
		qseries_groups_clear(g + req->limit, ng - (size_t)req->limit,
		    nby);
		ng = (size_t)req->limit;	/* (the array itself stays) */
	}
	if (ng > 1)
		qsort_r(g, ng, sizeof *g, qseries_cmp, &nby);
	a = arena_new(0);
	resp.series = arena_alloc(a, (ng + 1) * sizeof *resp.series);
	for (i = 0; i < ng; i++) {
		if (qseries_empty(&g[i], npoints))
			continue;
		resp.series[resp.n_series++] = qseries_message(a, &g[i],
		    req->group_by, nby, step, b0, npoints, req->aggregation ==
		    TYPES__V1__TIME_SERIES_AGGREGATION_TYPE__TIME_SERIES_AGGREGATION_TYPE_AVERAGE);
	}
	qconnect_reply(job, &sa->call, &resp.base);
	arena_free(a);
out:
	free(cause);
	qseries_groups_free(g, ng, nby);
	qsel_clear(&sel);
	qsel_ptype_clear(&pt);
	protobuf_c_message_free_unpacked(in, NULL);
}

/* POST .../SelectSeries: queued on the CPU pool. */
void
qseries_select(struct env *env, struct evhttp_request *req)
{
	struct qseries_args *sa = xcalloc(1, sizeof *sa);

	if (qconnect_begin(env, req, &sa->call) != 0) {
		free(sa);
		return;
	}
	httpjob_submit(httpjob_new(env, req, qseries_work, sa,
	    qseries_args_free));
}
