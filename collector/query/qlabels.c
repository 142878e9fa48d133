/*
 * The listing methods of Pyroscope's query API, on the CPU pool:
 * ProfileTypes (from the window's merge plans: one id per stored
 * (type, sample type)), LabelNames, LabelValues and Series (from the
 * matching rows of the window, qfind.c). Answers are built in an arena
 * and freed with it. Names and values are sorted and unique, as
 * Pyroscope answers them.
 */
#include <stdlib.h>
#include <string.h>

#include "collector/api/params.h"
#include "collector/env.h"
#include "collector/http/httpjob.h"
#include "collector/query/qconnect.h"
#include "collector/query/qfind.h"
#include "collector/query/qlabels.h"
#include "collector/query/qsel.h"
#include "common/arena.h"
#include "common/clock.h"
#include "common/xmalloc.h"
#include "querier/v1/querier.pb-c.h"
#include "storage/store_free.h"
#include "types/v1/types.pb-c.h"

enum qlabels_kind {
	QLABELS_TYPES,
	QLABELS_NAMES,
	QLABELS_VALUES,
	QLABELS_SERIES,
};

struct qlabels_args {
	enum qlabels_kind	 kind;
	struct qconnect_call	 call;
};

/* A growing set of strings, sorted at the end. */
struct qlabels_set {
	char	**v;
	size_t	  n;
};

/* Adds a copy of s. */
static void
qlabels_set_add(struct qlabels_set *s, const char *v)
{
	s->v = xreallocarray(s->v, s->n + 1, sizeof *s->v);
	s->v[s->n++] = xstrdup(v);
}

/* qsort: C strings. */
static int
qlabels_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts the set and drops repeats (and empty strings). */
static void
qlabels_set_sort(struct qlabels_set *s)
{
	size_t i, k = 0;

	if (s->n > 1)
		qsort(s->v, s->n, sizeof *s->v, qlabels_cmp);
	for (i = 0; i < s->n; i++) {
		if (*s->v[i] == '\0' || (k > 0 && strcmp(s->v[k - 1],
		    s->v[i]) == 0)) {
			free(s->v[i]);
			continue;
		}
		s->v[k++] = s->v[i];
	}
	s->n = k;
}

/* Frees a set. */
static void
qlabels_set_free(struct qlabels_set *s)
{
	store_free_strings(s->v, s->n);
	memset(s, 0, sizeof *s);
}

/* Frees the arguments. */
static void
qlabels_args_free(void *arg)
{
	struct qlabels_args *la = arg;

	qconnect_clear(&la->call);
	free(la);
}

/*
 * Parses matchers[] into *sels (*nparsed of them, even on error); -1
 * with the job answered.
 */
static int
qlabels_matchers(struct httpjob *job, char **m, size_t n, struct qsel **sels,
    size_t *nparsed)
{
	char *cause = NULL;
	size_t i;

	*sels = xcalloc(n + 1, sizeof **sels);
	*nparsed = 0;
	for (i = 0; i < n; i++) {
		if (qsel_parse(m[i], &(*sels)[i], &cause) != 0) {
			httpjob_error(job, 400, "matchers[%zu]: %s", i, cause);
			free(cause);
			return -1;
		}
		*nparsed = i + 1;
	}
	return 0;
}

/* How many selectors count: none when one of them selects everything. */
static size_t
qlabels_effective(const struct qsel *sels, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (sels[i].n == 0)
			return 0;
	return n;
}

/* Frees parsed matchers (all n parsed). */
static void
qlabels_sels_free(struct qsel *sels, size_t n)
{
	size_t i;

	for (i = 0; sels != NULL && i < n; i++)
		qsel_clear(&sels[i]);
	free(sels);
}

/* A window from milliseconds; -1 with the job answered. */
static int
qlabels_window(struct httpjob *job, int64_t start, int64_t end,
    struct qfind *f)
{
	char *cause = NULL;

	if (qsel_window(start, end, clock_now_ns(), &f->from, &f->to,
	    &cause) != 0) {
		httpjob_error(job, 400, "%s", cause);
		free(cause);
		return -1;
	}
	return 0;
}

/* A copy of s in the arena. */
static char *
qlabels_str(struct arena *a, const char *s)
{
	char *v = arena_alloc(a, strlen(s) + 1);

	strcpy(v, s);
	return v;
}

