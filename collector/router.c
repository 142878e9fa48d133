/*
 * The route table and the request callback. Routing is done in one place:
 * the fixed paths come from the table, GET /api/0/profiles/{id} goes to a
 * download and GET /api/0/profiles/{id}+{id}+... to a merge of those ids.
 * Requests are counted for /metrics here, where the route is known, and
 * the count ends in reply.c, where the status is.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>

#include "collector/api/api_info.h"
#include "collector/api/api_ingest.h"
#include "collector/api/api_otlp.h"
#include "collector/api/api_symbolz.h"
#include "collector/query/qconnect.h"
#include "collector/query/qrender.h"
#include "collector/query/qservice.h"
#include "collector/api/api_merge.h"
#include "collector/api/api_merge_post.h"
#include "collector/api/api_ui.h"
#include "collector/api/api_timeline.h"
#include "collector/api/api_views.h"
#include "collector/api/api_ops.h"
#include "collector/api/api_pacing.h"
#include "collector/api/api_profiles.h"
#include "collector/api/params.h"
#include "collector/config.h"
#include "collector/env.h"
#include "collector/http/auth.h"
#include "collector/http/connerr.h"
#include "collector/http/conns.h"
#include "collector/http/evhooks.h"
#include "collector/http/reply.h"
#include "collector/http/tls.h"
#include "collector/router.h"
#include "collector/metrics.h"
#include "common/log.h"
#include "common/xmalloc.h"

#define ROUTER_PROFILES	"/api/0/profiles/"

struct router {
	struct env	*env;
	struct evhttp	*http;
	struct auth	*auth;		/* NULL: no tokens needed */
	char		*auth_file;
};

/* A handler that takes the query parameters. */
typedef void (*router_fn)(struct env *, struct evhttp_request *,
    const struct params *);
/* A handler of GET /api/0/profiles/{ids}. */
typedef void (*router_ids_fn)(struct env *, struct evhttp_request *,
    const char *ids);

struct router_route {
	const char		*path;
	router_fn		 get;
	router_fn		 post;
	enum metrics_route	 get_name;	/* the metrics label */
	enum metrics_route	 post_name;
};

static const struct router_route router_routes[] = {
	{ "/api/0/profiles", api_profiles_list, api_profiles_upload,
	    METRICS_ROUTE_LIST, METRICS_ROUTE_UPLOAD },
	{ "/api/0/profiles/", api_profiles_list, api_profiles_upload,
	    METRICS_ROUTE_LIST, METRICS_ROUTE_UPLOAD },
	{ "/api/0/profiles/merge", api_merge_query, api_merge_post,
	    METRICS_ROUTE_MERGE, METRICS_ROUTE_GET_MERGED },
	{ "/ingest", NULL, api_ingest, 0, METRICS_ROUTE_UPLOAD },
	{ "/pyroscope/ingest", NULL, api_ingest, 0, METRICS_ROUTE_UPLOAD },
	{ "/v1development/profiles", NULL, api_otlp, 0, METRICS_ROUTE_UPLOAD },
	{ "/pyroscope/render", qrender_render, NULL, METRICS_ROUTE_RENDER, 0 },
	{ "/symbolz", api_symbolz, api_symbolz, METRICS_ROUTE_OTHER,
	    METRICS_ROUTE_OTHER },
	{ "/pyroscope/render-diff", qrender_diff, NULL, METRICS_ROUTE_RENDER,
	    0 },
	{ "/api/0/services", api_info_services, NULL, METRICS_ROUTE_SERVICES,
	    0 },
	{ "/api/0/labels", api_info_labels, NULL, METRICS_ROUTE_LABELS, 0 },
	{ "/api/0/version", api_info_version, NULL, METRICS_ROUTE_VERSION, 0 },
	{ "/api/0/flamegraph", api_views_flamegraph, NULL,
	    METRICS_ROUTE_FLAMEGRAPH, 0 },
	{ "/api/0/top", api_views_top, NULL, METRICS_ROUTE_TOP, 0 },
	{ "/api/0/diff", api_views_diff, NULL, METRICS_ROUTE_DIFF, 0 },
	{ "/api/0/sample_types", api_views_sample_types, NULL,
	    METRICS_ROUTE_SAMPLE_TYPES, 0 },
	{ "/api/0/timeline", api_timeline, NULL, METRICS_ROUTE_TIMELINE, 0 },
	{ "/api/0/agents/poll", api_pacing_poll, api_pacing_poll,
	    METRICS_ROUTE_POLL, METRICS_ROUTE_POLL },
	{ "/metrics", api_ops_metrics, NULL, METRICS_ROUTE_METRICS, 0 },
	{ "/healthz", api_ops_healthz, NULL, METRICS_ROUTE_HEALTHZ, 0 },
};

