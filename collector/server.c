/*
 * The server: binds the listening socket and shuts down cleanly. On SIGTERM
 * or SIGINT it tells systemd STOPPING=1, stops accepting, answers agents'
 * held polls 503 (api_pacing), has the router answer new requests on open
 * connections with 503, waits for jobs in flight and replies being written
 * (up to the request timeout), and only then frees evhttp, the pools and
 * the store. READY=1 goes out from inside the running loop, so whoever
 * waits for it finds the port answering.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include <event2/event.h>
#include <event2/http.h>
#include <event2/thread.h>

#include "collector/api/api_pacing.h"
#include "collector/backfill.h"
#include "collector/compact.h"
#include "collector/config.h"
#include "collector/http/conns.h"
#include "collector/http/tls.h"
#include "collector/http/httpjob.h"
#include "collector/router.h"
#include "collector/metrics.h"
#include "common/notify.h"
#include "collector/retention.h"
#include "collector/server.h"
#include "common/budget.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/parse.h"
#include "common/pool.h"
#include "common/xmalloc.h"
#include "storage/store.h"

/* Free heap bytes past which the loop gives memory back (server_give_back). */
#define SERVER_TRIM_FREE	((size_t)32 * 1024 * 1024)
/* Blocks from this size on get their own mapping (server_start). */
#define SERVER_MMAP_THRESHOLD	(1024 * 1024)
#define SERVER_OPS_QUEUE	64	/* /healthz, /metrics jobs waiting */

/* True if host is a loopback address or name. */
static int
server_is_loopback(const char *host)
{
	return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
	    strcmp(host, "localhost") == 0;
}

/* Loop timer: ends the loop once in-flight work and replies are done. */
static void
server_drain_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;
	struct env *env = &srv->env;
	int inflight = pool_inflight(env->pool) +
	    pool_inflight(env->merge_pool) + pool_inflight(env->io_pool) +
	    pool_inflight(env->ops_pool);
	int unsent = conns_unsent(env->conns);

	httpjob_check_watched(env);
	if ((inflight == 0 && unsent == 0) ||
	    clock_mono_ns() > srv->drain_deadline_ns) {
		if (inflight > 0 || unsent > 0)
			log_warn("%s: giving up on %d jobs and %d replies",
			    __func__, inflight, unsent);
		event_base_loopbreak(env->base);
	}
}

/* SIGHUP: re-reads the certificate and key (the old ones stay on error). */
static void
server_reload_tls(struct server *srv)
{
	char *cause = NULL;

	if (srv->env.tls == NULL)
		return;
	if (tls_reload(srv->env.tls, &cause) < 0) {
		log_error("SIGHUP: %s; still serving the previous certificate",
		    cause);
		free(cause);
		return;
	}
	log_info("SIGHUP: certificate %s and key re-read", srv->cfg->tls_cert);
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
		router_reload_auth(srv->router);
		server_reload_tls(srv);
		return;
	}
	if (srv->env.stopping) {
		log_warn("second signal: stopping now");
		event_base_loopbreak(srv->env.base);
		return;
	}
	log_info("%s: shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
	notify_send("STOPPING=1\nSTATUS=shutting down: finishing %d jobs",
	    pool_inflight(srv->env.pool) + srv->env.merges);
	srv->env.stopping = 1;
	api_pacing_stop(srv->env.pacing);	/* held polls: 503 */
	retention_stop(srv->retention);
	backfill_stop(srv->backfill);
	compact_stop(srv->compact);
	if (srv->sock != NULL) {
		conns_set_listener(srv->env.conns, NULL);
		evhttp_del_accept_socket(srv->http, srv->sock);
		srv->sock = NULL;
	}
	srv->drain_deadline_ns = clock_mono_ns() +
	    srv->cfg->request_timeout * INT64_C(1000000000);
	srv->drain_timer = event_new(srv->env.base, -1, EV_PERSIST,
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
	srv->watchdog_timer = event_new(srv->env.base, -1, EV_PERSIST,
	    server_watchdog_cb, srv);
	event_add(srv->watchdog_timer, &tv);
	log_info("systemd watchdog: pinging every %lld ms",
	    (long long)(usec / 1000));
}

/*
 * After a burst (a flood of bodies, big inflates, merges) glibc keeps the
 * freed memory in its arenas; give it back to the system once more than
 * SERVER_TRIM_FREE bytes lie free, so RSS returns near its resting level.
 */
static void
server_give_back(void)
{
	struct mallinfo2 mi = mallinfo2();

	if (mi.fordblks > SERVER_TRIM_FREE)
		malloc_trim(0);
}

/* Loop timer: cancels jobs whose clients went away; gives memory back. */
static void
server_watch_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	httpjob_check_watched(&srv->env);
	if (++srv->watch_ticks % 4 == 0)	/* each second */
		server_give_back();
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
	if (parse_int(colon + 1, 0, 65535, &v, &why) < 0) {
		xcause(cause, "bad port in \"%s\": %s", addr, why);
		free(why);
		free(*host);
		return -1;
	}
	*port = (int)v;
	return 0;
}

