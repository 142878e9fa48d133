/*
 * OTLP/HTTP profiles: POST /v1development/profiles, the path an
 * OpenTelemetry collector's otlphttp exporter (and the OTel eBPF
 * profiler) posts the Alpha profiles signal to. The body is an
 * ExportProfilesServiceRequest in protobuf (application/x-protobuf) or
 * JSON (application/json, OTLP's JSON: hex ids), gzipped or not. On a
 * worker it is inflated (--max-inflated), decoded within --merge-memory
 * (proto/otlp.c) and converted (proto/otlp_conv.c): one pprof per
 * (resource, scope, profile), each checked as an upload is. A request
 * that cannot be read, or whose references or expansion are bad, is 400
 * naming the field and nothing is stored; a profile refused on its own
 * (dated outside --retention or --max-future, past --max-samples, a bad
 * label or service) is counted in the answer's partial_success, the
 * others are stored, and the answer comes once they are durable (the
 * I/O pool, like an upload). The answer is ExportProfilesServiceResponse
 * in the request's encoding; errors are profd's JSON envelope.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "collector/api/api_otlp.h"
#include "collector/api/params.h"
#include "collector/config.h"
#include "collector/env.h"
#include "collector/http/httpjob.h"
#include "collector/http/reply.h"
#include "collector/ids.h"
#include "common/budget.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/xmalloc.h"
#include "proto/otlp.h"
#include "proto/otlp_conv.h"
#include "proto/pbjson.h"
#include "proto/pprof.h"
#include "storage/store.h"
#include "storage/store_meta.h"

#define API_OTLP_MAX_PROFILES	1000	/* in one request */
#define API_OTLP_MAX_ERROR	512	/* bytes of partial_success's text */

struct api_otlp_args {
	int			 json;
	int			 gzip;
	struct evbuffer		*body;
	struct profile_meta	*metas;		/* the profiles to store */
	uint8_t			**blobs;
	size_t			*lens;
	size_t			 n;
	int64_t			 rejected;
	char			*why;		/* the first refusal */
};

/* Frees the arguments. */
static void
api_otlp_args_free(void *arg)
{
	struct api_otlp_args *oa = arg;
	size_t i;

	if (oa->body != NULL)
		evbuffer_free(oa->body);
	for (i = 0; i < oa->n; i++) {
		store_meta_clear(&oa->metas[i]);
		free(oa->blobs[i]);
	}
	free(oa->metas);
	free(oa->blobs);
	free(oa->lens);
	free(oa->why);
	free(oa);
}

/* Counts a profile refused on its own (the first reason kept). */
static void
api_otlp_reject(struct api_otlp_args *oa, const struct otlp_profile *op,
    const char *fmt, const char *detail)
{
	oa->rejected++;
	if (oa->why == NULL)
		oa->why = xasprintf("%s%s%.300s", op->where, fmt, detail);
}

/*
 * Fills the META of one converted profile after pprof's upload checks;
 * 0, or 1 when the profile is refused (counted).
 */
