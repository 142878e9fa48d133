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
 * clients wait in the kernel's backlog, as memcached does. A connection
 * that has not delivered a complete request within the read timeout of
 * being accepted or of its last reply is shut down.
 */
#ifndef PROFD_CONNS_H
#define PROFD_CONNS_H

#include <stdint.h>

struct server;
struct evhttp_request;

/* Sets up tracking for srv->http (before binding). */
void	conns_init(struct server *);
/* Frees the tracking state (after evhttp_free). */
void	conns_free(struct server *);
/* A complete request arrived on req's connection (loop thread). */
void	conns_request_started(struct server *, struct evhttp_request *);
/* The reply to req's connection has been handed to evhttp. */
void	conns_request_done(struct server *, struct evhttp_request *);
/* Open connections now. */
int	conns_count(struct server *);

#endif
