/*
 * The UI's query endpoints, JSON in profd's envelope:
 *   GET /api/0/flamegraph   the call tree of a selection (view_flame.c)
 *   GET /api/0/top          flat and cum per function (view_top.c)
 *   GET /api/0/diff         the flame graph of a selection beside a
 *                           baseline's (base_from, base_to, base_labels,
 *                           base_service, base_ids)
 *   GET /api/0/sample_types the sample types stored for a selection
 * A selection is the list's (service, type, from, to, labels) or
 * ids=ID1+ID2+..., plus sample_type (a name: cpu, alloc_space; default:
 * the profile's default, else the last, as pprof picks), focus and hide
 * (POSIX extended regular expressions on function names, as pprof's
 * -focus/-hide), max_nodes (flame graph, default 4096) and limit (top,
 * default 100). The numbers come from the merge engine: the selection is
 * merged on the merge pool (with its limits: --max-merges,
 * --merge-memory, --max-merge-profiles) and the merged profile decoded,
 * so they are what `go tool pprof` shows of the merge. An empty
 * selection answers 200 with total 0.
 */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>
#include <jansson.h>

#include "collector/api/api_merge.h"
#include "collector/api/api_views.h"
#include "collector/api/params.h"
#include "collector/config.h"
#include "collector/env.h"
#include "collector/http/httpjob.h"
#include "collector/http/reply.h"
#include "collector/ids.h"
#include "common/budget.h"
#include "common/clock.h"
#include "common/xmalloc.h"
#include "proto/pprof.h"
#include "storage/store_free.h"
#include "storage/store_meta.h"
#include "view/view_flame.h"
#include "view/view_top.h"
#include "view/view_tree.h"

#define API_VIEWS_MAX_NODES	4096
#define API_VIEWS_NODES_LIMIT	1000000
#define API_VIEWS_REGEX_MAX	256	/* focus, hide: bytes */
#define API_VIEWS_TOP_LIMIT	100
/*
 * What a view holds besides the merge, charged to --merge-memory: the
 * decoded merged profile per byte of it (measured 6.4-8.9 on merged
 * corpus profiles), and the JSON per flame graph node (jansson's objects
 * about 820 bytes, the text about 80) or top row (about 620), with room.
 */
#define API_VIEWS_DECODE_FACTOR	10
#define API_VIEWS_JSON_NODE	1024
#define API_VIEWS_JSON_ROW	700

enum api_views_kind {
	API_VIEWS_FLAME,
	API_VIEWS_TOP,
	API_VIEWS_DIFF,
};

/* One selection: by query or by ids. */
struct api_views_sel {
	struct params_query	 qa;
	int			 by_query;
	char			**ids;
	size_t			 nids;
};

struct api_views_args {
	enum api_views_kind	 kind;
	struct api_views_sel	 sel, base;
	char			*sample_type;
	regex_t			 focus, hide;
	int			 has_focus, has_hide;
	size_t			 max_nodes, limit;
	/* --merge-memory held by the view until its reply is sent. */
	struct budget_acct	 acct;
	int			 acct_on;
};

/* Frees a selection. */
static void
api_views_sel_clear(struct api_views_sel *s)
{
	size_t i;

	if (s->by_query)
		params_query_clear(&s->qa);
	for (i = 0; i < s->nids; i++)
		free(s->ids[i]);
	free(s->ids);
	memset(s, 0, sizeof *s);
}

/* Frees the arguments. */
static void
api_views_args_free(void *arg)
{
	struct api_views_args *va = arg;

	if (va->acct_on)
		budget_acct_done(&va->acct);
	api_views_sel_clear(&va->sel);
	api_views_sel_clear(&va->base);
	free(va->sample_type);
	if (va->has_focus)
		regfree(&va->focus);
	if (va->has_hide)
		regfree(&va->hide);
	free(va);
}

/* A copy of p without key (the views' limit is not the list's). */
static void
api_views_params_without(const struct params *p, const char *key,
    struct params *out)
{
	size_t i;

