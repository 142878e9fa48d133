/*
 * Unit tests of collector/http/httpjob.c and reply.c on a real libevent
 * event_base: an evhttp server on 127.0.0.1 (ephemeral port) whose request
 * callback makes httpjobs the way the router does, real worker pools, the
 * connection tracker and the metrics, and raw loopback clients. Checked:
 * a job's JSON result in the {"code","body"} envelope with 200; an error
 * result in the {"code","error"} envelope with its status and reason; a
 * job with no result answers 500; raw bytes with Content-Type and
 * Content-Disposition (and without the latter when there is no file name);
 * a job with an io() phase runs work() on the CPU pool, then io() on the
 * I/O pool, then replies, while a job whose work() already set a result
 * skips io(); a full CPU queue answers 503 with Retry-After: 1 and frees
 * the job's state; unsent counts a reply until it is written (a 32 MB
 * reply stays counted until the client has read it) and returns to 0;
 * env.stopping adds Connection: close and the server then closes; a
 * watched job whose client closes its socket gets cancelled = 1 from
 * httpjob_check_watched (not before), and one cancelled while still
 * queued never runs its work() and answers 499; /metrics counts each
 * request by route and status. With --request-timeout 1: a running job
 * is answered 504 at the timeout while its work() still runs, gets
 * cancelled set, and its late result is dropped (arg freed once, nothing
 * more sent); a job still queued then is answered 503, never runs and is
 * freed at once. Merges (httpjob_submit_merge) run on the merge pool, an
 * upload answers while every merge worker is busy, a merge past
 * --max-merges gets 503 naming it with Retry-After, and a timed-out merge
 * counts against the cap until its worker returns. Last, a known gap: a
 * reply whose client resets the connection mid-download is never counted
 * as written.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>

#include <event2/event.h>
#include <event2/http.h>
#include <event2/thread.h>
#include <jansson.h>

#include "collector/config.h"
#include "collector/env.h"
#include "collector/http/conns.h"
#include "collector/http/httpjob.h"
#include "collector/http/reply.h"
#include "collector/metrics.h"
#include "common/log.h"
#include "common/pool.h"
#include "test/lib/httptest.h"
#include "test/lib/tap.h"

#define BIG_LEN		(32 * 1024 * 1024)	/* more than socket buffers */
#define NSTATES		8

/* A gate that holds work() until the test opens it. */
struct test_gate {
	pthread_mutex_t	 lock;
	pthread_cond_t	 cond;
	int		 passed;	/* work() calls that reached it */
	int		 open;
};

/* What the test's jobs record; one per request, picked by ?s=N. */
struct test_state {
	atomic_int	 work_calls;
	atomic_int	 io_calls;
	atomic_int	 work_finished;	/* set at the end of work() */
	atomic_int	 io_after_work;	/* io() saw work() finished */
	atomic_int	 started;	/* a watched work() is waiting */
	atomic_int	 saw_cancel;	/* work() saw job->cancelled */
	int		 freed;		/* arg_free calls (loop thread) */
	pthread_t	 work_thread;
	pthread_t	 io_thread;
	int		 unsent_after;	/* unsent after a direct reply */
};

/* A job that learns which thread runs a pool's work. */
struct test_probe {
	struct pool_job	 pj;
	pthread_t	 thread;
	int		 done;
};

static struct env env;
static struct config cfg;		/* env.cfg while limits are tested */
static struct event_base *base;
static struct evhttp *http;
static int port;
static pthread_t loop_thread;
static struct test_gate gate;
static struct test_state states[NSTATES];

/* Prepares the gate, closed. */
static void
test_gate_init(struct test_gate *g)
{
	memset(g, 0, sizeof *g);
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
}

/* work(): announces itself at the gate and waits (at most 30 s). */
static void
test_gate_pass(struct test_gate *g)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 30;
	pthread_mutex_lock(&g->lock);
	g->passed++;
	while (!g->open &&
	    pthread_cond_timedwait(&g->cond, &g->lock, &until) == 0)
		;
	pthread_mutex_unlock(&g->lock);
}

