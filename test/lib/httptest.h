/*
 * Helpers shared by the unit tests of collector/http/: an evhttp listener
 * on 127.0.0.1 with an ephemeral port, and raw loopback clients driven
 * from the test's own event loop (non-blocking sockets read between loop
 * turns), so tests control every byte a client sends and when it closes.
 * httptest_run_until turns the loop until a condition holds or a deadline
 * passes; nothing sleeps for a fixed time.
 */
#ifndef PROFD_HTTPTEST_H
#define PROFD_HTTPTEST_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/http.h>

/* How long any wait may take before a test gives up. */
#define HTTPTEST_WAIT_MS	10000

/* A raw HTTP client on a loopback socket. */
struct httptest_client {
	int	 fd;		/* -1 once closed */
	char	*buf;		/* what was received (the body when kept) */
	size_t	 len, cap;
	int	 eof;		/* the server closed (or reset) */
	int	 error;		/* errno of a failed recv, 0 if none */
	/* The parsed response, once headers are in. */
	int	 status;	/* 0 until the status line is in */
	size_t	 head_len;	/* bytes up to and including the blank line */
	long	 content_length; /* -1 if absent */
	int	 complete;	/* headers and the whole body are in */
	/* Discard mode: body bytes are counted and checked, not kept. */
	int	 discard;
	size_t	 body_seen;
	int	 body_bad;	/* a body byte differed from the pattern */
	size_t	 max_read;	/* stop reading after this much (0: no cap) */
};

/* Prints a bail-out line and stops the test. */
static inline void
httptest_bail(const char *why)
{
	printf("Bail out! %s\n", why);
	fflush(stdout);
	exit(1);
}

/* Monotonic milliseconds. */
static inline int64_t
httptest_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The expected byte at offset i of a pattern body. */
static inline uint8_t
httptest_pattern(size_t i)
{
	return (uint8_t)(i * 31 % 251);
}

/* A malloc'd buffer of len pattern bytes. */
static inline uint8_t *
httptest_pattern_buf(size_t len)
{
	uint8_t *b = malloc(len);
	size_t i;

	if (b == NULL)
		httptest_bail("out of memory");
	for (i = 0; i < len; i++)
		b[i] = httptest_pattern(i);
	return b;
}

/* Binds http to 127.0.0.1 on an ephemeral port; *port: OUT the port. */
static inline struct evhttp_bound_socket *
httptest_bind(struct evhttp *http, int *port)
{
	struct evhttp_bound_socket *sock;
	struct sockaddr_in sin;
	socklen_t slen = sizeof sin;

	if ((sock = evhttp_bind_socket_with_handle(http, "127.0.0.1", 0)) ==
	    NULL)
		httptest_bail("cannot bind 127.0.0.1:0");
	if (getsockname(evhttp_bound_socket_get_fd(sock),
	    (struct sockaddr *)&sin, &slen) != 0)
		httptest_bail("getsockname failed");
	*port = ntohs(sin.sin_port);
	return sock;
}

/* Ends one loop turn of httptest_run_until. */
static inline void
httptest_tick_cb(evutil_socket_t fd, short what, void *arg)
{
}

/*
 * Turns the loop until done(arg) is true or ms milliseconds have passed;
 * returns done's last value. A 1 ms timer keeps the loop turning.
 */
static inline int
httptest_run_until(struct event_base *base, int (*done)(void *), void *arg,
    int64_t ms)
{
	struct timeval tv = { 0, 1000 };
	struct event *tick = event_new(base, -1, EV_PERSIST, httptest_tick_cb,
	    NULL);
	int64_t deadline = httptest_now_ms() + ms;
	int r;

	event_add(tick, &tv);
	while (!(r = done(arg)) && httptest_now_ms() < deadline)
		event_base_loop(base, EVLOOP_ONCE);
	event_free(tick);
	return r;
}

/* Opens a connection to 127.0.0.1:port (completed by the kernel's
 * backlog, whether or not the server has accepted it yet). */
