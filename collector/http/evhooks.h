/*
 * Hooks into libevent 2.1's HTTP server that its API lacks (libevent 2.2
 * has evhttp_set_newreqcb and evhttp_set_errorcb; Debian 12 ships 2.1.12):
 *
 *  - head: called when a request's headers are in and before its body is
 *    read, so a request that will be refused (token, route, method, size,
 *    memory) is refused before its body is buffered;
 *  - body: called with each piece of a body as it arrives, once head asked
 *    for it with evhooks_watch_body (the piece must be moved out); a
 *    chunked body's lines are checked on the way (chunk extensions are
 *    accepted; a malformed or endless chunk-size line is refused with 400
 *    through the error callback);
 *  - error: called instead of libevent's HTML error page, for requests
 *    libevent itself fails (malformed request line or headers, unknown
 *    method, corrupt chunked framing) and for the refusals made with
 *    evhooks_refuse.
 *
 * A refusal made before or during the body is stored with the request and
 * forces libevent to stop reading the body; the error callback then
 * receives the refusal's code and message, and the connection is closed
 * after the answer (the unread body is never buffered).
 *
 * All on the loop thread. See evhooks.c for how the hooks are installed.
 */
#ifndef PROFD_EVHOOKS_H
#define PROFD_EVHOOKS_H

struct evbuffer;
struct evhttp;
struct evhttp_request;

struct evhooks_ops {
	/* Headers read, body not yet. Return -1 to drop the connection
	 * without an answer, else 0. */
	int	(*head)(struct evhttp_request *, void *arg);
	/* A piece of the body arrived in buf: move it out (or it is lost). */
	void	(*body)(struct evhttp_request *, struct evbuffer *buf,
		    void *arg);
	/* Answer an error: a refusal's code and message, or libevent's
	 * own failure (reason NULL). Keep the request's output headers:
	 * "Connection: close" is already among them. */
	void	(*error)(struct evhttp_request *, int code, const char *reason,
		    void *arg);
};

/* Routes the requests of http through ops (one server per process). */
void	evhooks_install(struct evhttp *, const struct evhooks_ops *,
	    void *arg);
/* Stops the hooks (before evhttp_free). */
void	evhooks_remove(struct evhttp *);
/* Number of requests that went through the head hook (tests, logs). */
unsigned long evhooks_heads(void);
/* Asks for the body pieces of req as they arrive (from head). */
void	evhooks_watch_body(struct evhttp_request *);
/*
 * Forgets a connection's input buffer (before its bufferevent is freed):
 * a chunked body watched in it ended without an answer (client gone).
 */
void	evhooks_unwatch_input(struct evbuffer *);
/*
 * Refuses req with code and message (from head or body): libevent stops
 * reading its body and the error hook receives them. Extra output headers
 * (Allow, WWW-Authenticate, Retry-After) may be added before or after.
 */
void	evhooks_refuse(struct evhttp_request *, int code, const char *msg);
/*
 * The refusal stored with req, if any: returns the code (0: none) and sets
 * *msg (owned by the caller), removing it from the request.
 */
int	evhooks_take_refusal(struct evhttp_request *, char **msg);

#endif
