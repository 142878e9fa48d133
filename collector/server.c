/*
 * The server: binds the listening socket, routes requests to the /api/0
 * handlers, and shuts down cleanly. On SIGTERM or SIGINT it stops accepting,
 * answers new requests on open connections with 503, waits for jobs in
 * flight and replies being written (up to the request timeout), and only
 * then frees evhttp, the pool and the store.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/thread.h>

#include "collector/api.h"
#include "collector/auth.h"
#include "collector/conns.h"
#include "collector/httpjob.h"
#include "collector/params.h"
#include "collector/pool.h"
#include "collector/reply.h"
#include "collector/server.h"
#include "common/log.h"
#include "common/xmalloc.h"
#include "storage/store.h"

#define API_PREFIX	"/api/0/"

/* Wall-clock now in ns since the epoch. */
int64_t
server_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Monotonic now in ns. */
static int64_t
server_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

typedef void (*route_fn)(struct server *, struct evhttp_request *,
    const struct params *);

struct route {
	const char	*path;
	route_fn	 get;
	route_fn	 post;
};

static const struct route routes[] = {
	{ "/api/0/profiles", api_list, api_upload },
	{ "/api/0/profiles/", api_list, api_upload },
	{ "/api/0/profiles/merge", api_merge, NULL },
	{ "/api/0/services", api_services, NULL },
	{ "/api/0/labels", api_labels, NULL },
	{ "/api/0/version", api_version, NULL },
};

/* Answers 405 with the methods the path takes. */
static void
server_method_not_allowed(struct server *srv, struct evhttp_request *req,
    const char *allow)
{
	evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
	    allow);
	reply_error(srv, req, 405, "method not allowed (allowed: %s)", allow);
}

/* Checks the bearer token; answers 401/403 itself. Returns 0 if allowed. */
static int
server_authorize(struct server *srv, struct evhttp_request *req, int need)
{
	const char *h = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Authorization");
	int rc = auth_check(srv->auth, h, need);

	if (rc == 401) {
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "WWW-Authenticate", "Bearer realm=\"profd\"");
		reply_error(srv, req, 401, h == NULL ? "missing bearer token "
		    "(Authorization: Bearer TOKEN)" : "unknown bearer token");
	} else if (rc == 403)
		reply_error(srv, req, 403, "this token lacks the %s scope",
		    need == AUTH_WRITE ? "write" : "read");
	return rc;
}

/* Re-reads the auth file; keeps the old tokens if the new file is bad. */
static void
server_reload_auth(struct server *srv)
{
	struct auth *a;
	char *cause = NULL;

	if (srv->cfg->auth_file == NULL)
		return;
	if ((a = auth_load(srv->cfg->auth_file, &cause)) == NULL) {
		log_error("SIGHUP: %s (keeping the old tokens)", cause);
		free(cause);
		return;
	}
	auth_free(srv->auth);
	srv->auth = a;
	log_info("SIGHUP: %d tokens loaded from %s", auth_count(a),
	    srv->cfg->auth_file);
}

/* True if host is a loopback address or name. */
static int
server_is_loopback(const char *host)
{
	return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
	    strcmp(host, "localhost") == 0;
}

/* Every request enters here. */
static void
server_request_cb(struct evhttp_request *req, void *arg)
{
	struct server *srv = arg;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	enum evhttp_cmd_type method = evhttp_request_get_command(req);
	const char *rawpath = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
	struct params p;
	char *path = NULL, *cause = NULL;
	size_t i;
	int is_get = method == EVHTTP_REQ_GET || method == EVHTTP_REQ_HEAD;

	conns_request_started(srv, req);
	if (srv->stopping) {
		reply_error(srv, req, 503, "shutting down");
		return;
	}
	if (rawpath == NULL || *rawpath == '\0')
		rawpath = "/";
	if ((path = evhttp_uridecode(rawpath, 0, NULL)) == NULL) {
		reply_error(srv, req, 400, "bad request path");
		return;
	}
	if (srv->auth != NULL && strncmp(path, "/api/", 5) == 0 &&
	    server_authorize(srv, req, method == EVHTTP_REQ_POST ?
	    AUTH_WRITE : AUTH_READ) != 0) {
		free(path);
		return;
	}
	if (params_parse(uri != NULL ? evhttp_uri_get_query(uri) : NULL, &p,
	    &cause) < 0) {
		reply_error(srv, req, 400, "%s", cause);
		free(cause);
		free(path);
		return;
	}
	for (i = 0; i < sizeof routes / sizeof routes[0]; i++) {
		if (strcmp(path, routes[i].path) != 0)
			continue;
		if (is_get && routes[i].get != NULL)
			routes[i].get(srv, req, &p);
		else if (method == EVHTTP_REQ_POST && routes[i].post != NULL)
			routes[i].post(srv, req, &p);
		else
			server_method_not_allowed(srv, req,
			    routes[i].post != NULL ? "GET, POST" : "GET");
		goto out;
	}
	if (strncmp(path, "/api/0/profiles/", 16) == 0 && path[16] != '\0' &&
	    strchr(path + 16, '/') == NULL) {
		if (is_get)
			api_get(srv, req, path + 16);
		else
			server_method_not_allowed(srv, req, "GET");
		goto out;
	}
	reply_error(srv, req, 404, "no such endpoint: %.128s", path);
out:
	params_clear(&p);
	free(path);
}

