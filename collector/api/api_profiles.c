/*
 * Upload, list and download of single profiles.
 *
 * An upload is checked on a worker (bounded gunzip, decode, validation of
 * every index) before anything is written; only then does the store write
 * the blob and the row, and the 200 goes out once both are durable.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "collector/api/api_profiles.h"
#include "collector/api/api_convert.h"
#include "collector/api/params.h"
#include "collector/config.h"
#include "collector/env.h"
#include "collector/http/httpjob.h"
#include "collector/http/reply.h"
#include "collector/ids.h"
#include "common/clock.h"
#include "common/parse.h"
#include "common/log.h"
#include "common/xmalloc.h"
#include "proto/folded.h"
#include "proto/pprof.h"
#include "storage/store_meta.h"

/* META as JSON: profefe's fields plus size, samples, types, duration. */
static json_t *
api_profiles_meta_json(const struct profile_meta *m)
{
	json_t *labels = json_array(), *types = json_array();
	const char *s, *comma;
	char when[64];
	size_t i;

	for (i = 0; i < m->nlabels; i++)
		json_array_append_new(labels, json_pack("{s:s, s:s}", "key",
		    m->labels[i].key, "value", m->labels[i].value));
	for (s = m->sample_types; s != NULL && *s != '\0';
	    s = *comma ? comma + 1 : comma) {
		comma = strchr(s, ',');
		if (comma == NULL)
			comma = s + strlen(s);
		json_array_append_new(types, json_stringn(s, comma - s));
	}
	clock_format(m->created_at, when, sizeof when);
	return json_pack("{s:s, s:s, s:s, s:o, s:s, s:I, s:I, s:o, s:I}",
	    "id", m->id, "service", m->service, "type", m->type,
	    "labels", labels, "created_at", when, "size", (json_int_t)m->size,
	    "samples", (json_int_t)m->samples, "sample_types", types,
	    "duration_ns", (json_int_t)m->duration_ns);
}

#define API_PROFILES_RATE_DEFAULT	100	/* Hz, as Pyroscope's */

/* Frees an upload's state. */
void
api_profiles_upload_free(void *arg)
{
	struct api_profiles_upload *up = arg;

	store_meta_clear(&up->meta);
	if (up->body != NULL)
		evbuffer_free(up->body);
	if (up->arg_free != NULL)
		up->arg_free(up->arg);
	free(up);
}

/*
 * Refuses (400) a profile dated before the retention window, which would be
 * acknowledged and then swept at once, or further ahead than --max-future,
 * which no time range would reach and no sweep would delete. Returns 1 when
 * it refused.
 */
static int
api_profiles_check_time(struct httpjob *job, int64_t t, int64_t now,
    const char *what)
{
	const struct config *cfg = job->env->cfg;
	char when[64];

	clock_format(t, when, sizeof when);
	if (cfg->retention_ns > 0 && t < now - cfg->retention_ns) {
		httpjob_error(job, 400, "%s (%s) is older than the retention "
		    "(--retention %llds): it would be deleted at once", what,
		    when, (long long)(cfg->retention_ns / 1000000000));
		return 1;
	}
	if (t > now && t - now > cfg->max_future_ns) {
		httpjob_error(job, 400, "%s (%s) is more than %llds ahead of "
		    "the server's clock (--max-future)", what, when,
		    (long long)(cfg->max_future_ns / 1000000000));
		return 1;
	}
	return 0;
}

/* Labels a converted upload converted_from=FROM (replacing any such). */
static void
api_profiles_converted(struct profile_meta *m, const char *from)
{
	size_t	i;

	for (i = 0; i < m->nlabels; i++)
		if (strcmp(m->labels[i].key, "converted_from") == 0) {
			free(m->labels[i].value);
			m->labels[i].value = xstrdup(from);
			return;
		}
	(void)params_labels_add(&m->labels, &m->nlabels, 0, "converted_from",
	    from, NULL);
}

