/*
 * The store's side of Pyroscope's queries (see qfind.h). A merge's
 * inputs come from store_plan (rollups over long windows) when the store
 * can apply every matcher itself (service_name, and name="value" on
 * labels); any other matcher (!=, =~, !~, an empty value) needs each
 * row's labels, so the inputs are then the matching rows of store_list,
 * bounded by --max-merge-profiles. Listings read rows (store_list) per
 * matching service, at most QFIND_ROWS_PER_MERGE times
 * --max-merge-profiles in all.
 */
#include <stdlib.h>
#include <string.h>

#include "collector/api/api_merge.h"
#include "collector/api/params.h"
#include "collector/config.h"
#include "collector/env.h"
#include "collector/http/httpjob.h"
#include "collector/query/qfind.h"
#include "common/xmalloc.h"
#include "storage/store_free.h"
#include "storage/store_meta.h"

/* Inputs of a window merge per --max-merge-profiles (as api_merge.c). */
#define QFIND_WINDOW_PIECES	100

/* Whether a sample type list holds name/unit. */
int
qfind_has_type(const char *types, const char *name, const char *unit)
{
	size_t nl = strlen(name), ul = strlen(unit), len;
	const char *t = types != NULL ? types : "";

	while (*t != '\0') {
		len = strcspn(t, ",");
		if (len == nl + 1 + ul && memcmp(t, name, nl) == 0 &&
		    t[nl] == '/' && memcmp(t + nl + 1, unit, ul) == 0)
			return 1;
		t += len;
		if (*t == ',')
			t++;
	}
	return 0;
}

/* The services any selector's service_name matchers admit. */
int
qfind_services(struct httpjob *job, const struct qfind *f, char ***out,
    size_t *n)
{
	char **all = NULL, *cause = NULL;
	size_t nall = 0, i, j;

	*out = NULL;
	*n = 0;
	if (store_services(job->env->store, &all, &nall, &cause) != 0) {
		httpjob_store_error(job, cause);
		free(cause);
		return -1;
	}
	*out = xcalloc(nall + 1, sizeof **out);
	for (i = 0; i < nall; i++) {
		for (j = 0; j < f->nsels; j++)
			if (qsel_holds_for(&f->sels[j], QSEL_SERVICE, all[i]))
				break;
		if (f->nsels == 0 || j < f->nsels)
			(*out)[(*n)++] = xstrdup(all[i]);
	}
	store_free_strings(all, nall);
	return 0;
}

/* The store's labels of the only selector (none with several). */
static int
qfind_store_labels(struct httpjob *job, const struct qfind *f,
    struct label **l, size_t *nl, size_t *rest)
{
	char *cause = NULL;

	*l = NULL;
	*nl = *rest = 0;
	if (f->nsels == 0)
		return 0;
	if (f->nsels > 1) {
		*rest = 1;
		return 0;
	}
	if (qsel_store_labels(&f->sels[0], l, nl, rest, &cause) != 0) {
		httpjob_error(job, 400, "%s", cause);
		free(cause);
		return -1;
	}
	return 0;
}

/* Appends the plan's pieces of service that carry pt's sample type. */
static int
qfind_plan(struct httpjob *job, const struct qfind *f, const char *service,
    const struct label *l, size_t nl, char ***ids, char ***types,
    int64_t **weight, size_t *n)
{
	struct store_query q = { service, f->pt->type, f->from, f->to, l, nl,
	    0 };
	struct store_plan plan;
	char *cause = NULL;
	size_t i;

	if (store_plan(job->env->store, &q, &plan, &cause) != 0) {
		httpjob_store_error(job, cause);
		free(cause);
		return -1;
	}
	for (i = 0; i < plan.n; i++) {
		if (!qfind_has_type(plan.p[i].sample_types,
		    f->pt->sample_type, f->pt->sample_unit))
			continue;
		*ids = xreallocarray(*ids, *n + 1, sizeof **ids);
		*types = xreallocarray(*types, *n + 1, sizeof **types);
		*weight = xreallocarray(*weight, *n + 1, sizeof **weight);
		(*ids)[*n] = xstrdup(plan.p[i].id);
		(*types)[*n] = xstrdup(plan.p[i].sample_types != NULL ?
		    plan.p[i].sample_types : "");
		(*weight)[*n] = plan.p[i].profiles;
		(*n)++;
	}
	store_free_plan(&plan);
	return 0;
}

