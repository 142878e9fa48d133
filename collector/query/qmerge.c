/*
 * The merging methods of Pyroscope's query API (see qmerge.h). Each side
 * of a query is merged and decoded by qside.c; what the answer holds
 * beyond the merge (the call tree, the levels) is charged to
 * --merge-memory as profd's own views are. The flame graph is the call
 * tree of function names of the one sample type (view/view_tree.c) in
 * Pyroscope's level format (view/view_levels.c); the pprof answers are
 * the merge with only that sample type kept (qside_pprof).
 */
#include <stdlib.h>
#include <string.h>

#include "collector/env.h"
#include "collector/http/httpjob.h"
#include "collector/query/qconnect.h"
#include "collector/query/qmerge.h"
#include "collector/query/qsel.h"
#include "collector/query/qside.h"
#include "common/budget.h"
#include "common/xmalloc.h"
#include "querier/v1/querier.pb-c.h"
#include "types/v1/types.pb-c.h"
#include "view/view_levels.h"
#include "view/view_ptree.h"
#include "view/view_tree.h"

enum qmerge_kind {
	QMERGE_STACKTRACES,
	QMERGE_PROFILE,
	QMERGE_DIFF,
};

struct qmerge_args {
	enum qmerge_kind	 kind;
	struct qconnect_call	 call;
	struct budget_acct	 acct;	/* held until the reply is sent */
	int			 acct_on;
};

/* Frees the arguments (and the memory the answer held). */
static void
qmerge_args_free(void *arg)
{
	struct qmerge_args *ma = arg;

	if (ma->acct_on)
		budget_acct_done(&ma->acct);
	qconnect_clear(&ma->call);
	free(ma);
}

/* Worker: SelectMergeStacktraces. */
static void
qmerge_stacktraces_work(struct httpjob *job, struct qmerge_args *ma)
{
	Querier__V1__SelectMergeStacktracesResponse resp =
	    QUERIER__V1__SELECT_MERGE_STACKTRACES_RESPONSE__INIT;
	Querier__V1__PprofProfile pp = QUERIER__V1__PPROF_PROFILE__INIT;
	Querier__V1__SelectMergeStacktracesRequest *req;
	ProtobufCMessage *in;
	struct qside s;
	struct view_tree t;
	struct view_levels lv;
	uint8_t *tree = NULL;
	size_t max_nodes, treelen = 0;

	if (qconnect_decode(job, &ma->call,
	    &querier__v1__select_merge_stacktraces_request__descriptor,
	    &in) != 0)
		return;
	req = (Querier__V1__SelectMergeStacktracesRequest *)in;
	memset(&s, 0, sizeof s);
	if (req->format == QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_DOT) {
		httpjob_error(job, 501, "format DOT is not served by profd; "
		    "ask for FLAMEGRAPH, TREE or PPROF");
		goto out;
	}
	if (req->n_profile_id_selector > 0 || req->n_trace_id_selector > 0 ||
	    req->n_span_selector > 0) {
		httpjob_error(job, 501, "profile, trace and span selectors are "
		    "not served by profd");
		goto out;
	}
	if (qside_max_nodes(job, req->max_nodes, &max_nodes) != 0 ||
	    qside_parse(job, &s, req->profile_typeid,
	    req->label_selector, req->start, req->end,
	    req->stack_trace_selector, "") != 0 ||
	    qside_load(job, &ma->acct, &s) != 0)
		goto out;
	if (req->format == QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_PPROF) {
		pp.profile = qside_pprof(&s);
		resp.pprof = &pp;
		qconnect_reply(job, &ma->call, &resp.base);
		goto out;
	}
	view_tree_init(&t);
	qside_tree_add(&t, &s, 0);
	if (qside_charge(job, &ma->acct, view_tree_bytes(&t)) != 0) {
		view_tree_clear(&t);
		goto out;
	}
	if (req->format == QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_TREE) {
		view_ptree_encode(&t, max_nodes, &tree, &treelen);
		resp.tree.data = tree;
		resp.tree.len = treelen;
		qconnect_reply(job, &ma->call, &resp.base);
		free(tree);
	} else {
		view_levels_build(&t, max_nodes, 0, &lv);
		if (qside_charge(job, &ma->acct, view_levels_bytes(&lv)) == 0) {
			resp.flamegraph = view_levels_flamegraph(&lv);
			qconnect_reply(job, &ma->call, &resp.base);
			view_levels_flamegraph_free(resp.flamegraph);
		}
		view_levels_clear(&lv);
	}
	view_tree_clear(&t);
out:
	qside_clear(&s);
	protobuf_c_message_free_unpacked(in, NULL);
}