	memset(out, 0, sizeof *out);
	out->keys = xcalloc(p->n + 1, sizeof *out->keys);
	out->raw = xcalloc(p->n + 1, sizeof *out->raw);
	for (i = 0; i < p->n; i++) {
		if (strcmp(p->keys[i], key) == 0)
			continue;
		out->keys[out->n] = xstrdup(p->keys[i]);
		out->raw[out->n] = xstrdup(p->raw[i]);
		out->n++;
	}
}

/*
 * Reads a selection: ids (under idkey) or the list's parameters (all the
 * stored profiles in the window: limit is the top table's, not a count of
 * profiles).
 */
static int
api_views_sel_parse(struct env *env, const struct params *p,
    const char *idkey, struct api_views_sel *s, char **cause)
{
	struct params q;
	char *ids = NULL;
	size_t max = (size_t)env->cfg->max_merge_profiles;
	int rc;

	if ((rc = params_get(p, idkey, &ids, cause)) < 0)
		return -1;
	if (rc == 1) {
		rc = params_ids(ids, max, &s->ids, &s->nids, cause);
		free(ids);
		return rc;
	}
	api_views_params_without(p, "limit", &q);
	rc = params_query_parse(&q, clock_now_ns(), 1, 0, max * 1000, &s->qa,
	    cause);
	params_clear(&q);
	if (rc < 0)
		return -1;
	s->by_query = 1;
	return 0;
}

/*
 * The baseline's parameters: base_service, base_from, base_to and
 * base_labels where given, else the selection's own.
 */
static void
api_views_base_params(const struct params *p, struct params *b)
{
	static const char *const keys[] = { "service", "type", "from", "to",
	    "labels" };
	const char *raw;
	char key[32];
	size_t i;

	memset(b, 0, sizeof *b);
	b->keys = xcalloc(5, sizeof *b->keys);
	b->raw = xcalloc(5, sizeof *b->raw);
	for (i = 0; i < 5; i++) {
		snprintf(key, sizeof key, "base_%s", keys[i]);
		if ((raw = params_raw(p, key)) == NULL &&
		    (raw = params_raw(p, keys[i])) == NULL)
			continue;
		b->keys[b->n] = xstrdup(keys[i]);
		b->raw[b->n] = xstrdup(raw);
		b->n++;
	}
}

/* Whether a pattern holds a back-reference (\1 .. \9). */
static int
api_views_backref(const char *v)
{
	for (; *v != '\0'; v++) {
		if (*v == '\\' && v[1] != '\0') {
			if (v[1] >= '1' && v[1] <= '9')
				return 1;
			v++;
		}
	}
	return 0;
}

/* Compiles a regular expression parameter; 0 absent, 1 set, -1 bad. */
static int
api_views_regex(const struct params *p, const char *key, regex_t *re,
    char **cause)
{
	char *v = NULL, msg[128];
	int rc;

	if ((rc = params_get(p, key, &v, cause)) <= 0)
		return rc;
	if (*v == '\0') {
		free(v);
		return 0;
	}
	/*
	 * Compiled on the loop thread and run once per function: bounded in
	 * length, and without back-references (glibc takes \1 in ERE too,
	 * and matching those can take exponential time).
	 */
	if (strlen(v) > API_VIEWS_REGEX_MAX || api_views_backref(v)) {
		xcause(cause, "parameter %s: at most %d bytes, no "
		    "back-references (\\1-\\9)", key, API_VIEWS_REGEX_MAX);
		free(v);
		return -1;
	}
	if ((rc = regcomp(re, v, REG_EXTENDED | REG_NOSUB)) != 0) {
		regerror(rc, re, msg, sizeof msg);
		xcause(cause, "parameter %s: bad regular expression: %s", key,
		    msg);
		free(v);
		return -1;
	}
	free(v);
	return 1;
}

/* Reads a whole number parameter in 1..max (default def). */
static int
api_views_count(const struct params *p, const char *key, size_t def,
    size_t max, size_t *out, char **cause)
{
	char *v = NULL, *end;
	unsigned long long n;
	int rc;

	*out = def;
	if ((rc = params_get(p, key, &v, cause)) <= 0)
		return rc;
	n = strtoull(v, &end, 10);
	if (*v == '\0' || *end != '\0' || *v == '-' || n < 1 || n > max) {
		xcause(cause, "parameter %s must be a whole number in 1..%zu",
		    key, max);
		free(v);
		return -1;
	}
	*out = (size_t)n;
	free(v);
	return 0;
}

