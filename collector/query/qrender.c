/*
 * Pyroscope's legacy HTTP render API, which Grafana's Profiles Drilldown
 * app still calls:
 *   GET /pyroscope/render?query=ID{selector}&from=&until=&max-nodes=
 *       &format=json
 *   GET /pyroscope/render-diff?leftQuery=&leftFrom=&leftUntil=
 *       &rightQuery=&rightFrom=&rightUntil=&max-nodes=
 * The query is a profile type id followed by a label selector (the id
 * may also be the selector's __name__). Times are Pyroscope's: "now",
 * "now-1h" (s, m, h, d, w), or Unix time in seconds or milliseconds
 * (13 digits or more). The answer is Pyroscope's flamebearer JSON (see
 * view/view_levels.c): the merge's flame graph and, for render, the
 * selection's timeline (qseries_sums: one point per step, 0 where no
 * profile). They run on the merge pool, watched, under the merge limits;
 * errors are profd's usual JSON errors.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>
#include <jansson.h>

#include "collector/api/params.h"
#include "collector/env.h"
#include "collector/http/httpjob.h"
#include "collector/http/reply.h"
#include "collector/query/qfind.h"
#include "collector/query/qrender.h"
#include "collector/query/qseries.h"
#include "collector/query/qside.h"
#include "common/budget.h"
#include "common/clock.h"
#include "common/xmalloc.h"
#include "storage/store_bucket.h"
#include "view/view_levels.h"
#include "view/view_tree.h"

#define QRENDER_MS		1000000LL
#define QRENDER_MIN_STEP	10	/* seconds between timeline points */
#define QRENDER_POINTS		1000	/* at most about this many */
#define QRENDER_JSON_NODE	64	/* bytes of JSON per node, about */

/* One side's request: its query and window, as the Connect fields. */
struct qrender_q {
	char	*ptype;		/* profile type id */
	char	*selector;	/* "{...}" */
	int64_t	 start, end;	/* ms */
};

struct qrender_args {
	int			 diff;
	struct qrender_q	 q[2];	/* render: q[0]; diff: left, right */
	int64_t			 max_nodes;
	struct budget_acct	 acct;
	int			 acct_on;
};

/* Frees the arguments. */
static void
qrender_args_free(void *arg)
{
	struct qrender_args *ra = arg;
	int i;

	if (ra->acct_on)
		budget_acct_done(&ra->acct);
	for (i = 0; i < 2; i++) {
		free(ra->q[i].ptype);
		free(ra->q[i].selector);
	}
	free(ra);
}

/*
 * Splits a query "ID{...}" into the id and the selector; an id given as
 * the selector's __name__="ID" matcher is taken out of it. -1 with
 * *cause.
 */
static int
qrender_split(const char *query, struct qrender_q *q, char **cause)
{
	const char *brace = strchr(query, '{');
	char *sel, *name, *at, *end;
	size_t n;

	n = brace != NULL ? (size_t)(brace - query) : strlen(query);
	while (n > 0 && isspace((unsigned char)query[n - 1]))
		n--;
	q->ptype = xstrndup(query, n);
	q->selector = xstrdup(brace != NULL ? brace : "");
	if (*q->ptype != '\0')
		return 0;
	/* {__name__="ID", ...}: the matcher is removed, quotes as written */
	sel = q->selector;
	if ((name = strstr(sel, "__name__")) == NULL)
		return xcause(cause, "query %.200s: no profile type (want "
		    "ID{selector}, e.g. process_cpu:cpu:nanoseconds:cpu:"
		    "nanoseconds{service_name=\"api\"})", query);
	at = name + strlen("__name__");
	while (isspace((unsigned char)*at))
		at++;
	if (*at != '=' || (at[1] != '"' && at[1] != '\'') ||
	    (end = strchr(at + 2, at[1])) == NULL)
		return xcause(cause, "query %.200s: __name__ must be "
		    "=\"ID\"", query);
	free(q->ptype);
	q->ptype = xstrndup(at + 2, (size_t)(end - at - 2));
	end++;
	while (isspace((unsigned char)*end))
		end++;
	if (*end == ',')
		end++;
	memmove(name, end, strlen(end) + 1);
	return 0;
}