/* Worker: SelectMergeProfile. */
static void
qmerge_profile_work(struct httpjob *job, struct qmerge_args *ma)
{
	Querier__V1__SelectMergeProfileRequest *req;
	ProtobufCMessage *in;
	struct qside s;
	size_t max_nodes;

	if (qconnect_decode(job, &ma->call,
	    &querier__v1__select_merge_profile_request__descriptor, &in) != 0)
		return;
	req = (Querier__V1__SelectMergeProfileRequest *)in;
	memset(&s, 0, sizeof s);
	if (req->n_profile_id_selector > 0 || req->n_trace_id_selector > 0) {
		httpjob_error(job, 501, "profile and trace selectors are not "
		    "served by profd");
		goto out;
	}
	if (qside_max_nodes(job, req->max_nodes, &max_nodes) != 0 ||
	    qside_parse(job, &s, req->profile_typeid,
	    req->label_selector, req->start, req->end,
	    req->stack_trace_selector, "") != 0 ||
	    qside_load(job, &ma->acct, &s) != 0)
		goto out;
	qconnect_reply(job, &ma->call, &qside_pprof(&s)->base);
out:
	qside_clear(&s);
	protobuf_c_message_free_unpacked(in, NULL);
}

/* Reads one side of a Diff; -1 with the job answered. */
static int
qmerge_diff_side(struct httpjob *job, struct qmerge_args *ma,
    const Querier__V1__SelectMergeStacktracesRequest *r, struct qside *s,
    const char *what)
{
	if (r == NULL) {
		httpjob_error(job, 400, "Diff needs its %.*s side",
		    (int)strcspn(what, ":"), what);
		return -1;
	}
	return qside_parse(job, s, r->profile_typeid, r->label_selector,
	    r->start, r->end, r->stack_trace_selector, what) != 0 ||
	    qside_load(job, &ma->acct, s) != 0 ? -1 : 0;
}

/* Worker: Diff (left is the baseline, right the one compared). */
static void
qmerge_diff_work(struct httpjob *job, struct qmerge_args *ma)
{
	Querier__V1__DiffResponse resp = QUERIER__V1__DIFF_RESPONSE__INIT;
	Querier__V1__DiffRequest *req;
	ProtobufCMessage *in;
	struct qside l, r;
	struct view_tree t;
	struct view_levels lv;
	size_t max_nodes;

	if (qconnect_decode(job, &ma->call,
	    &querier__v1__diff_request__descriptor, &in) != 0)
		return;
	req = (Querier__V1__DiffRequest *)in;
	memset(&l, 0, sizeof l);
	memset(&r, 0, sizeof r);
	if (qmerge_diff_side(job, ma, req->left, &l, "left: ") != 0 ||
	    qmerge_diff_side(job, ma, req->right, &r, "right: ") != 0 ||
	    qside_max_nodes(job, req->right->max_nodes > req->left->max_nodes ?
	    req->right->max_nodes : req->left->max_nodes, &max_nodes) != 0)
		goto out;
	view_tree_init(&t);
	qside_tree_add(&t, &l, 1);
	qside_tree_add(&t, &r, 0);
	if (qside_charge(job, &ma->acct, view_tree_bytes(&t)) == 0) {
		view_levels_build(&t, max_nodes, 1, &lv);
		if (qside_charge(job, &ma->acct, view_levels_bytes(&lv)) == 0) {
			resp.flamegraph = view_levels_flamegraph_diff(&lv);
			qconnect_reply(job, &ma->call, &resp.base);
			view_levels_flamegraph_diff_free(resp.flamegraph);
		}
		view_levels_clear(&lv);
	}
	view_tree_clear(&t);
out:
	qside_clear(&l);
	qside_clear(&r);
	protobuf_c_message_free_unpacked(in, NULL);
}

/* Worker: the method of the job. */
static void
qmerge_work(struct httpjob *job)
{
	struct qmerge_args *ma = job->arg;

	budget_acct_init(&ma->acct, job->env->merge_budget);
	ma->acct_on = 1;
	switch (ma->kind) {
	case QMERGE_STACKTRACES:
		qmerge_stacktraces_work(job, ma);
		break;
	case QMERGE_PROFILE:
		qmerge_profile_work(job, ma);
		break;
	case QMERGE_DIFF:
		qmerge_diff_work(job, ma);
		break;
	}
}

/* Queues a merging method on the merge pool, watched. */
static void
qmerge_start(struct env *env, struct evhttp_request *req,
    enum qmerge_kind kind)
{
	struct qmerge_args *ma = xcalloc(1, sizeof *ma);
	struct httpjob *job;

	ma->kind = kind;
	if (qconnect_begin(env, req, &ma->call) != 0) {
		free(ma);
		return;
	}
	job = httpjob_new(env, req, qmerge_work, ma, qmerge_args_free);
	httpjob_watch(job);
	httpjob_submit_merge(job);
}

/* POST .../SelectMergeStacktraces */
void
qmerge_stacktraces(struct env *env, struct evhttp_request *req)
{
	qmerge_start(env, req, QMERGE_STACKTRACES);
}

/* POST .../SelectMergeProfile */
void
qmerge_profile(struct env *env, struct evhttp_request *req)
{
	qmerge_start(env, req, QMERGE_PROFILE);
}

/* POST .../Diff */
void
qmerge_diff(struct env *env, struct evhttp_request *req)
{
	qmerge_start(env, req, QMERGE_DIFF);
}