/*
 * Charges n bytes of a view to --merge-memory; when refused, answers 413
 * (the view alone needs more than the limit) or 503 (other merges hold
 * it now) and returns -1.
 */
static int
api_views_charge(struct httpjob *job, struct budget_acct *acct, size_t n)
{
	size_t want = 0;

	if (budget_reserve(acct, n) == 0)
		return 0;
	if (budget_acct_fail(acct, &want) == BUDGET_OVER)
		httpjob_error(job, 413, "this view needs more memory than "
		    "--merge-memory allows (%zu bytes more); narrow the "
		    "selection or ask for fewer max_nodes", want);
	else
		httpjob_error(job, 503, "this view needs %zu bytes of "
		    "--merge-memory, which other merges hold now; retry later",
		    want);
	return -1;
}

/*
 * Worker: merges a selection and decodes the result. 0 with *prof (NULL
 * when the selection is empty) and *count, -1 with the job answered.
 */
static int
api_views_load(struct httpjob *job, struct api_views_sel *s,
    struct budget_acct *acct, pprof_profile_t **prof, size_t *count)
{
	uint8_t *out;
	size_t outlen;
	char *cause = NULL;
	int64_t profiles = 0;

	*prof = NULL;
	*count = 0;
	if (s->by_query && api_merge_select(job, &s->qa, 1, &s->ids,
	    &s->nids, &profiles) != 0)
		return -1;
	if (s->nids == 0)
		return 0;
	if (api_merge_bytes(job, s->ids, s->nids, 1, &out, &outlen) != 0)
		return -1;
	if (api_views_charge(job, acct, outlen > SIZE_MAX /
	    API_VIEWS_DECODE_FACTOR ? SIZE_MAX : outlen *
	    API_VIEWS_DECODE_FACTOR) != 0) {
		free(out);
		return -1;
	}
	*prof = pprof_load(out, outlen, job->env->cfg->max_inflated, NULL,
	    &cause);
	free(out);
	if (*prof == NULL) {
		httpjob_error(job, 500, "cannot read the merged profile: %s",
		    cause);
		free(cause);
		return -1;
	}
	*count = s->by_query ? (size_t)profiles : s->nids;
	return 0;
}

/* The sample type's name and unit, or "". */
static void
api_views_type(const pprof_profile_t *p, int idx, const char **name,
    const char **unit)
{
	*name = *unit = "";
	if (p == NULL || idx < 0 || (size_t)idx >= p->n_sample_type)
		return;
	if ((size_t)p->sample_type[idx]->type < p->n_string_table)
		*name = p->string_table[p->sample_type[idx]->type];
	if ((size_t)p->sample_type[idx]->unit < p->n_string_table)
		*unit = p->string_table[p->sample_type[idx]->unit];
}

