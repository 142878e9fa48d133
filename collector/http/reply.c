/*
 * HTTP replies: the JSON envelope and raw downloads. Every reply of ours
 * passes through reply_send, which is where /metrics counts it and the
 * connection's read deadline restarts. (A shutdown waits for replies still
 * being written through conns_unsent.)
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "collector/env.h"
#include "collector/http/conns.h"
#include "collector/http/reply.h"
#include "collector/metrics.h"
#include "common/log.h"
#include "common/xmalloc.h"

/* Reason phrases for the codes profd uses. */
const char *
reply_reason(int code)
{
	switch (code) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 413: return "Payload Too Large";
	case 422: return "Unprocessable Entity";
	case 499: return "Client Closed Request";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	case 507: return "Insufficient Storage";
	}
	return "Unknown";
}

/* Sends the reply, counting it until written; takes buf. */
static void
reply_send(struct env *env, struct evhttp_request *req, int code,
    struct evbuffer *buf)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);

	metrics_request_end(env->metrics, req, code);
	conns_request_done(env->conns, req);
	if (env->stopping)
		evhttp_add_header(h, "Connection", "close");
	if (code == 503)
		evhttp_add_header(h, "Retry-After", "1");
	evhttp_send_reply(req, code, reply_reason(code), buf);
	evbuffer_free(buf);
}

/* Frees the memory behind an evbuffer reference. */
static void
reply_free_cb(const void *data, size_t len, void *arg)
{
	free((void *)data);
}

/* Serializes an envelope and sends it; steals envelope. */
static void
reply_envelope(struct env *env, struct evhttp_request *req, int code,
    json_t *envelope)
{
	struct evbuffer *buf = evbuffer_new();
	char *s = json_dumps(envelope, JSON_COMPACT);

	json_decref(envelope);
	if (s == NULL) {
		log_error("%s: json_dumps failed", __func__);
		s = xstrdup("{\"code\":500,\"error\":\"cannot encode reply\"}");
		code = 500;
	}
	evbuffer_add_reference(buf, s, strlen(s), reply_free_cb, NULL);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "application/json");
	reply_send(env, req, code, buf);
}

/* Sends {"code":code,"body":body}. */
void
reply_json(struct env *env, struct evhttp_request *req, int code,
    json_t *body)
{
	reply_envelope(env, req, code, json_pack("{s:i, s:o}", "code", code,
	    "body", body));
}

/*
 * Length of the well-formed UTF-8 sequence at s[0..left) (1 to 4), or 0 if
 * there is none: no overlong forms, surrogates or code points above
 * U+10FFFF, as jansson wants.
 */
static size_t
reply_utf8_len(const unsigned char *s, size_t left)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, k;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		lo = s[0] == 0xe0 ? 0xa0 : lo;
		hi = s[0] == 0xed ? 0x9f : hi;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		lo = s[0] == 0xf0 ? 0x90 : lo;
		hi = s[0] == 0xf4 ? 0x8f : hi;
	} else
		return 0;
	if (left < n || s[1] < lo || s[1] > hi)
		return 0;
	for (k = 2; k < n; k++) {
		if (s[k] < 0x80 || s[k] > 0xbf)
			return 0;
	}
	return n;
}

/*
 * Makes msg valid UTF-8 in place, so an error quoting bad input (a path, a
 * key cut in the middle of a character) still encodes: each byte that
 * starts no well-formed sequence becomes '?'.
 */
static void
reply_utf8_clean(char *msg)
{
	unsigned char *s = (unsigned char *)msg;
	size_t i = 0, len = strlen(msg), n;

	while (i < len) {
		if ((n = reply_utf8_len(s + i, len - i)) == 0) {
			s[i] = '?';
			n = 1;
		}
		i += n;
	}
}

/* Sends {"code":code,"error":message}; message need not be UTF-8. */
void
reply_error(struct env *env, struct evhttp_request *req, int code,
    const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = xvasprintf(fmt, ap);
	va_end(ap);
	reply_utf8_clean(msg);
	log_debug("%s: %d %s", __func__, code, msg);
	reply_envelope(env, req, code, json_pack("{s:i, s:s%}", "code", code,
	    "error", msg, strlen(msg)));
	free(msg);
}

/* Sends bytes without copying them. */
void
reply_bytes(struct env *env, struct evhttp_request *req, uint8_t *buf,
    size_t len, const char *content_type, const char *filename)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	struct evbuffer *out = evbuffer_new();
	char *disp;

	if (len > 0)
		evbuffer_add_reference(out, buf, len, reply_free_cb, NULL);
	else
		free(buf);	/* (NULL for a HEAD's empty answer) */
	evhttp_add_header(h, "Content-Type", content_type);
	if (filename != NULL) {
		disp = xasprintf("attachment; filename=\"%s\"", filename);
		evhttp_add_header(h, "Content-Disposition", disp);
		free(disp);
	}
	reply_send(env, req, 200, out);
}
