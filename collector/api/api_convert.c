/*
 * Conversions at ingest: a folded (or lines) body, or a legacy gperftools
 * CPU profile, becomes the pprof that is checked and stored in its place.
 * The converters' tables and output are charged to --merge-memory, the
 * budget of the daemon's heavy work, so a body of millions of distinct
 * frames is refused (413), not held; the number of distinct frames is
 * capped as well. A gzipped body is looked at through its first inflated
 * bytes only, so ordinary pprof uploads pay nothing here.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "collector/api/api_convert.h"
#include "collector/config.h"
#include "collector/env.h"
#include "collector/http/httpjob.h"
#include <zlib.h>

#include "common/budget.h"
#include "proto/folded.h"
#include "proto/gperf.h"
#include "proto/pprof.h"

/*
 * Answers a conversion that failed for memory: 413 when it alone needs
 * more than --merge-memory (or than limit), else 503.
 */
static void
api_convert_refuse(struct httpjob *job, struct budget_acct *acct,
    const char *what, const char *cause)
{
	size_t	want = 0;

	if (budget_acct_fail(acct, &want) == BUDGET_OVER)
		httpjob_error(job, 413, "%s profile too big to convert: %s "
		    "(--merge-memory)", what, cause);
	else
		httpjob_error(job, 503, "cannot convert the %s profile now: "
		    "%s; retry later", what, cause);
}

/* Converts folded text in place; see the header. */
int
api_convert_folded(struct httpjob *job, struct evbuffer *body,
    const struct folded_options *opt)
{
	struct folded_options	 o = *opt;
	struct budget_acct	 acct;
	size_t			 len = evbuffer_get_length(body);
	const char		*text = (const char *)evbuffer_pullup(body, -1);
	const char		*what = o.lines ? "lines" : "folded";
	uint8_t			*out;
	size_t			 outlen;
	char			*cause = NULL;
	int			 rc;

	o.max_frames = API_CONVERT_MAX_FRAMES;
	o.acct = &acct;
	budget_acct_init(&acct, job->env->merge_budget);
	rc = folded_to_pprof(text, len, &o, &out, &outlen, &cause);
	if (rc == FOLDED_EINVAL)
		httpjob_error(job, 400, "invalid %s profile: %s", what, cause);
	else if (rc == FOLDED_ETOOBIG)
		httpjob_error(job, 413, "%s profile too big to convert: %s",
		    what, cause);
	else if (rc != 0)
		api_convert_refuse(job, &acct, what, cause);
	else {
		evbuffer_drain(body, len);
		evbuffer_add(body, out, outlen);
		budget_dealloc(&acct, out, outlen);
	}
	free(cause);
	budget_acct_done(&acct);
	return rc == 0 ? 0 : -1;
}

/* The first inflated bytes of a gzip body (up to n): how many there are. */
static size_t
api_convert_peek(const uint8_t *gz, size_t len, uint8_t *buf, size_t n)
{
	z_stream	zs;
	size_t		got;

	memset(&zs, 0, sizeof zs);
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
		return 0;
	zs.next_in = (Bytef *)(uintptr_t)gz;
	zs.avail_in = len > (1 << 20) ? 1 << 20 : (uInt)len;
	zs.next_out = buf;
	zs.avail_out = (uInt)n;
	while (zs.avail_out > 0 && inflate(&zs, Z_NO_FLUSH) == Z_OK)
		;
	got = n - zs.avail_out;
	inflateEnd(&zs);
	return got;
}

/* Converts a legacy gperftools CPU profile in place; see the header. */
int
api_convert_gperf(struct httpjob *job, struct evbuffer *body)
{
	struct budget_acct	 acct;
	size_t			 len = evbuffer_get_length(body), rawlen;
	size_t			 outlen;
	const uint8_t		*data = evbuffer_pullup(body, -1);
	uint8_t			 head[40], *raw = NULL, *out;
	char			*cause = NULL;
	int			 gz = pprof_is_gzip(data, len), rc;

	if (gz ? !gperf_detect(head, api_convert_peek(data, len, head,
	    sizeof head)) : !gperf_detect(data, len))
		return 0;
	budget_acct_init(&acct, job->env->merge_budget);
	rawlen = len;
	if (gz && (rc = pprof_inflate_acct(data, len,
	    job->env->cfg->max_inflated, &acct, &raw, &rawlen, &cause)) != 0) {
		if (rc == PPROF_ENOMEM)
			api_convert_refuse(job, &acct, "gperftools", cause);
		else
			httpjob_error(job, rc == PPROF_ETOOBIG ? 413 : 400,
			    "invalid gperftools CPU profile: %s", cause);
		goto out;
	}
	rc = gperf_to_pprof(gz ? raw : data, rawlen, &acct, &out, &outlen,
	    &cause);
	if (rc == GPERF_EINVAL)
		httpjob_error(job, 400, "invalid gperftools CPU profile: %s",
		    cause);
	else if (rc != 0)
		api_convert_refuse(job, &acct, "gperftools", cause);
	else {
		evbuffer_drain(body, len);
		evbuffer_add(body, out, outlen);
		budget_dealloc(&acct, out, outlen);
	}
out:
	if (raw != NULL)
		budget_dealloc(&acct, raw, rawlen == 0 ? 1 : rawlen);
	free(cause);
	budget_acct_done(&acct);
	return rc == 0 ? 1 : -1;
}