/* Keeps the pieces of the most common set of sample types. */
static void
qfind_pick(char **ids, char **types, int64_t *weight, size_t *n,
    int64_t *profiles)
{
	unsigned char *keep = xcalloc(*n + 1, 1);
	size_t i, k = 0;

	*profiles = 0;
	api_merge_pick_types((const char *const *)types, weight, *n, keep);
	for (i = 0; i < *n; i++) {
		if (keep[i]) {
			ids[k++] = ids[i];
			*profiles += weight[i];
		} else
			free(ids[i]);
	}
	*n = k;
	free(keep);
}

/* Frees the parallel arrays of pieces' sample types and weights. */
static void
qfind_free_types(char **types, size_t n, int64_t *weight)
{
	store_free_strings(types, n);
	free(weight);
}

/*
 * The pieces row by row: the matching profiles themselves, at most
 * --max-merge-profiles. 0 or -1 answered.
 */
static int
qfind_rows_pieces(struct httpjob *job, const struct qfind *f, char ***ids,
    char ***types, int64_t **weight, size_t *n)
{
	struct profile_meta *rows = NULL;
	struct qfind_cand *c = NULL;
	size_t nc = 0, nrows = 0, i;
	size_t max = (size_t)job->env->cfg->max_merge_profiles;

	if (qfind_cands(job, f, &c, &nc, &rows, &nrows) != 0)
		return -1;
	if (nc > max) {
		httpjob_error(job, 413, "%zu profiles match (more than "
		    "--max-merge-profiles, %zu); narrow the window or the "
		    "selector, or use only name=\"value\" matchers, which "
		    "read rollups", nc, max);
		qfind_free(c, nc, rows, nrows);
		return -1;
	}
	*ids = xcalloc(nc + 1, sizeof **ids);
	*types = xcalloc(nc + 1, sizeof **types);
	*weight = xcalloc(nc + 1, sizeof **weight);
	for (i = 0; i < nc; i++) {
		(*ids)[i] = xstrdup(c[i].m->id);
		(*types)[i] = xstrdup(c[i].m->sample_types != NULL ?
		    c[i].m->sample_types : "");
		(*weight)[i] = 1;
	}
	*n = nc;
	qfind_free(c, nc, rows, nrows);
	return 0;
}

/* The ids to merge for f; see qfind.h. */
int
qfind_pieces(struct httpjob *job, const struct qfind *f, char ***ids,
    size_t *nids, int64_t *profiles)
{
	struct label *l = NULL;
	char **services = NULL, **types = NULL;
	int64_t *weight = NULL;
	size_t nsvc = 0, nl = 0, rest = 0, i, n = 0, ntypes;
	size_t max = (size_t)job->env->cfg->max_merge_profiles;
	int rc = -1;

	*ids = NULL;
	*nids = 0;
	*profiles = 0;
	if (qfind_store_labels(job, f, &l, &nl, &rest) != 0)
		return -1;
	if (rest > 0) {
		if (qfind_rows_pieces(job, f, ids, &types, &weight, &n) != 0)
			goto out;
	} else {
		if (qfind_services(job, f, &services, &nsvc) != 0)
			goto out;
		for (i = 0; i < nsvc; i++)
			if (qfind_plan(job, f, services[i], l, nl, ids, &types,
			    &weight, &n) != 0)
				goto out;
		if (n > max * QFIND_WINDOW_PIECES) {
			httpjob_error(job, 413, "the window holds %zu inputs "
			    "not rolled up (more than %d times "
			    "--max-merge-profiles, %zu); narrow it, or wait for "
			    "compaction", n, QFIND_WINDOW_PIECES, max);
			goto out;
		}
	}
	ntypes = n;
	qfind_pick(*ids, types, weight, &n, profiles);
	qfind_free_types(types, ntypes, weight);
	types = NULL;
	weight = NULL;
	*nids = n;
	n = 0;
	rc = 0;
out:
	if (rc != 0) {
		store_free_strings(*ids, n);
		*ids = NULL;
		qfind_free_types(types, n, weight);
	}
	store_free_strings(services, nsvc);
	params_labels_free(l, nl);
	return rc;
}

/* A candidate's value of a label name ("" when it has none). */
const char *
qfind_value(const struct qfind_cand *c, const char *name)
{
	size_t i;

	if (strcmp(name, QSEL_SERVICE) == 0)
		return c->m->service;
	if (strcmp(name, QSEL_PROFILE_TYPE) == 0)
		return c->ptype;
	if (strcmp(name, QSEL_NAME) == 0)
		return qsel_ptype_name(c->m->type);
	for (i = 0; i < c->m->nlabels; i++)
		if (strcmp(c->m->labels[i].key, name) == 0)
			return c->m->labels[i].value;
	return "";
}

