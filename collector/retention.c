/*
 * The retention sweep.
 *
 * A one-shot loop timer drives it: shortly after start, and then every
 * interval, it fixes a cutoff (now - retention) and queues one batch job on
 * the pool. The job deletes up to RETENTION_BATCH profiles older than the
 * cutoff (store_delete_before commits the rows, unlinks the blobs and gives
 * freed pages back to the file system). When a full batch comes back there
 * may be more, so the timer fires again after a short pause and queues the
 * next batch behind whatever uploads arrived meanwhile: a sweep over a
 * million expired profiles never holds the store's writer, or a worker,
 * for more than one batch at a time. A partial batch ends the sweep.
 * Only one batch is ever in flight; the loop thread owns all the state
 * except the batch result, which the worker writes before done() runs.
 */
#include <stdlib.h>

#include <event2/event.h>

#include "collector/metrics.h"
#include "collector/retention.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/pool.h"
#include "common/xmalloc.h"
#include "storage/store.h"

struct retention {
	struct pool_job	 pj;		/* the batch job; first member */
	struct pool	*pool;
	struct store	*store;
	struct metrics	*metrics;
	struct event	*timer;
	int64_t		 retention_ns;
	int64_t		 interval_ns;
	int		 stopping;
	int		 busy;		/* a batch is queued or running */
	int		 sweeping;

	/* The sweep in progress. */
	int64_t		 cutoff;	/* ns since the epoch */
	int64_t		 started_ns;	/* monotonic */
	uint64_t	 deleted;
	size_t		 batches;

	/* The last batch's result, written by the worker. */
	size_t		 batch_deleted;
	int		 batch_failed;
	char		*batch_cause;
};

/* Arms the timer to fire in ns. */
static void
retention_arm(struct retention *r, int64_t ns)
{
	struct timeval tv;

	tv.tv_sec = (time_t)(ns / 1000000000);
	tv.tv_usec = (suseconds_t)(ns % 1000000000 / 1000);
	evtimer_add(r->timer, &tv);
}

/* Worker: deletes one batch. */
static void
retention_work(struct pool_job *pj)
{
	struct retention *r = (struct retention *)pj;

	free(r->batch_cause);
	r->batch_cause = NULL;
	r->batch_deleted = 0;
	r->batch_failed = store_delete_before(r->store, r->cutoff,
	    RETENTION_BATCH, &r->batch_deleted, &r->batch_cause) != 0;
	if (r->batch_deleted > 0)
		metrics_retention_deleted(r->metrics, r->batch_deleted);
}

/* Ends the sweep and schedules the next one. */
static void
retention_sweep_end(struct retention *r, int failed)
{
	int64_t took = clock_mono_ns() - r->started_ns;
	char when[64];

	r->sweeping = 0;
	metrics_retention_sweep(r->metrics, failed, took);
	clock_format(r->cutoff, when, sizeof when);
	if (r->deleted > 0 || failed)
		log_info("retention: deleted %llu profiles created before %s "
		    "in %.1f ms (%zu batches)%s", (unsigned long long)r->deleted,
		    when, took / 1e6, r->batches, failed ? ", then failed" : "");
	if (!r->stopping)
		retention_arm(r, r->interval_ns);
}

/* Loop: a batch finished; queue the next or end the sweep. */
static void
retention_done(struct pool_job *pj)
{
	struct retention *r = (struct retention *)pj;

	r->busy = 0;
	r->batches++;
	r->deleted += r->batch_deleted;
	if (r->batch_failed) {
		log_warn("retention: %s", r->batch_cause != NULL ?
		    r->batch_cause : "delete failed");
		retention_sweep_end(r, 1);
		return;
	}
	if (r->batch_deleted < RETENTION_BATCH || r->stopping) {
		retention_sweep_end(r, 0);
		return;
	}
	retention_arm(r, RETENTION_PAUSE_MS * INT64_C(1000000));
}

/* Loop timer: starts a sweep or continues the one in progress. */
static void
retention_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct retention *r = arg;

	if (r->stopping || r->busy)
		return;
	if (!r->sweeping) {
		r->sweeping = 1;
		r->cutoff = clock_now_ns() - r->retention_ns;
		r->started_ns = clock_mono_ns();
		r->deleted = 0;
		r->batches = 0;
	}
	if (pool_submit(r->pool, &r->pj) != 0) {
		log_debug("%s: pool busy, retrying in 1 s", __func__);
		retention_arm(r, INT64_C(1000000000));
		return;
	}
	r->busy = 1;
}

/* Schedules sweeps; NULL when retention is off. */
struct retention *
retention_new(struct event_base *base, struct pool *pool, struct store *store,
    struct metrics *metrics, int64_t retention_ns, int64_t interval_ns)
{
	struct retention *r;
	int64_t first = RETENTION_FIRST_MS * INT64_C(1000000);

	if (retention_ns <= 0)
		return NULL;
	r = xcalloc(1, sizeof *r);
	r->pj.work = retention_work;
	r->pj.done = retention_done;
	r->pool = pool;
	r->store = store;
	r->metrics = metrics;
	r->retention_ns = retention_ns;
	r->interval_ns = interval_ns > 0 ? interval_ns :
	    INT64_C(60) * 1000000000;
	r->timer = evtimer_new(base, retention_timer_cb, r);
	retention_arm(r, first < r->interval_ns ? first : r->interval_ns);
	return r;
}

/* Stops scheduling. */
void
retention_stop(struct retention *r)
{
	if (r == NULL)
		return;
	r->stopping = 1;
	evtimer_del(r->timer);
}

/* Frees the sweep state. */
void
retention_free(struct retention *r)
{
	if (r == NULL)
		return;
	if (r->busy)
		log_error("%s: a batch is still in flight", __func__);
	event_free(r->timer);
	free(r->batch_cause);
	free(r);
}