/* Loop timer: ends the loop once in-flight work and replies are done. */
static void
server_drain_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;
	int inflight = pool_inflight(srv->pool) + pool_inflight(srv->io_pool);

	httpjob_check_watched(srv);
	if ((inflight == 0 && srv->unsent <= 0) ||
	    server_mono_ns() > srv->drain_deadline_ns) {
		if (inflight > 0 || srv->unsent > 0)
			log_warn("%s: giving up on %d jobs and %d replies",
			    __func__, inflight, srv->unsent);
		event_base_loopbreak(srv->base);
	}
}

/* SIGTERM/SIGINT: stop accepting and drain. */
static void
server_signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;
	struct timeval tv = { 0, 20000 };

	if (sig == SIGHUP) {
		log_info("SIGHUP: reopening log file");
		log_reopen();
		server_reload_auth(srv);
		return;
	}
	if (srv->stopping) {
		log_warn("second signal: stopping now");
		event_base_loopbreak(srv->base);
		return;
	}
	log_info("%s: shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
	srv->stopping = 1;
	if (srv->sock != NULL) {
		evhttp_del_accept_socket(srv->http, srv->sock);
		srv->sock = NULL;
	}
	srv->drain_deadline_ns = server_mono_ns() +
	    srv->cfg->request_timeout * INT64_C(1000000000);
	srv->drain_timer = event_new(srv->base, -1, EV_PERSIST,
	    server_drain_cb, srv);
	event_add(srv->drain_timer, &tv);
}

/* Loop timer: cancels jobs whose clients went away. */
static void
server_watch_cb(evutil_socket_t fd, short what, void *arg)
{
	httpjob_check_watched(arg);
}

/* Splits "host:port" or "[v6]:port". */
static int
server_split_addr(const char *addr, char **host, int *port, char **cause)
{
	const char *colon;
	char *why = NULL;
	int64_t v;

	if (addr[0] == '[') {
		colon = strstr(addr, "]:");
		if (colon == NULL)
			return xcause(cause, "bad address \"%s\" (want "
			    "[::1]:PORT)", addr);
		*host = xstrndup(addr + 1, colon - addr - 1);
		colon++;
	} else {
		colon = strrchr(addr, ':');
		if (colon == NULL)
			return xcause(cause, "bad address \"%s\" (want "
			    "HOST:PORT)", addr);
		*host = xstrndup(addr, colon - addr);
	}
	if (params_int(colon + 1, 0, 65535, &v, &why) < 0) {
		xcause(cause, "bad port in \"%s\": %s", addr, why);
		free(why);
		free(*host);
		return -1;
	}
	*port = (int)v;
	return 0;
}