/* What serves one request. */
struct router_dispatch {
	router_fn		 fn;	/* a handler taking params, or */
	router_ids_fn		 ids_fn; /* one of GET /api/0/profiles/{ids} */
	char			*ids;	/* (its ids, decoded; freed), or */
	const char		*allow;	/* 405 with these methods, or 404 */
	enum metrics_route	 name;
};

/*
 * The {ids} segment of GET /api/0/profiles/{ids}, decoded, or NULL when
 * rawpath is not /api/0/profiles/ and one more non-empty segment. The
 * segment is split off before decoding, so "..%2F..%2Fetc" is an id (a
 * malformed one, 400), not a path. A decoded NUL becomes '?', which no
 * id contains.
 */
static char *
router_ids_segment(const char *rawpath)
{
	const char *seg = rawpath, *slash;
	char *head, *ids;
	size_t i, n;
	int ok;

	for (i = 0; i < 4; i++) {	/* "/api", "/0", "/profiles", "/" */
		if ((slash = strchr(seg, '/')) == NULL)
			return NULL;
		seg = slash + 1;
	}
	if (*seg == '\0' || strchr(seg, '/') != NULL)
		return NULL;
	head = xstrndup(rawpath, seg - rawpath);
	ids = evhttp_uridecode(head, 0, NULL);
	ok = ids != NULL && strcmp(ids, ROUTER_PROFILES) == 0;
	free(head);
	free(ids);
	if (!ok || (ids = evhttp_uridecode(seg, 0, &n)) == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		if (ids[i] == '\0')
			ids[i] = '?';
	}
	return ids;
}

/* Finds what handles method on path (decoded) or rawpath. */
static void
router_route(const char *path, const char *rawpath,
    enum evhttp_cmd_type method, struct router_dispatch *d)
{
	int is_get = method == EVHTTP_REQ_GET || method == EVHTTP_REQ_HEAD;
	size_t i, n = sizeof router_routes / sizeof router_routes[0];
	const struct router_route *r;

	memset(d, 0, sizeof *d);
	d->name = METRICS_ROUTE_OTHER;
	for (i = 0; i < n; i++) {
		r = &router_routes[i];
		if (strcmp(path, r->path) != 0)
			continue;
		if (is_get && r->get != NULL) {
			d->fn = r->get;
			d->name = r->get_name;
		} else if (method == EVHTTP_REQ_POST && r->post != NULL) {
			d->fn = r->post;
			d->name = r->post_name;
		} else
			d->allow = r->get == NULL ? "POST" : r->post != NULL ?
			    "GET, POST" : "GET";
		return;
	}
	if (strncmp(path, QCONNECT_PREFIX, strlen(QCONNECT_PREFIX)) == 0) {
		if (method == EVHTTP_REQ_POST) {
			d->fn = qservice_post;
			d->name = METRICS_ROUTE_QUERY;
		} else
			d->allow = "POST";
		return;
	}
	if (strcmp(path, "/") == 0 || strcmp(path, "/ui") == 0 ||
	    strncmp(path, "/ui/", 4) == 0) {
		if (is_get) {
			d->fn = api_ui_get;
			d->name = METRICS_ROUTE_UI;
		} else
			d->allow = "GET";
		return;
	}
	if ((d->ids = router_ids_segment(rawpath)) == NULL)
		return;
	if (!is_get) {
		free(d->ids);
		d->ids = NULL;
		d->allow = "GET";
		return;
	}
	if (strchr(d->ids, '+') != NULL) {
		d->ids_fn = api_merge_ids;
		d->name = METRICS_ROUTE_GET_MERGED;
	} else {
		d->ids_fn = api_profiles_get;
		d->name = METRICS_ROUTE_GET;
	}
}

/* What a request's head decides: its handler, or a refusal. */
struct router_screen {
	struct router_dispatch	 d;
	char			*path;	/* decoded; NULL if it is not */
	int			 code;	/* 0: serve; else refuse with msg */
	char			*msg;
	int			 close;	/* and close the connection */
};

