/*
 * Pyroscope's POST /ingest, so that the Python, Ruby, Node.js, Java, Rust
 * and Go SDKs that push to Grafana Pyroscope can push to profd. The query
 * names the application, type and labels ("APP.TYPE{k=v}", pyro_name.c),
 * the window (from, until) and the body's format: folded stacks (the
 * default) or lines, converted to pprof at ingest; pprof, as the body
 * itself or as the part "profile" of a multipart/form-data body, with
 * its sample_type_config (pyro_config.c) and prev_profile. The
 * upload then goes the way of any other (api_profiles.c): checked on a
 * worker, stored, and answered 200 with an empty body as Pyroscope does.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "collector/api/api_ingest.h"
#include "collector/api/api_profiles.h"
#include "collector/api/params.h"
#include "collector/api/pyro_config.h"
#include "collector/api/pyro_name.h"
#include "collector/config.h"
#include "collector/env.h"
#include "collector/http/httpjob.h"
#include "collector/http/multipart.h"
#include "collector/http/reply.h"
#include "common/budget.h"
#include "common/clock.h"
#include "common/xmalloc.h"
#include "proto/pprof.h"
#include "proto/pprof_delta.h"

#define API_INGEST_RATE_DEFAULT	100	/* Hz: Pyroscope's default */

/* The body's format. */
enum api_ingest_format {
	API_INGEST_FOLDED,
	API_INGEST_LINES,
	API_INGEST_PPROF,		/* the body is the pprof */
	API_INGEST_MULTIPART		/* the part "profile" is */
};

/* The query's parameters, decoded. */
struct api_ingest_query {
	char	*name, *from, *until, *format, *rate, *spy, *units, *agg;
};

/* Frees the decoded parameters. */
static void
api_ingest_query_clear(struct api_ingest_query *q)
{
	free(q->name);
	free(q->from);
	free(q->until);
	free(q->format);
	free(q->rate);
	free(q->spy);
	free(q->units);
	free(q->agg);
}

/* The part name of the body, or NULL (absent); -1 and answered if bad. */
static int
api_ingest_part(struct httpjob *job, const uint8_t *body, size_t len,
    const char *boundary, const char *name, const uint8_t **part,
    size_t *plen)
{
	char	*cause = NULL;
	int	 rc;

	rc = multipart_find(body, len, boundary, name, part, plen, &cause);
	if (rc < 0) {
		httpjob_error(job, 400, "%s", cause);
		free(cause);
		return -1;
	}
	if (rc == 0)
		*part = NULL;
	return 0;
}

/*
 * Worker: turns the cumulative sample types of cfg into what happened
 * since prev_profile (prev[0..plen), NULL if absent): 0 with the body
 * replaced, 1 when none is cumulative, or -1 answered.
 */
static int
api_ingest_delta(struct httpjob *job, struct api_profiles_upload *up,
    const struct pyro_config *cfg, const uint8_t *profile, size_t len,
    const uint8_t *prev, size_t plen)
{
	const char		**names;
	struct budget_acct	  acct;
	size_t			  n = 0, i, outlen, want = 0;
	uint8_t			 *out;
	char			 *cause = NULL;
	int			  rc;

	names = xcalloc(cfg->n + 1, sizeof *names);
	for (i = 0; i < cfg->n; i++)
		if (cfg->e[i].cumulative)
			names[n++] = cfg->e[i].name;
	if (n == 0) {
		free(names);
		return 1;
	}
	if (prev == NULL || plen == 0) {
		httpjob_error(job, 422, "sample_type_config marks \"%s\" "
		    "cumulative but there is no prev_profile to take it from "
		    "(current SDKs send deltas)", names[0]);
		free(names);
		return -1;
	}
	budget_acct_init(&acct, job->env->merge_budget);
	rc = pprof_delta(profile, len, prev, plen, names, n,
	    job->env->cfg->max_inflated, &acct, &out, &outlen, &cause);
	if (rc == PPROF_ENOMEM && budget_acct_fail(&acct, &want) ==
	    BUDGET_BUSY)
		httpjob_error(job, 503, "cannot take the delta now: %s; retry "
		    "later", cause);
	else if (rc != 0)
		httpjob_error(job, rc == PPROF_EINVAL ? 400 : 413, "%s%s",
		    cause, rc == PPROF_ENOMEM ? " (--merge-memory)" : "");
	else {
		evbuffer_free(up->body);
		up->body = evbuffer_new();
		evbuffer_add(up->body, out, outlen);
		free(out);
	}
	free(cause);
	free(names);
	budget_acct_done(&acct);
	return rc == 0 ? 0 : -1;
}

/*
 * Worker: a multipart body's part "profile" becomes the body; its
 * sample_type_config may name the type (a bare name) and mark sample
 * types cumulative (then taken from prev_profile).
 */