/* A string array of the set, in the arena. */
static char **
qlabels_strv(struct arena *a, const struct qlabels_set *s)
{
	char **v = arena_alloc(a, (s->n + 1) * sizeof *v);
	size_t i;

	for (i = 0; i < s->n; i++)
		v[i] = qlabels_str(a, s->v[i]);
	return v;
}

/* Worker: ProfileTypes. */
static void
qlabels_types(struct httpjob *job, struct qlabels_args *la)
{
	Querier__V1__ProfileTypesResponse resp =
	    QUERIER__V1__PROFILE_TYPES_RESPONSE__INIT;
	ProtobufCMessage *in;
	Querier__V1__ProfileTypesRequest *req;
	struct qlabels_set ids = { 0 };
	struct qsel_ptype pt;
	struct qfind f;
	struct arena *a;
	Types__V1__ProfileType *t;
	const char *ptyp, *punit;
	char *cause = NULL;
	size_t i;

	if (qconnect_decode(job, &la->call,
	    &querier__v1__profile_types_request__descriptor, &in) != 0)
		return;
	req = (Querier__V1__ProfileTypesRequest *)in;
	memset(&f, 0, sizeof f);
	if (qlabels_window(job, req->start, req->end, &f) != 0 ||
	    qfind_types(job, &f, &ids.v, &ids.n) != 0) {
		protobuf_c_message_free_unpacked(in, NULL);
		return;
	}
	protobuf_c_message_free_unpacked(in, NULL);
	qlabels_set_sort(&ids);
	a = arena_new(0);
	resp.profile_types = arena_alloc(a, (ids.n + 1) *
	    sizeof *resp.profile_types);
	for (i = 0; i < ids.n; i++) {
		if (qsel_ptype_parse(ids.v[i], &pt, &cause) != 0) {
			free(cause);	/* an id of ours always parses */
			continue;
		}
		t = arena_alloc(a, sizeof *t);
		types__v1__profile_type__init(t);
		t->id = qlabels_str(a, ids.v[i]);
		t->name = qlabels_str(a, pt.name);
		t->sample_type = qlabels_str(a, pt.sample_type);
		t->sample_unit = qlabels_str(a, pt.sample_unit);
		qsel_ptype_period(pt.type, pt.sample_type, pt.sample_unit,
		    &ptyp, &punit);
		t->period_type = qlabels_str(a, ptyp);
		t->period_unit = qlabels_str(a, punit);
		resp.profile_types[resp.n_profile_types++] = t;
		qsel_ptype_clear(&pt);
	}
	qconnect_reply(job, &la->call, &resp.base);
	arena_free(a);
	qlabels_set_free(&ids);
}

/* The label names of a candidate, into set. */
static void
qlabels_names_of(const struct qfind_cand *c, struct qlabels_set *set)
{
	size_t i;

	qlabels_set_add(set, QSEL_SERVICE);
	qlabels_set_add(set, QSEL_PROFILE_TYPE);
	qlabels_set_add(set, QSEL_NAME);
	for (i = 0; i < c->m->nlabels; i++)
		qlabels_set_add(set, c->m->labels[i].key);
}

/*
 * Worker: names (name NULL) or a name's values for a window with more
 * rows than a listing reads: from the store's label tables for the
 * services the matchers admit, whatever the time, other matchers not
 * applied (README, "Grafana"). 0, or -1 answered.
 */
static int
qlabels_fallback(struct httpjob *job, const struct qfind *f, const char *name,
    struct qlabels_set *set)
{
	char **v = NULL, *colon;
	size_t n = 0, i;
	int rc;

	if (name == NULL) {
		qlabels_set_add(set, QSEL_SERVICE);
		qlabels_set_add(set, QSEL_PROFILE_TYPE);
		qlabels_set_add(set, QSEL_NAME);
		rc = qfind_labels(job, f, NULL, &v, &n);
	} else if (strcmp(name, QSEL_SERVICE) == 0)
		rc = qfind_services(job, f, &v, &n);
	else if (strcmp(name, QSEL_PROFILE_TYPE) == 0 ||
	    strcmp(name, QSEL_NAME) == 0) {
		rc = qfind_types(job, f, &v, &n);
		for (i = 0; rc == 0 && strcmp(name, QSEL_NAME) == 0 && i < n;
		    i++)
			if ((colon = strchr(v[i], ':')) != NULL)
				*colon = '\0';	/* __name__: the id's NAME */
	} else
		rc = qfind_labels(job, f, name, &v, &n);
	if (rc != 0)
		return -1;
	for (i = 0; i < n; i++)
		qlabels_set_add(set, v[i]);
	store_free_strings(v, n);
	return 0;
}

