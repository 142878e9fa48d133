/*
 * The route table and the request callback. Routing is done in one place:
 * the fixed paths come from the table, GET /api/0/profiles/{id} goes to a
 * download and GET /api/0/profiles/{id}+{id}+... to a merge of those ids.
 * Requests are counted for /metrics here, where the route is known, and
 * the count ends in reply.c, where the status is.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>

#include "collector/api/api_info.h"
#include "collector/api/api_merge.h"
#include "collector/api/api_ops.h"
#include "collector/api/api_profiles.h"
#include "collector/api/params.h"
#include "collector/env.h"
#include "collector/http/auth.h"
#include "collector/http/conns.h"
#include "collector/http/reply.h"
#include "collector/router.h"
#include "collector/metrics.h"
#include "common/log.h"
#include "common/xmalloc.h"

#define ROUTER_PROFILES	"/api/0/profiles/"

struct router {
	struct env	*env;
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
	{ "/api/0/profiles/merge", api_merge_query, NULL, METRICS_ROUTE_MERGE,
	    0 },
	{ "/api/0/services", api_info_services, NULL, METRICS_ROUTE_SERVICES,
	    0 },
	{ "/api/0/labels", api_info_labels, NULL, METRICS_ROUTE_LABELS, 0 },
	{ "/api/0/version", api_info_version, NULL, METRICS_ROUTE_VERSION, 0 },
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
			d->allow = r->post != NULL ? "GET, POST" : "GET";
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

/* Answers 405 with the methods the path takes. */
static void
router_method_not_allowed(struct env *env, struct evhttp_request *req,
    const char *allow)
{
	evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
	    allow);
	reply_error(env, req, 405, "method not allowed (allowed: %s)", allow);
}

/* Checks the bearer token; answers 401/403 itself. Returns 0 if allowed. */
static int
router_authorize(struct router *rt, struct evhttp_request *req, int need)
{
	const char *h = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Authorization");
	int rc = auth_check(rt->auth, h, need);

	if (rc == 401) {
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "WWW-Authenticate", "Bearer realm=\"profd\"");
		reply_error(rt->env, req, 401, h == NULL ? "missing bearer "
		    "token (Authorization: Bearer TOKEN)" :
		    "unknown bearer token");
	} else if (rc == 403)
		reply_error(rt->env, req, 403, "this token lacks the %s scope",
		    need == AUTH_WRITE ? "write" : "read");
	return rc;
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

/* Every request enters here. */
static void
router_request_cb(struct evhttp_request *req, void *arg)
{
	struct router *rt = arg;
	struct env *env = rt->env;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *rawpath = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
	enum evhttp_cmd_type method = evhttp_request_get_command(req);
	struct router_dispatch d;
	struct params p;
	char *path = NULL, *cause = NULL;
	const char *bad;
	int must_close;

	if (rawpath == NULL || *rawpath == '\0')
		rawpath = "/";
	if ((bad = router_check_framing(req, &must_close)) == NULL)
		path = evhttp_uridecode(rawpath, 0, NULL);
	if (path != NULL)
		router_route(path, rawpath, method, &d);
	else {
		memset(&d, 0, sizeof d);
		d.name = METRICS_ROUTE_OTHER;
	}
	metrics_request_start(env->metrics, req, d.name,
	    d.name == METRICS_ROUTE_UPLOAD ?
	    evbuffer_get_length(evhttp_request_get_input_buffer(req)) : 0);

	if (method == EVHTTP_REQ_HEAD)
		metrics_request_no_merge(env->metrics, req);
	conns_request_started(env->conns, req);
	if (bad != NULL) {
		if (must_close && !env->stopping)	/* (reply.c adds it then) */
			evhttp_add_header(evhttp_request_get_output_headers(req),
			    "Connection", "close");
		reply_error(env, req, 400, "%s", bad);
		goto out;
	}
	if (env->stopping) {
		reply_error(env, req, 503, "shutting down");
		goto out;
	}
	if (path == NULL) {
		reply_error(env, req, 400, "bad request path");
		goto out;
	}
	if (rt->auth != NULL && strncmp(path, "/api/", 5) == 0 &&
	    router_authorize(rt, req, method == EVHTTP_REQ_POST ?
	    AUTH_WRITE : AUTH_READ) != 0)
		goto out;
	if (d.fn == NULL && d.ids_fn == NULL) {
		if (d.allow != NULL)
			router_method_not_allowed(env, req, d.allow);
		else
			reply_error(env, req, 404, "no such endpoint: %.128s",
			    path);
		goto out;
	}
	if (params_parse(uri != NULL ? evhttp_uri_get_query(uri) : NULL, &p,
	    &cause) < 0) {
		reply_error(env, req, 400, "%s", cause);
		free(cause);
		goto out;
	}
	if (d.ids_fn != NULL)
		d.ids_fn(env, req, d.ids);
	else
		d.fn(env, req, &p);
	params_clear(&p);
out:
	free(d.ids);
	free(path);
}

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
	auth_free(rt->auth);
	free(rt->auth_file);
	free(rt);
}
