/*
 * Uploads to the collector from the agent thread, with a small blocking
 * HTTP/1.1 client (no event loop, so the agent holds no descriptor between
 * uploads). Profiles wait in a bounded FIFO (the oldest is dropped when it
 * is full, so a collector that is away costs bounded memory) and go out
 * one at a time, one connection per request: POST {prefix}/api/0/profiles?
 * service=S&type=cpu&labels=L with a Content-Length body and "Connection:
 * close". A 2xx removes the profile; a 4xx drops it (retrying cannot
 * help); a 5xx, a connection error or a timeout keeps it and retries after
 * a capped exponential backoff with jitter (1 s doubling to 30 s, each
 * wait drawn from [d/2, d]).
 *
 * Descriptors: the socket is opened with SOCK_CLOEXEC for one exchange and
 * its identity (st_dev, st_ino: a socket's inode is unique) is recorded.
 * The program may close it behind our back (close_range(3, ~0U) in ssh,
 * os.closerange in Python) and reuse the number for a file of its own, so
 * before every read, write and close the identity is checked again; a
 * descriptor that is no longer ours is forgotten, never closed or written,
 * and the attempt is retried once on a new socket at once.
 *
 * Waits are poll(2) slices of at most UPLOAD_SLICE_MS; after each slice the
 * agent's wait hook runs (it drains the sample ring and may pull the
 * deadline in, e.g. when the program exits), so a slow collector neither
 * stalls sampling nor holds the program's exit past its deadline.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "agent/core/tlsclient.h"
#include "agent/core/upload.h"
#include "common/xmalloc.h"

#define UPLOAD_BACKOFF_MIN_MS	1000
#define UPLOAD_BACKOFF_MAX_MS	30000
#define UPLOAD_TIMEOUT_MS	10000
#define UPLOAD_SLICE_MS		50
#define UPLOAD_REPLY_MAX	4096	/* reply bytes kept (status, headers,
					   start of an error body) */

/* Outcome of one exchange besides an HTTP status. */
#define UPLOAD_ERR_CONNECT	0	/* refused, reset, timed out */
#define UPLOAD_ERR_LOST		-1	/* our descriptor was taken away */

struct upload_item {
	uint8_t			*data;
	size_t			 len;
	char			*target;	/* NULL: upload.target */
	TAILQ_ENTRY(upload_item) entry;
};

struct upload {
	char				*host;		/* for getaddrinfo */
	char				*port;
	char				*hostport;	/* Host header */
	char				*target;	/* path?query */
	char				*base;		/* target up to service */
	char				*prefix;	/* the URL's path */
	char				*elab;		/* escaped labels, or NULL */
	char				*auth;		/* "Bearer ..." */
	TAILQ_HEAD(, upload_item)	 queue;
	size_t				 queued;
	size_t				 queue_max;
	int64_t				 retry_at;	/* ms; 0: now */
	int				 attempts;	/* failed in a row */
	int				 gave_up;	/* a flush try failed */
	int				 verbose;
	uint64_t			 rng;
	int				 fd;		/* -1 between uploads */
	struct tlsclient		*tls;		/* https://; else NULL */
	struct tlsclient_conn		*conn;		/* TLS on fd */
	dev_t				 fd_dev;
	ino_t				 fd_ino;
	int64_t				 deadline;	/* of the exchange */
	upload_hook_cb			 hook;
	void				*hook_arg;
	struct upload_stats		 stats;
};

/* Monotonic clock in milliseconds. */
int64_t
upload_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The program named in those lines (upload_set_prog). */
static const char	*upload_prog = "profd-agent";

/* Names the program in the uploader's lines (see upload.h). */
void
upload_set_prog(const char *name)
{
	upload_prog = name;
}

/* One agent line on stderr: "profd-agent[PID]: ..." (see upload.h). */
void
upload_vsay(const char *fmt, va_list ap)
{
	char buf[512];

	vsnprintf(buf, sizeof buf, fmt, ap);
	fprintf(stderr, "%s[%d]: %s\n", upload_prog, (int)getpid(), buf);
}