static int
api_otlp_meta(struct httpjob *job, struct api_otlp_args *oa,
    const struct otlp_profile *op, int64_t now, struct profile_meta *m)
{
	const struct config *cfg = job->env->cfg;
	struct pprof_summary sum;
	char *cause = NULL;
	size_t i;

	memset(m, 0, sizeof *m);
	if (!params_service_valid(op->service)) {
		api_otlp_reject(oa, op, "service.name is not printable "
		    "UTF-8: ", "");
		return 1;
	}
	for (i = 0; i < op->nlabels; i++)
		if (params_labels_add(&m->labels, &m->nlabels,
		    (size_t)cfg->max_labels, op->labels[i].key,
		    op->labels[i].value, &cause) != 0) {
			api_otlp_reject(oa, op, "attribute ", cause);
			free(cause);
			store_meta_clear(m);
			return 1;
		}
	memset(&sum, 0, sizeof sum);
	if (pprof_check(op->pprof, op->len, cfg->max_inflated, &sum,
	    &cause) != 0) {
		api_otlp_reject(oa, op, "not a valid profile: ", cause);
		free(cause);
		store_meta_clear(m);
		return 1;
	}
	m->created_at = sum.time_nanos > 0 ? sum.time_nanos : now;
	if (sum.samples > cfg->max_samples ||
	    (cfg->retention_ns > 0 && m->created_at < now - cfg->retention_ns) ||
	    (m->created_at > now && m->created_at - now > cfg->max_future_ns)) {
		api_otlp_reject(oa, op, sum.samples > cfg->max_samples ?
		    "more samples than --max-samples" : "dated outside "
		    "--retention or --max-future", "");
		pprof_summary_free(&sum);
		store_meta_clear(m);
		return 1;
	}
	ids_new(now / 1000000, m->id);
	m->service = xstrdup(op->service);
	m->type = xstrdup(op->type);
	m->size = (int64_t)op->len;
	m->samples = sum.samples;
	m->duration_ns = sum.duration_nanos;
	m->sample_types = sum.sample_types != NULL ? sum.sample_types :
	    xstrdup("");
	sum.sample_types = NULL;
	m->totals = sum.totals;
	sum.totals = NULL;
	pprof_summary_free(&sum);
	(void)params_labels_add(&m->labels, &m->nlabels, 0, "converted_from",
	    "otlp", NULL);
	return 0;
}

/* Worker: the body as a decoded request; NULL with the job answered. */
static otlp_request_t *
api_otlp_decode(struct httpjob *job, struct api_otlp_args *oa,
    struct budget_acct *acct)
{
	size_t len = evbuffer_get_length(oa->body), rawlen = len;
	const uint8_t *body = evbuffer_pullup(oa->body, -1);
	ProtobufCMessage *m = NULL;
	ProtobufCAllocator a;
	uint8_t *raw = NULL;
	char *cause = NULL;
	int nomem = 0, rc;

	if (oa->gzip) {
		rc = pprof_inflate_acct(body, len, job->env->cfg->max_inflated,
		    acct, &raw, &rawlen, &cause);
		if (rc != 0) {
			httpjob_error(job, rc == PPROF_ENOMEM ? 503 : 400,
			    "gzip body: %s", cause);
			free(cause);
			return NULL;
		}
		body = raw;
	}
	if (!oa->json)
		m = (ProtobufCMessage *)otlp_decode(body, rawlen, acct, &nomem,
		    &cause);
	else {
		otlp_allocator(acct, &a);
		if (pbjson_decode_text(&opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__descriptor,
		    (const char *)body, rawlen, PBJSON_OTLP, &a, &m, &cause) != 0)
			nomem = budget_acct_fail(acct, NULL) != BUDGET_OK;
	}
	if (raw != NULL)
		budget_dealloc(acct, raw, rawlen);
	if (m == NULL) {
		httpjob_error(job, nomem ? 503 : 400, "%s", cause);
		free(cause);
	}
	return (otlp_request_t *)m;
}

/* Worker: decodes, converts and checks every profile. */
static void
api_otlp_work(struct httpjob *job)
{
	struct api_otlp_args *oa = job->arg;
	struct otlp_limits lim = { job->env->cfg->max_inflated / 8,
	    API_OTLP_MAX_PROFILES };
	struct otlp_profile *ops = NULL;
	struct budget_acct acct;
	otlp_request_t *req;
	int64_t now = clock_now_ns();
	char *cause = NULL;
	size_t nops = 0, i;

	budget_acct_init(&acct, job->env->merge_budget);
	req = api_otlp_decode(job, oa, &acct);
	if (req != NULL && otlp_conv_run(req, &lim, &ops, &nops, &cause) != 0) {
		httpjob_error(job, 400, "%s", cause);
		free(cause);
	}
	otlp_request_free(req, &acct);
	budget_acct_done(&acct);
	if (req == NULL || job->error != NULL)
		return;
	oa->metas = xcalloc(nops + 1, sizeof *oa->metas);
	oa->blobs = xcalloc(nops + 1, sizeof *oa->blobs);
	oa->lens = xcalloc(nops + 1, sizeof *oa->lens);
	for (i = 0; i < nops; i++) {
		if (api_otlp_meta(job, oa, &ops[i], now, &oa->metas[oa->n]) != 0)
			continue;
		oa->blobs[oa->n] = ops[i].pprof;
		oa->lens[oa->n] = ops[i].len;
		ops[i].pprof = NULL;
		oa->n++;
	}
	otlp_conv_free(ops, nops);
}

