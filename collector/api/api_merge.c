/*
 * Merged downloads: GET /api/0/profiles/merge?service=&type=&... and
 * GET /api/0/profiles/{id1}+{id2}+... Both find their inputs on a merge
 * worker and then call merge_run, which spreads the merge over the merge
 * pool (never the pool uploads and queries use) and returns one gzipped
 * pprof; past --max-merges running merges a merge gets 503. The job is
 * watched, so a client that goes away cancels the merge, as does
 * --request-timeout. A HEAD merges nothing: it runs on the common pool.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

#include "collector/api/api_merge.h"
#include "collector/api/params.h"
#include "collector/config.h"
#include "collector/env.h"
#include "collector/http/httpjob.h"
#include "collector/http/reply.h"
#include "collector/metrics.h"
#include "collector/ids.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/xmalloc.h"
#include "merge/merge_run.h"
#include "storage/store_free.h"
#include "storage/store_meta.h"

/* A window may hold this many times --max-merge-profiles inputs. */
#define API_MERGE_WINDOW_PIECES	100

struct api_merge_args {
	struct params_query	 qa;		/* merge by query */
	char			**ids;		/* merge by ids */
	size_t			 nids;
	char			*filename;
	int			 head;		/* HEAD: check, do not merge */
};

/* Frees merge arguments. */
static void
api_merge_args_free(void *arg)
{
	struct api_merge_args *ma = arg;
	size_t i;

	params_query_clear(&ma->qa);
	for (i = 0; i < ma->nids; i++)
		free(ma->ids[i]);
	free(ma->ids);
	free(ma->filename);
	free(ma);
}

/* "SERVICE-TYPE.pb.gz" with characters unsafe in a header replaced. */
static char *
api_merge_filename(const char *service, const char *type)
{
	char *s = xasprintf("%s-%s.pb.gz", service, type), *p;

	for (p = s; *p != '\0'; p++) {
		if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e ||
		    *p == '"' || *p == '\\' || *p == '/' || *p == ';')
			*p = '_';
	}
	return s;
}

struct api_merge_fetch {
	struct store	 *store;
	char		**ids;
	int		  unavailable;	/* a read found the store down */
};

/*
 * merge_run's source of input bytes: the stored blob of ids[i]; 1 when its
 * row is gone, -1 when the blob cannot be read.
 */
static int
api_merge_fetch_blob(void *arg, size_t i, uint8_t **buf, size_t *len,
    char **cause)
{
	struct api_merge_fetch *mf = arg;
	struct profile_meta m;
	char *why = NULL;
	int rc;

	rc = store_read_blob(mf->store, mf->ids[i], buf, len, &why);
	if (rc == 1) {
		/* Deleted since it was listed (retention), unless its row is
		 * still there: then the blob file is missing. */
		memset(&m, 0, sizeof m);
		rc = store_get(mf->store, mf->ids[i], &m, &why);
		if (rc == 1)
			return 1;
		if (rc == 0) {
			store_meta_clear(&m);
			return xcause(cause, "profile %s: its blob file is "
			    "missing", mf->ids[i]);
		}
	}
	if (rc != 0) {
		xcause(cause, "profile %s: %s", mf->ids[i], why);
		free(why);
		if (!store_unavailable())
			return -1;
		__atomic_store_n(&mf->unavailable, 1, __ATOMIC_RELAXED);
		return MERGE_FETCH_UNAVAILABLE;
	}
	return 0;
}

/*
 * Says which inputs a merge left out: a header on the reply
 * (X-Profd-Merge-Skipped: deleted=N damaged=M, and the first damaged
 * input's cause in X-Profd-Merge-Damaged), the log and /metrics.
 */
static void
api_merge_report_skips(struct httpjob *job, struct merge_run_skips *sk)
{
	char *p;

	if (sk->deleted > 0 || sk->damaged > 0) {
		httpjob_header(job, "X-Profd-Merge-Skipped",
		    "deleted=%zu damaged=%zu", sk->deleted, sk->damaged);
		metrics_merge_skipped(job->env->metrics, sk->deleted,
		    sk->damaged);
	}
	if (sk->first != NULL) {
		for (p = sk->first; *p != '\0'; p++) {
			if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
				*p = '?';	/* header-safe */
		}
		httpjob_header(job, "X-Profd-Merge-Damaged", "%.200s",
		    sk->first);
	}
	free(sk->first);
	sk->first = NULL;
}