/* Worker: the flame graph, the top table or the diff. */
static void
api_views_work(struct httpjob *job)
{
	struct api_views_args *va = job->arg;
	struct view_filter f = { .focus = va->has_focus ? &va->focus : NULL,
	    .hide = va->has_hide ? &va->hide : NULL };
	pprof_profile_t *p = NULL, *b = NULL;
	struct view_tree t;
	struct budget_acct *acct = &va->acct;
	const char *tname, *unit, *want;
	size_t count = 0, bcount = 0, out_n;
	char *cause = NULL;
	int idx = -1, bidx = -1;
	json_t *body;

	/* Held until the reply is sent (api_views_args_free): the JSON is
	 * written out on the loop thread after this returns. */
	budget_acct_init(acct, job->env->merge_budget);
	va->acct_on = 1;
	if (api_views_load(job, &va->sel, acct, &p, &count) != 0)
		goto out;
	if (va->kind == API_VIEWS_DIFF &&
	    api_views_load(job, &va->base, acct, &b, &bcount) != 0)
		goto out;
	if (p != NULL && (idx = view_tree_sample_index(p, va->sample_type,
	    &cause)) < 0) {
		httpjob_error(job, 400, "%s", cause);
		goto out;
	}
	api_views_type(p, idx, &tname, &unit);
	if (b != NULL) {
		want = *tname != '\0' ? tname : va->sample_type;
		if ((bidx = view_tree_sample_index(b, want, &cause)) < 0) {
			httpjob_error(job, 400, "baseline: %s", cause);
			goto out;
		}
		if (*tname == '\0')
			api_views_type(b, bidx, &tname, &unit);
	}
	view_tree_init(&t);
	if (p != NULL)
		view_tree_add(&t, p, idx, &f, 0);
	if (b != NULL)
		view_tree_add(&t, b, bidx, &f, 1);
	t.profiles = (int)count;
	t.base_profiles = (int)bcount;
	/* The tree, then the JSON it becomes: every node, or past max_nodes
	 * that many and each parent's "other"; or the top table's rows. */
	out_n = va->kind == API_VIEWS_TOP ? (t.nnames < va->limit ? t.nnames :
	    va->limit) * API_VIEWS_JSON_ROW : (t.n < 2 * va->max_nodes ? t.n :
	    2 * va->max_nodes) * API_VIEWS_JSON_NODE;
	if (api_views_charge(job, acct, view_tree_bytes(&t)) != 0 ||
	    api_views_charge(job, acct, out_n) != 0) {
		view_tree_clear(&t);
		goto out;
	}
	body = json_pack("{s:s, s:s, s:I, s:I}", "unit", unit, "sample_type",
	    tname, "total", (json_int_t)t.total, "profiles",
	    (json_int_t)count);
	if (va->kind == API_VIEWS_TOP)
		json_object_set_new(body, "rows",
		    view_top_json(&t, va->limit));
	else
		json_object_set_new(body, "root", view_flame_json(&t,
		    va->max_nodes, va->kind == API_VIEWS_DIFF));
	if (va->kind == API_VIEWS_DIFF) {
		json_object_set_new(body, "base_total",
		    json_integer(t.base_total));
		json_object_set_new(body, "base_profiles",
		    json_integer((json_int_t)bcount));
	}
	view_tree_clear(&t);
	httpjob_json(job, body);
out:
	free(cause);
	if (p != NULL)
		pprof_free(p, NULL);
	if (b != NULL)
		pprof_free(b, NULL);
}

/* Parses a view request and queues it on the merge pool. */
static void
api_views_start(struct env *env, struct evhttp_request *req,
    const struct params *p, enum api_views_kind kind)
{
	struct api_views_args *va = xcalloc(1, sizeof *va);
	struct params bp;
	struct httpjob *job;
	char *cause = NULL;
	int rc;

	va->kind = kind;
	if (api_views_sel_parse(env, p, "ids", &va->sel, &cause) != 0)
		goto bad;
	if (kind == API_VIEWS_DIFF) {
		api_views_base_params(p, &bp);
		if (params_raw(p, "base_ids") != NULL)
			rc = api_views_sel_parse(env, p, "base_ids", &va->base,
			    &cause);
		else if (!va->sel.by_query) {
			rc = xcause(&cause, "a diff of ids needs base_ids");
		} else
			rc = api_views_sel_parse(env, &bp, "base_ids",
			    &va->base, &cause);
		params_clear(&bp);
		if (rc != 0)
			goto bad;
	}
	if (params_get(p, "sample_type", &va->sample_type, &cause) < 0 ||
	    (rc = api_views_regex(p, "focus", &va->focus, &cause)) < 0)
		goto bad;
	va->has_focus = rc;
	if ((rc = api_views_regex(p, "hide", &va->hide, &cause)) < 0)
		goto bad;
	va->has_hide = rc;
	if (api_views_count(p, "max_nodes", API_VIEWS_MAX_NODES,
	    API_VIEWS_NODES_LIMIT, &va->max_nodes, &cause) < 0 ||
	    api_views_count(p, "limit", API_VIEWS_TOP_LIMIT,
	    API_VIEWS_NODES_LIMIT, &va->limit, &cause) < 0)
		goto bad;
	if (va->sel.by_query && strcmp(va->sel.qa.type, "trace") == 0) {
		xcause(&cause, "trace profiles cannot be merged");
		goto bad;
	}
	job = httpjob_new(env, req, api_views_work, va, api_views_args_free);
	httpjob_watch(job);
	httpjob_submit_merge(job);
	return;
bad:
	reply_error(env, req, 400, "%s", cause);
	free(cause);
	api_views_args_free(va);
}

