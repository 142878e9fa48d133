/*
 * Connect's unary protocol for the query API (see qconnect.h). Connect
 * sends a unary request's message as the whole body, with Content-Type
 * application/proto or application/json (a "; charset=utf-8" parameter
 * allowed); application/connect+... is its streaming protocol, which
 * these methods do not speak (415, as the protocol asks). Bodies are
 * small (selectors and times), so they are held to QCONNECT_MAX_BODY,
 * compressed and inflated alike, which also bounds what protobuf-c
 * allocates decoding them.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "collector/env.h"
#include "collector/http/httpjob.h"
#include "collector/http/reply.h"
#include "collector/query/qconnect.h"
#include "common/xmalloc.h"
#include "proto/pbjson.h"
#include "proto/pprof.h"

/* Whether the media type ct (parameters allowed) is want. */
static int
qconnect_is_type(const char *ct, const char *want)
{
	size_t n = strlen(want);

	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (strncasecmp(ct, want, n) != 0)
		return 0;
	ct += n;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	return *ct == '\0' || *ct == ';';
}

/* Takes the body of a Connect request; see qconnect.h. */
int
qconnect_begin(struct env *env, struct evhttp_request *req,
    struct qconnect_call *c)
{
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	struct evbuffer *body = evhttp_request_get_input_buffer(req);
	const char *ct = evhttp_find_header(in, "Content-Type");
	const char *ce = evhttp_find_header(in, "Content-Encoding");

	memset(c, 0, sizeof *c);
	if (ct != NULL && (qconnect_is_type(ct, "application/proto") ||
	    qconnect_is_type(ct, "application/x-protobuf")))
		c->enc = QCONNECT_PROTO;
	else if (ct != NULL && qconnect_is_type(ct, "application/json"))
		c->enc = QCONNECT_JSON;
	else {
		reply_error(env, req, 415, "Content-Type must be "
		    "application/proto or application/json (Connect's unary "
		    "protocol), not %.64s", ct != NULL ? ct : "(none)");
		return -1;
	}
	if (ce != NULL && strcasecmp(ce, "gzip") == 0)
		c->gzip = 1;
	else if (ce != NULL && strcasecmp(ce, "identity") != 0) {
		reply_error(env, req, 400, "Content-Encoding %.32s: only gzip "
		    "and identity", ce);
		return -1;
	}
	if (evbuffer_get_length(body) > QCONNECT_MAX_BODY) {
		reply_error(env, req, 413, "request message of %zu bytes; at "
		    "most %d", evbuffer_get_length(body), QCONNECT_MAX_BODY);
		return -1;
	}
	c->body = evbuffer_new();
	evbuffer_add_buffer(c->body, body);	/* moves, no copy */
	return 0;
}

/* Frees what a call holds. */
void
qconnect_clear(struct qconnect_call *c)
{
	if (c->body != NULL)
		evbuffer_free(c->body);
	c->body = NULL;
}

/* Decodes the body; see qconnect.h. */
int
qconnect_decode(struct httpjob *job, const struct qconnect_call *c,
    const ProtobufCMessageDescriptor *d, ProtobufCMessage **out)
{
	size_t len = evbuffer_get_length(c->body), rawlen = len;
	const uint8_t *body = evbuffer_pullup(c->body, -1);
	uint8_t *inflated = NULL;
	const uint8_t *raw = body;
	char *cause = NULL;

	*out = NULL;
	if (c->gzip) {
		if (pprof_inflate(body, len, QCONNECT_MAX_BODY, &inflated,
		    &rawlen, &cause) != 0) {
			httpjob_error(job, 400, "gzip body: %s", cause);
			free(cause);
			return -1;
		}
		raw = inflated;
	}
	if (c->enc == QCONNECT_PROTO) {
		*out = protobuf_c_message_unpack(d, NULL, rawlen,
		    raw != NULL ? raw : (const uint8_t *)"");
		if (*out == NULL)
			httpjob_error(job, 400, "the body is not a %s message "
			    "in protobuf", d->name);
	} else if (pbjson_decode_text(d, (const char *)(raw != NULL ? raw :
	    (const uint8_t *)""), rawlen, 0, NULL, out, &cause) != 0) {
		httpjob_error(job, 400, "the body is not a %s message in "
		    "JSON: %s", d->name, cause);
		free(cause);
		*out = NULL;
	}
	free(inflated);
	return *out != NULL ? 0 : -1;
}

/* Answers m in the call's encoding. */
void
qconnect_reply(struct httpjob *job, const struct qconnect_call *c,
    const ProtobufCMessage *m)
{
	uint8_t *buf;
	size_t len;
	char *text = NULL, *cause = NULL;

	if (c->enc == QCONNECT_PROTO) {
		len = protobuf_c_message_get_packed_size(m);
		buf = xmalloc(len > 0 ? len : 1);
		protobuf_c_message_pack(m, buf);
		httpjob_bytes(job, buf, len, "application/proto", NULL);
		return;
	}
	if (pbjson_encode(m, 0, QCONNECT_MAX_JSON, &text, &len, &cause) != 0) {
		httpjob_error(job, 413, "the answer as JSON: %s; ask for "
		    "application/proto", cause);
		free(cause);
		return;
	}
	httpjob_bytes(job, (uint8_t *)text, len, "application/json", NULL);
}

/* Answers packed protobuf bytes; see qconnect.h. */
void
qconnect_reply_packed(struct httpjob *job, const struct qconnect_call *c,
    const ProtobufCMessageDescriptor *d, uint8_t *raw, size_t len)
{
	ProtobufCMessage *m;

	if (c->enc == QCONNECT_PROTO) {
		httpjob_bytes(job, raw, len, "application/proto", NULL);
		return;
	}
	m = protobuf_c_message_unpack(d, NULL, len, raw != NULL ? raw :
	    (const uint8_t *)"");
	free(raw);
	if (m == NULL) {
		httpjob_error(job, 500, "cannot read back the answer");
		return;
	}
	qconnect_reply(job, c, m);
	protobuf_c_message_free_unpacked(m, NULL);
}
