/*
 * The worker pool: N threads take jobs from a bounded queue, run their work
 * off the event loop, and hand them back through a completion queue that
 * the loop drains in one go (woken with event_active). A full queue refuses
 * the job so the caller can answer 503 instead of growing memory, and a
 * queued job can be taken back (a request that timed out while waiting).
 */
#ifndef PROFD_POOL_H
#define PROFD_POOL_H

#include <sys/queue.h>

struct event_base;

struct pool_job {
	/* Runs on a worker thread. */
	void			 (*work)(struct pool_job *);
	/* Runs on the loop thread after work; may free the job. */
	void			 (*done)(struct pool_job *);
	/*
	 * Set by work() to pass the job straight on to another pool's queue
	 * (its work() runs next there) instead of back to the loop: saves
	 * the loop a wake-up per phase. Cleared when the job moves.
	 */
	struct pool		*next;
	/*
	 * The pool whose queue holds the job, NULL while it runs or waits
	 * for the loop; written under that pool's lock, read atomically.
	 */
	struct pool		*waiting_in;
	TAILQ_ENTRY(pool_job)	   entry;
};

struct pool;

/* Starts nworkers threads with room for max_queue waiting jobs. */
struct pool	*pool_new(struct event_base *, int nworkers, int max_queue);
/*
 * Queues a job (loop thread or worker). Returns -1 when the queue is full
 * or the pool is stopping; the job is then untouched and still the caller's.
 */
int		 pool_submit(struct pool *, struct pool_job *);
/* Like pool_submit but never refuses (for sub-jobs of an accepted job). */
void		 pool_submit_force(struct pool *, struct pool_job *);
/*
 * Loop thread: takes job back out of whichever pool's queue holds it, so
 * it never runs and its done() is not called (it is the caller's again).
 * Returns 0 if it was taken back, -1 if a worker has it (or it is done).
 */
int		 pool_withdraw(struct pool_job *);
/* Jobs queued and not yet taken by a worker. */
int		 pool_queued(struct pool *);
/* Jobs accepted and not yet completed (queued, running or done-pending). */
int		 pool_inflight(struct pool *);
int		 pool_workers(struct pool *);
/* Stops the threads after the queue is drained; runs pending done()s. */
void		 pool_free(struct pool *);

#endif