/* Refuses with code and a formatted message. */
static void __attribute__((format(printf, 3, 4)))
router_refuse(struct router_screen *s, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	s->code = code;
	s->msg = xvasprintf(fmt, ap);
	va_end(ap);
}

/* The scope a route needs: write for uploads and agents' polls. */
static int
router_scope(enum metrics_route name)
{
	return name == METRICS_ROUTE_UPLOAD || name == METRICS_ROUTE_POLL ?
	    AUTH_WRITE : AUTH_READ;
}

/* The verified client certificate's name of req's connection, or NULL. */
static const char *
router_peer(struct evhttp_request *req, char *buf, size_t size)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);

	if (evcon == NULL || tls_peer_name(
	    evhttp_connection_get_bufferevent(evcon), buf, size) < 0)
		return NULL;
	return buf;
}

/*
 * Checks the bearer token and the client certificate; refuses (401/403)
 * when together they do not allow need.
 */
static void
router_authorize(struct router *rt, struct evhttp_request *req, int need,
    struct router_screen *s)
{
	const char *h = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Authorization");
	char name[256];
	const char *peer = rt->env->tls != NULL ? router_peer(req, name,
	    sizeof name) : NULL;
	int rc = auth_check_peer(rt->auth, h, peer, need);

	if (rc == 401) {
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "WWW-Authenticate", "Bearer realm=\"profd\"");
		router_refuse(s, 401, h == NULL ? "missing bearer token "
		    "(Authorization: Bearer TOKEN)" : "unknown bearer token");
	} else if (rc == 403)
		router_refuse(s, 403, "this %s lacks the %s scope",
		    h != NULL ? "token" : "certificate",
		    need == AUTH_WRITE ? "write" : "read");
}

/*
 * RFC 9112 6.3: a request whose body length is ambiguous cannot be trusted
 * to end where a proxy in front of us thought it did; what follows could be
 * a smuggled request. libevent takes the first Content-Length and never
 * reads a HEAD's body, so refuse those and close the connection
 * (*must_close set) to drop whatever follows. Equal duplicate
 * Content-Length values are one value (RFC 9110 8.6). libevent already
 * answers Content-Length with Transfer-Encoding itself; this check does not
 * rely on that. An HTTP/1.1 request without Host is refused too, keeping
 * the connection. Returns the problem, or NULL.
 */
static const char *
router_check_framing(struct evhttp_request *req, int *must_close)
{
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	struct evkeyval *h;
	const char *cl = NULL;
	int te = 0;

	*must_close = 1;
	TAILQ_FOREACH(h, in, next) {
		if (evutil_ascii_strcasecmp(h->key, "Content-Length") == 0) {
			if (cl != NULL && strcmp(cl, h->value) != 0)
				return "conflicting Content-Length headers";
			cl = h->value;
		} else if (evutil_ascii_strcasecmp(h->key,
		    "Transfer-Encoding") == 0)
			te = 1;
	}
	if (cl != NULL && te)
		return "both Content-Length and Transfer-Encoding";
	if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD &&
	    (te || (cl != NULL && strcmp(cl, "0") != 0)))
		return "HEAD request with a body";
	*must_close = 0;
	if ((req->major > 1 || (req->major == 1 && req->minor >= 1)) &&
	    evhttp_find_header(in, "Host") == NULL)
		return "HTTP/1.1 request without Host header";
	return NULL;
}

/*
 * Everything the request line and headers decide, in order: framing,
 * shutdown, path, token, route and method. Run when the headers are in
 * (before a body is read) and again when the request is complete.
 */
static void
router_screen(struct router *rt, struct evhttp_request *req,
    struct router_screen *s)
{
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *rawpath = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
	enum evhttp_cmd_type method = evhttp_request_get_command(req);
	const char *bad;