/* Opens the gate; closes it again for the next test if reset. */
static void
test_gate_set(struct test_gate *g, int open)
{
	pthread_mutex_lock(&g->lock);
	g->open = open;
	if (!open)
		g->passed = 0;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

/* Condition: one work() waits at the gate. */
static int
test_gate_reached(void *arg)
{
	struct test_gate *g = arg;
	int n;

	pthread_mutex_lock(&g->lock);
	n = g->passed;
	pthread_mutex_unlock(&g->lock);
	return n >= 1;
}

/* Clears the recorded state of every request. */
static void
test_states_reset(void)
{
	int i;

	for (i = 0; i < NSTATES; i++) {
		atomic_store(&states[i].work_calls, 0);
		atomic_store(&states[i].io_calls, 0);
		atomic_store(&states[i].work_finished, 0);
		atomic_store(&states[i].io_after_work, 0);
		atomic_store(&states[i].started, 0);
		atomic_store(&states[i].saw_cancel, 0);
		states[i].freed = 0;
		states[i].unsent_after = -1;
	}
}

/* Records the worker thread at the start of a work(). */
static struct test_state *
test_work_enter(struct httpjob *job)
{
	struct test_state *st = job->arg;

	st->work_thread = pthread_self();
	atomic_fetch_add(&st->work_calls, 1);
	return st;
}

/* work(): a JSON result. */
static void
test_work_json(struct httpjob *job)
{
	test_work_enter(job);
	httpjob_json(job, json_pack("{s:s, s:i}", "hello", "world", "n", 42));
}

/* work(): an error result. */
static void
test_work_error(struct httpjob *job)
{
	test_work_enter(job);
	httpjob_error(job, 422, "bad %s number %d", "profile", 7);
}

/* work(): no result at all. */
static void
test_work_nothing(struct httpjob *job)
{
	test_work_enter(job);
}

/* work(): 1000 raw bytes with a file name. */
static void
test_work_bytes(struct httpjob *job)
{
	test_work_enter(job);
	httpjob_bytes(job, httptest_pattern_buf(1000), 1000,
	    "application/octet-stream", "cpu.pb.gz");
}

/* work(): 10 raw bytes without a file name. */
static void
test_work_bytes_nofile(struct httpjob *job)
{
	test_work_enter(job);
	httpjob_bytes(job, httptest_pattern_buf(10), 10, "text/plain", NULL);
}

/* work(): BIG_LEN raw bytes. */
static void
test_work_big(struct httpjob *job)
{
	test_work_enter(job);
	httpjob_bytes(job, httptest_pattern_buf(BIG_LEN), BIG_LEN,
	    "application/octet-stream", "big.bin");
}

/* work() of a two-phase job: leaves the result to io(). */
static void
test_work_first(struct httpjob *job)
{
	struct test_state *st = test_work_enter(job);

	atomic_store(&st->work_finished, 1);
}

/* work() of a two-phase job that fails before io(). */
static void
test_work_fail(struct httpjob *job)
{
	test_work_enter(job);
	httpjob_error(job, 400, "refused before io");
}

/* io(): records its thread and the order, then sets the result. */
static void
test_io_second(struct httpjob *job)
{
	struct test_state *st = job->arg;

	st->io_thread = pthread_self();
	atomic_fetch_add(&st->io_calls, 1);
	if (atomic_load(&st->work_finished) &&
	    atomic_load(&st->work_calls) == 1)
		atomic_store(&st->io_after_work, 1);
	httpjob_json(job, json_pack("{s:s}", "phase", "io"));
}

/* work(): waits at the gate, then answers. */
static void
test_work_block(struct httpjob *job)
{
	test_work_enter(job);
	test_gate_pass(&gate);
	httpjob_json(job, json_pack("{s:b}", "blocked", 1));
}

/* work() of a watched job: waits (at most 30 s) to be cancelled. */
static void
test_work_watched(struct httpjob *job)
{
	struct test_state *st = test_work_enter(job);
	int64_t deadline = httptest_now_ms() + 30000;
	struct timespec ts = { 0, 1000000 };

	atomic_store(&st->started, 1);
	while (!__atomic_load_n(&job->cancelled, __ATOMIC_RELAXED) &&
	    httptest_now_ms() < deadline)
		nanosleep(&ts, NULL);
	if (__atomic_load_n(&job->cancelled, __ATOMIC_RELAXED)) {
		atomic_store(&st->saw_cancel, 1);
		httpjob_error(job, 499, "cancelled");
	} else
		httpjob_json(job, json_pack("{s:b}", "cancelled", 0));
}

/* arg_free of every test job: counts the calls. */
static void
test_arg_free(void *arg)
{
	struct test_state *st = arg;

	st->freed++;
}

/* What the test server does with a path. */
struct test_route {
	const char		*path;
	enum metrics_route	 route;
	void			(*work)(struct httpjob *);
	void			(*io)(struct httpjob *);
	int			 watch;
	int			 merge;		/* httpjob_submit_merge */
};

static const struct test_route test_routes[] = {
	{ "/json", METRICS_ROUTE_SERVICES, test_work_json, NULL, 0 },
	{ "/error", METRICS_ROUTE_LABELS, test_work_error, NULL, 0 },
	{ "/nothing", METRICS_ROUTE_HEALTHZ, test_work_nothing, NULL, 0 },
	{ "/bytes", METRICS_ROUTE_GET, test_work_bytes, NULL, 0 },
	{ "/bytes-nofile", METRICS_ROUTE_GET, test_work_bytes_nofile, NULL,
	    0 },
	{ "/big", METRICS_ROUTE_GET, test_work_big, NULL, 0 },
	{ "/io", METRICS_ROUTE_UPLOAD, test_work_first, test_io_second, 0 },
	{ "/io-fail", METRICS_ROUTE_UPLOAD, test_work_fail, test_io_second,
	    0 },
	{ "/io-json", METRICS_ROUTE_UPLOAD, test_work_json, test_io_second,
	    0 },
	{ "/block", METRICS_ROUTE_LIST, test_work_block, NULL, 0 },
	{ "/upload", METRICS_ROUTE_UPLOAD, test_work_json, NULL, 0 },
	{ "/watch", METRICS_ROUTE_MERGE, test_work_watched, NULL, 1 },
	{ "/watch-queued", METRICS_ROUTE_GET_MERGED, test_work_json, NULL,
	    1 },
	{ "/direct", METRICS_ROUTE_VERSION, NULL, NULL, 0 },
	{ "/merge", METRICS_ROUTE_MERGE, test_work_block, NULL, 1, 1 },
};

/* The request callback: counts the request and makes an httpjob. */
static void
test_httpjob_handler(struct evhttp_request *req, void *arg)
{
	struct env *e = arg;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *path = evhttp_uri_get_path(uri);
	const char *query = evhttp_uri_get_query(uri);
	const struct test_route *r = NULL;
	struct test_state *st;
	struct httpjob *job;
	size_t i;
	int s = 0;

	for (i = 0; i < sizeof test_routes / sizeof test_routes[0]; i++) {
		if (strcmp(path, test_routes[i].path) == 0)
			r = &test_routes[i];
	}
	if (query != NULL && sscanf(query, "s=%d", &s) == 1 &&
	    (s < 0 || s >= NSTATES))
		s = 0;
	st = &states[s];
	metrics_request_start(e->metrics, req, r != NULL ? r->route :
	    METRICS_ROUTE_OTHER, 0);
	conns_request_started(e->conns, req);
	if (r == NULL) {
		reply_error(e, req, 404, "no such test path %s", path);
		return;
	}
	if (r->work == NULL) {
		reply_json(e, req, 200, json_pack("{s:s}", "direct", "yes"));
		st->unsent_after = conns_unsent(e->conns);
		return;
	}
	job = httpjob_new(e, req, r->work, st, test_arg_free);
	job->io = r->io;
	if (r->watch)
		httpjob_watch(job);
	if (r->merge)
		httpjob_submit_merge(job);
	else
		httpjob_submit(job);
}

/* Condition: no connection has reply bytes left to write. */
static int
test_unsent_zero(void *arg)
{
	return conns_unsent(env.conns) == 0;
}

/* Condition: the int at arg is non-zero (atomic). */
static int
test_flag_set(void *arg)
{
	return atomic_load((atomic_int *)arg) != 0;
}

/* Condition: the pool at arg has one job queued. */
static int
test_one_queued(void *arg)
{
	return pool_queued(arg) == 1;
}

/* Condition: the test_state at arg has had its arg_free call. */
static int
test_freed(void *arg)
{
	return ((struct test_state *)arg)->freed > 0;
}

/* Connects, sends "GET target" and waits for the whole response. */
static struct httptest_client *
test_get(const char *target)
{
	struct httptest_client *c = httptest_connect(port);
	char req[256];

	snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: test\r\n\r\n",
	    target);
	httptest_send(c, req);
	httptest_wait(base, c);
	return c;
}