/* Worker: checks the profile and fills in its META. */
static void
api_profiles_upload_work(struct httpjob *job)
{
	struct api_profiles_upload *up = job->arg;
	struct profile_meta *m = &up->meta;
	struct pprof_summary sum;
	size_t len;
	uint8_t *data;
	int64_t now = clock_now_ns();
	char *cause = NULL;
	int rc;

	if (up->prepare != NULL && up->prepare(job, up, now) != 0)
		return;
	if (up->folded) {
		up->fold.time_nanos = up->created_at > 0 ? up->created_at :
		    now;
		if (api_convert_folded(job, up->body, &up->fold) != 0)
			return;
		api_profiles_converted(m, up->fold.lines ? "lines" : "folded");
	} else if (m->type != NULL && strcmp(m->type, "trace") == 0)
		;		/* stored as sent, never converted */
	else if ((rc = api_convert_gperf(job, up->body)) < 0)
		return;
	else if (rc == 1)
		api_profiles_converted(m, "gperftools");
	len = evbuffer_get_length(up->body);
	data = evbuffer_pullup(up->body, -1);
	memset(&sum, 0, sizeof sum);
	if (m->type == NULL || strcmp(m->type, "trace") != 0) {
		rc = pprof_check(data, len, job->env->cfg->max_inflated, &sum,
		    &cause);
		if (rc == PPROF_ENOMEM) {
			httpjob_error(job, 503, "cannot check the profile: %s",
			    cause);
			free(cause);
			return;
		}
		if (rc != 0) {
			httpjob_error(job, rc == PPROF_ETOOBIG ? 413 : 400,
			    "invalid profile: %s", cause);
			free(cause);
			return;
		}
		if (sum.samples > job->env->cfg->max_samples) {
			httpjob_error(job, 413, "profile has %lld samples, more "
			    "than --max-samples (%lld)", (long long)sum.samples,
			    (long long)job->env->cfg->max_samples);
			pprof_summary_free(&sum);
			return;
		}
	}
	if (m->type == NULL)
		m->type = xstrdup(up->type_of(sum.sample_types));
	ids_new(now / 1000000, m->id);
	m->created_at = sum.time_nanos > 0 ? sum.time_nanos :
	    up->created_at > 0 ? up->created_at : now;
	if (api_profiles_check_time(job, m->created_at, now,
	    sum.time_nanos > 0 ? "the profile's time_nanos" : "created_at")) {
		pprof_summary_free(&sum);
		return;
	}
	m->size = (int64_t)len;
	m->samples = sum.samples;
	m->duration_ns = sum.duration_nanos > 0 ? sum.duration_nanos :
	    up->duration_ns;
	m->sample_types = sum.sample_types != NULL ? sum.sample_types :
	    xstrdup("");
	sum.sample_types = NULL;
	m->totals = sum.totals;
	sum.totals = NULL;
	pprof_summary_free(&sum);
}

/* I/O pool: writes blob and row durably, then answers with the META. */
static void
api_profiles_upload_io(struct httpjob *job)
{
	struct api_profiles_upload *up = job->arg;
	struct profile_meta *m = &up->meta;
	size_t len = evbuffer_get_length(up->body);
	uint8_t *data = evbuffer_pullup(up->body, -1);
	char *cause = NULL;

	if (store_put(job->env->store, m, data, len, &cause) != 0) {
		log_error("%s: %s", __func__, cause);
		httpjob_store_error(job, cause);
		free(cause);
		return;
	}
	if (up->empty_reply)
		httpjob_bytes(job, NULL, 0, "text/plain", NULL);
	else
		httpjob_json(job, api_profiles_meta_json(m));
}

/* Reads the upload's parameters into up->meta. */
static int
api_profiles_upload_params(struct env *env, const struct params *p,
    struct api_profiles_upload *up, char **cause)
{
	struct profile_meta *m = &up->meta;
	const char *raw, *dup;
	char *instance = NULL, *created = NULL, *why = NULL, *format = NULL;
	char *rate = NULL, *end;
	int64_t hz = API_PROFILES_RATE_DEFAULT;
	int rc = -1;

	if (params_service_type(p, 1, &m->service, &m->type, cause) < 0 ||
	    params_get(p, "instance_id", &instance, cause) < 0 ||
	    params_get(p, "created_at", &created, cause) < 0 ||
	    params_get(p, "format", &format, cause) < 0 ||
	    params_get(p, "sample_rate", &rate, cause) < 0)
		goto out;
	if (format != NULL && strcmp(format, "pprof") != 0) {
		up->folded = 1;
		up->fold.lines = strcmp(format, "lines") == 0;
		if (!up->fold.lines && strcmp(format, "folded") != 0) {
			xcause(cause, "parameter format: \"%s\" is not pprof, "
			    "folded or lines", format);
			goto out;
		}
	}
	if (rate != NULL) {
		hz = strtoll(rate, &end, 10);
		if (*rate == '\0' || *end != '\0' || hz < 1 ||
		    hz > 1000000000) {
			xcause(cause, "parameter sample_rate: \"%s\" is not "
			    "a rate from 1 to 1000000000 per second", rate);
			goto out;
		}
	}
	/* Folded stacks: counts, and cpu time for a cpu profile. */
	up->fold.type = "samples";
	up->fold.unit = "count";
	if (strcmp(m->type, "cpu") == 0) {
		up->fold.type2 = "cpu";
		up->fold.unit2 = "nanoseconds";
		up->fold.period = INT64_C(1000000000) / hz;
	}
	if ((raw = params_raw(p, "labels")) != NULL &&
	    params_labels(raw, env->cfg->max_labels, &m->labels, &m->nlabels,
	    &why) < 0) {
		xcause(cause, "parameter labels: %s", why);
		goto out;
	}
	if (instance != NULL && *instance != '\0' && params_labels_add(
	    &m->labels, &m->nlabels, (size_t)env->cfg->max_labels,
	    "instance_id", instance, &why) < 0) {
		xcause(cause, "parameter instance_id: %s", why);
		goto out;
	}
	if (params_labels_dup_key(m->labels, m->nlabels, &dup)) {
		xcause(cause, "parameter labels: key \"%s\" given twice", dup);
		goto out;
	}
	if (created != NULL && *created != '\0' &&
	    parse_time(created, clock_now_ns(), &up->created_at, &why) < 0) {
		xcause(cause, "parameter created_at: %s", why);
		goto out;
	}
	rc = 0;
out:
	free(why);
	free(instance);
	free(created);
	free(format);
	free(rate);
	return rc;
}