/* Opens the store and reports what its recovery found. */
static int
server_open_store(struct server *srv, char **cause)
{
	struct store_recovery rec;
	/* The most blobs with no row a crash can leave: one per io thread
	 * waiting for its group commit, a whole retention batch whose rows
	 * were committed before its unlinks, and 64 to spare. More are moved
	 * aside, not removed (storage/embedded/recover.c). */
	size_t limit = 64 + (size_t)srv->cfg->io_threads + RETENTION_BATCH;

	struct store_options o = { srv->cfg->data_dir, limit,
	    (size_t)srv->cfg->store_pool };

	if (srv->cfg->store != NULL) {
		if (!store_is_postgresql(srv->cfg->store))
			return xcause(cause, "--store: want a PostgreSQL URI "
			    "(postgresql://...), not \"%s\"", srv->cfg->store);
		o.location = srv->cfg->store;
	}
	srv->env.store = store_open_options(&o, &rec, cause);
	if (srv->env.store == NULL)
		return -1;
	if (rec.orphan_blobs_removed || rec.temp_files_removed)
		log_warn("store: removed %zu blobs with no row and %zu "
		    "temporary files", rec.orphan_blobs_removed,
		    rec.temp_files_removed);
	if (rec.orphan_blobs_moved)
		log_warn("store: moved %zu blobs with no row to %s/orphans "
		    "(nothing deleted)", rec.orphan_blobs_moved,
		    srv->cfg->data_dir);
	if (rec.missing_blobs)
		log_warn("store: %zu profiles have no blob file",
		    rec.missing_blobs);
	return 0;
}

/* Makes evhttp with profd's limits and binds host:port. */
static int
server_bind(struct server *srv, const char *host, int port, char **cause)
{
	struct config *cfg = srv->cfg;
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof ss;
	int one = 1;

	srv->http = evhttp_new(srv->env.base);
	evhttp_set_max_body_size(srv->http, (ev_ssize_t)cfg->max_body);
	evhttp_set_max_headers_size(srv->http, 64 * 1024);
	evhttp_set_timeout(srv->http, (int)cfg->read_timeout);
	evhttp_set_allowed_methods(srv->http, EVHTTP_REQ_GET |
	    EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
	    EVHTTP_REQ_DELETE | EVHTTP_REQ_PATCH | EVHTTP_REQ_OPTIONS);
	srv->env.conns = conns_new(srv->env.base, srv->http,
	    cfg->max_connections, cfg->read_timeout);
	conns_set_body_max(srv->env.conns, cfg->max_body_memory);
	if (cfg->tls_cert != NULL) {
		/* A client certificate is required unless tokens can stand
		 * in for one (see docs/DESIGN.md, "TLS"). */
		if ((srv->env.tls = tls_new(cfg->tls_cert, cfg->tls_key,
		    cfg->tls_client_ca, cfg->auth_file == NULL, cause)) == NULL)
			return -1;
		conns_set_tls(srv->env.conns, srv->env.tls);
	}
	if ((srv->router = router_new(&srv->env, srv->http, cfg->auth_file,
	    cause)) == NULL)
		return -1;
	srv->sock = evhttp_bind_socket_with_handle(srv->http, host, port);
	if (srv->sock == NULL)
		return xcause(cause, "cannot listen on %s: %s", cfg->addr,
		    strerror(errno));
	conns_set_listener(srv->env.conns, srv->sock);
	/* Replies go out as headers then body: without TCP_NODELAY the body
	 * waits for the client's delayed ACK (40 ms). Accepted sockets
	 * inherit the option from the listener on Linux. */
	setsockopt(evhttp_bound_socket_get_fd(srv->sock), IPPROTO_TCP,
	    TCP_NODELAY, &one, sizeof one);
	if (getsockname(evhttp_bound_socket_get_fd(srv->sock),
	    (struct sockaddr *)&ss, &sslen) == 0)
		srv->port = ntohs(ss.ss_family == AF_INET6 ?
		    ((struct sockaddr_in6 *)&ss)->sin6_port :
		    ((struct sockaddr_in *)&ss)->sin_port);
	srv->listen_name = xasprintf("%s%s%s:%d", strchr(host, ':') ? "[" :
	    "", host, strchr(host, ':') ? "]" : "", srv->port);
	return 0;
}