static inline struct httptest_client *
httptest_connect(int port)
{
	struct httptest_client *c = calloc(1, sizeof *c);
	struct sockaddr_in sin;

	if (c == NULL)
		httptest_bail("out of memory");
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((c->fd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
	    connect(c->fd, (struct sockaddr *)&sin, sizeof sin) != 0)
		httptest_bail("cannot connect to the test server");
	fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
	c->content_length = -1;
	return c;
}

/* Sends all of s (small: it fits the socket buffer at once). */
static inline void
httptest_send(struct httptest_client *c, const char *s)
{
	size_t len = strlen(s), off = 0;
	struct pollfd pfd;
	ssize_t n;

	while (off < len) {
		n = send(c->fd, s + off, len - off, MSG_NOSIGNAL);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			httptest_bail("send to the test server failed");
		pfd.fd = c->fd;
		pfd.events = POLLOUT;
		poll(&pfd, 1, 100);
	}
}

/* Closes the client's socket (a FIN, or a reset if rst). */
static inline void
httptest_close(struct httptest_client *c, int rst)
{
	struct linger lg = { 1, 0 };

	if (c->fd < 0)
		return;
	if (rst)
		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
	close(c->fd);
	c->fd = -1;
}

/* Closes the socket if open and frees the client. */
static inline void
httptest_free(struct httptest_client *c)
{
	if (c == NULL)
		return;
	httptest_close(c, 0);
	free(c->buf);
	free(c);
}

/* Parses the status line and headers once the blank line is in. */
static inline void
httptest_parse_head(struct httptest_client *c)
{
	char *end, *p, *line;

	if (c->head_len != 0 || c->len == 0)
		return;
	c->buf[c->len] = '\0';
	if ((end = strstr(c->buf, "\r\n\r\n")) == NULL)
		return;
	c->head_len = (size_t)(end - c->buf) + 4;
	if (sscanf(c->buf, "HTTP/1.%*d %d", &c->status) != 1)
		c->status = -1;
	for (line = strstr(c->buf, "\r\n"); line != NULL && line < end;
	    line = strstr(line + 2, "\r\n")) {
		p = line + 2;
		if (strncasecmp(p, "Content-Length:", 15) == 0)
			c->content_length = strtol(p + 15, NULL, 10);
	}
}

/* Checks and drops body bytes in discard mode. */
static inline void
httptest_discard(struct httptest_client *c)
{
	size_t i;

	if (!c->discard || c->head_len == 0 || c->len <= c->head_len)
		return;
	for (i = c->head_len; i < c->len; i++) {
		if ((uint8_t)c->buf[i] != httptest_pattern(c->body_seen))
			c->body_bad = 1;
		c->body_seen++;
	}
	c->len = c->head_len;
}

/* Bytes of the body received so far. */
static inline size_t
httptest_body_len(const struct httptest_client *c)
{
	if (c->discard)
		return c->body_seen;
	return c->head_len != 0 ? c->len - c->head_len : 0;
}

/* Reads whatever has arrived, without blocking; parses the response. */
static inline void
httptest_poll(struct httptest_client *c)
{
	ssize_t n;
	size_t want;

	while (c->fd >= 0 && !c->eof && !c->complete) {
		if (c->cap - c->len < 65537) {
			c->cap = c->cap != 0 ? c->cap * 2 : 131072;
			if ((c->buf = realloc(c->buf, c->cap)) == NULL)
				httptest_bail("out of memory");
		}
		want = c->cap - c->len - 1;
		if (c->max_read != 0) {
			if (c->len + c->body_seen >= c->max_read)
				break;
			if (want > c->max_read - c->len - c->body_seen)
				want = c->max_read - c->len - c->body_seen;
		}
		n = recv(c->fd, c->buf + c->len, want, MSG_DONTWAIT);
		if (n == 0) {
			c->eof = 1;
			break;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				c->error = errno;
				c->eof = 1;
			}
			break;
		}
		c->len += (size_t)n;
		httptest_parse_head(c);
		httptest_discard(c);
		if (c->head_len != 0 && c->content_length >= 0 &&
		    httptest_body_len(c) >= (size_t)c->content_length)
			c->complete = 1;
	}
	if (c->buf != NULL)
		c->buf[c->len] = '\0';
}

/* Condition for httptest_run_until: the response is complete (or the
 * server closed the connection). */
static inline int
httptest_done(void *arg)
{
	struct httptest_client *c = arg;

	httptest_poll(c);
	return c->complete || c->eof;
}

/* Condition for httptest_run_until: some of the body is in (or the
 * server closed the connection). */
static inline int
httptest_some_body(void *arg)
{
	struct httptest_client *c = arg;

	httptest_poll(c);
	return httptest_body_len(c) > 0 || c->eof;
}

/* Condition for httptest_run_until: the server closed the connection. */
static inline int
httptest_closed(void *arg)
{
	struct httptest_client *c = arg;

	if (c->complete) {
		/* Read past the response to see the end. */
		c->complete = 0;
		c->len = c->head_len = 0;
		c->status = 0;
		c->content_length = -1;
	}
	httptest_poll(c);
	return c->eof;
}

/* Runs the loop until c's response is in; 1 if it is complete. */
static inline int
httptest_wait(struct event_base *base, struct httptest_client *c)
{
	httptest_run_until(base, httptest_done, c, HTTPTEST_WAIT_MS);
	return c->complete;
}

/*
 * The value of header name in the response (a new string: free it), or
 * NULL if absent.
 */
static inline char *
httptest_header(const struct httptest_client *c, const char *name)
{
	size_t nlen = strlen(name);
	const char *line, *end, *p, *e;
	char *v;

	if (c->head_len == 0)
		return NULL;
	end = c->buf + c->head_len - 2;
	for (line = strstr(c->buf, "\r\n"); line != NULL && line < end;
	    line = strstr(line + 2, "\r\n")) {
		p = line + 2;
		if (strncasecmp(p, name, nlen) != 0 || p[nlen] != ':')
			continue;
		for (p += nlen + 1; *p == ' '; p++)
			;
		e = strstr(p, "\r\n");
		if ((v = strndup(p, (size_t)(e - p))) == NULL)
			httptest_bail("out of memory");
		return v;
	}
	return NULL;
}

/* True if header name is present with exactly the value want. */
static inline int
httptest_header_is(const struct httptest_client *c, const char *name,
    const char *want)
{
	char *v = httptest_header(c, name);
	int r = v != NULL && strcmp(v, want) == 0;

	if (!r)
		printf("# %s: %s (want %s)\n", name, v != NULL ? v : "(none)",
		    want);
	free(v);
	return r;
}

/* The body received (NUL-terminated after its last byte). */
static inline const char *
httptest_body(const struct httptest_client *c)
{
	return c->head_len != 0 ? c->buf + c->head_len : "";
}

#endif