/* Connects and sends "GET target" without waiting. */
static struct httptest_client *
test_send(const char *target)
{
	struct httptest_client *c = httptest_connect(port);
	char req[256];

	snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: test\r\n\r\n",
	    target);
	httptest_send(c, req);
	return c;
}

/* Parses the body as JSON and checks the envelope's code; new ref. */
static json_t *
test_envelope(const struct httptest_client *c, int code)
{
	json_error_t err;
	json_t *j = json_loads(httptest_body(c), 0, &err);

	if (j == NULL) {
		printf("# not JSON: %s\n", httptest_body(c));
		return NULL;
	}
	if (json_integer_value(json_object_get(j, "code")) != code ||
	    json_object_size(j) != 2) {
		printf("# envelope: %s\n", httptest_body(c));
		json_decref(j);
		return NULL;
	}
	return j;
}

/* True if the rendered metrics hold the line needle. */
static int
test_metric(const char *needle)
{
	struct metrics_gauges g = { 0, 0, 1, 0 };
	size_t len;
	char *s = metrics_render_string(env.metrics, &g, &len);
	int r = strstr(s, needle) != NULL;

	if (!r)
		printf("# metrics lack %s\n", needle);
	free(s);
	return r;
}

/* Learns the thread of pool's (only) worker: runs one job there. */
static void
test_probe_work(struct pool_job *pj)
{
	((struct test_probe *)pj)->thread = pthread_self();
}

/* done() of a probe job. */
static void
test_probe_done(struct pool_job *pj)
{
	((struct test_probe *)pj)->done = 1;
}

/* Condition: the probe at arg is done. */
static int
test_probe_finished(void *arg)
{
	return ((struct test_probe *)arg)->done;
}

/* Runs a probe on pool; returns its worker's thread. */
static pthread_t
test_probe(struct pool *pool)
{
	struct test_probe p;

	memset(&p, 0, sizeof p);
	p.pj.work = test_probe_work;
	p.pj.done = test_probe_done;
	if (pool_submit(pool, &p.pj) != 0 ||
	    !httptest_run_until(base, test_probe_finished, &p,
	    HTTPTEST_WAIT_MS))
		httptest_bail("a probe job did not run");
	return p.thread;
}