/* Worker: LabelNames or LabelValues. */
static void
qlabels_names(struct httpjob *job, struct qlabels_args *la)
{
	Types__V1__LabelNamesResponse resp =
	    TYPES__V1__LABEL_NAMES_RESPONSE__INIT;
	ProtobufCMessage *in;
	Types__V1__LabelNamesRequest *nreq = NULL;
	Types__V1__LabelValuesRequest *vreq = NULL;
	struct qlabels_set set = { 0 };
	struct qsel *sels = NULL;
	struct qfind f;
	struct qfind_cand *c = NULL;
	struct profile_meta *rows = NULL;
	struct arena *a;
	size_t nc = 0, nrows = 0, i, nsels = 0;
	int values = la->kind == QLABELS_VALUES, rc;


	if (qconnect_decode(job, &la->call, values ?
	    &types__v1__label_values_request__descriptor :
	    &types__v1__label_names_request__descriptor, &in) != 0)
		return;
	memset(&f, 0, sizeof f);
	if (values) {
		vreq = (Types__V1__LabelValuesRequest *)in;
		if (*vreq->name == '\0') {
			httpjob_error(job, 400, "LabelValues needs a name");
			goto out;
		}
	} else
		nreq = (Types__V1__LabelNamesRequest *)in;
	if (qlabels_matchers(job, values ? vreq->matchers : nreq->matchers,
	    values ? vreq->n_matchers : nreq->n_matchers, &sels, &nsels) != 0)
		goto out;
	f.sels = sels;
	f.nsels = qlabels_effective(sels, nsels);
	f.soft = 1;
	if (qlabels_window(job, values ? vreq->start : nreq->start,
	    values ? vreq->end : nreq->end, &f) != 0 ||
	    (rc = qfind_cands(job, &f, &c, &nc, &rows, &nrows)) < 0)
		goto out;
	if (rc == 1 && qlabels_fallback(job, &f, values ? vreq->name : NULL,
	    &set) != 0)
		goto out;
	for (i = 0; i < nc; i++) {
		if (values)
			qlabels_set_add(&set, qfind_value(&c[i], vreq->name));
		else
			qlabels_names_of(&c[i], &set);
	}
	qfind_free(c, nc, rows, nrows);
	qlabels_set_sort(&set);
	a = arena_new(0);
	resp.names = qlabels_strv(a, &set);
	resp.n_names = set.n;
	/* LabelValuesResponse is the same message under another name
	 * (one field: repeated string names = 1). */
	if (values)
		resp.base.descriptor = &types__v1__label_values_response__descriptor;
	qconnect_reply(job, &la->call, &resp.base);
	arena_free(a);
	qlabels_set_free(&set);
out:
	qlabels_sels_free(sels, nsels);
	protobuf_c_message_free_unpacked(in, NULL);
}

/* Appends name and value to a series key, each length-prefixed. */
static void
qlabels_key_add(char **key, size_t *len, const char *name, const char *value)
{
	char *add = xasprintf("%zu:%s%zu:%s", strlen(name), name,
	    strlen(value), value);
	size_t n = strlen(add);

	*key = xreallocarray(*key, *len + n + 1, 1);
	memcpy(*key + *len, add, n + 1);
	*len += n;
	free(add);
}

/* Whether name is among the asked names (none asked: all). */
static int
qlabels_wanted(char **names, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return 1;
	return n == 0;
}

/* The key of a candidate's label set: its pairs sorted by name. */
static char *
qlabels_series_key(const struct qfind_cand *c, char **names, size_t nn)
{
	struct qlabels_set set = { 0 };
	char *key = xstrdup("");
	size_t len = 0, i;

	qlabels_names_of(c, &set);
	qlabels_set_sort(&set);
	for (i = 0; i < set.n; i++)
		if (qlabels_wanted(names, nn, set.v[i]))
			qlabels_key_add(&key, &len, set.v[i],
			    qfind_value(c, set.v[i]));
	qlabels_set_free(&set);
	return key;
}

/* Reads one length-prefixed string of a key into the arena. */
static const char *
qlabels_key_next(struct arena *a, const char *p, char **out)
{
	char *end;
	size_t n = strtoul(p, &end, 10);

	*out = arena_alloc(a, n + 1);
	memcpy(*out, end + 1, n);
	(*out)[n] = '\0';
	return end + 1 + n;
}