static int
api_ingest_multipart(struct httpjob *job, struct api_profiles_upload *up,
    int64_t now)
{
	const char		*boundary = up->arg, *type;
	size_t			 len = evbuffer_get_length(up->body), plen;
	size_t			 clen = 0, prevlen = 0;
	const uint8_t		*body = evbuffer_pullup(up->body, -1), *part;
	const uint8_t		*conf, *prev;
	struct pyro_config	 cfg;
	struct evbuffer		*nb;
	char			*cause = NULL;
	int			 rc;

	(void)now;
	if (api_ingest_part(job, body, len, boundary, "profile", &part,
	    &plen) != 0 || api_ingest_part(job, body, len, boundary,
	    "sample_type_config", &conf, &clen) != 0 || api_ingest_part(job,
	    body, len, boundary, "prev_profile", &prev, &prevlen) != 0)
		return -1;
	if (part == NULL || plen == 0) {
		httpjob_error(job, 400, "%s", part == NULL ? "multipart body "
		    "without a part named \"profile\"" : "invalid profile: "
		    "the part \"profile\" is empty");
		return -1;
	}
	memset(&cfg, 0, sizeof cfg);
	if (conf != NULL && pyro_config_parse((const char *)conf, clen, &cfg,
	    &cause) < 0) {
		httpjob_error(job, 400, "%s", cause);
		free(cause);
		return -1;
	}
	if (up->meta.type == NULL && (type = pyro_config_type(&cfg)) != NULL)
		up->meta.type = xstrdup(type);
	rc = api_ingest_delta(job, up, &cfg, part, plen, prev, prevlen);
	pyro_config_clear(&cfg);
	if (rc < 0)
		return -1;
	if (rc == 1) {				/* no delta: the part as is */
		nb = evbuffer_new();
		evbuffer_add(nb, part, plen);
		evbuffer_free(up->body);
		up->body = nb;
	}
	return 0;
}

/* Adds label spy=NAME (Pyroscope's spyName) unless the name has one. */
static int
api_ingest_spy(struct profile_meta *m, const char *spy, size_t max,
    char **cause)
{
	char	*why = NULL;
	size_t	 i;

	for (i = 0; i < m->nlabels; i++)
		if (strcmp(m->labels[i].key, "spy") == 0)
			return 0;
	if (params_labels_add(&m->labels, &m->nlabels, max, "spy", spy,
	    &why) < 0) {
		xcause(cause, "parameter spyName: %s", why);
		free(why);
		return -1;
	}
	return 0;
}

/*
 * The body's format from format= and the Content-Type: 0, 415 for a
 * format profd does not take (yet), or 400, with *cause.
 */
static int
api_ingest_format(const char *format, const char *ct,
    enum api_ingest_format *f, char **boundary, char **cause)
{
	int mp;

	if ((mp = multipart_boundary(ct, boundary, cause)) < 0)
		return 400;
	if (format == NULL || strcmp(format, "pprof") == 0) {
		*f = mp ? API_INGEST_MULTIPART : format != NULL ?
		    API_INGEST_PPROF : API_INGEST_FOLDED;
		return 0;
	}
	if (strcmp(format, "folded") == 0 || strcmp(format, "lines") == 0) {
		*f = format[0] == 'f' ? API_INGEST_FOLDED : API_INGEST_LINES;
		return 0;
	}
	if (strcmp(format, "jfr") == 0) {
		xcause(cause, "format=jfr (Java Flight Recorder) is not "
		    "supported yet: send pprof (async-profiler can write it), "
		    "folded or lines");
		return 415;
	}
	if (strcmp(format, "trie") == 0 || strcmp(format, "tree") == 0 ||
	    strcmp(format, "speedscope") == 0) {
		xcause(cause, "format=%s is not supported: send pprof, folded "
		    "or lines", format);
		return 415;
	}
	xcause(cause, "parameter format: \"%.32s\" is not pprof, folded, "
	    "lines or jfr", format);
	return 400;
}

/*
 * Fills up from the query for a body of format f: 0, or -1 with *cause.
 * Folded text gets its type's sample type (units= may change its unit)
 * and, for a sampled clock (cpu, wall), count x 1e9 / sampleRate ns.
 */
static int
api_ingest_fill(struct env *env, const struct api_ingest_query *q,
    enum api_ingest_format f, struct pyro_name *pn,
    struct api_profiles_upload *up, char **cause)
{
	const struct pyro_name_type *t = pn->type;
	int64_t now = clock_now_ns(), from = now, until, hz;
	const char *unit = NULL;
	char *end, *why = NULL;

