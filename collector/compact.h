/*
 * Compaction: builds the rollups long time-window merges read instead of
 * every profile (docs/DESIGN.md, "Rollups"), in the background, one
 * bucket at a time, on the merge pool's threads and within
 * --merge-memory, so uploads and queries keep their own workers.
 */
#ifndef PROFD_COMPACT_H
#define PROFD_COMPACT_H

#include <stddef.h>
#include <stdint.h>

#define COMPACT_IDLE_MS		1000	/* look again when nothing was due */
#define COMPACT_RETRY_MS	10000	/* after a failure */
#define COMPACT_BATCH		64	/* minutes committed together */
#define COMPACT_BATCH_MS	500	/* ... or this much work */

struct compact;
struct event_base;
struct pool;
struct budget;
struct store;
struct metrics;

/*
 * Starts compaction on base's loop: jobs on pool merge, within budget,
 * each bucket of store whose end is older than delay_ns (inflating at
 * most max_inflated bytes per profile), pausing pause_ns between jobs
 * (so merges queued meanwhile run first).
 */
struct compact	*compact_new(struct event_base *, struct pool *,
		    struct budget *, struct store *, struct metrics *,
		    int64_t delay_ns, int64_t pause_ns, size_t max_inflated);
/* No new jobs (SIGTERM); a merge running is cancelled. */
void		 compact_stop(struct compact *);
/* Frees it; call after the pool has run its last done()s. */
void		 compact_free(struct compact *);

#endif
