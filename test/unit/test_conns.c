/*
 * Unit tests of collector/http/conns.c, the cap on open connections and the
 * read timeout, on a real evhttp listener on 127.0.0.1 (ephemeral port)
 * with raw loopback clients. With --max-connections 2: three clients
 * connect, two are accepted and the third waits in the backlog (its
 * request goes unanswered) until a client closes, then gets in; the count
 * falls back to 0 as clients leave. With --read-timeout 1 s: a client that
 * sends half a request is shut down after about a second; one whose
 * request is being served is not, however long it takes; after a reply
 * the deadline starts again. conns_set_listener(NULL) stops the pausing
 * (safely while paused, even once the listener is deleted), and setting
 * the listener again with too many open pauses at once. Last, evhttp_free
 * with connections still open (one with a request unanswered) then
 * conns_free closes every socket and leaks nothing (ASan checks). The
 * cap tests use a long read timeout so that only the clients close. A
 * TODO result records a known gap: a reply that takes longer than the
 * read timeout to download is cut off.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>

#include "collector/env.h"
#include "collector/http/conns.h"
#include "collector/http/reply.h"
#include "common/log.h"
#include "test/lib/httptest.h"
#include "test/lib/tap.h"

#define GET_A	"GET /a HTTP/1.1\r\nHost: test\r\n\r\n"
#define GET_HOLD "GET /hold HTTP/1.1\r\nHost: test\r\n\r\n"
#define BIG_LEN	(32 * 1024 * 1024)	/* more than socket buffers */

/* A test server: evhttp, its connection tracker and listener. */
struct test_server {
	struct env			 env;
	struct evhttp			*http;
	struct evhttp_bound_socket	*sock;
	int				 port;
	struct evhttp_request		*held;	/* /hold, not answered yet */
};

static struct event_base *base;

/*
 * The request callback: /hold is kept unanswered, /big gets BIG_LEN bytes,
 * the rest a small JSON reply.
 */
static void
test_conns_handler(struct evhttp_request *req, void *arg)
{
	struct test_server *s = arg;
	const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(
	    req));

	conns_request_started(s->env.conns, req);
	if (strcmp(path, "/hold") == 0 && s->held == NULL) {
		s->held = req;
		return;
	}
	if (strcmp(path, "/big") == 0) {
		reply_bytes(&s->env, req, httptest_pattern_buf(BIG_LEN), BIG_LEN,
		    "application/octet-stream", NULL);
		return;
	}
	reply_json(&s->env, req, 200, json_pack("{s:s}", "path", path));
}

/* A server tracking at most max connections with read_timeout. */
static struct test_server *
test_conns_server(int64_t max, int64_t read_timeout)
{
	struct test_server *s = calloc(1, sizeof *s);

	if (s == NULL)
		httptest_bail("out of memory");
	TAILQ_INIT(&s->env.watched);
	s->env.base = base;
	s->http = evhttp_new(base);
	s->env.conns = conns_new(base, s->http, max, read_timeout);
	evhttp_set_gencb(s->http, test_conns_handler, s);
	s->sock = httptest_bind(s->http, &s->port);
	conns_set_listener(s->env.conns, s->sock);
	return s;
}

/* Frees the server as server_free does: evhttp, then the tracker. */
static void
test_conns_server_free(struct test_server *s)
{
	evhttp_free(s->http);
	conns_free(s->env.conns);
	free(s);
}

/* Condition arguments: a server and a count. */
struct test_count {
	struct test_server	*s;
	int			 want;
};

/* Condition: conns_count is want. */
static int
test_count_is(void *arg)
{
	struct test_count *tc = arg;

	return conns_count(tc->s->env.conns) == tc->want;
}

/* Runs the loop until conns_count(s) is want, at most ms; 1 if it is. */
static int
test_wait_count_ms(struct test_server *s, int want, int64_t ms)
{
	struct test_count tc = { s, want };

	return httptest_run_until(base, test_count_is, &tc, ms);
}

/* Runs the loop until conns_count(s) is want; 1 if it got there. */
static int
test_wait_count(struct test_server *s, int want)
{
	return test_wait_count_ms(s, want, HTTPTEST_WAIT_MS);
}

/* Condition: each of a NULL-terminated array of clients is complete. */
static int
test_all_done(void *arg)
{
	struct httptest_client **c = arg;
	int all = 1;

	for (; *c != NULL; c++)
		all &= httptest_done(*c);
	return all;
}

/* Reads what has arrived; true if c has received nothing and is open. */
static int
test_silent(struct httptest_client *c)
{
	httptest_poll(c);
	return c->len == 0 && !c->eof;
}

/* Clears a client's parsed response before its next request. */
static void
test_client_reset(struct httptest_client *c)
{
	c->len = c->head_len = 0;
	c->status = 0;
	c->complete = 0;
	c->content_length = -1;
}