/* One agent line on stderr, always (for settings the user must fix). */
static void __attribute__((format(printf, 1, 2)))
upload_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	upload_vsay(fmt, ap);
	va_end(ap);
}

/* One line on stderr when verbose (never otherwise: it is the program's). */
static void __attribute__((format(printf, 2, 3)))
upload_log(struct upload *u, const char *fmt, ...)
{
	va_list ap;

	if (!u->verbose)
		return;
	va_start(ap, fmt);
	upload_vsay(fmt, ap);
	va_end(ap);
}

/* Percent-encodes everything but unreserved characters. */
char *
upload_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = xmalloc(3 * strlen(s) + 1), *o = out;
	unsigned char c;

	for (; *s != '\0'; s++) {
		c = (unsigned char)*s;
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.' ||
		    c == '_' || c == '~')
			*o++ = (char)c;
		else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	*o = '\0';
	return out;
}

/*
 * Encodes "k=v,k=v" for the labels parameter: each key and value is
 * percent-encoded on its own, '=' and ',' stay literal (profd splits the
 * raw parameter, then decodes each part).
 */
static char *
upload_escape_labels(const char *labels)
{
	char *copy = xstrdup(labels), *pair, *next, *eq, *k, *v, *out, *tmp;

	out = xstrdup("");
	for (pair = copy; pair != NULL; pair = next) {
		if ((next = strchr(pair, ',')) != NULL)
			*next++ = '\0';
		if ((eq = strchr(pair, '=')) != NULL)
			*eq = '\0';
		k = upload_escape(pair);
		v = upload_escape(eq != NULL ? eq + 1 : "");
		tmp = xasprintf("%s%s%s=%s", out, *out ? "," : "", k, v);
		free(out);
		free(k);
		free(v);
		out = tmp;
	}
	free(copy);
	return out;
}

/* xorshift64*: jitter only, no need for quality. */
static uint64_t
upload_rand(struct upload *u)
{
	u->rng ^= u->rng >> 12;
	u->rng ^= u->rng << 25;
	u->rng ^= u->rng >> 27;
	return u->rng * 2685821657736338717ULL;
}

/* Removes and frees the head of the queue. */
static void
upload_pop(struct upload *u)
{
	struct upload_item *it = TAILQ_FIRST(&u->queue);

	if (it == NULL)
		return;
	TAILQ_REMOVE(&u->queue, it, entry);
	u->queued--;
	free(it->data);
	free(it->target);
	free(it);
}

/* True while u->fd is still the socket we opened. */
static int
upload_fd_ours(struct upload *u)
{
	struct stat sb;

	if (u->fd == -1 || fstat(u->fd, &sb) != 0)
		return 0;
	return S_ISSOCK(sb.st_mode) && sb.st_dev == u->fd_dev &&
	    sb.st_ino == u->fd_ino;
}

/* Closes the socket if it is still ours; otherwise only forgets it. */
static void
upload_fd_close(struct upload *u)
{
	if (u->fd == -1)
		return;
	if (upload_fd_ours(u)) {
		tlsclient_close(u->conn, 1);
		close(u->fd);
	} else {
		tlsclient_close(u->conn, 0);
		u->stats.fds_lost++;
		upload_log(u, "upload socket %d was closed by the program; "
		    "forgotten, not closed", u->fd);
	}
	u->conn = NULL;
	u->fd = -1;
}

/*
 * Waits for events on the socket until the exchange's deadline, in slices
 * that run the hook (which may pull the deadline in). 0 when ready, -1 on
 * timeout or when the descriptor is no longer ours.
 */
static int
upload_wait(struct upload *u, short events)
{
	struct pollfd pfd;
	int64_t left, cap;
	int n;

	for (;;) {
		if (u->hook != NULL && (cap = u->hook(u->hook_arg)) != 0 &&
		    cap < u->deadline)
			u->deadline = cap;
		left = u->deadline - upload_now_ms();
		if (left <= 0 || !upload_fd_ours(u))
			return -1;
		pfd.fd = u->fd;
		pfd.events = events;
		pfd.revents = 0;
		n = poll(&pfd, 1, (int)(left < UPLOAD_SLICE_MS ? left :
		    UPLOAD_SLICE_MS));
		if (n < 0 && errno != EINTR)
			return -1;
		if (n > 0)
			return (pfd.revents & POLLNVAL) ? -1 : 0;
	}
}