/* GET /api/0/flamegraph */
void
api_views_flamegraph(struct env *env, struct evhttp_request *req,
    const struct params *p)
{
	api_views_start(env, req, p, API_VIEWS_FLAME);
}

/* GET /api/0/top */
void
api_views_top(struct env *env, struct evhttp_request *req,
    const struct params *p)
{
	api_views_start(env, req, p, API_VIEWS_TOP);
}

/* GET /api/0/diff */
void
api_views_diff(struct env *env, struct evhttp_request *req,
    const struct params *p)
{
	api_views_start(env, req, p, API_VIEWS_DIFF);
}

/* Adds the sample types of one "type/unit,..." list not seen yet. */
static void
api_views_types_add(json_t *arr, json_t *seen, const char *types)
{
	char *copy, *tok, *save, *slash;

	copy = xstrdup(types != NULL ? types : "");
	for (tok = strtok_r(copy, ",", &save); tok != NULL;
	    tok = strtok_r(NULL, ",", &save)) {
		if ((slash = strchr(tok, '/')) != NULL)
			*slash++ = '\0';
		if (json_object_get(seen, tok) != NULL)
			continue;
		json_object_set_new(seen, tok, json_true());
		json_array_append_new(arr, json_pack("{s:s, s:s}", "type", tok,
		    "unit", slash != NULL ? slash : ""));
	}
	free(copy);
}

/*
 * Worker: the sample types the selection's profiles carry (META), and how
 * many profiles it holds: from the window's rollups and profiles when a
 * type is given, else from the newest --max-merge-profiles profiles.
 */
static void
api_views_types_work(struct httpjob *job)
{
	struct params_query *qa = job->arg;
	struct profile_meta *metas = NULL;
	struct store_plan plan;
	char *cause = NULL;
	size_t n = 0, i;
	int64_t profiles;
	json_t *arr = json_array(), *seen = json_object(), *body;
	const char *last = "";
	int rc;

	memset(&plan, 0, sizeof plan);
	if (qa->q.limit == 0)
		qa->q.limit = (size_t)job->env->cfg->max_merge_profiles;
	if (qa->q.type != NULL)
		rc = store_plan(job->env->store, &qa->q, &plan, &cause);
	else
		rc = store_list(job->env->store, &qa->q, &metas, &n, &cause);
	if (rc != 0) {
		httpjob_store_error(job, cause);
		free(cause);
		json_decref(arr);
		json_decref(seen);
		return;
	}
	for (i = 0; i < n; i++)
		api_views_types_add(arr, seen, metas[i].sample_types);
	for (i = 0; i < plan.n; i++)
		api_views_types_add(arr, seen, plan.p[i].sample_types);
	profiles = qa->q.type != NULL ? plan.profiles : (int64_t)n;
	if (json_array_size(arr) > 0)
		last = json_string_value(json_object_get(json_array_get(arr,
		    json_array_size(arr) - 1), "type"));
	body = json_pack("{s:o, s:s, s:I}", "sample_types", arr, "default",
	    last, "profiles", (json_int_t)profiles);
	json_decref(seen);
	store_meta_free_array(metas, n);
	store_free_plan(&plan);
	httpjob_json(job, body);
}

/* Frees a params_query job argument. */
static void
api_views_query_free(void *arg)
{
	params_query_clear(arg);
	free(arg);
}

/* GET /api/0/sample_types */
void
api_views_sample_types(struct env *env, struct evhttp_request *req,
    const struct params *p)
{
	struct params_query *qa = xcalloc(1, sizeof *qa);
	size_t max = (size_t)env->cfg->max_merge_profiles;
	struct params q;
	char *cause = NULL;
	int rc;

	api_views_params_without(p, "limit", &q);
	rc = params_query_parse(&q, clock_now_ns(), 0, 0, max * 1000, qa,
	    &cause);
	params_clear(&q);
	if (rc < 0) {
		reply_error(env, req, 400, "%s", cause);
		free(cause);
		free(qa);
		return;
	}
	httpjob_submit(httpjob_new(env, req, api_views_types_work, qa,
	    api_views_query_free));
}