/* I/O pool: stores every accepted profile, then answers. */
static void
api_otlp_io(struct httpjob *job)
{
	Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceResponse resp =
	    OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_RESPONSE__INIT;
	Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesPartialSuccess ps =
	    OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_PARTIAL_SUCCESS__INIT;
	struct api_otlp_args *oa = job->arg;
	char *cause = NULL, *text = NULL;
	uint8_t *buf;
	size_t i, len;

	for (i = 0; i < oa->n; i++)
		if (store_put(job->env->store, &oa->metas[i], oa->blobs[i],
		    oa->lens[i], &cause) != 0) {
			log_error("%s: %s", __func__, cause);
			httpjob_store_error(job, cause);
			free(cause);
			return;
		}
	if (oa->rejected > 0) {
		ps.rejected_profiles = oa->rejected;
		ps.error_message = oa->why;
		resp.partial_success = &ps;
	}
	if (!oa->json) {
		len = protobuf_c_message_get_packed_size(&resp.base);
		buf = xmalloc(len + 1);
		protobuf_c_message_pack(&resp.base, buf);
		httpjob_bytes(job, buf, len, "application/x-protobuf", NULL);
	} else if (pbjson_encode(&resp.base, PBJSON_OTLP, 64 * 1024, &text,
	    &len, &cause) == 0)
		httpjob_bytes(job, (uint8_t *)text, len, "application/json",
		    NULL);
	else {
		httpjob_error(job, 500, "%s", cause);
		free(cause);
	}
}

/* POST /v1development/profiles */
void
api_otlp(struct env *env, struct evhttp_request *req, const struct params *p)
{
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	const char *ct = evhttp_find_header(in, "Content-Type");
	const char *ce = evhttp_find_header(in, "Content-Encoding");
	struct api_otlp_args *oa;
	struct httpjob *job;
	size_t n;

	(void)p;
	n = ct != NULL ? strcspn(ct, "; \t") : 0;
	if (ct == NULL || (!(n == 22 && strncasecmp(ct,
	    "application/x-protobuf", n) == 0) && !(n == 16 &&
	    strncasecmp(ct, "application/json", n) == 0))) {
		reply_error(env, req, 415, "Content-Type must be "
		    "application/x-protobuf or application/json (OTLP/HTTP)");
		return;
	}
	if (ce != NULL && strcasecmp(ce, "gzip") != 0 &&
	    strcasecmp(ce, "identity") != 0) {
		reply_error(env, req, 415, "Content-Encoding %.32s: only gzip",
		    ce);
		return;
	}
	if (evbuffer_get_length(evhttp_request_get_input_buffer(req)) == 0) {
		reply_error(env, req, 400, "empty body");
		return;
	}
	oa = xcalloc(1, sizeof *oa);
	oa->json = n == 16;
	oa->gzip = ce != NULL && strcasecmp(ce, "gzip") == 0;
	oa->body = evbuffer_new();
	evbuffer_add_buffer(oa->body, evhttp_request_get_input_buffer(req));
	job = httpjob_new(env, req, api_otlp_work, oa, api_otlp_args_free);
	job->io = api_otlp_io;
	httpjob_submit(job);
}
