/*
 * Client connections: a cap on how many are open (--max-connections) and a
 * deadline for receiving each request (--read-timeout), so clients that
 * send a byte at a time cannot hold the server.
 *
 * libevent 2.1 has neither, so every connection's bufferevent is created
 * here (evhttp_set_bevcb) and kept with an extra reference. When evhttp
 * frees a connection it clears the bufferevent's callbacks and drops its
 * reference; a loop timer sees that, drops ours (closing the socket) and
 * counts the connection gone. At the cap the listener is disabled, so new
 * clients wait in the kernel's backlog, as memcached does; an accept()
 * that fails (out of descriptors) pauses accepting for a moment. A
 * connection that has not delivered a complete request within the read
 * timeout of being accepted or of its last reply being written is shut
 * down.
 */
#ifndef PROFD_CONNS_H
#define PROFD_CONNS_H

#include <stddef.h>
#include <stdint.h>

struct conns;
struct event_base;
struct evhttp;
struct evhttp_bound_socket;
struct evhttp_request;
struct evbuffer;
struct tls;

/*
 * Tracks http's connections (call before binding): at most max open, and
 * each must deliver a request within read_timeout seconds.
 */
struct conns	*conns_new(struct event_base *, struct evhttp *, int64_t max,
		    int64_t read_timeout);
/* The listener to pause at the cap; NULL once accepting has stopped. */
void		 conns_set_listener(struct conns *,
		    struct evhttp_bound_socket *);
/* Serves HTTPS with t on connections accepted from now on (NULL: HTTP). */
void		 conns_set_tls(struct conns *, struct tls *);
/* Frees the tracking state (after evhttp_free). */
void		 conns_free(struct conns *);
/* A complete request arrived on req's connection (loop thread). */
void		 conns_request_started(struct conns *, struct evhttp_request *);
/* The reply to req's connection has been handed to evhttp. */
void		 conns_request_done(struct conns *, struct evhttp_request *);
/*
 * True if the peer on socket fd has closed its side (or the connection
 * failed), even with bytes still unread: a TLS client's close_notify is
 * such bytes, so peeking for end-of-file alone would miss its going.
 */
int		 conns_fd_gone(int fd);
/* Open connections now. */
int		 conns_count(const struct conns *);
/*
 * Bodies in flight: pieces of a request's body are moved to its
 * connection as they arrive and counted until the reply is sent (or the
 * connection closes), within a limit (--max-body-memory; 0: none).
 * conns_body_add returns -1 and drops the piece past the limit.
 */
void		 conns_set_body_max(struct conns *, uint64_t max);
/* Counts n bytes for req's body ahead (-1 past the limit). */
int		 conns_body_reserve(struct conns *, struct evhttp_request *,
		    uint64_t n);
int		 conns_body_add(struct conns *, struct evhttp_request *,
		    struct evbuffer *piece, size_t total);
/* Moves the body received so far into into (the request's buffer). */
void		 conns_body_take(struct conns *, struct evhttp_request *,
		    struct evbuffer *into);
/* True if n more bytes would pass the limit. */
int		 conns_body_full(const struct conns *, uint64_t n);
uint64_t	 conns_body_bytes(const struct conns *);
/* Open connections with reply bytes not yet written (shutdown waits). */
int		 conns_unsent(const struct conns *);

#endif