/* Adds the signal events and the client-gone check timer. */
static void
server_add_events(struct server *srv)
{
	struct event_base *base = srv->env.base;
	struct timeval tv = { 0, 250000 };

	srv->sig_term = evsignal_new(base, SIGTERM, server_signal_cb, srv);
	srv->sig_int = evsignal_new(base, SIGINT, server_signal_cb, srv);
	srv->sig_hup = evsignal_new(base, SIGHUP, server_signal_cb, srv);
	event_add(srv->sig_term, NULL);
	event_add(srv->sig_int, NULL);
	event_add(srv->sig_hup, NULL);
	srv->watch_timer = event_new(base, -1, EV_PERSIST, server_watch_cb,
	    srv);
	event_add(srv->watch_timer, &tv);
}

/*
 * Fits --max-connections under the open-file limit: every connection takes
 * a descriptor, and so do SQLite's connections, blobs being written and
 * read, the log and the loop. Raises the soft limit as far as the hard one
 * allows; if that is still short, lowers the connection cap and says so
 * once, so the listener pauses at the cap instead of accept() failing.
 */
static void
server_fit_fd_limit(struct config *cfg)
{
	struct rlimit rl;
	rlim_t reserve, need, fit;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	/* Each thread may hold a reader connection and a blob: the CPU and
	 * merge pools (--workers each), the I/O pool, /healthz's thread. */
	reserve = (rlim_t)(32 + 3 * (2 * cfg->workers + cfg->io_threads + 3) +
	    cfg->io_threads);
	need = (rlim_t)cfg->max_connections + reserve;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ||
		    rl.rlim_max >= need ? need : rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0 ||
		    getrlimit(RLIMIT_NOFILE, &rl) != 0)
			return;
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
		return;
	fit = rl.rlim_cur > 2 * reserve ? rl.rlim_cur - reserve :
	    rl.rlim_cur / 2 > 0 ? rl.rlim_cur / 2 : 1;
	log_warn("open-file limit %llu (hard %llu) is too low for "
	    "--max-connections %lld: at most %llu connections (raise the "
	    "limit: ulimit -n, or LimitNOFILE= under systemd)",
	    (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max,
	    (long long)cfg->max_connections, (unsigned long long)fit);
	cfg->max_connections = (int64_t)fit;
}