/* qsel_lookup_fn over a candidate. */
static const char *
qfind_lookup(void *arg, const char *name)
{
	return qfind_value(arg, name);
}

/* Adds m's candidates (one per sample type) that some selector admits. */
static void
qfind_add_row(const struct qfind *f, const struct profile_meta *m,
    struct qfind_cand **c, size_t *n)
{
	const char *t = m->sample_types != NULL ? m->sample_types : "";
	struct qfind_cand k;
	size_t len, nlen, j;

	while (*t != '\0') {
		len = strcspn(t, ",");
		nlen = strcspn(t, "/");
		if (nlen > len)
			nlen = len;
		memset(&k, 0, sizeof k);
		k.m = m;
		k.st = xstrndup(t, nlen);
		k.unit = xstrndup(t + nlen + (nlen < len), len - nlen -
		    (nlen < len));
		k.ptype = qsel_ptype_id(m->type, k.st, k.unit);
		t += len;
		if (*t == ',')
			t++;
		for (j = 0; j < f->nsels; j++)
			if (qsel_matches(&f->sels[j], qfind_lookup, &k))
				break;
		if ((f->pt != NULL && (strcmp(k.st, f->pt->sample_type) != 0 ||
		    strcmp(k.unit, f->pt->sample_unit) != 0)) ||
		    (f->nsels > 0 && j == f->nsels)) {
			free(k.st);
			free(k.unit);
			free(k.ptype);
			continue;
		}
		*c = xreallocarray(*c, *n + 1, sizeof **c);
		(*c)[(*n)++] = k;
	}
}

/* The candidates of f; see qfind.h. */
int
qfind_cands(struct httpjob *job, const struct qfind *f,
    struct qfind_cand **c, size_t *n, struct profile_meta **rows,
    size_t *nrows)
{
	struct store_query q;
	struct profile_meta *got = NULL;
	struct label *l = NULL;
	char **services = NULL, *cause = NULL;
	size_t nsvc = 0, nl = 0, rest = 0, i, ngot;
	size_t max = QFIND_ROWS_PER_MERGE *
	    (size_t)job->env->cfg->max_merge_profiles;
	int rc = -1;

	*c = NULL;
	*n = 0;
	*rows = NULL;
	*nrows = 0;
	if (qfind_store_labels(job, f, &l, &nl, &rest) != 0 ||
	    qfind_services(job, f, &services, &nsvc) != 0)
		goto out;
	for (i = 0; i < nsvc; i++) {
		memset(&q, 0, sizeof q);
		q.service = services[i];
		q.type = f->pt != NULL ? f->pt->type : NULL;
		q.from = f->from;
		q.to = f->to;
		q.labels = l;
		q.nlabels = nl;
		q.limit = max + 1 - *nrows;
		if (store_list(job->env->store, &q, &got, &ngot, &cause) != 0) {
			httpjob_store_error(job, cause);
			free(cause);
			goto out;
		}
		if (*nrows + ngot > max) {
			store_meta_free_array(got, ngot);
			if (f->soft)
				rc = 1;
			else
				httpjob_error(job, 413, "the window holds more "
				    "than %zu profiles of the selected services "
				    "(%d times --max-merge-profiles); narrow it",
				    max, QFIND_ROWS_PER_MERGE);
			goto out;
		}
		*rows = xreallocarray(*rows, *nrows + ngot + 1, sizeof **rows);
		if (ngot > 0)
			memcpy(*rows + *nrows, got, ngot * sizeof *got);
		*nrows += ngot;
		free(got);	/* the members moved into *rows */
		got = NULL;
	}
	/* The rows stay put from here: candidates point into them. */
	for (i = 0; i < *nrows; i++)
		qfind_add_row(f, &(*rows)[i], c, n);
	rc = 0;
out:
	if (rc != 0) {
		qfind_free(*c, *n, *rows, *nrows);
		*c = NULL;
		*n = 0;
		*rows = NULL;
		*nrows = 0;
	}
	store_free_strings(services, nsvc);
	params_labels_free(l, nl);
	return rc;
}

/* Frees candidates and their rows. */
void
qfind_free(struct qfind_cand *c, size_t n, struct profile_meta *rows,
    size_t nrows)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(c[i].st);
		free(c[i].unit);
		free(c[i].ptype);
	}
	free(c);
	store_meta_free_array(rows, nrows);
}

