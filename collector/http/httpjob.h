/*
 * A job tied to an HTTP request. The loop thread parses the request and
 * submits an httpjob; a worker runs its work() and fills in the result
 * (an error, a JSON body or raw bytes); back on the loop the reply is sent
 * and the job freed. A job may have a second phase, io(), which the loop
 * then queues on the I/O pool: threads there may block on fsync, so many
 * uploads can wait for one group commit while the CPU workers go on
 * validating. If the client went away meanwhile, libevent has
 * detached the request but not freed it, and sending the reply frees it.
 * Long jobs can ask to be watched: the loop then checks the client's socket
 * and sets `cancelled` when it is closed.
 *
 * Every job runs against --request-timeout from its submission: when the
 * timer fires first, a job still queued is taken back and answered 503
 * (it never starts); a running one gets `cancelled` set and its client a
 * 504 at once, and the result it hands back later is dropped. Merges go to
 * their own pool (httpjob_submit_merge), capped at --max-merges, so they
 * never queue ahead of uploads and queries.
 */
#ifndef PROFD_HTTPJOB_H
#define PROFD_HTTPJOB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include <jansson.h>

#include "common/pool.h"

#define HTTPJOB_MAX_HEADERS	4	/* extra reply headers a job may set */

struct env;
struct event;
struct evhttp_request;

struct httpjob {
	struct pool_job		  pj;
	struct env		 *env;
	struct evhttp_request	 *req;
	void			(*work)(struct httpjob *);
	/* Optional second phase on the I/O pool (blocking disk writes). */
	void			(*io)(struct httpjob *);
	int			  io_pending;
	void			 *arg;
	void			(*arg_free)(void *);
	volatile int		  cancelled;	/* the client went away, or
						   the request timed out */
	int			  watched;
	TAILQ_ENTRY(httpjob)	  watch_entry;
	struct event		 *timer;	/* --request-timeout */
	int			  merge;	/* counted in env->merges */
	int			  answered;	/* the timer replied: req gone,
						   the result is dropped */

	/* The result, filled in by work(). */
	int			  code;
	char			 *error;
	json_t			 *json;
	uint8_t			 *bytes;
	size_t			  nbytes;
	const char		 *content_type;
	char			 *disposition;	/* a file name */
	char			 *hdr_name[HTTPJOB_MAX_HEADERS];	/* extra */
	char			 *hdr_value[HTTPJOB_MAX_HEADERS];
	int			  nhdrs;
};

/* A new job; arg is freed with arg_free when the job ends. */
struct httpjob	*httpjob_new(struct env *, struct evhttp_request *,
		    void (*work)(struct httpjob *), void *arg,
		    void (*arg_free)(void *));
/* Queues the job, or answers 503 and frees it when the pool is full. */
void		 httpjob_submit(struct httpjob *);
/*
 * Queues a merge on the merge pool, or answers 503 (naming --max-merges)
 * and frees it when that many merges are running already.
 */
void		 httpjob_submit_merge(struct httpjob *);
/* Asks the loop to set job->cancelled if the client disconnects. */
void		 httpjob_watch(struct httpjob *);
/* Checks every watched job's client (loop thread). */
void		 httpjob_check_watched(struct env *);

/* Result setters (worker thread). */
void	httpjob_error(struct httpjob *, int code, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
/*
 * The error of a failed store call: 503 (with Retry-After) when the store
 * could not be reached (store_unavailable), else 500. Names what failed.
 */
void	httpjob_store_error(struct httpjob *, const char *cause);
/* Steals body. */
void	httpjob_json(struct httpjob *, json_t *body);
/* Adds a reply header (copied; at most HTTPJOB_MAX_HEADERS, then ignored). */
void	httpjob_header(struct httpjob *, const char *name, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
/* Takes ownership of buf (malloc'd). */
void	httpjob_bytes(struct httpjob *, uint8_t *buf, size_t len,
	    const char *content_type, const char *filename);

#endif
