/*
 * GET /api/0/timeline: the sum of one sample type per time bucket over a
 * selection, for the UI's chart. The selection is the views' (service,
 * type, from, to, labels, or ids=ID1+ID2+...), plus sample_type (a name;
 * default: the newest profile's default sample type, else its last, as
 * pprof picks) and step (seconds per bucket; default: the window over
 * about 200 buckets, rounded up to a round step). Bucket i starts at
 * (b0 + i) * step Unix seconds; every bucket of the window is answered,
 * empty ones with 0. The numbers come from each profile's totals kept in
 * the metadata at ingest (storage/embedded/meta_timeline.c), never from
 * blobs, so a week of a large fleet answers in milliseconds; their sum over
 * the window is the total of the merge of the same selection. Profiles
 * stored before totals existed count once the background backfill
 * (collector/backfill.c) has read them; "pending" says how many are left.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>
#include <jansson.h>

#include "collector/api/api_timeline.h"
#include "collector/api/params.h"
#include "collector/config.h"
#include "collector/env.h"
#include "collector/http/httpjob.h"
#include "collector/http/reply.h"
#include "common/clock.h"
#include "common/xmalloc.h"
#include "storage/store.h"
#include "storage/store_bucket.h"
#include "storage/store_free.h"
#include "storage/store_meta.h"

#define API_TIMELINE_BUCKETS	200	/* about this many by default */
#define API_TIMELINE_MAX_POINTS	10000
#define API_TIMELINE_MAX_STEP	(366LL * 86400)
#define API_TIMELINE_SECOND	1000000000LL

struct api_timeline_args {
	struct params_query	 qa;
	int			 by_query;
	char			**ids;
	size_t			 nids;
	char			*sample_type;	/* a name, or NULL */
	int64_t			 step;		/* 0: automatic */
};

/* Frees the arguments. */
static void
api_timeline_args_free(void *arg)
{
	struct api_timeline_args *ta = arg;

	if (ta->by_query)
		params_query_clear(&ta->qa);
	store_free_strings(ta->ids, ta->nids);
	free(ta->sample_type);
	free(ta);
}

/* The round step (seconds) giving about API_TIMELINE_BUCKETS buckets. */
static int64_t
api_timeline_auto_step(int64_t from, int64_t to)
{
	static const int64_t steps[] = { 1, 2, 5, 10, 15, 30, 60, 120, 300,
	    600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400 };
	int64_t want, span = (to - from) / API_TIMELINE_SECOND + 1;
	size_t i;

	want = span / API_TIMELINE_BUCKETS + (span % API_TIMELINE_BUCKETS != 0);
	for (i = 0; i < sizeof steps / sizeof steps[0]; i++)
		if (steps[i] >= want)
			return steps[i];
	return (want + 86399) / 86400 * 86400;
}

/* Sets *b0 and *n for the window; -1 with *cause if too many points. */
static int
api_timeline_grid(int64_t from, int64_t to, int64_t step, int64_t *b0,
    size_t *n, char **cause)
{
	int64_t b1;

	*b0 = store_bucket_of(from, step);
	b1 = store_bucket_of(to, step);
	if (b1 < *b0)
		b1 = *b0;
	if (b1 - *b0 >= API_TIMELINE_MAX_POINTS)
		return xcause(cause, "step %lld gives %lld points over the "
		    "window; at most %d", (long long)step,
		    (long long)(b1 - *b0 + 1), API_TIMELINE_MAX_POINTS);
	*n = (size_t)(b1 - *b0 + 1);
	return 0;
}

/*
 * The sample type of the selection ("name/unit") from its newest
 * profile: the name asked for, else the default, else the last.
 * Returns a new string, or NULL with *cause (the name is not there).
 */