/* POST /api/0/profiles: checks parameters, hands the body to a worker. */
void
api_profiles_upload(struct env *env, struct evhttp_request *req,
    const struct params *p)
{
	struct api_profiles_upload *up = xcalloc(1, sizeof *up);
	char *cause = NULL;

	if (api_profiles_upload_params(env, p, up, &cause) < 0) {
		reply_error(env, req, 400, "%s", cause);
		free(cause);
		api_profiles_upload_free(up);
		return;
	}
	api_profiles_submit(env, req, up);
}

/* Hands an upload and the request's body to the pool; see the header. */
void
api_profiles_submit(struct env *env, struct evhttp_request *req,
    struct api_profiles_upload *up)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	struct httpjob *job;

	if (evbuffer_get_length(in) == 0) {
		reply_error(env, req, 400, "invalid profile: empty body");
		api_profiles_upload_free(up);
		return;
	}
	up->body = evbuffer_new();
	evbuffer_add_buffer(up->body, in);	/* moves, no copy */
	job = httpjob_new(env, req, api_profiles_upload_work, up,
	    api_profiles_upload_free);
	job->io = api_profiles_upload_io;
	httpjob_submit(job);
}

/* Frees list arguments. */
static void
api_profiles_list_free(void *arg)
{
	params_query_clear(arg);
	free(arg);
}

/* Worker: runs the list query. */
static void
api_profiles_list_work(struct httpjob *job)
{
	struct params_query *qa = job->arg;
	struct profile_meta *metas;
	json_t *arr;
	size_t i, n;
	char *cause = NULL;

	if (store_list(job->env->store, &qa->q, &metas, &n, &cause) != 0) {
		httpjob_store_error(job, cause);
		free(cause);
		return;
	}
	arr = json_array();
	for (i = 0; i < n; i++)
		json_array_append_new(arr, api_profiles_meta_json(&metas[i]));
	store_meta_free_array(metas, n);
	httpjob_json(job, arr);
}

/* GET /api/0/profiles */
void
api_profiles_list(struct env *env, struct evhttp_request *req,
    const struct params *p)
{
	struct params_query *qa = xcalloc(1, sizeof *qa);
	char *cause = NULL;

	if (params_query_parse(p, clock_now_ns(), 0, 1000, 100000, qa,
	    &cause) < 0) {
		reply_error(env, req, 400, "%s", cause);
		free(cause);
		free(qa);
		return;
	}
	httpjob_submit(httpjob_new(env, req, api_profiles_list_work, qa, api_profiles_list_free));
}

/* Worker: reads one stored profile. */
static void
api_profiles_get_work(struct httpjob *job)
{
	const char *id = job->arg;
	uint8_t *buf;
	size_t len;
	char *cause = NULL;
	int rc;

	rc = store_read_blob(job->env->store, id, &buf, &len, &cause);
	if (rc == 1)
		httpjob_error(job, 404, "profile %s not found", id);
	else if (rc != 0) {
		httpjob_store_error(job, cause);
		free(cause);
	} else
		httpjob_bytes(job, buf, len, "application/octet-stream", NULL);
}

/* GET /api/0/profiles/{id} */
void
api_profiles_get(struct env *env, struct evhttp_request *req,
    const char *ids)
{
	if (!ids_valid(ids, strlen(ids))) {
		reply_error(env, req, 400, "malformed profile id \"%.64s\" "
		    "(want 20 characters of [0-9a-v])", ids);
		return;
	}
	httpjob_submit(httpjob_new(env, req, api_profiles_get_work, xstrdup(ids), free));
}
