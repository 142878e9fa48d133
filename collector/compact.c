/*
 * Compaction. A loop timer queues one job at a time on the merge pool:
 * it asks the store for the next bucket due (store_compact_next), merges
 * each of its rollups' pieces on that one thread (merge_run without
 * helpers, memory from --merge-memory), and commits them
 * (store_compact_commit: blobs durable, then one transaction). After a
 * bucket the timer fires again at once (a short pause lets queued merges
 * run); when nothing is due it looks again a second later. A merge short
 * of memory because others hold it is retried later; a bucket that cannot
 * be merged at all (every input unreadable, or alone bigger than
 * --merge-memory) is given up: its profiles are read as they are. When
 * nothing is due, profiles that arrived after their bucket was compacted
 * are healed once none has arrived for the delay (store_compact_heal). The
 * loop thread owns the state except the job's result, which the worker
 * writes before done() runs.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "collector/compact.h"
#include "collector/metrics.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/pool.h"
#include "common/xmalloc.h"
#include "merge/merge_run.h"
#include "storage/store.h"
#include "storage/store_bucket.h"
#include "storage/store_free.h"

struct compact {
	struct pool_job	 pj;		/* the job; first member */
	struct pool	*pool;
	struct budget	*budget;
	struct store	*store;
	struct metrics	*metrics;
	struct event	*timer;
	int64_t		 delay_ns;
	int64_t		 pause_ns;
	size_t		 max_inflated;
	int		 stopping;
	int		 busy;
	volatile int	 cancel;	/* set by compact_stop */

	/* The last job's result, written by the worker. */
	int		 did;		/* a bucket was compacted */
	int		 failed;	/* retry later */
	char		*cause;
	size_t		 rollups;
	int64_t		 took_ns;
};

/* Arms the timer to fire in ms. */
static void
compact_arm(struct compact *c, int64_t ms)
{
	struct timeval tv;

	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000 * 1000);
	evtimer_add(c->timer, &tv);
}

/* merge_run's source: a piece's stored bytes (1: deleted meanwhile). */
static int
compact_fetch(void *arg, size_t i, uint8_t **buf, size_t *len, char **cause)
{
	struct compact *c = ((void **)arg)[0];
	struct store_rollup *r = ((void **)arg)[1];
	char *why = NULL;
	int rc;

	rc = store_read_blob(c->store, r->pieces[i], buf, len, &why);
	if (rc == -1) {
		xcause(cause, "%s: %s", r->pieces[i], why);
		free(why);
	}
	return rc;
}

/*
 * Merges one rollup's pieces: 0 done, 1 retry later (memory held by
 * others, cancelled), -1 cannot be merged (*cause).
 */
static int
compact_merge(struct compact *c, struct store_rollup *r, char **cause)
{
	struct merge_run_skips skips;
	void *arg[2] = { c, r };
	int code = 0;

	memset(&skips, 0, sizeof skips);
	if (merge_run(NULL, c->budget, r->npieces, compact_fetch, arg,
	    c->max_inflated, &c->cancel, &r->bytes, &r->len, &skips, &code,
	    cause) == 0) {
		if (skips.damaged > 0)
			log_warn("compaction: %zu unreadable inputs left out "
			    "(as merges leave them out): %s", skips.damaged,
			    skips.first ? skips.first : "");
		free(skips.first);
		return 0;
	}
	free(skips.first);
	return code == 503 || code == 499 ? 1 : -1;
}

/*
 * Merges a compaction's rollups: 0 ready to commit, 1 retry later, -1
 * given up (abandoned already; *why logged).
 */
static int
compact_prepare(struct compact *c, struct store_compaction *sc)
{
	char *why = NULL;
	size_t i;
	int rc = 0;

	for (i = 0; i < sc->n && rc == 0; i++) {
		if (!sc->r[i].refs)
			rc = compact_merge(c, &sc->r[i], &why);
	}
	if (rc == 1)
		xcause(&c->cause, "%s %s: merge: %s; retrying", sc->service,
		    sc->type, why != NULL ? why : "cancelled");
	else if (rc == -1) {
		log_warn("compaction: %s %s at %lld (level %d): %s; its "
		    "profiles stay as they are", sc->service, sc->type,
		    (long long)sc->bucket, sc->level, why);
		if (store_compact_abandon(c->store, sc, &c->cause) != 0)
			rc = 1;
	}
	free(why);
	return rc;
}

