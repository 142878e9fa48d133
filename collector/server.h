/*
 * The HTTP server: one libevent loop thread with evhttp, the worker pool
 * and the store, the router, signal handling and the clean shutdown.
 */
#ifndef PROFD_SERVER_H
#define PROFD_SERVER_H

#include <stdint.h>
#include <sys/queue.h>

#include "collector/config.h"

struct event_base;
struct evhttp;
struct evhttp_bound_socket;
struct event;
struct pool;
struct store;
struct httpjob;
struct metrics;
struct retention;
struct conns;
struct auth;

struct server {
	struct config			*cfg;
	struct event_base		*base;
	struct evhttp			*http;
	struct evhttp_bound_socket	*sock;
	struct pool			*pool;		/* CPU work */
	struct pool			*io_pool;	/* blocking writes */
	struct store			*store;
	struct event			*sig_term;
	struct event			*sig_int;
	struct event			*sig_hup;
	struct event			*watch_timer;	/* client-gone checks */
	struct event			*drain_timer;	/* shutdown progress */
	struct event			*watchdog_timer; /* systemd WATCHDOG=1 */
	struct metrics			*metrics;
	struct retention		*retention;
	int64_t				 drain_deadline_ns;
	int				 stopping;
	int				 unsent;	/* replies being written */
	TAILQ_HEAD(, httpjob)		 watched;	/* jobs to cancel */
	int				 port;		/* bound port */
	char				*listen_name;	/* "host:port" bound */
	struct conns			*conns;		/* open connections */
	struct auth			*auth;		/* NULL: no tokens needed */
};

/* Sets everything up and binds; returns -1 with *cause on failure. */
int	server_start(struct server *, struct config *, char **cause);
/* Runs the loop until a clean shutdown completes. */
void	server_run(struct server *);
/* Frees what server_start made. */
void	server_free(struct server *);
/* Now in ns since the epoch (wall clock). */
int64_t	server_now_ns(void);

#endif