	if (q->from != NULL && pyro_name_time(q->from, &from, &why) < 0)
		goto bad_from;
	until = from;
	if (q->until != NULL && pyro_name_time(q->until, &until, &why) < 0) {
		xcause(cause, "parameter until: %s", why);
		free(why);
		return -1;
	}
	if (until < from)
		return xcause(cause, "parameter until is before from");
	/* (The Go SDK sends sampleRate=0, units= and aggregationType= with
	 * nothing: absent, as Pyroscope takes them.) */
	hz = API_INGEST_RATE_DEFAULT;
	if (q->rate != NULL && strcmp(q->rate, "0") != 0 && *q->rate != '\0') {
		hz = strtoll(q->rate, &end, 10);
		if (*end != '\0' || hz < 1 || hz > 1000000000)
			return xcause(cause, "parameter sampleRate: \"%.32s\" "
			    "is not a rate from 1 to 1000000000 per second",
			    q->rate);
	}
	if (q->units != NULL && *q->units != '\0' &&
	    (unit = pyro_name_unit(q->units)) == NULL)
		return xcause(cause, "parameter units: \"%.32s\" is not one "
		    "of samples, objects, bytes, goroutines, lock_samples, "
		    "lock_nanoseconds", q->units);
	if (q->agg != NULL && *q->agg != '\0' && strcmp(q->agg, "sum") != 0 &&
	    strcmp(q->agg, "average") != 0)
		return xcause(cause, "parameter aggregationType: \"%.32s\" is "
		    "not sum or average", q->agg);
	up->created_at = from;
	up->duration_ns = until - from;
	up->meta.service = pn->app;
	pn->app = NULL;
	up->meta.labels = pn->labels;
	up->meta.nlabels = pn->nlabels;
	pn->labels = NULL;
	pn->nlabels = 0;
	if (q->spy != NULL && *q->spy != '\0' && api_ingest_spy(&up->meta,
	    q->spy, (size_t)env->cfg->max_labels, cause) < 0)
		return -1;
	if (f == API_INGEST_PPROF || f == API_INGEST_MULTIPART) {
		/* A bare name: the type from the sample types, once read. */
		if (t != NULL)
			up->meta.type = xstrdup(t->type);
		up->type_of = pyro_name_type_of_samples;
		return 0;
	}
	if (t == NULL && strchr(up->meta.service, '.') != NULL)
		return xcause(cause, "name: \"%s\" does not end in a profile "
		    "type profd knows (cpu, wall, alloc_objects, alloc_space, "
		    "inuse_objects, inuse_space, lock_count, lock_duration, "
		    "goroutines, ...)", strrchr(up->meta.service, '.') + 1);
	if (t == NULL)
		t = pyro_name_type("cpu");
	up->meta.type = xstrdup(t->type);
	up->folded = 1;
	up->fold.lines = f == API_INGEST_LINES;
	up->fold.type = t->sample;
	up->fold.unit = unit != NULL ? unit : t->unit;
	up->fold.duration_nanos = until - from;
	if (t->timed != NULL) {
		up->fold.type2 = t->timed;
		up->fold.unit2 = "nanoseconds";
		up->fold.period = INT64_C(1000000000) / hz;
	}
	return 0;
bad_from:
	xcause(cause, "parameter from: %s", why);
	free(why);
	return -1;
}

/* POST /ingest: reads the query, hands the body to api_profiles_submit. */
void
api_ingest(struct env *env, struct evhttp_request *req,
    const struct params *p)
{
	struct api_profiles_upload *up = xcalloc(1, sizeof *up);
	struct api_ingest_query q;
	struct pyro_name pn;
	enum api_ingest_format f = API_INGEST_FOLDED;
	const char *ct = evhttp_find_header(evhttp_request_get_input_headers(
	    req), "Content-Type");
	char *cause = NULL, *boundary = NULL;
	int code = 400;

	memset(&q, 0, sizeof q);
	memset(&pn, 0, sizeof pn);
	if (params_get(p, "name", &q.name, &cause) < 0 ||
	    params_get(p, "from", &q.from, &cause) < 0 ||
	    params_get(p, "until", &q.until, &cause) < 0 ||
	    params_get(p, "format", &q.format, &cause) < 0 ||
	    params_get(p, "sampleRate", &q.rate, &cause) < 0 ||
	    params_get(p, "spyName", &q.spy, &cause) < 0 ||
	    params_get(p, "units", &q.units, &cause) < 0 ||
	    params_get(p, "aggregationType", &q.agg, &cause) < 0)
		goto refuse;
	if (q.name == NULL || *q.name == '\0') {
		xcause(&cause, "parameter name is required "
		    "(APP.TYPE{key=value,...})");
		goto refuse;
	}
	if ((code = api_ingest_format(q.format, ct, &f, &boundary,
	    &cause)) != 0)
		goto refuse;
	code = 400;
	if (pyro_name_parse(q.name, (size_t)env->cfg->max_labels, &pn,
	    &cause) < 0 || api_ingest_fill(env, &q, f, &pn, up, &cause) < 0)
		goto refuse;
	if (f == API_INGEST_MULTIPART) {
		up->prepare = api_ingest_multipart;
		up->arg = boundary;
		up->arg_free = free;
		boundary = NULL;
	}
	up->empty_reply = 1;
	pyro_name_clear(&pn);
	api_ingest_query_clear(&q);
	api_profiles_submit(env, req, up);
	return;
refuse:
	reply_error(env, req, code, "%s", cause);
	free(cause);
	free(boundary);
	pyro_name_clear(&pn);
	api_ingest_query_clear(&q);
	api_profiles_upload_free(up);
}