static char *
api_timeline_pick(const struct profile_meta *m, const char *name,
    char **cause)
{
	const char *types = m->sample_types != NULL ? m->sample_types : "";
	const char *t = types, *semi;
	char *last = NULL;
	size_t len, nlen, i = 0;
	long k = -1;

	if (m->totals != NULL && (semi = strchr(m->totals, ';')) != NULL)
		k = strtol(semi + 1, NULL, 10);
	while (*t != '\0') {
		len = strcspn(t, ",");
		nlen = strcspn(t, "/");
		if (nlen > len)
			nlen = len;
		if (name != NULL && *name != '\0' ? strlen(name) == nlen &&
		    memcmp(t, name, nlen) == 0 : (long)i == k) {
			free(last);
			return xstrndup(t, len);
		}
		free(last);
		last = xstrndup(t, len);
		t += len;
		if (*t == ',')
			t++;
		i++;
	}
	if (name != NULL && *name != '\0') {
		free(last);
		xcause(cause, "no sample type \"%s\" in the selection", name);
		return NULL;
	}
	if (last == NULL)
		xcause(cause, "the profile has no sample types");
	return last;
}

/* Worker: points of a selection by ids, from their own metadata. */
static int
api_timeline_by_ids(struct httpjob *job, struct api_timeline_args *ta,
    struct profile_meta *metas, struct store_timeline *tl, int64_t *from,
    int64_t *to)
{
	char *cause = NULL;
	size_t i, newest = 0;
	int64_t v;
	int rc;

	for (i = 0; i < ta->nids; i++) {
		rc = store_get(job->env->store, ta->ids[i], &metas[i], &cause);
		if (rc != 0) {
			if (rc < 0)
				httpjob_store_error(job, cause);
			else
				httpjob_error(job, 404, "profile %s not found",
				    ta->ids[i]);
			free(cause);
			return -1;
		}
		if (i == 0 || metas[i].created_at < *from)
			*from = metas[i].created_at;
		if (i == 0 || metas[i].created_at > *to) {
			*to = metas[i].created_at;
			newest = i;
		}
	}
	if ((tl->sample_type = api_timeline_pick(&metas[newest],
	    ta->sample_type, &cause)) == NULL)
		goto bad;
	if (ta->step == 0)
		ta->step = api_timeline_auto_step(*from, *to);
	tl->step = ta->step;
	if (api_timeline_grid(*from, *to, tl->step, &tl->b0, &tl->n,
	    &cause) != 0)
		goto bad;
	tl->value = xcalloc(tl->n, sizeof *tl->value);
	tl->profiles = xcalloc(tl->n, sizeof *tl->profiles);
	for (i = 0; i < ta->nids; i++) {
		int64_t idx;

		if (!store_meta_totals_value(metas[i].sample_types,
		    metas[i].totals, tl->sample_type, &v))
			continue;
		idx = store_bucket_of(metas[i].created_at, tl->step) -
		    tl->b0;
		tl->value[idx] = (int64_t)((uint64_t)tl->value[idx] +
		    (uint64_t)v);
		tl->profiles[idx]++;
	}
	return 0;
bad:
	httpjob_error(job, 400, "%s", cause);
	free(cause);
	return -1;
}

/* Worker: points of a selection by query, from the store's timeline. */
static int
api_timeline_by_query(struct httpjob *job, struct api_timeline_args *ta,
    struct store_timeline *tl, int *empty)
{
	struct store_query q = ta->qa.q;
	struct profile_meta *newest = NULL;
	size_t n = 0;
	char *cause = NULL;
	int code = 400;

	q.limit = 1;
	if (store_list(job->env->store, &q, &newest, &n, &cause) != 0) {
		code = 500;
		goto bad;
	}
	*empty = n == 0;
	if (n == 1 && (tl->sample_type = api_timeline_pick(newest,
	    ta->sample_type, &cause)) == NULL)
		goto bad;
	store_meta_free_array(newest, n);
	newest = NULL;
	tl->step = ta->step != 0 ? ta->step :
	    api_timeline_auto_step(q.from, q.to);
	if (api_timeline_grid(q.from, q.to, tl->step, &tl->b0, &tl->n,
	    &cause) != 0)
		goto bad;
	tl->value = xcalloc(tl->n, sizeof *tl->value);
	tl->profiles = xcalloc(tl->n, sizeof *tl->profiles);
	if (*empty)
		return 0;
	q.limit = 0;
	if (store_timeline(job->env->store, &q, tl, &cause) != 0) {
		code = 500;
		goto bad;
	}
	return 0;
bad:
	store_meta_free_array(newest, n);
	if (code == 500)
		httpjob_store_error(job, cause);
	else
		httpjob_error(job, 400, "%s", cause);
	free(cause);
	return -1;
}

