/*
 * Unit tests of collector/router.c on a real event loop: the router
 * installed on an evhttp server on 127.0.0.1 (ephemeral port) with the
 * real API handlers, a store in a temporary directory, real pools,
 * connection tracking and metrics, driven by raw loopback clients.
 * Without tokens: 404 in the JSON envelope for unknown paths, 405 with
 * Allow for wrong methods, 400 for a bad query string, requests reaching
 * their handlers (version, healthz, the list and get routes), 503 with
 * Retry-After and Connection: close for everything while env.stopping,
 * and /metrics counting requests by route and status. With an auth file:
 * 401 with WWW-Authenticate for a missing or unknown token, 403 for a
 * token without the scope, 200 with the right one, /healthz and /metrics
 * open to all, router_reload_auth taking a new file and keeping the old
 * tokens when the new file is bad, and router_new refusing a bad file.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <unistd.h>
#include <ftw.h>

#include <event2/event.h>
#include <event2/http.h>
#include <event2/thread.h>
#include <jansson.h>

#include "collector/config.h"
#include "collector/env.h"
#include "collector/http/conns.h"
#include "collector/router.h"
#include "collector/metrics.h"
#include "common/log.h"
#include "common/pool.h"
#include "storage/store.h"
#include "test/lib/httptest.h"
#include "test/lib/tap.h"

#define READER	"reader-token-0001"
#define WRITER	"writer-token-0002"
#define ADMIN	"admin-token-00003"
#define OTHER	"other-token-00004"

/* A router on its own evhttp server, with its own environment. */
struct test_server {
	struct env			 env;
	struct evhttp			*http;
	struct router			*router;
	int				 port;
};

static struct event_base *base;
static struct config cfg;
static struct store *store;
static char test_router_dir[] = "/tmp/profd-test-router.XXXXXX";

/* Writes text to the auth file in the temporary directory; its path. */
static const char *
test_router_auth_file(const char *text)
{
	static char path[300];
	FILE *f;

	snprintf(path, sizeof path, "%s/tokens", test_router_dir);
	if ((f = fopen(path, "w")) == NULL)
		httptest_bail("cannot write the auth file");
	fputs(text, f);
	fclose(f);
	return path;
}

/* A server routing with auth_file (NULL: no tokens). */
static struct test_server *
test_router_server(const char *auth_file)
{
	struct test_server *s = calloc(1, sizeof *s);
	char *cause = NULL;

	if (s == NULL)
		httptest_bail("out of memory");
	TAILQ_INIT(&s->env.watched);
	s->env.cfg = &cfg;
	s->env.base = base;
	s->env.store = store;
	s->env.metrics = metrics_new();
	s->env.pool = pool_new(base, 1, 16);
	s->env.io_pool = pool_new(base, 1, 16);
	s->http = evhttp_new(base);
	s->env.conns = conns_new(base, s->http, 64, 60);
	if ((s->router = router_new(&s->env, s->http, auth_file, &cause)) ==
	    NULL) {
		printf("# %s\n", cause);
		httptest_bail("router_new failed");
	}
	conns_set_listener(s->env.conns, httptest_bind(s->http, &s->port));
	return s;
}

/* Frees the server in server_free's order. */
static void
test_router_server_free(struct test_server *s)
{
	pool_free(s->env.pool);
	pool_free(s->env.io_pool);
	evhttp_free(s->http);
	conns_free(s->env.conns);
	router_free(s->router);
	metrics_free(s->env.metrics);
	free(s);
}

/*
 * Sends "METHOD target" with an optional Authorization header value and
 * waits for the whole response.
 */
static struct httptest_client *
test_router_request(struct test_server *s, const char *method,
    const char *target, const char *auth)
{
	struct httptest_client *c = httptest_connect(s->port);
	char req[512];

	snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: test\r\n%s%s%s"
	    "Content-Length: 0\r\n\r\n", method, target,
	    auth != NULL ? "Authorization: " : "", auth != NULL ? auth : "",
	    auth != NULL ? "\r\n" : "");
	httptest_send(c, req);
	httptest_wait(base, c);
	return c;
}

/*
 * True if c got status code with the error envelope whose message starts
 * with want.
 */