/* A JSON result reaches the client in the envelope with 200. */
static void
test_json(void)
{
	struct httptest_client *c;
	json_t *j, *want;
	char *conn;

	test_states_reset();
	c = test_get("/json?s=1");
	ok(c->complete && c->status == 200, "a JSON job answers 200 (%d)",
	    c->status);
	ok(strncmp(c->buf, "HTTP/1.1 200 OK\r\n", 17) == 0,
	    "status line \"HTTP/1.1 200 OK\"");
	ok(httptest_header_is(c, "Content-Type", "application/json"),
	    "Content-Type: application/json");
	j = test_envelope(c, 200);
	want = json_pack("{s:s, s:i}", "hello", "world", "n", 42);
	ok(j != NULL && json_equal(json_object_get(j, "body"), want),
	    "the body is the job's JSON in {\"code\":200,\"body\":...}: %s",
	    httptest_body(c));
	json_decref(want);
	json_decref(j);
	ok(atomic_load(&states[1].work_calls) == 1 && states[1].freed == 1,
	    "work() ran once and arg_free once");
	ok(!pthread_equal(states[1].work_thread, loop_thread),
	    "work() ran off the loop thread");
	conn = httptest_header(c, "Connection");
	ok(conn == NULL, "no Connection header while not stopping (%s)",
	    conn != NULL ? conn : "none");
	free(conn);
	ok(httptest_run_until(base, test_unsent_zero, NULL, HTTPTEST_WAIT_MS),
	    "unsent is back to 0");
	ok(test_metric("profd_http_requests_total{route=\"services\","
	    "code=\"200\"} 1\n") &&
	    test_metric("profd_http_request_duration_seconds_count"
	    "{route=\"services\"} 1\n"),
	    "metrics count the request (route services, 200) and its latency");
	httptest_free(c);
}

/* Error results: the error envelope with the status; no result: 500. */
static void
test_errors(void)
{
	struct httptest_client *c;
	json_t *j;

	test_states_reset();
	c = test_get("/error?s=1");
	ok(c->complete && c->status == 422, "an error job answers its status "
	    "422 (%d)", c->status);
	ok(strncmp(c->buf, "HTTP/1.1 422 Unprocessable Entity\r\n", 35) == 0,
	    "with the reason phrase Unprocessable Entity");
	ok(httptest_header_is(c, "Content-Type", "application/json"),
	    "Content-Type: application/json");
	j = test_envelope(c, 422);
	ok(j != NULL && json_object_get(j, "body") == NULL &&
	    strcmp(json_string_value(json_object_get(j, "error")),
	    "bad profile number 7") == 0,
	    "the body is {\"code\":422,\"error\":\"bad profile number 7\"}: %s",
	    httptest_body(c));
	json_decref(j);
	ok(states[1].freed == 1, "arg_free ran once");
	ok(test_metric("profd_http_requests_total{route=\"labels\","
	    "code=\"422\"} 1\n"), "metrics count route labels, 422");
	httptest_free(c);

	c = test_get("/nothing?s=2");
	j = test_envelope(c, 500);
	ok(c->status == 500 && j != NULL && strcmp(json_string_value(
	    json_object_get(j, "error")), "internal error: no result") == 0,
	    "a job with no result answers 500 \"internal error: no result\"");
	json_decref(j);
	httptest_free(c);

	c = test_get("/no-such-path");
	ok(c->status == 404 && (j = test_envelope(c, 404)) != NULL,
	    "reply_error from the handler: 404 in the envelope");
	json_decref(j);
	httptest_free(c);
	ok(httptest_run_until(base, test_unsent_zero, NULL, HTTPTEST_WAIT_MS),
	    "unsent is back to 0");
}

/* Raw bytes with Content-Type and Content-Disposition. */
static void
test_bytes(void)
{
	struct httptest_client *c;
	const uint8_t *body;
	char *disp;
	size_t i;
	int same = 1;

	test_states_reset();
	c = test_get("/bytes?s=1");
	ok(c->complete && c->status == 200 && httptest_body_len(c) == 1000,
	    "a bytes job answers 200 with its 1000 bytes (%d, %zu)",
	    c->status, httptest_body_len(c));
	body = (const uint8_t *)httptest_body(c);
	for (i = 0; i < httptest_body_len(c); i++)
		same &= body[i] == httptest_pattern(i);
	ok(same, "the bytes arrive unchanged (no envelope, NULs included)");
	ok(httptest_header_is(c, "Content-Type", "application/octet-stream"),
	    "Content-Type is the job's");
	ok(httptest_header_is(c, "Content-Disposition",
	    "attachment; filename=\"cpu.pb.gz\""),
	    "Content-Disposition: attachment; filename=\"cpu.pb.gz\"");
	ok(httptest_header_is(c, "Content-Length", "1000"),
	    "Content-Length: 1000");
	ok(states[1].freed == 1, "arg_free ran once");
	httptest_free(c);

	c = test_get("/bytes-nofile?s=2");
	disp = httptest_header(c, "Content-Disposition");
	ok(c->status == 200 && httptest_body_len(c) == 10 && disp == NULL &&
	    httptest_header_is(c, "Content-Type", "text/plain"),
	    "without a file name: no Content-Disposition (%s)",
	    disp != NULL ? disp : "none");
	free(disp);
	httptest_free(c);
	ok(test_metric("profd_http_requests_total{route=\"get\","
	    "code=\"200\"} 2\n"), "metrics count route get, 200 twice");
}

