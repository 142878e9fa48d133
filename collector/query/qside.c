/*
 * One side of a merging query (see qside.h).
 */
#include <stdlib.h>
#include <string.h>

#include "collector/api/api_merge.h"
#include "collector/config.h"
#include "collector/env.h"
#include "collector/http/httpjob.h"
#include "collector/query/qside.h"
#include "common/budget.h"
#include "common/clock.h"
#include "common/xmalloc.h"
#include "storage/store_free.h"
#include "types/v1/types.pb-c.h"
#include "view/view_pick.h"
#include "view/view_tree.h"

/* Bytes of the decoded merge per byte of it (see api_views.c). */
#define QSIDE_DECODE_FACTOR	10

/* Frees a side. */
void
qside_clear(struct qside *s)
{
	free(s->call_site);
	qsel_ptype_clear(&s->pt);
	qsel_clear(&s->sel);
	if (s->prof != NULL)
		pprof_free(s->prof, NULL);
	memset(s, 0, sizeof *s);
}

/*
 * Charges n bytes to --merge-memory; when refused answers 413 (more than
 * the limit) or 503 (other merges hold it now) and returns -1.
 */
int
qside_charge(struct httpjob *job, struct budget_acct *acct, size_t n)
{
	size_t want = 0;

	if (budget_reserve(acct, n) == 0)
		return 0;
	if (budget_acct_fail(acct, &want) == BUDGET_OVER)
		httpjob_error(job, 413, "this query needs more memory than "
		    "--merge-memory allows (%zu bytes more); narrow the window "
		    "or ask for fewer max_nodes", want);
	else
		httpjob_error(job, 503, "this query needs %zu bytes of "
		    "--merge-memory, which other merges hold now; retry later",
		    want);
	return -1;
}

/* The index of the sample type name/unit in p, or -1. */
int
qside_index(const pprof_profile_t *p, const char *name, const char *unit)
{
	const char *n, *u;
	size_t i;

	for (i = 0; i < p->n_sample_type; i++) {
		if ((size_t)p->sample_type[i]->type >= p->n_string_table ||
		    (size_t)p->sample_type[i]->unit >= p->n_string_table)
			continue;
		n = p->string_table[p->sample_type[i]->type];
		u = p->string_table[p->sample_type[i]->unit];
		if (strcmp(n, name) == 0 && strcmp(u, unit) == 0)
			return (int)i;
	}
	return -1;
}

/*
 * Reads a side's request fields: the profile type id, the selector, the
 * window and the call site. -1 with the job answered (400).
 */
int
qside_parse(struct httpjob *job, struct qside *s,
    const char *ptype, const char *selector, int64_t start, int64_t end,
    const Types__V1__StackTraceSelector *sts, const char *what)
{
	char *cause = NULL;
	size_t i;

	memset(s, 0, sizeof *s);
	s->idx = -1;
	if (qsel_ptype_parse(ptype, &s->pt, &cause) != 0 ||
	    qsel_parse(selector, &s->sel, &cause) != 0 ||
	    qsel_window(start, end, clock_now_ns(), &s->f.from, &s->f.to,
	    &cause) != 0) {
		httpjob_error(job, 400, "%s%s", what, cause);
		free(cause);
		return -1;
	}
	s->f.pt = &s->pt;
	s->f.sels = s->sel.n > 0 ? &s->sel : NULL;
	s->f.nsels = s->sel.n > 0 ? 1 : 0;
	if (sts != NULL && sts->n_call_site > 0) {
		if (sts->n_call_site > QSIDE_CALL_SITE_MAX) {
			httpjob_error(job, 400, "%sstack_trace_selector."
			    "call_site: at most %d frames", what,
			    QSIDE_CALL_SITE_MAX);
			return -1;
		}
		s->call_site = xcalloc(sts->n_call_site, sizeof (char *));
		for (i = 0; i < sts->n_call_site; i++)
			s->call_site[i] = sts->call_site[i]->name;
		s->ncall_site = sts->n_call_site;
	}
	return 0;
}

/*
 * Worker: merges a side and decodes the merge: 0 (s->prof NULL when
 * nothing matched), or -1 with the job answered.
 */
int
qside_load(struct httpjob *job, struct budget_acct *acct, struct qside *s)
{
	uint8_t *out;
	size_t outlen, nids = 0;
	char **ids = NULL, *cause = NULL;

	if (qfind_pieces(job, &s->f, &ids, &nids, &s->profiles) != 0)
		return -1;
	if (nids == 0) {
		store_free_strings(ids, 0);	/* (rows: an array of none) */
		return 0;
	}
	if (api_merge_bytes(job, ids, nids, 1, &out, &outlen) != 0) {
		store_free_strings(ids, nids);
		return -1;
	}
	store_free_strings(ids, nids);
	if (qside_charge(job, acct, outlen > SIZE_MAX / QSIDE_DECODE_FACTOR ?
	    SIZE_MAX : outlen * QSIDE_DECODE_FACTOR) != 0) {
		free(out);
		return -1;
	}
	s->prof = pprof_load(out, outlen, job->env->cfg->max_inflated, NULL,
	    &cause);
	free(out);
	if (s->prof == NULL) {
		httpjob_error(job, 500, "cannot read the merged profile: %s",
		    cause);
		free(cause);
		return -1;
	}
	s->idx = qside_index(s->prof, s->pt.sample_type, s->pt.sample_unit);
	return 0;
}

/* max_nodes of a request: 0 is the default; -1 answered if past. */
int
qside_max_nodes(struct httpjob *job, int64_t asked, size_t *out)
{
	if (asked < 0 || asked > QSIDE_NODES_LIMIT) {
		httpjob_error(job, 400, "max_nodes %lld: want 0..%d",
		    (long long)asked, QSIDE_NODES_LIMIT);
		return -1;
	}
	*out = asked == 0 ? QSIDE_MAX_NODES : (size_t)asked;
	return 0;
}

/* Adds a side's samples to a call tree (as the baseline when base). */
void
qside_tree_add(struct view_tree *t, const struct qside *s, int base)
{
	struct view_filter f;

	memset(&f, 0, sizeof f);
	f.call_site = (const char *const *)s->call_site;
	f.ncall_site = s->ncall_site;
	if (s->prof != NULL && s->idx >= 0)
		view_tree_add(t, s->prof, s->idx, &f, base);
}

/*
 * Worker: a side's merge reduced to its sample type and call site, as
 * pprof: the profile is s->prof, changed in place, or an empty profile of
 * that sample type when nothing matched.
 */
pprof_profile_t *
qside_pprof(struct qside *s)
{
	if (s->prof == NULL || s->idx < 0) {
		if (s->prof != NULL)
			pprof_free(s->prof, NULL);
		s->prof = view_pick_empty(s->pt.sample_type, s->pt.sample_unit);
		s->idx = 0;
		return s->prof;
	}
	view_pick_type(s->prof, s->idx);
	s->idx = 0;
	if (s->ncall_site > 0)
		view_tree_keep_call_site(s->prof,
		    (const char *const *)s->call_site, s->ncall_site);
	return s->prof;
}