/* A Labels message of a key, in the arena. */
static Types__V1__Labels *
qlabels_key_labels(struct arena *a, const char *key)
{
	Types__V1__Labels *l = arena_alloc(a, sizeof *l);
	Types__V1__LabelPair *p;
	const char *k;
	size_t n = 0;

	for (k = key; *k != '\0'; n++) {
		k = strchr(k, ':') + 1 + strtoul(k, NULL, 10);
		k = strchr(k, ':') + 1 + strtoul(k, NULL, 10);
	}
	types__v1__labels__init(l);
	l->labels = arena_alloc(a, (n + 1) * sizeof *l->labels);
	for (k = key; *k != '\0'; ) {
		p = arena_alloc(a, sizeof *p);
		types__v1__label_pair__init(p);
		k = qlabels_key_next(a, k, &p->name);
		k = qlabels_key_next(a, k, &p->value);
		l->labels[l->n_labels++] = p;
	}
	return l;
}

/* Worker: Series. */
static void
qlabels_series(struct httpjob *job, struct qlabels_args *la)
{
	Querier__V1__SeriesResponse resp = QUERIER__V1__SERIES_RESPONSE__INIT;
	ProtobufCMessage *in;
	Querier__V1__SeriesRequest *req;
	struct qlabels_set keys = { 0 };
	struct qsel *sels = NULL;
	struct qfind f;
	struct qfind_cand *c = NULL;
	struct profile_meta *rows = NULL;
	struct arena *a;
	size_t nc = 0, nrows = 0, i, nsels = 0;

	if (qconnect_decode(job, &la->call,
	    &querier__v1__series_request__descriptor, &in) != 0)
		return;
	req = (Querier__V1__SeriesRequest *)in;
	memset(&f, 0, sizeof f);
	if (qlabels_matchers(job, req->matchers, req->n_matchers, &sels,
	    &nsels) != 0)
		goto out;
	f.sels = sels;
	f.nsels = qlabels_effective(sels, nsels);
	if (qlabels_window(job, req->start, req->end, &f) != 0 ||
	    qfind_cands(job, &f, &c, &nc, &rows, &nrows) != 0)
		goto out;
	for (i = 0; i < nc; i++) {
		keys.v = xreallocarray(keys.v, keys.n + 1, sizeof *keys.v);
		keys.v[keys.n++] = qlabels_series_key(&c[i], req->label_names,
		    req->n_label_names);
	}
	qfind_free(c, nc, rows, nrows);
	qlabels_set_sort(&keys);
	a = arena_new(0);
	resp.labels_set = arena_alloc(a, (keys.n + 1) *
	    sizeof *resp.labels_set);
	for (i = 0; i < keys.n; i++)
		resp.labels_set[resp.n_labels_set++] = qlabels_key_labels(a,
		    keys.v[i]);
	qconnect_reply(job, &la->call, &resp.base);
	arena_free(a);
	qlabels_set_free(&keys);
out:
	qlabels_sels_free(sels, nsels);
	protobuf_c_message_free_unpacked(in, NULL);
}

/* Worker: the method of the job. */
static void
qlabels_work(struct httpjob *job)
{
	struct qlabels_args *la = job->arg;

	switch (la->kind) {
	case QLABELS_TYPES:
		qlabels_types(job, la);
		break;
	case QLABELS_NAMES:
	case QLABELS_VALUES:
		qlabels_names(job, la);
		break;
	case QLABELS_SERIES:
		qlabels_series(job, la);
		break;
	}
}

/* Queues a listing method on the CPU pool. */
static void
qlabels_start(struct env *env, struct evhttp_request *req,
    enum qlabels_kind kind)
{
	struct qlabels_args *la = xcalloc(1, sizeof *la);

	la->kind = kind;
	if (qconnect_begin(env, req, &la->call) != 0) {
		free(la);
		return;
	}
	httpjob_submit(httpjob_new(env, req, qlabels_work, la,
	    qlabels_args_free));
}

/* POST .../ProfileTypes */
void
qlabels_profile_types(struct env *env, struct evhttp_request *req)
{
	qlabels_start(env, req, QLABELS_TYPES);
}

/* POST .../LabelNames */
void
qlabels_label_names(struct env *env, struct evhttp_request *req)
{
	qlabels_start(env, req, QLABELS_NAMES);
}

/* POST .../LabelValues */
void
qlabels_label_values(struct env *env, struct evhttp_request *req)
{
	qlabels_start(env, req, QLABELS_VALUES);
}

/* POST .../Series */
void
qlabels_series_method(struct env *env, struct evhttp_request *req)
{
	qlabels_start(env, req, QLABELS_SERIES);
}