/* work() on the CPU pool, then io() on the I/O pool, then the reply. */
static void
test_io_phase(void)
{
	struct httptest_client *c;
	pthread_t cpu, io;
	json_t *j;

	cpu = test_probe(env.pool);
	io = test_probe(env.io_pool);
	ok(!pthread_equal(cpu, io) && !pthread_equal(cpu, loop_thread) &&
	    !pthread_equal(io, loop_thread),
	    "the CPU and I/O pools have their own worker threads");

	test_states_reset();
	c = test_get("/io?s=1");
	ok(c->complete && c->status == 200, "a two-phase job answers 200 (%d)",
	    c->status);
	j = test_envelope(c, 200);
	ok(j != NULL && strcmp(json_string_value(json_object_get(
	    json_object_get(j, "body"), "phase")), "io") == 0,
	    "the reply is io()'s result: %s", httptest_body(c));
	json_decref(j);
	ok(atomic_load(&states[1].work_calls) == 1 &&
	    atomic_load(&states[1].io_calls) == 1,
	    "work() and io() ran once each");
	ok(pthread_equal(states[1].work_thread, cpu),
	    "work() ran on the CPU pool's worker");
	ok(pthread_equal(states[1].io_thread, io),
	    "io() ran on the I/O pool's worker");
	ok(atomic_load(&states[1].io_after_work),
	    "io() ran after work() had finished");
	ok(states[1].freed == 1, "arg_free ran once");
	httptest_free(c);

	c = test_get("/io-fail?s=2");
	ok(c->status == 400 && atomic_load(&states[2].work_calls) == 1 &&
	    atomic_load(&states[2].io_calls) == 0,
	    "work() setting an error skips io() and answers it (%d)",
	    c->status);
	httptest_free(c);
	c = test_get("/io-json?s=3");
	ok(c->status == 200 && atomic_load(&states[3].work_calls) == 1 &&
	    atomic_load(&states[3].io_calls) == 0 &&
	    strstr(httptest_body(c), "\"hello\"") != NULL,
	    "work() setting JSON skips io() and answers it");
	httptest_free(c);
	ok(pool_inflight(env.pool) == 0 && pool_inflight(env.io_pool) == 0,
	    "nothing left in flight in either pool");
	ok(test_metric("profd_http_requests_total{route=\"upload\","
	    "code=\"200\"} 2\n") &&
	    test_metric("profd_http_requests_total{route=\"upload\","
	    "code=\"400\"} 1\n") &&
	    test_metric("profd_uploads_total 2\n"),
	    "metrics count route upload: 200 twice, 400 once");
}

/* A full CPU queue answers 503 with Retry-After: 1. */
static void
test_busy(void)
{
	struct httptest_client *a, *b, *c;
	json_t *j;
	const char *err;

	test_states_reset();
	test_gate_set(&gate, 0);
	/* The pool has one worker and room for one waiting job. */
	a = test_send("/block?s=1");
	ok(httptest_run_until(base, test_gate_reached, &gate,
	    HTTPTEST_WAIT_MS), "job A holds the only worker");
	b = test_send("/block?s=2");
	ok(httptest_run_until(base, test_one_queued, env.pool,
	    HTTPTEST_WAIT_MS), "job B waits in the queue");
	c = test_get("/upload?s=3");
	ok(c->complete && c->status == 503,
	    "job C finds the queue full: 503 (%d)", c->status);
	ok(httptest_header_is(c, "Retry-After", "1"), "Retry-After: 1");
	j = test_envelope(c, 503);
	err = j != NULL ? json_string_value(json_object_get(j, "error")) :
	    NULL;
	ok(err != NULL && strcmp(err, "busy: 1 jobs queued, try again") == 0,
	    "the error envelope says busy: %s", httptest_body(c));
	json_decref(j);
	ok(atomic_load(&states[3].work_calls) == 0 && states[3].freed == 1,
	    "the refused job never ran and its arg was freed");
	ok(test_metric("profd_http_requests_total{route=\"upload\","
	    "code=\"503\"} 1\n") &&
	    test_metric("profd_uploads_rejected_total{reason=\"busy\"} 1\n"),
	    "metrics count the 503 as an upload rejected for busy");
	httptest_poll(a);
	httptest_poll(b);
	ok(a->len == 0 && b->len == 0 && pool_inflight(env.pool) == 2,
	    "A and B are still in flight");

	test_gate_set(&gate, 1);
	httptest_wait(base, a);
	httptest_wait(base, b);
	ok(a->complete && b->complete && a->status == 200 && b->status == 200,
	    "once the worker is free A and B answer 200 (%d, %d)", a->status,
	    b->status);
	ok(states[1].freed == 1 && states[2].freed == 1,
	    "their args were freed once each");
	ok(httptest_run_until(base, test_unsent_zero, NULL, HTTPTEST_WAIT_MS),
	    "unsent is back to 0");
	httptest_free(a);
	httptest_free(b);
	httptest_free(c);
	test_gate_set(&gate, 0);
}