	memset(s, 0, sizeof *s);
	s->d.name = METRICS_ROUTE_OTHER;
	connerr_mark(req);
	if (rawpath == NULL || *rawpath == '\0')
		rawpath = "/";
	if ((bad = router_check_framing(req, &s->close)) != NULL) {
		router_refuse(s, 400, "%s", bad);
		return;
	}
	if ((s->path = evhttp_uridecode(rawpath, 0, NULL)) != NULL)
		router_route(s->path, rawpath, method, &s->d);
	if (rt->env->stopping)
		router_refuse(s, 503, "shutting down");
	else if (s->path == NULL)
		router_refuse(s, 400, "bad request path");
	else if (rt->auth != NULL && (strncmp(s->path, "/api/", 5) == 0 ||
	    s->d.name == METRICS_ROUTE_UPLOAD ||
	    s->d.name == METRICS_ROUTE_QUERY ||
	    s->d.name == METRICS_ROUTE_RENDER) &&
	    (router_authorize(rt, req, router_scope(s->d.name), s),
	    s->code != 0))
		return;
	else if (s->d.fn == NULL && s->d.ids_fn == NULL) {
		if (s->d.allow != NULL) {
			evhttp_add_header(evhttp_request_get_output_headers(req),
			    "Allow", s->d.allow);
			router_refuse(s, 405, "method not allowed (allowed: %s)",
			    s->d.allow);
		} else
			router_refuse(s, 404, "no such endpoint: %.128s",
			    s->path);
	}
}

/* Frees what a screen holds. */
static void
router_screen_clear(struct router_screen *s)
{
	free(s->d.ids);
	free(s->path);
	free(s->msg);
}

/* Answers a refusal; closes the connection when a body was left unread. */
static void
router_reply_refusal(struct env *env, struct evhttp_request *req, int code,
    const char *msg, int close)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);

	if (close && evhttp_find_header(out, "Connection") == NULL)
		evhttp_add_header(out, "Connection", "close");
	reply_error(env, req, code, "%s", msg);
}

/*
 * The headers of a request with a body are in (evhooks): refuse it now,
 * before its body is buffered, if its head or its size already decides
 * it; else ask for its body in pieces, counted against --max-body-memory.
 * A chunked body's length is unknown until its end, so it is counted at
 * --max-body from the start.
 */
static int
router_head_cb(struct evhttp_request *req, void *arg)
{
	struct router *rt = arg;
	struct env *env = rt->env;
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	const char *cl = evhttp_find_header(in, "Content-Length");
	const char *te = evhttp_find_header(in, "Transfer-Encoding");
	struct router_screen s;
	uint64_t len = 0;
	char *end;

	if (te == NULL && (cl == NULL || strcmp(cl, "0") == 0))
		return 0;	/* no body: screened when complete */
	router_screen(rt, req, &s);
	if (cl != NULL && te == NULL) {
		len = strtoull(cl, &end, 10);
		if (*end != '\0')	/* libevent answers 400 itself */
			len = 0;
	}
	if (s.code == 0 && len > env->cfg->max_body)
		router_refuse(&s, 413, "request body of %llu bytes is larger "
		    "than --max-body (%llu)", (unsigned long long)len,
		    (unsigned long long)env->cfg->max_body);
	if (s.code == 0 && (te != NULL ? conns_body_reserve(env->conns, req,
	    env->cfg->max_body) : conns_body_full(env->conns, len) ? -1 : 0))
		router_refuse(&s, 503, "request bodies in flight would pass "
		    "--max-body-memory (%llu bytes): retry later",
		    (unsigned long long)env->cfg->max_body_memory);
	if (s.code != 0) {
		metrics_request_start(env->metrics, req, s.d.name, 0);
		conns_request_started(env->conns, req);
		evhooks_refuse(req, s.code, s.msg);
	} else
		evhooks_watch_body(req);
	router_screen_clear(&s);
	return 0;
}

/* A piece of a body arrived: keep it within --max-body-memory. */
static void
router_body_cb(struct evhttp_request *req, struct evbuffer *buf, void *arg)
{
	struct router *rt = arg;
	struct env *env = rt->env;
	size_t total = req->chunked ? 0 : req->body_size + (size_t)req->ntoread;
	struct router_screen s;
	char *msg;

	if (conns_body_add(env->conns, req, buf, total) == 0)
		return;
	msg = xasprintf("request bodies in flight would pass "
	    "--max-body-memory (%llu bytes): retry later",
	    (unsigned long long)env->cfg->max_body_memory);
	router_screen(rt, req, &s);	/* for its route's name */
	metrics_request_start(env->metrics, req, s.d.name, 0);
	router_screen_clear(&s);
	conns_request_started(env->conns, req);
	evhooks_refuse(req, 503, msg);
	free(msg);
}