/* A TLS failure has been said (once per process: uploader and poller). */
static _Atomic int upload_tls_said;

/*
 * TLS on the connected socket: the handshake, verifying the collector's
 * certificate. A failure is said once even when not verbose (it is a
 * setting to fix, not a passing outage), then only when verbose.
 */
static int
upload_handshake(struct upload *u)
{
	char err[256] = "";
	int want;

	if ((u->conn = tlsclient_open(u->tls, u->fd, u->host)) == NULL) {
		snprintf(err, sizeof err, "cannot start a TLS session");
		goto fail;
	}
	for (;;) {
		if (tlsclient_handshake(u->conn, &want, err, sizeof err) == 0)
			return 0;
		if (want == 0)
			break;
		if (upload_wait(u, (short)want) != 0) {
			snprintf(err, sizeof err, "timed out");
			break;
		}
	}
fail:
	u->stats.tls_failures++;
	if (atomic_exchange(&upload_tls_said, 1) == 0 || u->verbose) {
		upload_say("TLS with %s:%s failed: %s", u->host, u->port, err);
	}
	return -1;
}

/* Opens and connects a socket to the collector; -1 on failure. */
static int
upload_connect(struct upload *u)
{
	struct addrinfo hints, *res = NULL, *ai;
	struct stat sb;
	socklen_t elen;
	int err;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if ((err = getaddrinfo(u->host, u->port, &hints, &res)) != 0) {
		upload_log(u, "cannot resolve %s: %s", u->host,
		    gai_strerror(err));
		return -1;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		u->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC |
		    SOCK_NONBLOCK, ai->ai_protocol);
		if (u->fd == -1)
			continue;
		if (fstat(u->fd, &sb) != 0) {
			close(u->fd);
			u->fd = -1;
			continue;
		}
		u->fd_dev = sb.st_dev;
		u->fd_ino = sb.st_ino;
		if (connect(u->fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		err = 0;
		elen = sizeof err;
		if (errno == EINPROGRESS && upload_wait(u, POLLOUT) == 0 &&
		    getsockopt(u->fd, SOL_SOCKET, SO_ERROR, &err, &elen) == 0 &&
		    err == 0)
			break;
		upload_fd_close(u);
	}
	freeaddrinfo(res);
	if (u->fd == -1)
		return -1;
	if (u->tls != NULL && upload_handshake(u) != 0) {
		upload_fd_close(u);
		return -1;
	}
	return 0;
}

/* Sends over TLS; as upload_send_all. */
static int
upload_send_tls(struct upload *u, struct iovec *iov, int iovcnt)
{
	ssize_t n;
	int want;

	for (; iovcnt > 0; iov++, iovcnt--) {
		while (iov->iov_len > 0) {
			if (!upload_fd_ours(u))
				return -1;
			n = tlsclient_write(u->conn, iov->iov_base,
			    iov->iov_len, &want);
			if (n < 0) {
				if (want == 0 || upload_wait(u, (short)want) != 0)
					return -1;
				continue;
			}
			iov->iov_base = (char *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

/* Receives into buf: bytes, 0 at the end, -1 (errno EAGAIN: wait for
 * *want). */
static ssize_t
upload_recv(struct upload *u, char *buf, size_t len, short *want)
{
	ssize_t n;
	int w = 0;

	*want = POLLIN;
	if (u->conn == NULL)
		return recv(u->fd, buf, len, MSG_DONTWAIT);
	if ((n = tlsclient_read(u->conn, buf, len, &w)) >= 0)
		return n;
	errno = w != 0 ? EAGAIN : EIO;
	*want = (short)w;
	return -1;
}

/* Sends the iovecs in full; -1 on error or timeout. */
static int
upload_send_all(struct upload *u, struct iovec *iov, int iovcnt)
{
	struct msghdr msg;
	ssize_t n;

	if (u->conn != NULL)
		return upload_send_tls(u, iov, iovcnt);
	while (iovcnt > 0) {
		if (iov->iov_len == 0) {
			iov++;
			iovcnt--;
			continue;
		}
		if (!upload_fd_ours(u))
			return -1;
		memset(&msg, 0, sizeof msg);
		msg.msg_iov = iov;
		msg.msg_iovlen = (size_t)iovcnt;
		n = sendmsg(u->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if ((errno != EAGAIN && errno != EWOULDBLOCK) ||
			    upload_wait(u, POLLOUT) != 0)
				return -1;
			continue;
		}
		while (n > 0 && iovcnt > 0) {
			if ((size_t)n >= iov->iov_len) {
				n -= (ssize_t)iov->iov_len;
				iov++;
				iovcnt--;
			} else {
				iov->iov_base = (char *)iov->iov_base + n;
				iov->iov_len -= (size_t)n;
				n = 0;
			}
		}
	}
	return 0;
}

/*
 * Reads the reply into buf (at most UPLOAD_REPLY_MAX - 1 bytes kept) until
 * the headers and Content-Length bytes of body are in, or EOF. Returns the
 * status code, or -1. *body points at the body in buf.
 */
static int
upload_read_reply(struct upload *u, char *buf, const char **body)
{
	size_t len = 0, want = 0;
	char *end = NULL, *cl;
	ssize_t n;
	short ev;
	int code;

	*body = "";
	for (;;) {
		if (end != NULL && len >= want)
			break;
		if (len >= UPLOAD_REPLY_MAX - 1)
			break;
		if (!upload_fd_ours(u))
			return -1;
		n = upload_recv(u, buf + len, UPLOAD_REPLY_MAX - 1 - len,
		    &ev);
		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if ((errno != EAGAIN && errno != EWOULDBLOCK) ||
			    upload_wait(u, ev) != 0)
				return -1;
			continue;
		}
		len += (size_t)n;
		buf[len] = '\0';
		if (end == NULL && (end = strstr(buf, "\r\n\r\n")) != NULL) {
			want = (size_t)(end + 4 - buf);
			for (cl = buf; (cl = strchr(cl, '\n')) != NULL &&
			    cl < end;) {
				cl++;
				if (strncasecmp(cl, "Content-Length:", 15) == 0)
					want += strtoul(cl + 15, NULL, 10);
			}
		}
	}
	buf[len] = '\0';
	if (len < 12 || strncmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ' ||
	    sscanf(buf + 9, "%3d", &code) != 1 || code < 100 || code > 599)
		return -1;
	if (end != NULL)
		*body = end + 4;
	return code;
}

/*
 * One POST of the head of the queue on a new connection. Returns the HTTP
 * status, UPLOAD_ERR_CONNECT or UPLOAD_ERR_LOST; msg gets the start of
 * the reply's body.
 */
static int
upload_exchange(struct upload *u, const struct upload_item *it, char *msg,
    size_t msgsize)
{
	char reply[UPLOAD_REPLY_MAX];
	const char *body;
	struct iovec iov[2];
	char *head;
	int code = UPLOAD_ERR_CONNECT;

	msg[0] = '\0';
	if (upload_connect(u) != 0)
		goto out;
	head = xasprintf("POST %s HTTP/1.1\r\nHost: %s\r\n"
	    "User-Agent: libprofd-agent/" PACKAGE_VERSION "\r\n"
	    "Content-Type: application/octet-stream\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n%s%s%s\r\n",
	    it->target != NULL ? it->target : u->target, u->hostport, it->len,
	    u->auth != NULL ? "Authorization: " : "",
	    u->auth != NULL ? u->auth : "", u->auth != NULL ? "\r\n" : "");
	iov[0].iov_base = head;
	iov[0].iov_len = strlen(head);
	iov[1].iov_base = it->data;
	iov[1].iov_len = it->len;
	if (upload_send_all(u, iov, 2) == 0 &&
	    (code = upload_read_reply(u, reply, &body)) > 0)
		snprintf(msg, msgsize, "%s", body);
	else
		code = UPLOAD_ERR_CONNECT;
	free(head);
out:
	if (u->fd != -1 && !upload_fd_ours(u))
		code = UPLOAD_ERR_LOST;
	upload_fd_close(u);
	return code;
}

/* A request of the agent's own, with no body (see upload.h). */
int
upload_request(struct upload *u, const char *method, const char *target,
    int64_t timeout_ms, char *body, size_t bodysize)
{
	char reply[UPLOAD_REPLY_MAX];
	const char *b;
	struct iovec iov[1];
	char *head;
	int code = -1;

	body[0] = '\0';
	u->deadline = upload_now_ms() + timeout_ms;
	if (upload_connect(u) != 0)
		goto out;
	head = xasprintf("%s %s%s HTTP/1.1\r\nHost: %s\r\n"
	    "User-Agent: libprofd-agent/" PACKAGE_VERSION "\r\n"
	    "Content-Length: 0\r\nConnection: close\r\n%s%s%s\r\n",
	    method, u->prefix, target, u->hostport,
	    u->auth != NULL ? "Authorization: " : "",
	    u->auth != NULL ? u->auth : "", u->auth != NULL ? "\r\n" : "");
	iov[0].iov_base = head;
	iov[0].iov_len = strlen(head);
	if (upload_send_all(u, iov, 1) == 0 &&
	    (code = upload_read_reply(u, reply, &b)) > 0)
		snprintf(body, bodysize, "%s", b);
	else
		code = -1;
	free(head);
out:
	upload_fd_close(u);
	return code;
}

/* Arms the retry wait after a failure (or gives up when flushing). */
static void
upload_backoff(struct upload *u, int flushing)
{
	uint64_t d = UPLOAD_BACKOFF_MIN_MS;
	int i;

	u->stats.failures++;
	if (flushing) {
		/* Exiting: one more try only; never hold the program up. */
		u->gave_up = 1;
		return;
	}
	for (i = 0; i < u->attempts && d < UPLOAD_BACKOFF_MAX_MS; i++)
		d *= 2;
	if (d > UPLOAD_BACKOFF_MAX_MS)
		d = UPLOAD_BACKOFF_MAX_MS;
	u->attempts++;
	d = d / 2 + upload_rand(u) % (d / 2 + 1);
	u->retry_at = upload_now_ms() + (int64_t)d;
}

/* Sends the head of the queue once (twice if our socket was taken). */
static void
upload_send_head(struct upload *u, int64_t deadline, int flushing)
{
	struct upload_item *it = TAILQ_FIRST(&u->queue);
	char msg[200];
	int code, tries = 0;

	do {
		u->deadline = deadline;
		code = upload_exchange(u, it, msg, sizeof msg);
	} while (code == UPLOAD_ERR_LOST && ++tries < 2);
	if (code >= 200 && code < 300) {
		u->stats.sent++;
		u->attempts = 0;
		u->retry_at = 0;
		upload_pop(u);
		upload_log(u, "profile uploaded (%d)", code);
		return;
	}
	if (code >= 400 && code < 500) {
		upload_log(u, "collector rejected a profile with %d, dropped: "
		    "%s", code, msg);
		u->stats.rejected++;
		u->attempts = 0;
		u->retry_at = 0;
		upload_pop(u);
		return;
	}
	upload_log(u, "upload failed (%s %d), %s", code > 0 ? "status" :
	    "connection", code > 0 ? code : 0, flushing ? "giving up" :
	    "retrying");
	upload_backoff(u, flushing);
}

/* The parts of http[s]://host[:port][/prefix], as spans of the URL. */
struct upload_url {
	int		 tls;		/* https:// */
	const char	*rest;		/* after the scheme */
	const char	*host;		/* without brackets */
	const char	*hend;
	const char	*path;		/* "" or "/prefix" */
	long		 port;
};

/* Splits url without allocating; -1 with *cause if unusable. */
static int
upload_split_url(const char *url, struct upload_url *out, char **cause)
{
	const char *p;
	char *end;

	out->tls = strncasecmp(url, "https://", 8) == 0;
	out->port = out->tls ? 443 : 80;
	if ((!out->tls && strncasecmp(url, "http://", 7) != 0) ||
	    strpbrk(url, "?#@ ") != NULL)
		goto bad;
	out->rest = out->host = p = url + (out->tls ? 8 : 7);
	if (*p == '[') {
		out->host = ++p;
		if ((out->hend = strchr(p, ']')) == NULL)
			goto bad;
		p = out->hend + 1;
	} else {
		p += strcspn(p, ":/");
		out->hend = p;
	}
	if (out->hend == out->host)
		goto bad;
	if (*p == ':') {
		errno = 0;
		out->port = strtol(p + 1, &end, 10);
		if (end == p + 1 || errno != 0 || out->port < 1 ||
		    out->port > 65535 || (*end != '\0' && *end != '/'))
			goto bad;
		p = end;
	}
	if (*p != '\0' && *p != '/')
		goto bad;
	out->path = p;
	return 0;
bad:
	return xcause(cause, "collector URL \"%s\" must be "
	    "http[s]://host[:port][/prefix]", url);
}

/* Checks that url is one upload_new takes; -1 with *cause if not. */
int
upload_check_url(const char *url, char **cause)
{
	struct upload_url parts;

	return upload_split_url(url, &parts, cause);
}

/*
 * Parses http[s]://host[:port][/prefix] into u (with a TLS context for
 * https, from tls); -1 with *cause if unusable.
 */
static int
upload_parse_url(struct upload *u, const char *url,
    const struct upload_tls *tls, char **cause)
{
	struct upload_url parts;

	if (upload_split_url(url, &parts, cause) != 0)
		return -1;
	if (parts.tls && (u->tls = tlsclient_new(tls != NULL ? tls->ca_file :
	    NULL, tls != NULL ? tls->cert_file : NULL, tls != NULL ?
	    tls->key_file : NULL, cause)) == NULL)
		return -1;
	u->host = xasprintf("%.*s", (int)(parts.hend - parts.host),
	    parts.host);
	u->port = xasprintf("%ld", parts.port);
	u->hostport = xasprintf("%.*s", (int)(parts.path - parts.rest),
	    parts.rest);
	u->target = xstrdup(parts.path);
	return 0;
}

/* Parses the URL and prepares the request target. */
struct upload *
upload_new(const char *url, const char *service, const char *labels,
    const char *token, const struct upload_tls *tls, size_t queue_max,
    int verbose, char **cause)
{
	struct upload *u;
	char *esvc, *elab = NULL, *path;
	size_t plen;

	u = xcalloc(1, sizeof *u);
	u->fd = -1;
	if (upload_parse_url(u, url, tls, cause) != 0) {
		upload_free(u);
		return NULL;
	}
	path = u->target;
	plen = strlen(path);
	while (plen > 0 && path[plen - 1] == '/')
		plen--;
	esvc = upload_escape(service);
	if (labels != NULL && *labels != '\0')
		elab = upload_escape_labels(labels);
	u->prefix = xasprintf("%.*s", (int)plen, path);
	u->base = xasprintf("%s/api/0/profiles?service=%s", u->prefix, esvc);
	u->target = xasprintf("%s&type=cpu%s%s", u->base, elab ? "&labels=" :
	    "", elab ? elab : "");
	u->elab = elab;
	free(path);
	free(esvc);
	if (token != NULL && *token != '\0')
		u->auth = xasprintf("Bearer %s", token);
	TAILQ_INIT(&u->queue);
	u->queue_max = queue_max > 0 ? queue_max : 8;
	u->verbose = verbose;
	u->rng = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL) ^
	    (uint64_t)(uintptr_t)u;
	if (u->rng == 0)
		u->rng = 1;
	return u;
}

/* Sets the hook run between wait slices (see upload.h). */
void
upload_set_hook(struct upload *u, upload_hook_cb hook, void *arg)
{
	u->hook = hook;
	u->hook_arg = arg;
}

/* Queues a profile for target (NULL: upload.target; taken), dropping the
 * oldest waiting one when the queue is full. */
static void
upload_enqueue(struct upload *u, uint8_t *data, size_t len, char *target)
{
	struct upload_item *it;

	if (u->queued >= u->queue_max) {
		upload_pop(u);
		u->stats.dropped++;
	}
	it = xcalloc(1, sizeof *it);
	it->data = data;
	it->len = len;
	it->target = target;
	TAILQ_INSERT_TAIL(&u->queue, it, entry);
	u->queued++;
}

/* Queues one profile; drops the oldest waiting one if full. */
void
upload_push(struct upload *u, uint8_t *data, size_t len)
{
	upload_push_as(u, data, len, NULL, NULL);
}

/* Queues a profile of another type, with one more label (see upload.h). */
void
upload_push_as(struct upload *u, uint8_t *data, size_t len,
    const char *type, const char *label)
{
	char *el = NULL, *target = NULL;

	if (type != NULL) {
		if (label != NULL)
			el = upload_escape_labels(label);
		target = xasprintf("%s&type=%s%s%s%s%s", u->base, type,
		    u->elab != NULL || el != NULL ? "&labels=" : "",
		    u->elab != NULL ? u->elab : "",
		    u->elab != NULL && el != NULL ? "," : "",
		    el != NULL ? el : "");
		free(el);
	}
	upload_enqueue(u, data, len, target);
}

/* Queues a profile of another service, with more labels (upload.h). */
void
upload_push_to(struct upload *u, uint8_t *data, size_t len,
    const char *service, const char *labels)
{
	char *el = NULL, *esvc;

	if (labels != NULL && *labels != '\0')
		el = upload_escape_labels(labels);
	esvc = upload_escape(service);
	upload_enqueue(u, data, len, xasprintf(
	    "%s/api/0/profiles?service=%s&type=cpu%s%s%s%s", u->prefix, esvc,
	    u->elab != NULL || el != NULL ? "&labels=" : "",
	    u->elab != NULL ? u->elab : "",
	    u->elab != NULL && el != NULL ? "," : "", el != NULL ? el : ""));
	free(esvc);
	free(el);
}

/* Sends what is due; returns ms until the next retry, or -1. */
int64_t
upload_run(struct upload *u)
{
	int64_t now = upload_now_ms();

	while (!TAILQ_EMPTY(&u->queue) && !u->gave_up) {
		if (u->retry_at > now)
			return u->retry_at - now;
		upload_send_head(u, now + UPLOAD_TIMEOUT_MS, 0);
		now = upload_now_ms();
	}
	return -1;
}

/* Sends everything until deadline (monotonic ms); a failure ends it. */
void
upload_flush(struct upload *u, int64_t deadline)
{
	while (!TAILQ_EMPTY(&u->queue) && !u->gave_up) {
		if (upload_now_ms() >= deadline) {
			u->gave_up = 1;
			break;
		}
		upload_send_head(u, deadline, 1);
	}
}

/* True when there is nothing left to send. */
int
upload_idle(const struct upload *u)
{
	return u->queued == 0 || u->gave_up;
}

/* Copies the counters. */
void
upload_stats(const struct upload *u, struct upload_stats *st)
{
	*st = u->stats;
}

/* The request target (for logs and tests). */
const char *
upload_target(const struct upload *u)
{
	return u->target;
}

/*
 * Fork child (async-signal-safe): the child inherited a copy of a socket
 * the parent's agent thread had open; close the copy if it is still ours.
 */
void
upload_atfork_child(struct upload *u)
{
	if (u != NULL && u->fd != -1 && upload_fd_ours(u))
		close(u->fd);
	if (u != NULL) {
		u->conn = NULL;	/* the parent's, mid-use: left alone */
		u->fd = -1;
	}
}

/* Frees everything; the socket, if any, is closed only if still ours. */
void
upload_free(struct upload *u)
{
	if (u == NULL)
		return;
	upload_fd_close(u);
	while (!TAILQ_EMPTY(&u->queue))
		upload_pop(u);
	free(u->host);
	free(u->port);
	free(u->hostport);
	free(u->target);
	free(u->base);
	free(u->prefix);
	free(u->elab);
	free(u->auth);
	tlsclient_free(u->tls);
	free(u);
}
