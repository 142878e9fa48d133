/*
 * Retention: a periodic sweep that deletes profiles older than --retention
 * (rows and blobs together) in small batches on the worker pool, never on
 * the loop thread.
 */
#ifndef PROFD_RETENTION_H
#define PROFD_RETENTION_H

#include <stddef.h>
#include <stdint.h>

#define RETENTION_BATCH		500	/* profiles per store call */
#define RETENTION_FIRST_MS	1000	/* first sweep this soon after start */
#define RETENTION_PAUSE_MS	5	/* between batches of one sweep */

struct event_base;
struct metrics;
struct pool;
struct retention;
struct store;

/*
 * Schedules sweeps on base's loop every interval_ns, run as batch jobs on
 * pool, deleting from store what is older than retention_ns (0: keep
 * forever, then nothing is scheduled and NULL is returned); counts them in
 * metrics.
 */
struct retention *retention_new(struct event_base *, struct pool *,
		    struct store *, struct metrics *, int64_t retention_ns,
		    int64_t interval_ns);
/* No new batches or sweeps (SIGTERM); a batch running finishes. */
void		 retention_stop(struct retention *);
/* Frees it; call after the pool has run its last done()s. */
void		 retention_free(struct retention *);

#endif