/*
 * Answers a merge stopped by --merge-memory: 413 when it alone needs more,
 * 503 (with Retry-After) when other merges hold the memory or malloc
 * failed.
 */
static void
api_merge_memory_error(struct httpjob *job, int code, const char *cause)
{
	uint64_t v = job->env->cfg->merge_memory;
	const char *unit = "bytes";

	if (v % (1024 * 1024 * 1024) == 0)
		v /= 1024 * 1024 * 1024, unit = "GiB";
	else if (v % (1024 * 1024) == 0)
		v /= 1024 * 1024, unit = "MiB";
	else if (v % 1024 == 0)
		v /= 1024, unit = "KiB";
	if (code == 413)
		httpjob_error(job, 413, "merge needs more memory than "
		    "--merge-memory (%llu %s) allows; merge fewer or smaller "
		    "profiles", (unsigned long long)v, unit);
	else
		httpjob_error(job, 503, "merge failed: %s (--merge-memory "
		    "%llu %s); retry later", cause != NULL ? cause :
		    "out of memory", (unsigned long long)v, unit);
}

/* Worker: merges ids into one gzipped pprof; see api_merge.h. */
int
api_merge_bytes(struct httpjob *job, char **ids, size_t nids, int raw,
    uint8_t **out, size_t *outlen)
{
	struct api_merge_fetch mf = { job->env->store, ids, 0 };
	struct merge_run_skips skips;
	char *cause = NULL;
	int code = 500, rc;

	*out = NULL;
	*outlen = 0;
	rc = (raw ? merge_run_raw : merge_run)(job->env->merge_pool != NULL ?
	    job->env->merge_pool : job->env->pool, job->env->merge_budget,
	    nids, api_merge_fetch_blob, &mf, job->env->cfg->max_inflated,
	    &job->cancelled, out, outlen, &skips, &code, &cause);
	api_merge_report_skips(job, &skips);
	if (rc != 0 || code != 200) {
		if (code == 200 || code == 0)
			code = 500;
		if (mf.unavailable)
			httpjob_error(job, 503, "merge failed: %s", cause);
		else if (code == 413 || code == 503)
			api_merge_memory_error(job, code, cause);
		else
			httpjob_error(job, code, "merge failed: %s",
			    cause != NULL ? cause : "unknown error");
		free(cause);
		free(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

/* Worker: merges ma->ids into the job's result. */
static void
api_merge_ids_run(struct httpjob *job, struct api_merge_args *ma)
{
	uint8_t *out;
	size_t outlen;

	if (api_merge_bytes(job, ma->ids, ma->nids, 0, &out, &outlen) != 0)
		return;
	httpjob_bytes(job, out, outlen, "application/octet-stream",
	    ma->filename);
}

/* qsort: C strings. */
static int
api_merge_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * META's sample_types ("type/unit,...") in a canonical order: merge pairs
 * sample types up as a multiset, so two orders of the same types merge.
 */
static char *
api_merge_types_key(const char *types)
{
	char *copy = xstrdup(types != NULL ? types : ""), *p, *key, **v = NULL;
	size_t n = 0, i, len, at = 0;

	for (p = copy; ; p++) {
		v = xreallocarray(v, n + 1, sizeof *v);
		v[n++] = p;
		if ((p = strchr(p, ',')) == NULL)
			break;
		*p = '\0';
	}
	qsort(v, n, sizeof *v, api_merge_cmp_str);
	len = strlen(types != NULL ? types : "") + 1;
	key = xcalloc(1, len);
	for (i = 0; i < n; i++) {
		if (i > 0)
			key[at++] = ',';
		memcpy(key + at, v[i], strlen(v[i]));
		at += strlen(v[i]);
	}
	free(v);
	free(copy);
	return key;
}

struct api_merge_group {
	const char	*key;
	size_t		 i;	/* position in the list (newest first) */
};

/* qsort: by key, then by position. */
static int
api_merge_cmp_group(const void *a, const void *b)
{
	const struct api_merge_group *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c != 0)
		return c;
	return x->i < y->i ? -1 : x->i > y->i;
}

/*
 * Of n inputs with sample types types[i] each holding weight[i] profiles,
 * keep[i] is set for those whose sample types are the most common set
 * among the profiles (a tie goes to the set of the first input); returns
 * how many profiles are left out.
 */
int64_t
api_merge_pick_types(const char *const *types, const int64_t *weight,
    size_t n, unsigned char *keep)
{
	struct api_merge_group *g = xcalloc(n, sizeof *g);
	char **keys = xcalloc(n, sizeof *keys);
	size_t i, j, k, best = 0, bestfirst = 0;
	int64_t w, bestn = -1, left = 0;

	for (i = 0; i < n; i++) {
		keys[i] = api_merge_types_key(types[i]);
		g[i].key = keys[i];
		g[i].i = i;
	}
	qsort(g, n, sizeof *g, api_merge_cmp_group);
	for (i = 0; i < n; i = j) {
		w = 0;
		for (j = i; j < n && strcmp(g[j].key, g[i].key) == 0; j++)
			w += weight[g[j].i];
		k = g[i].i;
		if (w > bestn || (w == bestn && k < bestfirst)) {
			bestn = w;
			bestfirst = k;
			best = i;
		}
	}
	for (i = 0; i < n; i++) {
		keep[i] = strcmp(keys[i], g[best].key) == 0;
		if (!keep[i])
			left += weight[i];
	}
	for (i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
	free(g);
	return left;
}

/*
 * The answer to a HEAD once the checks a GET makes before merging have
 * passed: 200 with the GET's headers and no body, no merge run.
 */
static void
api_merge_head_reply(struct httpjob *job, struct api_merge_args *ma)
{
	httpjob_bytes(job, NULL, 0, "application/octet-stream", ma->filename);
}

/* Says how many profiles of other sample types a merge leaves out. */
static void
api_merge_report_mismatch(struct httpjob *job, const struct params_query *qa,
    int64_t left, int64_t total)
{
	if (left == 0)
		return;
	httpjob_header(job, "X-Profd-Merge-Mismatched", "%lld",
	    (long long)left);
	log_info("merge of %s %s: %lld of %lld profiles left out (other "
	    "sample types)", qa->service, qa->type, (long long)left,
	    (long long)total);
}

/*
 * Worker: the pieces of a time-window merge (rollups and profiles); see
 * api_merge_select.
 */
static int
api_merge_select_window(struct httpjob *job, const struct params_query *qa,
    int empty_ok, char ***ids, size_t *nids, int64_t *profiles)
{
	struct store_plan plan;
	const char **types;
	int64_t *weight, left;
	unsigned char *keep;
	size_t i, max = (size_t)job->env->cfg->max_merge_profiles;
	char *cause = NULL;

	if (store_plan(job->env->store, &qa->q, &plan, &cause) != 0) {
		httpjob_store_error(job, cause);
		free(cause);
		return -1;
	}
	if (plan.n == 0) {
		store_free_plan(&plan);
		if (empty_ok)
			return 0;
		httpjob_error(job, 404, "no %s profiles of service %s matched",
		    qa->type, qa->service);
		return -1;
	}
	/* What compaction has not reached yet is merged profile by profile:
	 * bounded, so the list itself stays small. */
	if (plan.n > max * API_MERGE_WINDOW_PIECES) {
		httpjob_error(job, 413, "the window holds %zu inputs not "
		    "rolled up (more than %zu times --max-merge-profiles); "
		    "narrow it, or wait for compaction", plan.n,
		    (size_t)API_MERGE_WINDOW_PIECES);
		store_free_plan(&plan);
		return -1;
	}
	types = xcalloc(plan.n, sizeof *types);
	weight = xcalloc(plan.n, sizeof *weight);
	keep = xcalloc(plan.n, 1);
	for (i = 0; i < plan.n; i++) {
		types[i] = plan.p[i].sample_types;
		weight[i] = plan.p[i].profiles;
	}
	left = api_merge_pick_types(types, weight, plan.n, keep);
	api_merge_report_mismatch(job, qa, left, plan.profiles);
	*profiles = plan.profiles - left;
	httpjob_header(job, "X-Profd-Merge-Profiles", "%lld",
	    (long long)*profiles);
	httpjob_header(job, "X-Profd-Merge-Inputs", "%zu (%zu rollups)",
	    plan.n, plan.rollups);
	*ids = xcalloc(plan.n, sizeof **ids);
	for (i = 0; i < plan.n; i++) {
		if (keep[i])
			(*ids)[(*nids)++] = xstrdup(plan.p[i].id);
	}
	free(types);
	free(weight);
	free(keep);
	store_free_plan(&plan);
	return 0;
}

/* Worker: the ids a query selects for a merge; see api_merge.h. */
int
api_merge_select(struct httpjob *job, const struct params_query *qa,
    int empty_ok, char ***ids, size_t *nids, int64_t *profiles)
{
	struct store_query q = qa->q;
	struct profile_meta *metas;
	size_t i, n, max = (size_t)job->env->cfg->max_merge_profiles;
	const char **types;
	int64_t *weight, left;
	unsigned char *keep;
	char *cause = NULL;

	*ids = NULL;
	*nids = 0;
	*profiles = 0;
	if (q.limit == 0 && q.type != NULL)
		return api_merge_select_window(job, qa, empty_ok, ids, nids,
		    profiles);
	if (q.limit == 0 || q.limit > max)
		q.limit = max + 1;
	if (store_list(job->env->store, &q, &metas, &n, &cause) != 0) {
		httpjob_store_error(job, cause);
		free(cause);
		return -1;
	}
	if (n == 0) {
		store_meta_free_array(metas, n);
		if (empty_ok)
			return 0;
		httpjob_error(job, 404, "no %s profiles of service %s matched",
		    qa->type, qa->service);
		return -1;
	}
	if (n > max) {
		httpjob_error(job, 413, "more than %zu profiles match "
		    "(--max-merge-profiles); narrow the time range or labels, "
		    "or set limit", max);
		store_meta_free_array(metas, n);
		return -1;
	}
	types = xcalloc(n, sizeof *types);
	weight = xcalloc(n, sizeof *weight);
	keep = xcalloc(n, 1);
	for (i = 0; i < n; i++) {
		types[i] = metas[i].sample_types;
		weight[i] = 1;
	}
	left = api_merge_pick_types(types, weight, n, keep);
	api_merge_report_mismatch(job, qa, left, (int64_t)n);
	*ids = xcalloc(n, sizeof **ids);
	for (i = 0; i < n; i++) {
		if (keep[i])
			(*ids)[(*nids)++] = xstrdup(metas[i].id);
	}
	free(types);
	free(weight);
	free(keep);
	store_meta_free_array(metas, n);
	*profiles = (int64_t)*nids;
	return 0;
}

/* Worker: finds the matching profiles, then merges them. */
static void
api_merge_query_work(struct httpjob *job)
{
	struct api_merge_args *ma = job->arg;
	int64_t profiles;

	if (api_merge_select(job, &ma->qa, 0, &ma->ids, &ma->nids,
	    &profiles) != 0)
		return;
	if (ma->head)
		api_merge_head_reply(job, ma);
	else
		api_merge_ids_run(job, ma);
}

/* Queues a merge on the merge pool, a HEAD (no merge) on the common one. */
static void
api_merge_submit(struct httpjob *job, struct api_merge_args *ma)
{
	httpjob_watch(job);
	if (ma->head)
		httpjob_submit(job);
	else
		httpjob_submit_merge(job);
}

/* GET /api/0/profiles/merge */
void
api_merge_query(struct env *env, struct evhttp_request *req,
    const struct params *p)
{
	struct api_merge_args *ma = xcalloc(1, sizeof *ma);
	struct httpjob *job;
	char *cause = NULL;
	int rc;

	rc = params_query_parse(p, clock_now_ns(), 1, 0,
	    (size_t)env->cfg->max_merge_profiles * 1000, &ma->qa, &cause);
	if (rc < 0) {
		reply_error(env, req, 400, "%s", cause);
		free(cause);
		free(ma);
		return;
	}
	if (strcmp(ma->qa.type, "trace") == 0) {
		reply_error(env, req, 400, "trace profiles cannot be merged");
		api_merge_args_free(ma);
		return;
	}
	ma->filename = api_merge_filename(ma->qa.service, ma->qa.type);
	ma->head = evhttp_request_get_command(req) == EVHTTP_REQ_HEAD;
	job = httpjob_new(env, req, api_merge_query_work, ma, api_merge_args_free);
	api_merge_submit(job, ma);
}

/* Worker: checks that every id exists and can be merged, then merges. */
static void
api_merge_ids_work(struct httpjob *job)
{
	struct api_merge_args *ma = job->arg;
	struct profile_meta m;
	char *cause = NULL, *key, *first = NULL;
	size_t i;
	int rc;

	for (i = 0; i < ma->nids; i++) {
		memset(&m, 0, sizeof m);
		rc = store_get(job->env->store, ma->ids[i], &m, &cause);
		if (rc == 1) {
			httpjob_error(job, 404, "profile %s not found",
			    ma->ids[i]);
			return;
		}
		if (rc != 0) {
			httpjob_store_error(job, cause);
			free(cause);
			return;
		}
		if (strcmp(m.type, "trace") == 0) {
			httpjob_error(job, 400, "profile %s is a trace; traces "
			    "cannot be merged", ma->ids[i]);
			store_meta_clear(&m);
			return;
		}
		if (i == 0)
			ma->filename = api_merge_filename(m.service, m.type);
		if (ma->head) {
			/* What merge_run would refuse, from META alone. */
			key = api_merge_types_key(m.sample_types);
			if (first == NULL)
				first = key;
			else {
				rc = strcmp(first, key);
				free(key);
				if (rc != 0) {
					httpjob_error(job, 422, "profile %s has "
					    "other sample types than %s",
					    ma->ids[i], ma->ids[0]);
					store_meta_clear(&m);
					free(first);
					return;
				}
			}
		}
		store_meta_clear(&m);
	}
	free(first);
	if (ma->head)
		api_merge_head_reply(job, ma);
	else
		api_merge_ids_run(job, ma);
}

/* GET /api/0/profiles/{id1}+{id2}+... */
void
api_merge_ids(struct env *env, struct evhttp_request *req,
    const char *ids)
{
	struct api_merge_args *ma = xcalloc(1, sizeof *ma);
	struct httpjob *job;
	const char *s, *plus;
	size_t max = (size_t)env->cfg->max_merge_profiles;

	for (s = ids; ; s = plus + 1) {
		plus = strchr(s, '+');
		if (plus == NULL)
			plus = s + strlen(s);
		if (!ids_valid(s, plus - s)) {
			reply_error(env, req, 400, "malformed profile id "
			    "\"%.*s\" (want 20 characters of [0-9a-v])",
			    (int)(plus - s > 64 ? 64 : plus - s), s);
			api_merge_args_free(ma);
			return;
		}
		if (ma->nids >= max) {
			reply_error(env, req, 413, "more than %zu profiles "
			    "(--max-merge-profiles)", max);
			api_merge_args_free(ma);
			return;
		}
		ma->ids = xreallocarray(ma->ids, ma->nids + 1,
		    sizeof *ma->ids);
		ma->ids[ma->nids++] = xstrndup(s, plus - s);
		if (*plus == '\0')
			break;
	}
	ma->head = evhttp_request_get_command(req) == EVHTTP_REQ_HEAD;
	job = httpjob_new(env, req, api_merge_ids_work, ma, api_merge_args_free);
	api_merge_submit(job, ma);
}