static int
test_router_error(const struct httptest_client *c, int code,
    const char *want)
{
	json_t *j = json_loads(httptest_body(c), 0, NULL);
	const char *e;
	int r;

	e = j != NULL ? json_string_value(json_object_get(j, "error")) : NULL;
	r = c->complete && c->status == code && e != NULL &&
	    strncmp(e, want, strlen(want)) == 0 &&
	    json_integer_value(json_object_get(j, "code")) == code &&
	    json_object_size(j) == 2;
	if (!r)
		printf("# got %d %s (want %d %s)\n", c->status,
		    httptest_body(c), code, want);
	json_decref(j);
	return r;
}

/* Requests a path; true if the reply is code with error starting want. */
static int
test_router_expect(struct test_server *s, const char *method,
    const char *target, const char *auth, int code, const char *want)
{
	struct httptest_client *c = test_router_request(s, method, target,
	    auth);
	int r = test_router_error(c, code, want);

	httptest_free(c);
	return r;
}

/* True if the server's metrics hold the line needle. */
static int
test_router_metric(struct test_server *s, const char *needle)
{
	struct metrics_gauges g = { 0, 0, 1, 0 };
	size_t len;
	char *text = metrics_render_string(s->env.metrics, &g, &len);
	int r = strstr(text, needle) != NULL;

	if (!r)
		printf("# metrics lack %s\n", needle);
	free(text);
	return r;
}

/* Unknown paths, wrong methods, bad queries, handlers reached. */
static void
test_routes(void)
{
	struct test_server *s = test_router_server(NULL);
	struct httptest_client *c;
	json_t *j;
	const char *v;

	c = test_router_request(s, "GET", "/nope", NULL);
	ok(test_router_error(c, 404, "no such endpoint: /nope"),
	    "unknown path: 404 {\"code\":404,\"error\":\"no such endpoint: "
	    "/nope\"}");
	ok(httptest_header_is(c, "Content-Type", "application/json"),
	    "as application/json");
	httptest_free(c);
	c = test_router_request(s, "GET", "/", NULL);
	ok(c->status == 302 && httptest_header_is(c, "Location", "/ui/"),
	    "GET /: 302 to the UI (/ui/)");
	httptest_free(c);
	ok(test_router_expect(s, "GET", "/api/0/profiles/a/b", NULL, 404,
	    "no such endpoint"), "a slash inside the ids: 404");
	ok(test_router_expect(s, "GET", "/api/0/versionx", NULL, 404,
	    "no such endpoint"), "a path extending a route: 404");

	c = test_router_request(s, "POST", "/api/0/version", NULL);
	ok(test_router_error(c, 405, "method not allowed (allowed: GET)") &&
	    httptest_header_is(c, "Allow", "GET"),
	    "POST to a GET-only path: 405 with Allow: GET");
	httptest_free(c);
	c = test_router_request(s, "PUT", "/api/0/profiles", NULL);
	ok(test_router_error(c, 405, "method not allowed") &&
	    httptest_header_is(c, "Allow", "GET, POST"),
	    "PUT /api/0/profiles: 405 with Allow: GET, POST");
	httptest_free(c);
	c = test_router_request(s, "DELETE",
	    "/api/0/profiles/00000000000000000000", NULL);
	ok(test_router_error(c, 405, "method not allowed") &&
	    httptest_header_is(c, "Allow", "GET"),
	    "DELETE /api/0/profiles/{id}: 405 with Allow: GET");
	httptest_free(c);

	ok(test_router_expect(s, "GET", "/api/0/profiles?service=%zz", NULL,
	    400, "parameter service: bad percent-encoding"),
	    "a bad query string: 400");

	c = test_router_request(s, "GET", "/api/0/version", NULL);
	j = json_loads(httptest_body(c), 0, NULL);
	v = json_string_value(json_object_get(json_object_get(j, "body"),
	    "version"));
	ok(c->status == 200 && v != NULL && strcmp(v, PACKAGE_VERSION) == 0,
	    "GET /api/0/version reaches its handler: 200, version %s",
	    v != NULL ? v : "(none)");
	json_decref(j);
	httptest_free(c);

	c = test_router_request(s, "GET", "/healthz", NULL);
	ok(c->status == 200 && strcmp(httptest_body(c), "ok\n") == 0,
	    "GET /healthz: 200 ok (pool and store)");
	httptest_free(c);
	ok(test_router_expect(s, "GET", "/api/0/profiles/", NULL, 400,
	    "missing parameter: service"),
	    "/api/0/profiles/ is the list route (400 without service)");
	ok(test_router_expect(s, "GET", "/api/0/profiles/xyz", NULL, 400,
	    "malformed profile id"), "/api/0/profiles/{id} reaches the get "
	    "handler (400 for a malformed id)");
	ok(test_router_expect(s, "GET", "/api/0/profiles/00000000000000000000",
	    NULL, 404, ""), "a well-formed unknown id: 404 from the store");

	c = test_router_request(s, "GET", "/metrics", NULL);
	ok(c->status == 200 && strstr(httptest_body(c),
	    "profd_http_requests_total{route=\"other\",code=\"404\"} 3\n") !=
	    NULL && strstr(httptest_body(c),
	    "profd_http_requests_total{route=\"ui\",code=\"302\"} 1\n") !=
	    NULL && strstr(httptest_body(c),
	    "profd_http_requests_total{route=\"other\",code=\"405\"} 3\n") !=
	    NULL && strstr(httptest_body(c),
	    "profd_http_requests_total{route=\"version\",code=\"200\"} 1\n") !=
	    NULL && strstr(httptest_body(c),
	    "profd_http_requests_total{route=\"get\",code=\"404\"} 1\n") !=
	    NULL, "GET /metrics counts each request by route and status");
	httptest_free(c);
	test_router_server_free(s);
}