/* Parses Pyroscope's time forms into ms; -1 with *cause. */
static int
qrender_time(const char *v, int64_t now_ms, int64_t *out, char **cause)
{
	static const struct { char c; int64_t ms; } units[] = {
		{ 's', 1000LL }, { 'm', 60000LL }, { 'h', 3600000LL },
		{ 'd', 86400000LL }, { 'w', 604800000LL },
	};
	char *end;
	long long n;
	size_t i;

	if (strcmp(v, "now") == 0) {
		*out = now_ms;
		return 0;
	}
	if (strncmp(v, "now-", 4) == 0) {
		n = strtoll(v + 4, &end, 10);
		if (end == v + 4 || n < 0 || n > 1000000000LL ||
		    end[0] == '\0' || end[1] != '\0')
			goto bad;
		for (i = 0; i < sizeof units / sizeof units[0]; i++)
			if (units[i].c == *end) {
				*out = now_ms - n * units[i].ms;
				if (*out < 0)
					goto bad;
				return 0;
			}
		goto bad;
	}
	n = strtoll(v, &end, 10);
	if (*v == '\0' || *end != '\0' || n < 0 || n > 9000000000000000LL)
		goto bad;
	*out = strlen(v) >= 13 ? n : n * 1000;
	if (*out > 9000000000000LL)
		goto bad;
	return 0;
bad:
	return xcause(cause, "bad time %.64s: want now, now-1h (s, m, h, d, "
	    "w) or Unix seconds or milliseconds", v);
}

/* Reads query, from and until (named as given) into q; -1 with *cause. */
static int
qrender_side(const struct params *p, const char *qkey, const char *fkey,
    const char *ukey, struct qrender_q *q, char **cause)
{
	char *query = NULL, *from = NULL, *until = NULL;
	int64_t now = clock_now_ns() / QRENDER_MS;
	int rc = -1;

	if (params_get(p, qkey, &query, cause) <= 0) {
		if (query == NULL && *cause == NULL)
			xcause(cause, "parameter %s is required", qkey);
		goto out;
	}
	if (params_get(p, fkey, &from, cause) < 0 ||
	    params_get(p, ukey, &until, cause) < 0)
		goto out;
	if (qrender_split(query, q, cause) != 0 ||
	    qrender_time(from != NULL ? from : "now-1h", now, &q->start,
	    cause) != 0 ||
	    qrender_time(until != NULL ? until : "now", now, &q->end,
	    cause) != 0)
		goto out;
	if (q->start == 0)
		q->start = 1;	/* 0 would mean "an hour before end" */
	rc = 0;
out:
	free(query);
	free(from);
	free(until);
	return rc;
}

/* Reads max-nodes (or maxNodes); -1 with *cause. */
static int
qrender_max_nodes(const struct params *p, int64_t *out, char **cause)
{
	const char *keys[] = { "max-nodes", "maxNodes" };
	char *v = NULL, *end;
	long long n;
	int i, rc;

	*out = 0;
	for (i = 0; i < 2; i++) {
		if ((rc = params_get(p, keys[i], &v, cause)) < 0)
			return -1;
		if (rc == 0)
			continue;
		n = strtoll(v, &end, 10);
		if (*v == '\0' || *end != '\0' || n < 0 ||
		    n > QSIDE_NODES_LIMIT) {
			free(v);
			return xcause(cause, "parameter %s must be a whole "
			    "number in 0..%d", keys[i], QSIDE_NODES_LIMIT);
		}
		*out = n;
		free(v);
	}
	return 0;
}

/* The timeline of a side: step, first bucket and sums; -1 answered. */
static int
qrender_timeline(struct httpjob *job, const struct qside *s, int64_t *step,
    int64_t *b0, size_t *n, int64_t **sum)
{
	int64_t span = (s->f.to - s->f.from) / 1000000000LL + 1, b1;

	*step = span / QRENDER_POINTS + (span % QRENDER_POINTS != 0);
	if (*step < QRENDER_MIN_STEP)
		*step = QRENDER_MIN_STEP;
	*b0 = store_bucket_of(s->f.from, *step);
	b1 = store_bucket_of(s->f.to, *step);
	*n = (size_t)(b1 - *b0 + 1);
	return qseries_sums(job, &s->f, *step, *b0, *n, sum);
}

