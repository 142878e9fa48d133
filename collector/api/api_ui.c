/*
 * The web UI: GET / and /ui redirect to /ui/, GET /ui/ is index.html and
 * /ui/NAME one of the files compiled in from ui/ (ui_assets.h). Each is
 * sent gzipped to clients that accept it, with an ETag (If-None-Match
 * answers 304) and Cache-Control: no-cache, so a new build's UI is picked
 * up at once and an unchanged one costs a 304. The files hold no data and
 * need no token: the page asks for one when the API answers 401 (the API
 * under /api/ is guarded as always).
 */
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "collector/api/api_ui.h"
#include "collector/api/ui_assets.h"
#include "collector/http/reply.h"
#include "common/xmalloc.h"

/* Whether the client takes gzip (a gzip token not refused with q=0). */
static int
api_ui_gzip_ok(struct evhttp_request *req)
{
	const char *ae = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Accept-Encoding"), *p;

	if (ae == NULL || (p = strstr(ae, "gzip")) == NULL)
		return 0;
	p += 4;
	while (*p == ' ')
		p++;
	return !(strncmp(p, ";q=0", 4) == 0 && strncmp(p, ";q=0.", 5) != 0);
}

/* Redirects to /ui/, keeping the query string. */
static void
api_ui_redirect(struct env *env, struct evhttp_request *req)
{
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *q = uri != NULL ? evhttp_uri_get_query(uri) : NULL;
	char *loc = xasprintf("/ui/%s%s", q != NULL ? "?" : "",
	    q != NULL ? q : "");

	evhttp_add_header(evhttp_request_get_output_headers(req), "Location",
	    loc);
	free(loc);
	reply_static(env, req, 302, NULL, 0, NULL);
}

/* The asset named name, or NULL. */
static const struct ui_asset *
api_ui_find(const char *name)
{
	size_t i;

	for (i = 0; i < ui_assets_n; i++)
		if (strcmp(ui_assets[i].name, name) == 0)
			return &ui_assets[i];
	return NULL;
}

/* GET / and /ui: a redirect; GET /ui/ and /ui/NAME: the files. */
void
api_ui_get(struct env *env, struct evhttp_request *req,
    const struct params *p)
{
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *path = uri != NULL ? evhttp_uri_get_path(uri) : "/";
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	const struct ui_asset *a;
	const char *inm;

	(void)p;
	if (path == NULL || strcmp(path, "/") == 0 || strcmp(path, "/ui") == 0) {
		api_ui_redirect(env, req);
		return;
	}
	a = api_ui_find(strcmp(path, "/ui/") == 0 ? "index.html" : path + 4);
	if (a == NULL) {
		reply_error(env, req, 404, "no such file: %.128s", path);
		return;
	}
	evhttp_add_header(h, "ETag", a->etag);
	evhttp_add_header(h, "Cache-Control", "no-cache");
	evhttp_add_header(h, "Vary", "Accept-Encoding");
	evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
	evhttp_add_header(h, "Content-Security-Policy", "default-src 'self'; "
	    "img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; "
	    "frame-ancestors 'none'");
	inm = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "If-None-Match");
	if (inm != NULL && strstr(inm, a->etag) != NULL) {
		reply_static(env, req, 304, NULL, 0, NULL);
		return;
	}
	if (api_ui_gzip_ok(req)) {
		evhttp_add_header(h, "Content-Encoding", "gzip");
		reply_static(env, req, 200, a->gz, a->gzlen, a->content_type);
	} else
		reply_static(env, req, 200, a->data, a->len, a->content_type);
}