/*
 * Worker: compacts the next bucket due, if any; consecutive minutes go
 * together (up to COMPACT_BATCH, or COMPACT_BATCH_MS of work) so that
 * they share one sync and one transaction.
 */
static void
compact_work(struct pool_job *pj)
{
	struct compact *c = (struct compact *)pj;
	struct store_compaction *batch[COMPACT_BATCH], *sc;
	int64_t start = clock_mono_ns(), after = 0;
	size_t n = 0, i, healed = 0;
	int rc;

	free(c->cause);
	c->cause = NULL;
	c->did = c->failed = 0;
	c->rollups = 0;
	while (n < COMPACT_BATCH) {
		sc = NULL;
		if (store_compact_next(c->store, clock_now_ns(), c->delay_ns,
		    after, &sc, &c->cause) != 0) {
			c->failed = 1;
			break;
		}
		if (sc == NULL)
			break;
		after = (sc->bucket + store_bucket_step[0]) *
		    INT64_C(1000000000);
		if ((rc = compact_prepare(c, sc)) == 0)
			batch[n++] = sc;
		else {
			store_free_compaction(sc);
			c->did = 1;
			if (rc == 1) {
				c->failed = 1;
				break;
			}
		}
		if (sc != NULL && rc == 0 && sc->level > 0)
			break;		/* hours and days go alone */
		if (clock_mono_ns() - start > COMPACT_BATCH_MS * 1000000LL)
			break;
	}
	if (n == 0 && !c->failed && !c->did) {
		/* Nothing due: late profiles may be taken in again. */
		if (store_compact_heal(c->store, c->delay_ns, &healed,
		    &c->cause) != 0)
			c->failed = 1;
		else if (healed > 0) {
			log_info("compaction: %zu minutes with profiles that "
			    "arrived late reopened, to be rolled up again",
			    healed);
			c->did = 1;
		}
	}
	if (n > 0 && store_compact_commit(c->store, batch, n,
	    c->cause ? NULL : &c->cause) != 0)
		c->failed = 1;
	else if (n > 0) {
		c->did = 1;
		for (i = 0; i < n; i++)
			c->rollups += batch[i]->n;
	}
	for (i = 0; i < n; i++)
		store_free_compaction(batch[i]);
	c->took_ns = clock_mono_ns() - start;
}

/* Loop: a job finished; queue the next soon, or later. */
static void
compact_done(struct pool_job *pj)
{
	struct compact *c = (struct compact *)pj;

	c->busy = 0;
	if (c->did || c->failed)
		metrics_compaction(c->metrics, c->failed, c->rollups,
		    c->took_ns);
	if (c->stopping)
		return;
	if (c->failed) {
		log_warn("compaction: %s", c->cause ? c->cause : "failed");
		compact_arm(c, COMPACT_RETRY_MS);
		return;
	}
	compact_arm(c, c->did ? c->pause_ns / 1000000 : COMPACT_IDLE_MS);
}

/* Loop timer: queues the next job. */
static void
compact_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct compact *c = arg;

	(void)fd;
	(void)what;
	if (c->stopping || c->busy)
		return;
	if (pool_submit(c->pool, &c->pj) != 0) {
		compact_arm(c, COMPACT_IDLE_MS);
		return;
	}
	c->busy = 1;
}

/* Starts compaction. */
struct compact *
compact_new(struct event_base *base, struct pool *pool, struct budget *budget,
    struct store *store, struct metrics *metrics, int64_t delay_ns,
    int64_t pause_ns, size_t max_inflated)
{
	struct compact *c = xcalloc(1, sizeof *c);

	c->pj.work = compact_work;
	c->pj.done = compact_done;
	c->pool = pool;
	c->budget = budget;
	c->store = store;
	c->metrics = metrics;
	c->delay_ns = delay_ns;
	c->pause_ns = pause_ns;
	c->max_inflated = max_inflated;
	c->timer = evtimer_new(base, compact_timer_cb, c);
	compact_arm(c, COMPACT_IDLE_MS);
	return c;
}

/* Stops queuing jobs and cancels a merge in progress. */
void
compact_stop(struct compact *c)
{
	if (c == NULL)
		return;
	c->stopping = 1;
	__atomic_store_n(&c->cancel, 1, __ATOMIC_RELAXED);
	evtimer_del(c->timer);
}

/* Frees the state. */
void
compact_free(struct compact *c)
{
	if (c == NULL)
		return;
	if (c->busy)
		log_error("%s: a job is still in flight", __func__);
	event_free(c->timer);
	free(c->cause);
	free(c);
}
