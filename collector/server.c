/*
 * The server: binds the listening socket, routes requests to the /api/0
 * handlers and to /metrics and /healthz, and shuts down cleanly. On SIGTERM
 * or SIGINT it tells systemd STOPPING=1, stops accepting, answers new
 * requests on open connections with 503, waits for jobs in flight and
 * replies being written (up to the request timeout), and only then frees
 * evhttp, the pool and the store. READY=1 goes out from inside the running
 * loop, so whoever waits for it finds the port answering.
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

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/thread.h>

#include "collector/api.h"
#include "collector/api_ops.h"
#include "collector/auth.h"
#include "collector/conns.h"
#include "collector/httpjob.h"
#include "collector/metrics.h"
#include "collector/notify.h"
#include "collector/params.h"
#include "common/pool.h"
#include "collector/reply.h"
#include "collector/retention.h"
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
	const char		*path;
	route_fn		 get;
	route_fn		 post;
	enum metrics_route	 get_name;	/* the metrics label */
	enum metrics_route	 post_name;
};

static const struct route routes[] = {
	{ "/api/0/profiles", api_list, api_upload, METRICS_ROUTE_LIST,
	    METRICS_ROUTE_UPLOAD },
	{ "/api/0/profiles/", api_list, api_upload, METRICS_ROUTE_LIST,
	    METRICS_ROUTE_UPLOAD },
	{ "/api/0/profiles/merge", api_merge, NULL, METRICS_ROUTE_MERGE, 0 },
	{ "/api/0/services", api_services, NULL, METRICS_ROUTE_SERVICES, 0 },
	{ "/api/0/labels", api_labels, NULL, METRICS_ROUTE_LABELS, 0 },
	{ "/api/0/version", api_version, NULL, METRICS_ROUTE_VERSION, 0 },
	{ "/metrics", api_metrics, NULL, METRICS_ROUTE_METRICS, 0 },
	{ "/healthz", api_healthz, NULL, METRICS_ROUTE_HEALTHZ, 0 },
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

struct server_dispatch {
	route_fn		 fn;	/* a handler taking params, or */
	const char		*id;	/* GET /api/0/profiles/{id...}, or */
	const char		*allow;	/* 405 with these methods, or 404 */
	enum metrics_route	 name;
};

/* Finds what handles method on path. */
static void
server_route(const char *path, enum evhttp_cmd_type method,
    struct server_dispatch *d)
{
	int is_get = method == EVHTTP_REQ_GET || method == EVHTTP_REQ_HEAD;
	size_t i;

	memset(d, 0, sizeof *d);
	d->name = METRICS_ROUTE_OTHER;
	for (i = 0; i < sizeof routes / sizeof routes[0]; i++) {
		if (strcmp(path, routes[i].path) != 0)
			continue;
		if (is_get && routes[i].get != NULL) {
			d->fn = routes[i].get;
			d->name = routes[i].get_name;
		} else if (method == EVHTTP_REQ_POST &&
		    routes[i].post != NULL) {
			d->fn = routes[i].post;
			d->name = routes[i].post_name;
		} else
			d->allow = routes[i].post != NULL ? "GET, POST" : "GET";
		return;
	}
	if (strncmp(path, "/api/0/profiles/", 16) == 0 && path[16] != '\0' &&
	    strchr(path + 16, '/') == NULL) {
		if (!is_get) {
			d->allow = "GET";
			return;
		}
		d->id = path + 16;
		d->name = strchr(d->id, '+') != NULL ?
		    METRICS_ROUTE_GET_MERGED : METRICS_ROUTE_GET;
	}
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
	const char *rawpath = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
	struct server_dispatch d;
	struct params p;
	char *path = NULL, *cause = NULL;

	if (rawpath == NULL || *rawpath == '\0')
		rawpath = "/";
	path = evhttp_uridecode(rawpath, 0, NULL);
	if (path != NULL)
		server_route(path, evhttp_request_get_command(req), &d);
	else {
		memset(&d, 0, sizeof d);
		d.name = METRICS_ROUTE_OTHER;
	}
	metrics_request_start(srv->metrics, req, d.name,
	    d.name == METRICS_ROUTE_UPLOAD ?
	    evbuffer_get_length(evhttp_request_get_input_buffer(req)) : 0);

	conns_request_started(srv, req);
	if (srv->stopping) {
		reply_error(srv, req, 503, "shutting down");
		goto out;
	}
	if (path == NULL) {
		reply_error(srv, req, 400, "bad request path");
		goto out;
	}
	if (srv->auth != NULL && strncmp(path, "/api/", 5) == 0 &&
	    server_authorize(srv, req, evhttp_request_get_command(req) ==
	    EVHTTP_REQ_POST ? AUTH_WRITE : AUTH_READ) != 0)
		goto out;
	if (d.fn == NULL && d.id == NULL) {
		if (d.allow != NULL)
			server_method_not_allowed(srv, req, d.allow);
		else
			reply_error(srv, req, 404, "no such endpoint: %.128s",
			    path);
		goto out;
	}
	if (params_parse(uri != NULL ? evhttp_uri_get_query(uri) : NULL, &p,
	    &cause) < 0) {
		reply_error(srv, req, 400, "%s", cause);
		free(cause);
		goto out;
	}
	if (d.id != NULL)
		api_get(srv, req, d.id);
	else
		d.fn(srv, req, &p);
	params_clear(&p);
out:
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
	notify_send("STOPPING=1\nSTATUS=shutting down: finishing %d jobs",
	    pool_inflight(srv->pool));
	srv->stopping = 1;
	retention_stop(srv->retention);
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

/* Loop timer: tells systemd's watchdog the loop is alive. */
static void
server_watchdog_cb(evutil_socket_t fd, short what, void *arg)
{
	notify_send("WATCHDOG=1");
}

/* Runs once the loop is running: the port answers from now on. */
static void
server_ready_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	notify_send("READY=1\nSTATUS=listening on %s", srv->listen_name);
}

/* Sets up systemd notifications and the watchdog timer. */
static void
server_notify_start(struct server *srv)
{
	struct timeval tv;
	char *cause = NULL;
	int64_t usec;

	if (notify_open(&cause) < 0) {
		log_warn("systemd notify disabled: %s", cause);
		free(cause);
		return;
	}
	if ((usec = notify_watchdog_usec()) <= 0)
		return;
	usec /= 2;
	tv.tv_sec = (time_t)(usec / 1000000);
	tv.tv_usec = (suseconds_t)(usec % 1000000);
	srv->watchdog_timer = event_new(srv->base, -1, EV_PERSIST,
	    server_watchdog_cb, srv);
	event_add(srv->watchdog_timer, &tv);
	log_info("systemd watchdog: pinging every %lld ms",
	    (long long)(usec / 1000));
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
	srv->metrics = metrics_new();
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
	srv->listen_name = xasprintf("%s%s%s:%d", strchr(host, ':') ? "[" :
	    "", host, strchr(host, ':') ? "]" : "", srv->port);
	log_info("listening on %s (data %s, %d workers)", srv->listen_name,
	    cfg->data_dir, (int)cfg->workers);
	free(host);
	srv->retention = retention_new(srv, cfg->retention_ns,
	    cfg->retention_interval_ns);
	server_notify_start(srv);
	return 0;
}

/* Runs until shutdown. */
void
server_run(struct server *srv)
{
	struct timeval now = { 0, 0 };

	event_base_once(srv->base, -1, EV_TIMEOUT, server_ready_cb, srv, &now);
	event_base_dispatch(srv->base);
}

/* Frees everything in dependency order. */
void
server_free(struct server *srv)
{
	retention_stop(srv->retention);
	if (srv->pool != NULL)
		pool_free(srv->pool);	/* runs last done()s: replies */
	retention_free(srv->retention);
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
	if (srv->watchdog_timer != NULL)
		event_free(srv->watchdog_timer);
	notify_close();
	metrics_free(srv->metrics);
	free(srv->listen_name);
	if (srv->base != NULL)
		event_base_free(srv->base);
	memset(srv, 0, sizeof *srv);
}