/* At the cap the third client waits until one closes. */
static void
test_cap(void)
{
	struct test_server *s = test_conns_server(2, 60);
	struct httptest_client *c1, *c2, *c3, *two[3];

	ok(conns_count(s->env.conns) == 0, "no connections at first");
	c1 = httptest_connect(s->port);
	c2 = httptest_connect(s->port);
	c3 = httptest_connect(s->port);
	ok(test_wait_count(s, 2), "three clients connect: two are accepted");

	httptest_send(c1, GET_A);
	httptest_send(c2, GET_A);
	httptest_send(c3, GET_A);
	two[0] = c1;
	two[1] = c2;
	two[2] = NULL;
	ok(httptest_run_until(base, test_all_done, two, HTTPTEST_WAIT_MS) &&
	    c1->status == 200 && c2->status == 200,
	    "the two accepted clients are answered");
	test_client_reset(c1);
	httptest_send(c1, GET_A);
	ok(httptest_wait(base, c1) && c1->status == 200,
	    "and answered again on the same connection");
	ok(test_silent(c3) && conns_count(s->env.conns) == 2,
	    "meanwhile the third is not accepted: no answer, 2 open");

	httptest_close(c1, 0);
	httptest_wait(base, c3);
	ok(c3->complete && c3->status == 200,
	    "once the first client closes, the third gets in and is "
	    "answered (%d)", c3->status);
	ok(test_wait_count(s, 2), "2 connections open (the 2nd and 3rd)");
	test_client_reset(c2);
	ok(test_silent(c2), "the second is still open");

	httptest_close(c2, 0);
	httptest_close(c3, 0);
	ok(test_wait_count(s, 0), "all clients closed: 0 open");

	/* Accepting resumed: a new client is served at once. */
	httptest_free(c1);
	c1 = httptest_connect(s->port);
	httptest_send(c1, GET_A);
	ok(httptest_wait(base, c1) && c1->status == 200 &&
	    conns_count(s->env.conns) == 1,
	    "below the cap again, a new client is served");
	httptest_free(c1);
	httptest_free(c2);
	httptest_free(c3);
	ok(test_wait_count(s, 0), "and leaves: 0 open");
	test_conns_server_free(s);
}

/* Runs the loop until c is closed by the server; the ms it took. */
static int64_t
test_wait_closed(struct httptest_client *c, int64_t since)
{
	httptest_run_until(base, httptest_closed, c, HTTPTEST_WAIT_MS);
	return httptest_now_ms() - since;
}

/* Condition: the time at arg has come. */
static int
test_time_reached(void *arg)
{
	return httptest_now_ms() >= *(int64_t *)arg;
}

/* A half request is cut off after the read timeout; a busy one is not. */
static void
test_read_timeout(void)
{
	struct test_server *s = test_conns_server(2, 1);
	struct httptest_client *c, *none;
	int64_t t0, ms, until;

	/* Half a request (the headers never end), and not a byte at all. */
	t0 = httptest_now_ms();
	c = httptest_connect(s->port);
	none = httptest_connect(s->port);
	httptest_send(c, "GET /a HTTP/1.1\r\nHost: te");
	ok(test_wait_count(s, 2), "both clients are accepted");
	ms = test_wait_closed(c, t0);
	ok(c->eof, "a client sending half a request is shut down");
	ok(ms >= 950 && ms < 5000,
	    "after about the 1 s read timeout (%lld ms)", (long long)ms);
	ok(c->len == 0 && c->error == 0,
	    "with a plain close and no reply (%zu bytes, errno %d)", c->len,
	    c->error);
	ms = test_wait_closed(none, t0);
	ok(none->eof && none->len == 0 && ms >= 950 && ms < 5000,
	    "a client that sends nothing is shut down too (%lld ms)",
	    (long long)ms);
	ok(test_wait_count(s, 0), "the connections are counted gone");
	httptest_free(c);
	httptest_free(none);

	/* A request being served is not cut off, however long it takes. */
	c = httptest_connect(s->port);
	httptest_send(c, GET_HOLD);
	t0 = httptest_now_ms();
	until = t0 + 1300;
	httptest_run_until(base, test_time_reached, &until, 5000);
	ok(s->held != NULL && test_silent(c) &&
	    conns_count(s->env.conns) == 1,
	    "a connection whose request is unanswered for 1.3 s stays open");
	reply_json(&s->env, s->held, 200, json_pack("{s:s}", "held", "yes"));
	s->held = NULL;
	ok(httptest_wait(base, c) && c->status == 200, "its reply arrives");
	t0 = httptest_now_ms();
	test_client_reset(c);
	ms = test_wait_closed(c, t0);
	/* Had the deadline not restarted, it would have closed at once. */
	ok(c->eof && c->len == 0 && ms >= 700 && ms < 5000,
	    "idle after the reply, it is shut down a read timeout later "
	    "(%lld ms)", (long long)ms);
	ok(test_wait_count(s, 0), "the connection is counted gone");
	httptest_free(c);

	/*
	 * A reply that takes longer than the read timeout to download: the
	 * wait for the next request starts once the reply is written, so a
	 * slow reader is not cut off mid-download (it once was: the deadline
	 * restarted when the reply was handed to evhttp).
	 */
	c = httptest_connect(s->port);
	c->discard = 1;
	c->max_read = 65536;
	httptest_send(c, "GET /big HTTP/1.1\r\nHost: test\r\n\r\n");
	httptest_run_until(base, httptest_some_body, c, HTTPTEST_WAIT_MS);
	ok(c->status == 200 && httptest_body_len(c) > 0,
	    "a 32 MB download starts (%d)", c->status);
	/* Reads nothing more for 3 s, or until the server drops it. */
	test_wait_count_ms(s, 0, 3000);
	c->max_read = 0;
	httptest_wait(base, c);
	ok(c->complete && httptest_body_len(c) == BIG_LEN && !c->body_bad,
	    "a client reading slowly for longer than the read timeout gets "
	    "the whole reply (%zu of %d bytes)", httptest_body_len(c),
	    BIG_LEN);
	httptest_free(c);
	ok(test_wait_count(s, 0), "the connection is counted gone");
	test_conns_server_free(s);
}