/*
 * libevent failed a request itself, or a refusal made before the body
 * ended (reason set) is due: answer in JSON, naming the limit.
 */
static void
router_error_cb(struct evhttp_request *req, int code, const char *reason,
    void *arg)
{
	struct router *rt = arg;
	unsigned long long max = rt->env->cfg->max_body;

	if (reason != NULL)
		reply_error(rt->env, req, code, "%s", reason);
	else if (code == 413 && req->chunked)
		reply_error(rt->env, req, code, "chunked body larger than "
		    "--max-body (%llu)", max);
	else if (code == 413)
		reply_error(rt->env, req, code, "request larger than "
		    "--max-body (%llu) or than 64 KiB of headers", max);
	else if (code == 501)
		reply_error(rt->env, req, code, "method not implemented");
	else if (code == 417)
		reply_error(rt->env, req, code, "unsupported Expect header "
		    "(only 100-continue is)");
	else if (code == 400)
		reply_error(rt->env, req, code, "malformed request line, "
		    "headers or body framing");
	else
		reply_error(rt->env, req, code, "%s", reply_reason(code));
}

/* Every complete request enters here. */
static void
router_request_cb(struct evhttp_request *req, void *arg)
{
	struct router *rt = arg;
	struct env *env = rt->env;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	enum evhttp_cmd_type method = evhttp_request_get_command(req);
	struct evbuffer *body = evhttp_request_get_input_buffer(req);
	struct router_screen s;
	struct params p;
	char *cause = NULL, *msg;
	int code;

	if ((code = evhooks_take_refusal(req, &msg)) != 0) {
		/* refused while its body arrived, all of which had come */
		router_reply_refusal(env, req, code, msg, 1);
		free(msg);
		return;
	}
	conns_body_take(env->conns, req, body);
	router_screen(rt, req, &s);
	metrics_request_start(env->metrics, req, s.d.name,
	    s.d.name == METRICS_ROUTE_UPLOAD ? evbuffer_get_length(body) : 0);
	if (method == EVHTTP_REQ_HEAD)
		metrics_request_no_merge(env->metrics, req);
	conns_request_started(env->conns, req);
	if (s.code != 0) {
		router_reply_refusal(env, req, s.code, s.msg,
		    s.close && !env->stopping);
		goto out;
	}
	if (params_parse(uri != NULL ? evhttp_uri_get_query(uri) : NULL, &p,
	    &cause) < 0) {
		reply_error(env, req, 400, "%s", cause);
		free(cause);
		goto out;
	}
	if (s.d.ids_fn != NULL)
		s.d.ids_fn(env, req, s.d.ids);
	else
		s.d.fn(env, req, &p);
	params_clear(&p);
out:
	router_screen_clear(&s);
}

static const struct evhooks_ops router_hooks = {
	router_head_cb, router_body_cb, router_error_cb
};

/* Installs the request callback; loads the tokens. */
struct router *
router_new(struct env *env, struct evhttp *http, const char *auth_file,
    char **cause)
{
	struct router *rt = xcalloc(1, sizeof *rt);

	rt->env = env;
	if (auth_file != NULL) {
		if ((rt->auth = auth_load(auth_file, cause)) == NULL) {
			free(rt);
			return NULL;
		}
		rt->auth_file = xstrdup(auth_file);
	}
	evhttp_set_gencb(http, router_request_cb, rt);
	evhooks_install(http, &router_hooks, rt);
	rt->http = http;
	return rt;
}

/* Re-reads the auth file; keeps the old tokens if the new file is bad. */
void
router_reload_auth(struct router *rt)
{
	struct auth *a;
	char *cause = NULL;

	if (rt == NULL || rt->auth_file == NULL)
		return;
	if ((a = auth_load(rt->auth_file, &cause)) == NULL) {
		log_error("SIGHUP: %s (keeping the old tokens)", cause);
		free(cause);
		return;
	}
	auth_free(rt->auth);
	rt->auth = a;
	log_info("SIGHUP: %d tokens loaded from %s", auth_count(a),
	    rt->auth_file);
}

/* Frees the tokens (after evhttp_free: no request can arrive). */
void
router_free(struct router *rt)
{
	if (rt == NULL)
		return;
	evhooks_remove(rt->http);
	auth_free(rt->auth);
	free(rt->auth_file);
	free(rt);
}