/* Opens the store, starts the pools, binds the socket. */
int
server_start(struct server *srv, struct config *cfg, char **cause)
{
	struct env *env = &srv->env;
	char *host = NULL;
	int port = 0;

	memset(srv, 0, sizeof *srv);
	/* Bodies, inflated profiles and merges come and go in megabytes: map
	 * each such block on its own so that freeing it returns it at once
	 * (glibc would otherwise raise its threshold after the first free
	 * and keep later ones in the heap, fragmenting it). */
	mallopt(M_MMAP_THRESHOLD, SERVER_MMAP_THRESHOLD);
	/* The memory limits count bytes: with transparent huge pages on
	 * ("always", many distributions' default) a buffer filled part way
	 * is backed by 2 MiB pages, and RSS passes the limits by up to 2 MiB
	 * a buffer (100 bodies against --max-body-memory 64M peaked at
	 * 139 MB with THP, 93 MB without). */
	(void)prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	srv->cfg = cfg;
	env->cfg = cfg;
	env->metrics = metrics_new();
	env->merge_budget = budget_new((size_t)cfg->merge_memory);
	TAILQ_INIT(&env->watched);
	if (server_split_addr(cfg->addr, &host, &port, cause) < 0)
		return -1;
	if (!server_is_loopback(host) && cfg->auth_file == NULL &&
	    cfg->tls_client_ca == NULL)
		log_warn("no --auth-file and %s is not a loopback address: "
		    "anyone who can reach it can read and upload profiles",
		    cfg->addr);
	if (!server_is_loopback(host) && cfg->tls_cert == NULL)
		log_warn("no --tls-cert and %s is not a loopback address: "
		    "profiles%s cross the network in clear text", cfg->addr,
		    cfg->auth_file != NULL ? " and tokens" : "");
	server_fit_fd_limit(cfg);
	evthread_use_pthreads();
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);	/* a full file is an error, not a death */
	env->base = event_base_new();
	if (server_open_store(srv, cause) < 0) {
		free(host);
		return -1;
	}
	/*
	 * Merges get threads of their own, as many as the CPU pool, so an
	 * upload or a query never waits behind one: the kernel shares the
	 * cores between the two pools. --max-merges bounds the merges
	 * admitted (httpjob_submit_merge), so the merge queue needs no bound
	 * of its own (its helper jobs are never refused). /healthz and
	 * /metrics do their store work on a thread of their own for the same
	 * reason.
	 */
	env->pool = pool_new(env->base, (int)cfg->workers, (int)cfg->max_queue);
	env->merge_pool = pool_new(env->base, (int)cfg->workers, INT32_MAX);
	env->io_pool = pool_new(env->base, (int)cfg->io_threads, INT32_MAX);
	env->ops_pool = pool_new(env->base, 1, SERVER_OPS_QUEUE);
	/* --profile-rate 0: no pacing (the poll route answers 404). */
	if (env->cfg->profile_rate > 0)
		env->pacing = api_pacing_new(env);
	if (server_bind(srv, host, port, cause) < 0) {
		free(host);
		return -1;
	}
	free(host);
	server_add_events(srv);
	log_info("listening on %s%s (%s store%s%s, %d workers, %d merge "
	    "workers, max %d merges)", env->tls != NULL ? "https://" : "",
	    srv->listen_name,
	    store_backend(env->store), cfg->store ? "" : " in ",
	    cfg->store ? "" : cfg->data_dir,
	    (int)cfg->workers, (int)cfg->workers, (int)cfg->max_merges);
	srv->retention = retention_new(env->base, env->pool, env->store,
	    env->metrics, cfg->retention_ns, cfg->retention_interval_ns);
	srv->backfill = backfill_new(env->base, env->pool, env->store,
	    (size_t)cfg->max_inflated);
	if (cfg->rollup_delay_ns > 0)
		srv->compact = compact_new(env->base, env->merge_pool,
		    env->merge_budget, env->store, env->metrics,
		    cfg->rollup_delay_ns, cfg->compact_pause_ns,
		    (size_t)cfg->max_inflated);
	server_notify_start(srv);
	return 0;
}

/* Runs until shutdown. */
void
server_run(struct server *srv)
{
	struct timeval now = { 0, 0 };

	event_base_once(srv->env.base, -1, EV_TIMEOUT, server_ready_cb, srv,
	    &now);
	event_base_dispatch(srv->env.base);
}

/* Frees an event if it was made. */
static void
server_event_free(struct event *ev)
{
	if (ev != NULL)
		event_free(ev);
}

/* Frees everything in dependency order. */
void
server_free(struct server *srv)
{
	struct env *env = &srv->env;

	retention_stop(srv->retention);
	backfill_stop(srv->backfill);
	compact_stop(srv->compact);
	if (env->pool != NULL)
		pool_free(env->pool);	/* runs last done()s: replies */
	if (env->merge_pool != NULL)
		pool_free(env->merge_pool);
	retention_free(srv->retention);
	backfill_free(srv->backfill);
	compact_free(srv->compact);
	if (env->io_pool != NULL)
		pool_free(env->io_pool);
	if (env->ops_pool != NULL)
		pool_free(env->ops_pool);
	api_pacing_free(env->pacing);	/* its events, before the loop's */
	if (srv->http != NULL)
		evhttp_free(srv->http);
	conns_free(env->conns);
	tls_free(env->tls);
	router_free(srv->router);
	if (env->store != NULL)
		store_close(env->store);
	server_event_free(srv->sig_term);
	server_event_free(srv->sig_int);
	server_event_free(srv->sig_hup);
	server_event_free(srv->watch_timer);
	server_event_free(srv->drain_timer);
	server_event_free(srv->watchdog_timer);
	notify_close();
	metrics_free(env->metrics);
	if (env->merge_budget != NULL)
		budget_free(env->merge_budget);
	free(srv->listen_name);
	if (env->base != NULL)
		event_base_free(env->base);
	memset(srv, 0, sizeof *srv);
}