/* unsent counts each reply until it is written. */
static void
test_unsent(void)
{
	struct httptest_client *c;

	test_states_reset();
	ok(conns_unsent(env.conns) == 0, "unsent starts at 0");
	c = test_get("/direct?s=1");
	ok(c->status == 200 && states[1].unsent_after == 1,
	    "right after reply_json unsent is 1 (%d)",
	    states[1].unsent_after);
	ok(httptest_run_until(base, test_unsent_zero, NULL, HTTPTEST_WAIT_MS),
	    "and back to 0 once written");
	httptest_free(c);

	/* A reply bigger than the socket buffers: the client reads a bit. */
	c = test_send("/big?s=2");
	c->discard = 1;
	c->max_read = 65536;
	httptest_run_until(base, httptest_some_body, c, HTTPTEST_WAIT_MS);
	ok(c->status == 200 && httptest_body_len(c) > 0,
	    "a 32 MB reply starts (%d)", c->status);
	ok(conns_unsent(env.conns) == 1, "while the client has read only "
	    "64 KB of it, unsent is 1 (%d)", conns_unsent(env.conns));
	c->max_read = 0;
	httptest_wait(base, c);
	ok(c->complete && httptest_body_len(c) == BIG_LEN && !c->body_bad,
	    "the client reads all 32 MB, unchanged (%zu bytes)",
	    httptest_body_len(c));
	ok(httptest_run_until(base, test_unsent_zero, NULL, HTTPTEST_WAIT_MS),
	    "then unsent is back to 0");
	ok(states[2].freed == 1, "arg_free ran once");
	httptest_free(c);
}

/* env.stopping: Connection: close, and the server closes. */
static void
test_stopping(void)
{
	struct httptest_client *c;

	test_states_reset();
	env.stopping = 1;
	c = test_get("/json?s=1");
	ok(c->complete && c->status == 200,
	    "a job while stopping still answers (%d)", c->status);
	ok(httptest_header_is(c, "Connection", "close"),
	    "with Connection: close");
	ok(httptest_run_until(base, httptest_closed, c, HTTPTEST_WAIT_MS) &&
	    c->error == 0, "and the server closes the connection");
	env.stopping = 0;
	ok(httptest_run_until(base, test_unsent_zero, NULL, HTTPTEST_WAIT_MS),
	    "unsent is back to 0");
	httptest_free(c);
}

/* Condition: the first watched job has been cancelled (checking now). */
static int
test_watch_cancelled(void *arg)
{
	struct httpjob *job;

	httpjob_check_watched(&env);
	job = TAILQ_FIRST(&env.watched);
	return job != NULL && job->cancelled;
}

/* A watched job is cancelled when its client closes the socket. */
static void
test_watched(void)
{
	struct httptest_client *c;
	struct httpjob *job;

	test_states_reset();
	c = test_send("/watch?s=1");
	ok(httptest_run_until(base, test_flag_set, &states[1].started,
	    HTTPTEST_WAIT_MS), "the watched job runs");
	job = TAILQ_FIRST(&env.watched);
	ok(job != NULL && TAILQ_NEXT(job, watch_entry) == NULL &&
	    job->arg == &states[1], "it is on env.watched");
	httpjob_check_watched(&env);
	ok(job != NULL && job->cancelled == 0,
	    "while the client is connected it is not cancelled");

	httptest_close(c, 0);
	ok(httptest_run_until(base, test_watch_cancelled, NULL,
	    HTTPTEST_WAIT_MS), "after the client closes its socket "
	    "httpjob_check_watched sets cancelled = 1");
	ok(httptest_run_until(base, test_freed, &states[1], HTTPTEST_WAIT_MS),
	    "the job ends");
	ok(atomic_load(&states[1].saw_cancel), "work() saw the cancel");
	ok(TAILQ_EMPTY(&env.watched), "env.watched is empty again");
	ok(test_metric("profd_http_requests_total{route=\"merge\","
	    "code=\"499\"} 1\n"), "metrics count route merge, 499");
	ok(httptest_run_until(base, test_unsent_zero, NULL, HTTPTEST_WAIT_MS),
	    "unsent is back to 0");
	httptest_free(c);
}