/* Everything answers 503 while stopping. */
static void
test_stopping(void)
{
	struct test_server *s = test_router_server(NULL);
	struct httptest_client *c;

	s->env.stopping = 1;
	c = test_router_request(s, "GET", "/api/0/version", NULL);
	ok(test_router_error(c, 503, "shutting down"),
	    "while stopping GET /api/0/version: 503 shutting down");
	ok(httptest_header_is(c, "Retry-After", "1") &&
	    httptest_header_is(c, "Connection", "close"),
	    "with Retry-After: 1 and Connection: close");
	httptest_free(c);
	ok(test_router_expect(s, "GET", "/nope", NULL, 503, "shutting down"),
	    "an unknown path too: 503");
	ok(test_router_expect(s, "POST", "/api/0/version", NULL, 503,
	    "shutting down"), "a wrong method too: 503");
	s->env.stopping = 0;
	ok(test_router_expect(s, "GET", "/nope", NULL, 404, "no such"),
	    "no longer stopping: 404 again");
	ok(test_router_metric(s, "profd_http_requests_total{route=\"version\","
	    "code=\"503\"} 1\n"), "metrics count the 503 under its route");
	test_router_server_free(s);
}

/* Tokens: 401, 403, 200; open paths; reloading the file. */
static void
test_auth(void)
{
	struct test_server *s;
	struct httptest_client *c;
	struct router *rt;
	char *cause = NULL, *www;
	const char *path;

	path = test_router_auth_file(READER " read\n" WRITER " write\n"
	    ADMIN " admin\n");
	s = test_router_server(path);

	c = test_router_request(s, "GET", "/api/0/version", NULL);
	ok(test_router_error(c, 401, "missing bearer token"),
	    "no token: 401 missing bearer token");
	ok(httptest_header_is(c, "WWW-Authenticate", "Bearer realm=\"profd\""),
	    "with WWW-Authenticate: Bearer realm=\"profd\"");
	httptest_free(c);
	c = test_router_request(s, "GET", "/api/0/version", "Bearer " OTHER);
	ok(test_router_error(c, 401, "unknown bearer token") &&
	    httptest_header_is(c, "WWW-Authenticate", "Bearer realm=\"profd\""),
	    "an unknown token: 401 with WWW-Authenticate");
	httptest_free(c);
	ok(test_router_expect(s, "GET", "/api/0/version", "Basic " READER,
	    401, "unknown bearer token"), "another scheme: 401");

	c = test_router_request(s, "GET", "/api/0/version", "Bearer " WRITER);
	www = httptest_header(c, "WWW-Authenticate");
	ok(test_router_error(c, 403, "this token lacks the read scope") &&
	    www == NULL, "a write token reading: 403, no WWW-Authenticate");
	free(www);
	httptest_free(c);
	ok(test_router_expect(s, "POST", "/api/0/profiles?service=a&type=cpu",
	    "Bearer " READER, 403, "this token lacks the write scope"),
	    "a read token uploading: 403");
	c = test_router_request(s, "GET", "/api/0/version", "Bearer " READER);
	ok(c->status == 200, "a read token reading: 200 (%d)", c->status);
	httptest_free(c);
	c = test_router_request(s, "GET", "/api/0/version", "Bearer " ADMIN);
	ok(c->status == 200, "an admin token reading: 200 (%d)", c->status);
	httptest_free(c);
	ok(test_router_expect(s, "POST", "/api/0/profiles?service=a&type=cpu",
	    "Bearer " ADMIN, 400, "invalid profile: empty body"),
	    "an admin token uploading reaches the handler (400, empty body)");

	ok(test_router_expect(s, "GET", "/api/0/nope", NULL, 401,
	    "missing bearer token"), "an unknown /api/ path without a token: "
	    "401 before 404");
	ok(test_router_expect(s, "GET", "/api/0/nope", "Bearer " READER, 404,
	    "no such endpoint"), "and 404 with a token");
	ok(test_router_expect(s, "GET", "/nope", NULL, 404, "no such"),
	    "outside /api/ no token is asked: 404");
	c = test_router_request(s, "GET", "/healthz", NULL);
	ok(c->status == 200, "/healthz needs no token (%d)", c->status);
	httptest_free(c);
	c = test_router_request(s, "GET", "/metrics", NULL);
	ok(c->status == 200 && strstr(httptest_body(c),
	    "profd_http_requests_total{route=\"version\",code=\"401\"} 3\n") !=
	    NULL && strstr(httptest_body(c),
	    "profd_http_requests_total{route=\"version\",code=\"403\"} 1\n") !=
	    NULL, "/metrics needs no token and counts the 401s and 403s");
	httptest_free(c);

	/* A new file replaces the tokens. */
	test_router_auth_file(OTHER " read\n");
	router_reload_auth(s->router);
	c = test_router_request(s, "GET", "/api/0/version", "Bearer " OTHER);
	ok(c->status == 200, "after router_reload_auth the new token reads "
	    "(%d)", c->status);
	httptest_free(c);
	ok(test_router_expect(s, "GET", "/api/0/version", "Bearer " READER,
	    401, "unknown bearer token"), "and the old one is refused");

	/* A bad file keeps the tokens. */
	test_router_auth_file(OTHER " read\nbroken line here\n");
	router_reload_auth(s->router);
	c = test_router_request(s, "GET", "/api/0/version", "Bearer " OTHER);
	ok(c->status == 200, "a bad file on reload keeps the tokens (%d)",
	    c->status);
	httptest_free(c);
	test_router_server_free(s);

	/* router_new refuses a bad file, naming the line. */
	rt = router_new(NULL, NULL, path, &cause);
	ok(rt == NULL && cause != NULL && strstr(cause, ":2: want") != NULL,
	    "router_new refuses a bad auth file: %s",
	    cause != NULL ? cause : "(null)");
	free(cause);
	router_reload_auth(NULL);
	ok(1, "router_reload_auth(NULL) is harmless");
}

/* Removes a file or directory (nftw). */
static int
test_router_rm(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	return remove(path);
}

int
main(void)
{
	char *cause = NULL;

	signal(SIGPIPE, SIG_IGN);
	log_set_level(LOG_LEVEL_ERROR);
	evthread_use_pthreads();
	if (mkdtemp(test_router_dir) == NULL)
		httptest_bail("mkdtemp failed");
	config_defaults(&cfg);
	if ((store = store_open(test_router_dir, 64, NULL, &cause)) == NULL) {
		printf("# %s\n", cause);
		httptest_bail("store_open failed");
	}
	base = event_base_new();
	test_routes();
	test_stopping();
	test_auth();
	store_close(store);
	event_base_free(base);
	config_clear(&cfg);
	nftw(test_router_dir, test_router_rm, 16, FTW_DEPTH | FTW_PHYS);
	ok(access(test_router_dir, F_OK) != 0,
	    "the temporary directory is removed");
	return tap_done();
}
