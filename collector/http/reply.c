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
#include "collector/http/connerr.h"
#include "collector/http/conns.h"
#include "collector/http/reply.h"
#include "collector/metrics.h"
#include "common/log.h"
#include "common/utf8.h"
#include "common/xmalloc.h"

/* Reason phrases for the codes profd uses. */
const char *
reply_reason(int code)
{
	switch (code) {
	case 200: return "OK";
	case 302: return "Found";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 413: return "Payload Too Large";
	case 415: return "Unsupported Media Type";
	case 417: return "Expectation Failed";
	case 422: return "Unprocessable Entity";
	case 429: return "Too Many Requests";
	case 499: return "Client Closed Request";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
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
	connerr_unmark(req);
	if (env->stopping && evhttp_find_header(h, "Connection") == NULL)
		evhttp_add_header(h, "Connection", "close");
	if (code == 503)
		evhttp_add_header(h, "Retry-After", "1");
	evhttp_send_reply(req, code, reply_reason(code), buf);
	evbuffer_free(buf);
}

/* Sends code with static bytes (never freed) and their type (or none). */
void
reply_static(struct env *env, struct evhttp_request *req, int code,
    const void *data, size_t len, const char *content_type)
{
	struct evbuffer *out = evbuffer_new();

	if (len > 0)
		evbuffer_add_reference(out, data, len, NULL, NULL);
	if (content_type != NULL)
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Content-Type", content_type);
	reply_send(env, req, code, out);
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
 * Sends {"code":code,"error":message}; message need not be UTF-8. On a
 * Connect route, Connect's {"code":"invalid_argument","message":...}
 * with the status Connect gives that code.
 */
void
reply_error(struct env *env, struct evhttp_request *req, int code,
    const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = xvasprintf(fmt, ap);
	va_end(ap);
	utf8_clean(msg);
	log_debug("%s: %d %s", __func__, code, msg);
	if (connerr_request(req))
		reply_envelope(env, req, connerr_status(code), json_pack(
		    "{s:s, s:s%}", "code", connerr_code(code), "message", msg,
		    strlen(msg)));
	else
		reply_envelope(env, req, code, json_pack("{s:i, s:s%}", "code",
		    code, "error", msg, strlen(msg)));
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
