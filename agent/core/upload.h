/*
 * Profile uploads to the collector from the agent thread: a bounded queue,
 * capped exponential backoff, and a small blocking HTTP/1.1 client that
 * holds a descriptor only during an upload and never closes one that is
 * no longer its own.
 */
#ifndef PROFD_AGENT_UPLOAD_H
#define PROFD_AGENT_UPLOAD_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct upload;

struct upload_stats {
	uint64_t	sent;		/* accepted by the collector (2xx) */
	uint64_t	rejected;	/* 4xx: dropped, not retried */
	uint64_t	dropped;	/* pushed out of a full queue */
	uint64_t	failures;	/* 5xx, connection errors, timeouts */
	uint64_t	fds_lost;	/* sockets the program closed on us */
	uint64_t	tls_failures;	/* handshakes that failed */
};

/* TLS files for https:// (any may be NULL: the system's CAs, no client
 * certificate). */
struct upload_tls {
	const char	*ca_file;
	const char	*cert_file;
	const char	*key_file;
};

/*
 * Run between wait slices (at most 50 ms apart) while an upload waits on
 * the network: returns 0, or a monotonic deadline in ms that cuts the
 * current exchange short (e.g. the program is exiting).
 */
typedef int64_t (*upload_hook_cb)(void *arg);

/*
 * Prepares uploads to url (http[s]://host[:port][/prefix]) for the
 * service and labels ("k=v,k=v", may be NULL); https:// verifies the
 * collector's certificate (tls: its CA file, a client certificate; may
 * be NULL) and never falls back to plain HTTP. Returns NULL with *cause
 * set if the URL is not usable or TLS cannot be set up.
 */
struct upload	*upload_new(const char *url, const char *service,
		    const char *labels, const char *token,
		    const struct upload_tls *tls, size_t queue_max,
		    int verbose, char **cause);
/*
 * One request of the agent's own (the pacing poll) on a new connection:
 * method, target (path and query after the URL's prefix), no body, the
 * token; at most timeout_ms (the hook may cut it short). Returns the
 * HTTP status or -1 (connection error, timeout, cut short); body gets
 * the start of the reply's body (at most bodysize - 1 bytes).
 */
int		 upload_request(struct upload *, const char *method,
		    const char *target, int64_t timeout_ms, char *body,
		    size_t bodysize);
/* Checks the URL as upload_new would, allocating nothing on success. */
int		 upload_check_url(const char *url, char **cause);
void		 upload_set_hook(struct upload *, upload_hook_cb, void *arg);
/* Queues a gzipped profile (takes ownership of data). */
void		 upload_push(struct upload *, uint8_t *data, size_t len);
/*
 * The same for a profile of type (e.g. "heap"; NULL: cpu) with one more
 * label ("k=v", or NULL) after the agent's own.
 */
void		 upload_push_as(struct upload *, uint8_t *data, size_t len,
		    const char *type, const char *label);
/*
 * The same for a CPU profile of another service than upload_new's, with
 * more labels ("k=v,k=v", or NULL) after the uploader's own (the host
 * agent: one uploader, one queue, for every service of the host).
 */
void		 upload_push_to(struct upload *, uint8_t *data, size_t len,
		    const char *service, const char *labels);
/*
 * Sends the queued profiles whose retry time has come, each in one
 * blocking exchange of at most 10 s. Returns the ms until the next retry
 * is due, or -1 when nothing waits.
 */
int64_t		 upload_run(struct upload *);
/*
 * Sends what is queued, skipping any backoff wait, until deadline
 * (upload_now_ms() clock); the first failed attempt ends all trying
 * (upload_idle becomes true).
 */
void		 upload_flush(struct upload *, int64_t deadline);
/* True when nothing is queued, or flushing gave up. */
int		 upload_idle(const struct upload *);
void		 upload_stats(const struct upload *, struct upload_stats *);
/* The request path with query, e.g. "/api/0/profiles?service=...". */
const char	*upload_target(const struct upload *);
/* In a fork child: closes the inherited copy of a socket in use. */
void		 upload_atfork_child(struct upload *);
void		 upload_free(struct upload *);

/*
 * One line of the agent's on stderr, "profd-agent[PID]: " and fmt's text
 * (the uploader's and the pacer's verbose lines).
 */
void		 upload_vsay(const char *fmt, va_list ap);
/* The program those lines name instead of profd-agent (a constant). */
void		 upload_set_prog(const char *name);

/* Percent-encodes s for a query value. Returns a new string. */
char		*upload_escape(const char *s);
/* CLOCK_MONOTONIC in milliseconds. */
int64_t		 upload_now_ms(void);

#endif
