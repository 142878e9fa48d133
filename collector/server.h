/*
 * The server: starts everything a request needs (store, pools, evhttp,
 * connection tracking, router, retention), runs the loop, handles signals
 * (SIGTERM/SIGINT drain and stop, SIGHUP reopens the log and re-reads the
 * tokens) and frees it all in order. Requests themselves are the router's.
 */
#ifndef PROFD_SERVER_H
#define PROFD_SERVER_H

#include <stdint.h>

#include "collector/env.h"

struct config;
struct evhttp;
struct evhttp_bound_socket;
struct event;
struct backfill;
struct compact;
struct retention;
struct router;

struct server {
	struct env			 env;	/* what handlers see */
	struct config			*cfg;
	struct evhttp			*http;
	struct evhttp_bound_socket	*sock;
	struct router			*router;
	struct retention		*retention;
	struct backfill			*backfill;
	struct compact			*compact;
	struct event			*sig_term;
	struct event			*sig_int;
	struct event			*sig_hup;
	struct event			*watch_timer;	/* client-gone checks */
	unsigned			 watch_ticks;
	struct event			*drain_timer;	/* shutdown progress */
	struct event			*watchdog_timer; /* systemd WATCHDOG=1 */
	int64_t				 drain_deadline_ns;
	int				 port;		/* bound port */
	char				*listen_name;	/* "host:port" bound */
};

/* Sets everything up and binds; returns -1 with *cause on failure. */
int	server_start(struct server *, struct config *, char **cause);
/* Runs the loop until a clean shutdown completes. */
void	server_run(struct server *);
/* Frees what server_start made. */
void	server_free(struct server *);

#endif
