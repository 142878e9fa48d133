/*
 * The environment a request is served in: what the API handlers and the
 * HTTP plumbing (router, jobs, replies) may use, and nothing else of the
 * server. The server (collector/server.c) fills it at start and owns every
 * member; the loop thread is the only one that writes the plain fields.
 * See docs/DESIGN.md, "Request path".
 */
#ifndef PROFD_ENV_H
#define PROFD_ENV_H

#include <sys/queue.h>

struct config;
struct event_base;
struct store;
struct pool;
struct budget;
struct metrics;
struct conns;
struct httpjob;
struct api_pacing;
struct tls;

struct env {
	const struct config	*cfg;
	struct event_base	*base;		/* the loop */
	struct store		*store;
	struct pool		*pool;		/* CPU work: uploads, queries */
	struct pool		*merge_pool;	/* merges, never ahead of pool's */
	struct pool		*io_pool;	/* blocking writes */
	struct pool		*ops_pool;	/* /healthz, /metrics store work */
	struct budget		*merge_budget;	/* --merge-memory */
	struct metrics		*metrics;
	struct conns		*conns;		/* open connections */
	struct api_pacing	*pacing;	/* polls held for windows;
						   NULL: none (tests) */
	struct tls		*tls;		/* HTTPS; NULL: plain HTTP */

	/* HTTP bookkeeping, loop thread only. */
	int			 stopping;	/* SIGTERM: answer 503 */
	int			 merges;	/* merge jobs admitted and not
						   finished (--max-merges) */
	TAILQ_HEAD(, httpjob)	 watched;	/* jobs to cancel if the
						   client goes away */
};

#endif