/* Worker: the timeline of the selection. */
static void
api_timeline_work(struct httpjob *job)
{
	struct api_timeline_args *ta = job->arg;
	struct store_timeline tl = { 0 };
	struct profile_meta *metas = NULL;
	const char *slash;
	int64_t from = 0, to = 0, total = 0, count = 0;
	json_t *points, *body;
	size_t i;
	int empty = 0;

	if (ta->by_query) {
		if (api_timeline_by_query(job, ta, &tl, &empty) != 0)
			goto out;
	} else {
		metas = xcalloc(ta->nids, sizeof *metas);
		if (api_timeline_by_ids(job, ta, metas, &tl, &from, &to) != 0)
			goto out;
	}
	points = json_array();
	for (i = 0; i < tl.n; i++) {
		total = (int64_t)((uint64_t)total + (uint64_t)tl.value[i]);
		count += tl.profiles[i];
		json_array_append_new(points, json_pack("[I, I, I]",
		    (json_int_t)((tl.b0 + (int64_t)i) * tl.step),
		    (json_int_t)tl.value[i], (json_int_t)tl.profiles[i]));
	}
	slash = tl.sample_type != NULL ? strchr(tl.sample_type, '/') : NULL;
	body = json_pack("{s:s, s:s#, s:I, s:I, s:I, s:I, s:o}",
	    "unit", slash != NULL ? slash + 1 : "",
	    "sample_type", tl.sample_type != NULL ? tl.sample_type : "",
	    slash != NULL ? (int)(slash - tl.sample_type) :
	    (tl.sample_type != NULL ? (int)strlen(tl.sample_type) : 0),
	    "step", (json_int_t)tl.step, "total", (json_int_t)total,
	    "profiles", (json_int_t)count, "pending", (json_int_t)tl.pending,
	    "points", points);
	httpjob_json(job, body);
out:
	if (metas != NULL)
		store_meta_free_array(metas, ta->nids);
	free((char *)tl.sample_type);
	free(tl.value);
	free(tl.profiles);
}

/* Reads step: a whole number of seconds, 1..a year; 0 absent. */
static int
api_timeline_step(const struct params *p, int64_t *step, char **cause)
{
	char *v = NULL, *end;
	long long n;
	int rc;

	*step = 0;
	if ((rc = params_get(p, "step", &v, cause)) <= 0)
		return rc;
	n = strtoll(v, &end, 10);
	if (*v == '\0' || *end != '\0' || *v == '-' || *v == '+' || n < 1 ||
	    n > API_TIMELINE_MAX_STEP) {
		free(v);
		return xcause(cause, "parameter step must be a whole number "
		    "of seconds in 1..%lld", API_TIMELINE_MAX_STEP);
	}
	*step = n;
	free(v);
	return 0;
}

/* GET /api/0/timeline */
void
api_timeline(struct env *env, struct evhttp_request *req,
    const struct params *p)
{
	struct api_timeline_args *ta = xcalloc(1, sizeof *ta);
	size_t max = (size_t)env->cfg->max_merge_profiles;
	char *cause = NULL, *ids = NULL;
	int rc;

	if ((rc = params_get(p, "ids", &ids, &cause)) < 0)
		goto bad;
	if (rc == 1) {
		rc = params_ids(ids, max, &ta->ids, &ta->nids, &cause);
		free(ids);
		if (rc != 0)
			goto bad;
	} else {
		if (params_query_parse(p, clock_now_ns(), 1, 0, SIZE_MAX,
		    &ta->qa, &cause) < 0)
			goto bad;
		ta->by_query = 1;
	}
	if (params_get(p, "sample_type", &ta->sample_type, &cause) < 0 ||
	    api_timeline_step(p, &ta->step, &cause) < 0)
		goto bad;
	if (ta->by_query && ta->step != 0) {
		int64_t b0;
		size_t n;

		if (api_timeline_grid(ta->qa.q.from, ta->qa.q.to, ta->step,
		    &b0, &n, &cause) != 0)
			goto bad;
	}
	httpjob_submit(httpjob_new(env, req, api_timeline_work, ta,
	    api_timeline_args_free));
	return;
bad:
	reply_error(env, req, 400, "%s", cause);
	free(cause);
	api_timeline_args_free(ta);
}