/* A watched job cancelled while queued never runs its work(). */
static void
test_watched_queued(void)
{
	struct httptest_client *a, *b;
	json_t *j;

	test_states_reset();
	test_gate_set(&gate, 0);
	a = test_send("/block?s=1");
	ok(httptest_run_until(base, test_gate_reached, &gate,
	    HTTPTEST_WAIT_MS), "job A holds the only worker");
	b = test_send("/watch-queued?s=2");
	ok(httptest_run_until(base, test_one_queued, env.pool,
	    HTTPTEST_WAIT_MS), "watched job B waits in the queue");
	httptest_close(b, 0);
	ok(httptest_run_until(base, test_watch_cancelled, NULL,
	    HTTPTEST_WAIT_MS), "B's client closes: B is cancelled");
	test_gate_set(&gate, 1);
	ok(httptest_wait(base, a) && a->status == 200, "A answers 200");
	ok(httptest_run_until(base, test_freed, &states[2], HTTPTEST_WAIT_MS),
	    "B ends");
	ok(atomic_load(&states[2].work_calls) == 0,
	    "B's work() never ran");
	ok(test_metric("profd_http_requests_total{route=\"get_merged\","
	    "code=\"499\"} 1\n"), "B was answered 499 (route get_merged)");
	ok(TAILQ_EMPTY(&env.watched), "env.watched is empty again");
	ok(httptest_run_until(base, test_unsent_zero, NULL, HTTPTEST_WAIT_MS),
	    "unsent is back to 0");

	/* An unwatched client that stays gets its answer as usual. */
	httptest_free(a);
	a = test_get("/json?s=3");
	j = test_envelope(a, 200);
	ok(a->status == 200 && j != NULL, "a plain job still answers 200");
	json_decref(j);
	httptest_free(a);
	httptest_free(b);
	test_gate_set(&gate, 0);
}

/* Condition: the client at arg has its whole response (no loop wait). */
static int
test_complete(void *arg)
{
	struct httptest_client *c = arg;

	httptest_poll(c);
	return c->complete;
}

/* True if c got status code with an error message starting with want. */
static int
test_error_is(const struct httptest_client *c, int code, const char *want)
{
	json_t *j = test_envelope(c, code);
	const char *err = j != NULL ?
	    json_string_value(json_object_get(j, "error")) : NULL;
	int r = c->status == code && err != NULL &&
	    strncmp(err, want, strlen(want)) == 0;

	if (!r)
		printf("# got %d %s\n", c->status, httptest_body(c));
	json_decref(j);
	return r;
}

/*
 * --request-timeout 1: the running job is answered 504 at the timeout and
 * cancelled, the queued one 503 and never run; late results are dropped.
 */
static void
test_timeout(void)
{
	struct httptest_client *a, *b;
	int64_t t0, ms;
	size_t alen;

	test_states_reset();
	test_gate_set(&gate, 0);
	env.cfg = &cfg;
	t0 = httptest_now_ms();
	a = test_send("/block?s=1");
	ok(httptest_run_until(base, test_gate_reached, &gate,
	    HTTPTEST_WAIT_MS), "job A holds the only worker");
	b = test_send("/block?s=2");
	ok(httptest_run_until(base, test_one_queued, env.pool,
	    HTTPTEST_WAIT_MS), "job B waits in the queue");
	ok(httptest_run_until(base, test_complete, a, HTTPTEST_WAIT_MS),
	    "A is answered while its work() is still blocked");
	ms = httptest_now_ms() - t0;
	ok(ms >= 900 && ms < 3000, "at the 1 s timeout (%lld ms)",
	    (long long)ms);
	ok(test_error_is(a, 504, "request took longer than "
	    "--request-timeout (1 s); its work was cancelled"),
	    "A: 504 naming --request-timeout and its value");
	ok(httptest_run_until(base, test_complete, b, HTTPTEST_WAIT_MS) &&
	    test_error_is(b, 503, "request waited longer than "
	    "--request-timeout (1 s) for a worker"),
	    "B, still queued: 503 naming --request-timeout");
	ok(httptest_header_is(b, "Retry-After", "1"), "B has Retry-After");
	ok(states[2].freed == 1 && atomic_load(&states[2].work_calls) == 0 &&
	    pool_queued(env.pool) == 0, "B was taken out of the queue and "
	    "freed at once; its work() never runs");
	ok(states[1].freed == 0 && pool_inflight(env.pool) == 1,
	    "A's worker still holds its job");

	alen = a->len;
	test_gate_set(&gate, 1);
	ok(httptest_run_until(base, test_freed, &states[1], HTTPTEST_WAIT_MS),
	    "when A's work() returns, its job is freed");
	httptest_poll(a);
	ok(states[1].freed == 1 && a->len == alen && atomic_load(
	    &states[2].work_calls) == 0, "A's late result is dropped: "
	    "nothing more is sent, arg freed once; B never ran");
	ok(test_metric("profd_request_timeouts_total{state=\"running\"} 1\n")
	    && test_metric("profd_request_timeouts_total{state=\"queued\"} "
	    "1\n"), "metrics count one timeout of each kind");
	httptest_free(a);
	httptest_free(b);
	a = test_get("/json?s=3");
	ok(a->status == 200, "the next request is served (%d)", a->status);
	httptest_free(a);
	env.cfg = NULL;
	test_gate_set(&gate, 0);
}

