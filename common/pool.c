/*
 * The worker pool.
 *
 * Jobs wait in a bounded FIFO guarded by one mutex; N worker threads take
 * them, run work(), and append them to a completion list. A worker wakes the
 * loop (event_active on a base made with evthread_use_pthreads) only when
 * the completion list was empty, and the loop then takes the whole list at
 * once and runs each done() on the loop thread, as memcached's thread.c and
 * redis's bio.c do. Only the loop thread ever touches evhttp objects. A job
 * whose work() names a next pool goes straight to that pool's queue (a
 * CPU phase handing over to an I/O phase) without a trip to the loop. The
 * loop may take a job back while it still waits in a queue
 * (pool_withdraw): each job records the pool whose queue holds it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "common/pool.h"
#include "common/log.h"
#include "common/xmalloc.h"

TAILQ_HEAD(pool_jobs, pool_job);

struct pool {
	struct event_base	*base;
	struct event		*wake;		/* runs pool_wake_cb on the loop */
	pthread_mutex_t		 lock;
	pthread_cond_t		 cond;		/* signalled when work arrives */
	struct pool_jobs	 queue;		/* waiting for a worker */
	struct pool_jobs	 done;		/* waiting for the loop */
	int			 nqueued;
	int			 max_queue;
	int			 inflight;	/* accepted, done() not yet run */
	int			 stopping;
	pthread_t		*threads;
	int			 nworkers;
};

/* Runs on the loop: takes every completed job at once and finishes them. */
static void
pool_wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct pool *pool = arg;
	struct pool_jobs batch = TAILQ_HEAD_INITIALIZER(batch);
	struct pool_job *job;
	int n = 0;

	pthread_mutex_lock(&pool->lock);
	TAILQ_CONCAT(&batch, &pool->done, entry);
	pthread_mutex_unlock(&pool->lock);
	while ((job = TAILQ_FIRST(&batch)) != NULL) {
		TAILQ_REMOVE(&batch, job, entry);
		n++;
		job->done(job);
	}
	pthread_mutex_lock(&pool->lock);
	pool->inflight -= n;
	pthread_mutex_unlock(&pool->lock);
}

/* Worker thread: takes jobs until the pool stops and the queue is empty. */
static void *
pool_worker(void *arg)
{
	struct pool *pool = arg;
	struct pool_job *job;
	struct pool *next;
	int was_empty;

	pthread_mutex_lock(&pool->lock);
	for (;;) {
		while (TAILQ_EMPTY(&pool->queue) && !pool->stopping)
			pthread_cond_wait(&pool->cond, &pool->lock);
		if ((job = TAILQ_FIRST(&pool->queue)) == NULL)
			break;		/* stopping and drained */
		TAILQ_REMOVE(&pool->queue, job, entry);
		pool->nqueued--;
		__atomic_store_n(&job->waiting_in, NULL, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&pool->lock);

		job->work(job);

		if ((next = job->next) != NULL) {
			/* Counted there before it stops counting here, so a
			 * drain never sees it in neither pool. */
			job->next = NULL;
			pool_submit_force(next, job);
			pthread_mutex_lock(&pool->lock);
			pool->inflight--;
			continue;
		}
		pthread_mutex_lock(&pool->lock);
		was_empty = TAILQ_EMPTY(&pool->done);
		TAILQ_INSERT_TAIL(&pool->done, job, entry);
		if (was_empty)
			event_active(pool->wake, EV_READ, 0);
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

/* Starts the workers; aborts if threads cannot be created. */
struct pool *
pool_new(struct event_base *base, int nworkers, int max_queue)
{
	struct pool *pool = xcalloc(1, sizeof *pool);
	int i, error;

	pool->base = base;
	pool->max_queue = max_queue;
	pool->nworkers = nworkers;
	TAILQ_INIT(&pool->queue);
	TAILQ_INIT(&pool->done);
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->cond, NULL);
	pool->wake = event_new(base, -1, 0, pool_wake_cb, pool);
	pool->threads = xcalloc(nworkers, sizeof *pool->threads);
	for (i = 0; i < nworkers; i++) {
		error = pthread_create(&pool->threads[i], NULL, pool_worker,
		    pool);
		if (error != 0) {
			log_error("%s: pthread_create: %s", __func__,
			    strerror(error));
			abort();
		}
	}
	return pool;
}

/* Queues job; the caller holds pool->lock. */
static void
pool_enqueue(struct pool *pool, struct pool_job *job)
{
	TAILQ_INSERT_TAIL(&pool->queue, job, entry);
	__atomic_store_n(&job->waiting_in, pool, __ATOMIC_RELEASE);
	pool->nqueued++;
	pool->inflight++;
	pthread_cond_signal(&pool->cond);
}

/* Queues a job unless the queue is full or the pool is stopping. */
int
pool_submit(struct pool *pool, struct pool_job *job)
{
	int rc = -1;

	pthread_mutex_lock(&pool->lock);
	if (!pool->stopping && pool->nqueued < pool->max_queue) {
		pool_enqueue(pool, job);
		rc = 0;
	}
	pthread_mutex_unlock(&pool->lock);
	return rc;
}

/* Queues a job whatever the queue length (sub-jobs of accepted work). */
void
pool_submit_force(struct pool *pool, struct pool_job *job)
{
	pthread_mutex_lock(&pool->lock);
	pool_enqueue(pool, job);
	pthread_mutex_unlock(&pool->lock);
}

/*
 * Takes a queued job back. Only the holder of a pool's lock changes
 * waiting_in away from that pool, so seeing it still there under the lock
 * means the job is in that queue.
 */
int
pool_withdraw(struct pool_job *job)
{
	struct pool *pool = __atomic_load_n(&job->waiting_in, __ATOMIC_ACQUIRE);
	int rc = -1;

	if (pool == NULL)
		return -1;
	pthread_mutex_lock(&pool->lock);
	if (__atomic_load_n(&job->waiting_in, __ATOMIC_ACQUIRE) == pool) {
		TAILQ_REMOVE(&pool->queue, job, entry);
		__atomic_store_n(&job->waiting_in, NULL, __ATOMIC_RELEASE);
		pool->nqueued--;
		pool->inflight--;
		rc = 0;
	}
	pthread_mutex_unlock(&pool->lock);
	return rc;
}

/* Jobs waiting for a worker. */
int
pool_queued(struct pool *pool)
{
	int n;

	pthread_mutex_lock(&pool->lock);
	n = pool->nqueued;
	pthread_mutex_unlock(&pool->lock);
	return n;
}

/* Jobs accepted whose done() has not run yet. */
int
pool_inflight(struct pool *pool)
{
	int n;

	pthread_mutex_lock(&pool->lock);
	n = pool->inflight;
	pthread_mutex_unlock(&pool->lock);
	return n;
}

/* Number of worker threads. */
int
pool_workers(struct pool *pool)
{
	return pool->nworkers;
}

/* Drains the queue, joins the workers, and runs the last done()s. */
void
pool_free(struct pool *pool)
{
	int i;

	if (pool == NULL)
		return;
	pthread_mutex_lock(&pool->lock);
	pool->stopping = 1;
	pthread_cond_broadcast(&pool->cond);
	pthread_mutex_unlock(&pool->lock);
	for (i = 0; i < pool->nworkers; i++)
		pthread_join(pool->threads[i], NULL);
	pool_wake_cb(-1, 0, pool);
	event_free(pool->wake);
	pthread_cond_destroy(&pool->cond);
	pthread_mutex_destroy(&pool->lock);
	free(pool->threads);
	free(pool);
}