/* Opens the store, starts the pool, binds the socket. */
int
server_start(struct server *srv, struct config *cfg, char **cause)
{
	struct store_recovery rec;
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof ss;
	struct timeval tv = { 0, 250000 };
	char *host = NULL;
	int port = 0, one;

	memset(srv, 0, sizeof *srv);
	srv->cfg = cfg;
	TAILQ_INIT(&srv->watched);
	if (server_split_addr(cfg->addr, &host, &port, cause) < 0)
		return -1;
	if (cfg->auth_file != NULL) {
		if ((srv->auth = auth_load(cfg->auth_file, cause)) == NULL) {
			free(host);
			return -1;
		}
	} else if (!server_is_loopback(host))
		log_warn("no --auth-file and %s is not a loopback address: "
		    "anyone who can reach it can read and upload profiles",
		    cfg->addr);
	evthread_use_pthreads();
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);	/* a full file is an error, not a death */
	srv->base = event_base_new();
	if ((srv->store = store_open(cfg->data_dir, &rec, cause)) == NULL) {
		free(host);
		return -1;
	}
	if (rec.orphan_blobs_removed || rec.temp_files_removed)
		log_warn("store: removed %zu blobs with no row and %zu "
		    "temporary files", rec.orphan_blobs_removed,
		    rec.temp_files_removed);
	if (rec.missing_blobs)
		log_warn("store: %zu profiles have no blob file",
		    rec.missing_blobs);
	srv->pool = pool_new(srv->base, (int)cfg->workers, (int)cfg->max_queue);
	srv->io_pool = pool_new(srv->base, (int)cfg->io_threads, INT32_MAX);
	srv->http = evhttp_new(srv->base);
	evhttp_set_max_body_size(srv->http, (ev_ssize_t)cfg->max_body);
	evhttp_set_max_headers_size(srv->http, 64 * 1024);
	evhttp_set_timeout(srv->http, (int)cfg->read_timeout);
	evhttp_set_allowed_methods(srv->http, EVHTTP_REQ_GET |
	    EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
	    EVHTTP_REQ_DELETE | EVHTTP_REQ_PATCH | EVHTTP_REQ_OPTIONS);
	evhttp_set_gencb(srv->http, server_request_cb, srv);
	conns_init(srv);
	srv->sock = evhttp_bind_socket_with_handle(srv->http, host, port);
	if (srv->sock == NULL) {
		xcause(cause, "cannot listen on %s: %s", cfg->addr,
		    strerror(errno));
		free(host);
		return -1;
	}
	/* Replies go out as headers then body: without TCP_NODELAY the body
	 * waits for the client's delayed ACK (40 ms). Accepted sockets
	 * inherit the option from the listener on Linux. */
	one = 1;
	setsockopt(evhttp_bound_socket_get_fd(srv->sock), IPPROTO_TCP,
	    TCP_NODELAY, &one, sizeof one);
	if (getsockname(evhttp_bound_socket_get_fd(srv->sock),
	    (struct sockaddr *)&ss, &sslen) == 0)
		srv->port = ntohs(ss.ss_family == AF_INET6 ?
		    ((struct sockaddr_in6 *)&ss)->sin6_port :
		    ((struct sockaddr_in *)&ss)->sin_port);
	srv->sig_term = evsignal_new(srv->base, SIGTERM, server_signal_cb, srv);
	srv->sig_int = evsignal_new(srv->base, SIGINT, server_signal_cb, srv);
	srv->sig_hup = evsignal_new(srv->base, SIGHUP, server_signal_cb, srv);
	event_add(srv->sig_term, NULL);
	event_add(srv->sig_int, NULL);
	event_add(srv->sig_hup, NULL);
	srv->watch_timer = event_new(srv->base, -1, EV_PERSIST,
	    server_watch_cb, srv);
	event_add(srv->watch_timer, &tv);
	log_info("listening on %s%s%s:%d (data %s, %d workers)",
	    strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "",
	    srv->port, cfg->data_dir, (int)cfg->workers);
	free(host);
	return 0;
}

/* Runs until shutdown. */
void
server_run(struct server *srv)
{
	event_base_dispatch(srv->base);
}

/* Frees everything in dependency order. */
void
server_free(struct server *srv)
{
	if (srv->pool != NULL)
		pool_free(srv->pool);	/* runs last done()s: replies */
	if (srv->io_pool != NULL)
		pool_free(srv->io_pool);
	if (srv->http != NULL)
		evhttp_free(srv->http);
	conns_free(srv);
	auth_free(srv->auth);
	if (srv->store != NULL)
		store_close(srv->store);
	if (srv->sig_term != NULL)
		event_free(srv->sig_term);
	if (srv->sig_int != NULL)
		event_free(srv->sig_int);
	if (srv->sig_hup != NULL)
		event_free(srv->sig_hup);
	if (srv->watch_timer != NULL)
		event_free(srv->watch_timer);
	if (srv->drain_timer != NULL)
		event_free(srv->drain_timer);
	if (srv->base != NULL)
		event_base_free(srv->base);
	memset(srv, 0, sizeof *srv);
}