/* Condition: env.merges is the int at arg. */
static int
test_merges_are(void *arg)
{
	return env.merges == *(int *)arg;
}

/*
 * Merges run on the merge pool, capped at --max-merges 1; uploads do not
 * wait for them; a timed-out merge counts until its worker returns.
 */
static void
test_merge_cap(void)
{
	struct httptest_client *a, *b, *c;
	int zero = 0;

	test_states_reset();
	test_gate_set(&gate, 0);
	env.cfg = &cfg;
	a = test_send("/merge?s=1");
	httptest_run_until(base, test_gate_reached, &gate, HTTPTEST_WAIT_MS);
	ok(test_gate_reached(&gate) && env.merges == 1 &&
	    pool_inflight(env.merge_pool) == 1 && pool_inflight(env.pool) == 0,
	    "merge A runs on the merge pool (env.merges %d)", env.merges);
	c = test_get("/upload?s=3");
	ok(c->status == 200, "an upload answers while every merge worker is "
	    "busy (%d)", c->status);
	httptest_free(c);
	b = test_get("/merge?s=2");
	ok(test_error_is(b, 503, "busy: 1 merges running (--max-merges 1)"),
	    "merge B past --max-merges: 503 naming it");
	ok(httptest_header_is(b, "Retry-After", "1"), "with Retry-After");
	ok(states[2].freed == 1 && atomic_load(&states[2].work_calls) == 0,
	    "B never ran, its arg was freed");
	ok(test_metric("profd_merges_refused_total 1\n"),
	    "metrics count the refusal");
	httptest_free(b);

	ok(httptest_run_until(base, test_complete, a, HTTPTEST_WAIT_MS) &&
	    test_error_is(a, 504, "request took longer than "
	    "--request-timeout (1 s)"), "merge A times out: 504");
	ok(env.merges == 1, "its worker has not returned: it still counts");
	b = test_get("/merge?s=4");
	ok(b->status == 503, "so another merge still gets 503 (%d)",
	    b->status);
	httptest_free(b);
	test_gate_set(&gate, 1);
	ok(httptest_run_until(base, test_merges_are, &zero,
	    HTTPTEST_WAIT_MS) && states[1].freed == 1,
	    "once it returns the count is 0 and the job freed");
	httptest_free(a);
	test_gate_set(&gate, 0);
	env.cfg = NULL;
}

/*
 * A client that resets the connection in the middle of a download: libevent
 * 2.1 frees a request whose write fails without calling its on_complete
 * callback, so a count kept per reply never came back down and a shutdown
 * drain waited for its deadline. The count now comes from the connections.
 */
static void
test_unsent_reset(void)
{
	struct httptest_client *c;
	int before = conns_unsent(env.conns), zero;

	test_states_reset();
	c = test_send("/big?s=1");
	c->discard = 1;
	c->max_read = 65536;
	ok(httptest_run_until(base, httptest_some_body, c, HTTPTEST_WAIT_MS) &&
	    c->status == 200 && conns_unsent(env.conns) == before + 1,
	    "a 32 MB reply starts and is counted");
	httptest_close(c, 1);
	ok(httptest_run_until(base, test_freed, &states[1], HTTPTEST_WAIT_MS),
	    "the job ended");
	zero = httptest_run_until(base, test_unsent_zero, NULL,
	    HTTPTEST_WAIT_MS);
	ok(zero && before == 0, "after the client reset mid-download, unsent "
	    "is back to 0 (%d)", conns_unsent(env.conns));
	httptest_free(c);
}

int
main(void)
{
	test_gate_init(&gate);
	signal(SIGPIPE, SIG_IGN);
	log_set_level(LOG_LEVEL_WARN);
	evthread_use_pthreads();
	loop_thread = pthread_self();
	memset(&env, 0, sizeof env);
	TAILQ_INIT(&env.watched);
	base = env.base = event_base_new();
	env.metrics = metrics_new();
	env.pool = pool_new(base, 1, 1);
	env.io_pool = pool_new(base, 1, 64);
	env.merge_pool = pool_new(base, 1, INT32_MAX);
	cfg.request_timeout = 1;
	cfg.max_merges = 1;
	http = evhttp_new(base);
	env.conns = conns_new(base, http, 64, 60);
	evhttp_set_gencb(http, test_httpjob_handler, &env);
	conns_set_listener(env.conns, httptest_bind(http, &port));

	test_json();
	test_errors();
	test_bytes();
	test_io_phase();
	test_busy();
	test_unsent();
	test_stopping();
	test_watched();
	test_watched_queued();
	test_timeout();
	test_merge_cap();
	test_unsent_reset();

	pool_free(env.pool);
	pool_free(env.merge_pool);
	pool_free(env.io_pool);
	evhttp_free(http);
	conns_free(env.conns);
	metrics_free(env.metrics);
	event_base_free(base);
	pthread_cond_destroy(&gate.cond);
	pthread_mutex_destroy(&gate.lock);
	return tap_done();
}
