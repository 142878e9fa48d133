/*
 * The totals backfill. The timeline (storage/embedded/meta_timeline.c) sums
 * each profile's totals, which profd computes at ingest; rows stored by an
 * older profd, or rebuilt from blobs, have none. Shortly after start a
 * one-shot loop timer queues one batch job on the worker pool: it takes
 * up to BACKFILL_BATCH ids of such rows (in id order, after the last
 * batch's), reads and checks each blob as an upload is checked, and
 * records the totals in one transaction (store_set_totals adds them to
 * the timeline then). A blob that cannot be read or checked gets empty
 * totals, so it is not read again, and a warning. A full batch means
 * there may be more: the timer fires again after a short pause, so
 * uploads and queries queue between batches. A partial batch ends it.
 * Only one batch is ever in flight; the loop thread owns the state
 * except the batch result, which the worker writes before done() runs.
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <event2/event.h>

#include "collector/backfill.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/pool.h"
#include "common/xmalloc.h"
#include "proto/pprof.h"
#include "storage/store.h"
#include "storage/store_free.h"

#define BACKFILL_FIRST_MS	500	/* first batch this soon after start */

struct backfill {
	struct pool_job	 pj;		/* the batch job; first member */
	struct pool	*pool;
	struct store	*store;
	struct event	*timer;
	size_t		 max_inflated;
	int		 stopping;
	int		 busy;
	int64_t		 started_ns;	/* monotonic */
	size_t		 done_rows, bad_rows;
	char		 after[STORE_ID_LEN + 1];

	/* The last batch's result, written by the worker. */
	size_t		 batch_n, batch_bad;
	int		 batch_failed;
	char		*batch_cause;
};

/* Arms the timer to fire in ms. */
static void
backfill_arm(struct backfill *b, int64_t ms)
{
	struct timeval tv;

	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000 * 1000);
	evtimer_add(b->timer, &tv);
}

/* The totals of one stored profile: a new string, "" if unreadable. */
static char *
backfill_totals(struct backfill *b, const char *id, size_t *bad)
{
	struct pprof_summary sum;
	uint8_t *buf = NULL;
	size_t len = 0;
	char *cause = NULL, *t;
	int rc;

	memset(&sum, 0, sizeof sum);
	if ((rc = store_read_blob(b->store, id, &buf, &len, &cause)) == 0 &&
	    pprof_check(buf, len, b->max_inflated, &sum, &cause) == 0 &&
	    sum.totals != NULL) {
		t = sum.totals;
		sum.totals = NULL;
	} else {
		log_warn("backfill: profile %s: %s; left out of timelines",
		    id, rc == 1 ? "blob not found" : cause != NULL ? cause :
		    "no totals");
		t = xstrdup("");
		(*bad)++;
	}
	pprof_summary_free(&sum);
	free(buf);
	free(cause);
	return t;
}

/* Worker: one batch. */
static void
backfill_work(struct pool_job *pj)
{
	struct backfill *b = (struct backfill *)pj;
	char **ids = NULL, **totals = NULL;
	size_t n = 0, i;

	free(b->batch_cause);
	b->batch_cause = NULL;
	b->batch_n = b->batch_bad = 0;
	b->batch_failed = store_missing_totals(b->store, b->after,
	    BACKFILL_BATCH, &ids, &n, &b->batch_cause) != 0;
	if (b->batch_failed || n == 0)
		return;
	totals = xcalloc(n, sizeof *totals);
	for (i = 0; i < n; i++)
		totals[i] = backfill_totals(b, ids[i], &b->batch_bad);
	b->batch_failed = store_set_totals(b->store, ids, totals, n,
	    &b->batch_cause) != 0;
	if (!b->batch_failed) {
		b->batch_n = n;
		snprintf(b->after, sizeof b->after, "%s", ids[n - 1]);
	}
	store_free_strings(ids, n);
	store_free_strings(totals, n);
}

/* Loop: a batch finished; queue the next or end. */
static void
backfill_done(struct pool_job *pj)
{
	struct backfill *b = (struct backfill *)pj;

	b->busy = 0;
	b->done_rows += b->batch_n;
	b->bad_rows += b->batch_bad;
	if (b->batch_failed) {
		log_warn("backfill: %s; retrying in 10 s", b->batch_cause ?
		    b->batch_cause : "failed");
		if (!b->stopping)
			backfill_arm(b, 10000);
		return;
	}
	if (b->batch_n == BACKFILL_BATCH && !b->stopping) {
		backfill_arm(b, BACKFILL_PAUSE_MS);
		return;
	}
	if (b->done_rows > 0)
		log_info("backfill: totals of %zu profiles in %.1f s (%zu "
		    "unreadable)%s", b->done_rows,
		    (clock_mono_ns() - b->started_ns) / 1e9, b->bad_rows,
		    b->stopping ? ", stopped" : "");
}

/* Loop timer: queues the next batch. */
static void
backfill_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct backfill *b = arg;

	(void)fd;
	(void)what;
	if (b->stopping || b->busy)
		return;
	if (pool_submit(b->pool, &b->pj) != 0) {
		backfill_arm(b, 1000);
		return;
	}
	b->busy = 1;
}

/* Starts the backfill. */
struct backfill *
backfill_new(struct event_base *base, struct pool *pool, struct store *store,
    size_t max_inflated)
{
	struct backfill *b = xcalloc(1, sizeof *b);

	b->pj.work = backfill_work;
	b->pj.done = backfill_done;
	b->pool = pool;
	b->store = store;
	b->max_inflated = max_inflated;
	b->started_ns = clock_mono_ns();
	b->timer = evtimer_new(base, backfill_timer_cb, b);
	backfill_arm(b, BACKFILL_FIRST_MS);
	return b;
}

/* Stops queuing batches. */
void
backfill_stop(struct backfill *b)
{
	if (b == NULL)
		return;
	b->stopping = 1;
	evtimer_del(b->timer);
}

/* Frees the state. */
void
backfill_free(struct backfill *b)
{
	if (b == NULL)
		return;
	if (b->busy)
		log_error("%s: a batch is still in flight", __func__);
	event_free(b->timer);
	free(b->batch_cause);
	free(b);
}
