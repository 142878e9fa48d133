/*
 * The totals backfill: profiles stored before profd kept each profile's
 * per-sample-type totals (or whose rows were rebuilt from blobs) get them
 * in the background after start, in small batches on the worker pool, so
 * the timeline counts them (see backfill.c).
 */
#ifndef PROFD_BACKFILL_H
#define PROFD_BACKFILL_H

#include <stddef.h>

#define BACKFILL_BATCH		64	/* profiles per batch */
#define BACKFILL_PAUSE_MS	10	/* between batches */

struct backfill;
struct event_base;
struct pool;
struct store;

/*
 * Starts the backfill on base's loop: batch jobs on pool read blobs of
 * store (inflating at most max_inflated bytes each) until no row lacks
 * totals, then it stops by itself.
 */
struct backfill	*backfill_new(struct event_base *, struct pool *,
		    struct store *, size_t max_inflated);
/* No new batches (SIGTERM); a batch running finishes. */
void		 backfill_stop(struct backfill *);
/* Frees it; call after the pool has run its last done()s. */
void		 backfill_free(struct backfill *);

#endif