/* conns_set_listener(NULL) while paused, with the listener deleted. */
static void
test_listener_null_paused(void)
{
	struct test_server *s = test_conns_server(2, 60);
	struct httptest_client *c1, *c2, *c3;

	c1 = httptest_connect(s->port);
	c2 = httptest_connect(s->port);
	ok(test_wait_count(s, 2), "two clients fill the cap");
	c3 = httptest_connect(s->port);

	/* What server.c does on SIGTERM. */
	conns_set_listener(s->env.conns, NULL);
	evhttp_del_accept_socket(s->http, s->sock);
	s->sock = NULL;
	ok(httptest_run_until(base, httptest_closed, c3, HTTPTEST_WAIT_MS) &&
	    c3->len == 0, "deleting the listener drops the waiting client "
	    "unanswered");

	httptest_send(c1, GET_A);
	ok(httptest_wait(base, c1) && c1->status == 200,
	    "the accepted clients are still served");
	httptest_close(c1, 0);
	httptest_close(c2, 0);
	ok(test_wait_count(s, 0), "they close below the cap with no listener "
	    "to resume: 0 open, no crash");
	httptest_free(c1);
	httptest_free(c2);
	httptest_free(c3);
	test_conns_server_free(s);
}

/* conns_set_listener(NULL) stops the pausing; setting it again pauses. */
static void
test_listener_null(void)
{
	struct test_server *s = test_conns_server(2, 60);
	struct httptest_client *c[4], *all[5];
	int i;

	conns_set_listener(s->env.conns, NULL);
	for (i = 0; i < 3; i++) {
		c[i] = httptest_connect(s->port);
		httptest_send(c[i], GET_A);
		all[i] = c[i];
	}
	all[3] = NULL;
	ok(test_wait_count(s, 3), "with no listener set there is no cap: "
	    "3 accepted");
	ok(httptest_run_until(base, test_all_done, all, HTTPTEST_WAIT_MS) &&
	    c[0]->status == 200 && c[1]->status == 200 && c[2]->status == 200,
	    "and all 3 answered");

	/* Over the cap already: setting the listener pauses at once. */
	conns_set_listener(s->env.conns, s->sock);
	c[3] = httptest_connect(s->port);
	httptest_send(c[3], GET_A);
	httptest_close(c[0], 0);
	ok(test_wait_count(s, 2), "the listener set again with 3 open: one "
	    "closes, 2 open");
	test_client_reset(c[1]);
	httptest_send(c[1], GET_A);
	ok(httptest_wait(base, c[1]) && test_silent(c[3]),
	    "at 2 (the cap) the fourth still waits");
	httptest_close(c[1], 0);
	ok(httptest_wait(base, c[3]) && c[3]->status == 200,
	    "below the cap it gets in and is answered");
	for (i = 0; i < 4; i++)
		httptest_free(c[i]);
	ok(test_wait_count(s, 0), "all gone: 0 open");
	test_conns_server_free(s);
}

/* evhttp_free with connections open, then conns_free: sockets closed. */
static void
test_free_open(void)
{
	struct test_server *s = test_conns_server(4, 60);
	struct httptest_client *idle, *held, *both[3];

	idle = httptest_connect(s->port);
	held = httptest_connect(s->port);
	httptest_send(held, GET_HOLD);
	ok(test_wait_count(s, 2), "two connections open");
	httptest_send(idle, GET_A);
	ok(httptest_wait(base, idle) && s->held != NULL,
	    "one idle after a reply, one with its request unanswered");

	evhttp_free(s->http);
	conns_free(s->env.conns);
	free(s);
	test_client_reset(idle);
	both[0] = idle;
	both[1] = held;
	both[2] = NULL;
	ok(httptest_run_until(base, test_all_done, both, HTTPTEST_WAIT_MS) &&
	    idle->eof && held->eof && held->len == 0,
	    "after evhttp_free and conns_free both clients see their "
	    "sockets closed");
	httptest_free(idle);
	httptest_free(held);
}

int
main(void)
{
	signal(SIGPIPE, SIG_IGN);
	log_set_level(LOG_LEVEL_ERROR);
	base = event_base_new();
	test_cap();
	test_read_timeout();
	test_listener_null_paused();
	test_listener_null();
	test_free_open();
	event_base_free(base);
	return tap_done();
}