/* Worker: body (taken) as the JSON answer, without profd's envelope. */
static void
qrender_reply(struct httpjob *job, json_t *body)
{
	char *text = json_dumps(body, JSON_COMPACT);

	json_decref(body);
	if (text == NULL) {
		httpjob_error(job, 500, "cannot encode the answer");
		return;
	}
	httpjob_bytes(job, (uint8_t *)text, strlen(text), "application/json",
	    NULL);
}

/* Worker: the flamebearer of a render or a render-diff. */
static void
qrender_work(struct httpjob *job)
{
	struct qrender_args *ra = job->arg;
	struct qside s[2];
	struct view_tree t;
	struct view_levels lv;
	int64_t step = 0, b0 = 0, *sum = NULL;
	size_t max_nodes, n = 0;
	int i, nsides = ra->diff ? 2 : 1;
	json_t *body;

	memset(s, 0, sizeof s);
	budget_acct_init(&ra->acct, job->env->merge_budget);
	ra->acct_on = 1;
	if (qside_max_nodes(job, ra->max_nodes, &max_nodes) != 0)
		return;
	for (i = 0; i < nsides; i++)
		if (qside_parse(job, &s[i], ra->q[i].ptype, ra->q[i].selector,
		    ra->q[i].start, ra->q[i].end, NULL, !ra->diff ? "" :
		    i == 0 ? "left: " : "right: ") != 0 ||
		    qside_load(job, &ra->acct, &s[i]) != 0)
			goto out;
	if (ra->diff && strcmp(s[0].pt.id, s[1].pt.id) != 0) {
		httpjob_error(job, 400, "leftQuery and rightQuery must be of "
		    "one profile type");
		goto out;
	}
	if (!ra->diff && qrender_timeline(job, &s[0], &step, &b0, &n,
	    &sum) != 0)
		goto out;
	view_tree_init(&t);
	for (i = 0; i < nsides; i++)
		qside_tree_add(&t, &s[i], ra->diff && i == 0);
	if (qside_charge(job, &ra->acct, view_tree_bytes(&t)) == 0) {
		view_levels_build(&t, max_nodes, ra->diff, &lv);
		if (qside_charge(job, &ra->acct, view_levels_bytes(&lv) +
		    lv.nodes * QRENDER_JSON_NODE) == 0) {
			body = ra->diff ? view_levels_render_diff(&lv,
			    s[0].pt.sample_type, s[0].pt.sample_unit) :
			    view_levels_render(&lv, s[0].pt.sample_type,
			    s[0].pt.sample_unit, b0 * step, step, sum, n);
			qrender_reply(job, body);
		}
		view_levels_clear(&lv);
	}
	view_tree_clear(&t);
out:
	free(sum);
	for (i = 0; i < 2; i++)
		qside_clear(&s[i]);
}

/* Parses a render request and queues it on the merge pool. */
static void
qrender_start(struct env *env, struct evhttp_request *req,
    const struct params *p, int diff)
{
	struct qrender_args *ra = xcalloc(1, sizeof *ra);
	struct httpjob *job;
	char *cause = NULL;

	ra->diff = diff;
	if ((diff ? qrender_side(p, "leftQuery", "leftFrom", "leftUntil",
	    &ra->q[0], &cause) != 0 || qrender_side(p, "rightQuery",
	    "rightFrom", "rightUntil", &ra->q[1], &cause) != 0 :
	    qrender_side(p, "query", "from", "until", &ra->q[0], &cause) !=
	    0) || qrender_max_nodes(p, &ra->max_nodes, &cause) != 0) {
		reply_error(env, req, 400, "%s", cause);
		free(cause);
		qrender_args_free(ra);
		return;
	}
	job = httpjob_new(env, req, qrender_work, ra, qrender_args_free);
	httpjob_watch(job);
	httpjob_submit_merge(job);
}

/* GET /pyroscope/render */
void
qrender_render(struct env *env, struct evhttp_request *req,
    const struct params *p)
{
	qrender_start(env, req, p, 0);
}

/* GET /pyroscope/render-diff */
void
qrender_diff(struct env *env, struct evhttp_request *req,
    const struct params *p)
{
	qrender_start(env, req, p, 1);
}