/* f's timeline from the store's per-minute sums; see qfind.h. */
int
qfind_timeline(struct httpjob *job, const struct qfind *f,
    struct store_timeline *tl)
{
	struct store_query q;
	struct label *l = NULL;
	char **services = NULL, *cause = NULL;
	size_t nsvc = 0, nl = 0, rest = 0, i;
	int rc = -1;

	if (qfind_store_labels(job, f, &l, &nl, &rest) != 0)
		return -1;
	if (rest > 0) {
		params_labels_free(l, nl);
		return 1;
	}
	if (qfind_services(job, f, &services, &nsvc) != 0)
		goto out;
	for (i = 0; i < nsvc; i++) {
		memset(&q, 0, sizeof q);
		q.service = services[i];
		q.type = f->pt->type;
		q.from = f->from;
		q.to = f->to;
		q.labels = l;
		q.nlabels = nl;
		if (store_timeline(job->env->store, &q, tl, &cause) != 0) {
			httpjob_store_error(job, cause);
			free(cause);
			goto out;
		}
	}
	rc = 0;
out:
	store_free_strings(services, nsvc);
	params_labels_free(l, nl);
	return rc;
}

/* Appends the ids of a sample type list ("a/u,b/v") of a profd type. */
static void
qfind_types_add(const char *type, const char *types, char ***ids, size_t *n)
{
	char *copy = xstrdup(types != NULL ? types : ""), *tok, *save, *slash;

	for (tok = strtok_r(copy, ",", &save); tok != NULL;
	    tok = strtok_r(NULL, ",", &save)) {
		if ((slash = strchr(tok, '/')) == NULL)
			continue;
		*slash++ = '\0';
		*ids = xreallocarray(*ids, *n + 1, sizeof **ids);
		(*ids)[(*n)++] = qsel_ptype_id(type, tok, slash);
	}
	free(copy);
}

/* The profile type ids of f's window; see qfind.h. */
int
qfind_types(struct httpjob *job, const struct qfind *f, char ***ids,
    size_t *n)
{
	struct store_query q;
	struct store_plan plan;
	char **services = NULL, *cause = NULL;
	const char *type;
	size_t nsvc = 0, i, k;
	int t, rc = -1;

	*ids = NULL;
	*n = 0;
	if (qfind_services(job, f, &services, &nsvc) != 0)
		return -1;
	for (i = 0; i < nsvc; i++) {
		for (t = 0; t < PARAMS_NTYPES; t++) {
			type = params_type_name(t);
			if (strcmp(type, "trace") == 0)
				continue;
			memset(&q, 0, sizeof q);
			q.service = services[i];
			q.type = type;
			q.from = f->from;
			q.to = f->to;
			if (store_plan(job->env->store, &q, &plan,
			    &cause) != 0) {
				httpjob_store_error(job, cause);
				free(cause);
				goto out;
			}
			for (k = 0; k < plan.n; k++)
				qfind_types_add(type, plan.p[k].sample_types,
				    ids, n);
			store_free_plan(&plan);
		}
	}
	rc = 0;
out:
	if (rc != 0) {
		store_free_strings(*ids, *n);
		*ids = NULL;
		*n = 0;
	}
	store_free_strings(services, nsvc);
	return rc;
}

/* Label keys or values of the services f admits; see qfind.h. */
int
qfind_labels(struct httpjob *job, const struct qfind *f, const char *key,
    char ***out, size_t *n)
{
	char **services = NULL, **got = NULL, *cause = NULL;
	size_t nsvc = 0, ngot = 0, i, k;

	*out = NULL;
	*n = 0;
	if (qfind_services(job, f, &services, &nsvc) != 0)
		return -1;
	for (i = 0; i < nsvc; i++) {
		if (store_labels(job->env->store, services[i], key, &got,
		    &ngot, &cause) != 0) {
			httpjob_store_error(job, cause);
			free(cause);
			store_free_strings(*out, *n);
			*out = NULL;
			*n = 0;
			store_free_strings(services, nsvc);
			return -1;
		}
		*out = xreallocarray(*out, *n + ngot + 1, sizeof **out);
		for (k = 0; k < ngot; k++)
			(*out)[(*n)++] = got[k];
		free(got);	/* the strings moved */
		got = NULL;
	}
	store_free_strings(services, nsvc);
	return 0;
}
