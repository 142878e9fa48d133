/*
 * Timelines from metadata alone (meta_timeline.c): each profile's totals
 * (one sum per sample type, computed at ingest) are added to per-minute
 * buckets, one set for all profiles of a (service, type) and one per
 * label pair, so a timeline over days reads a few thousand rows.
 */
#ifndef PROFD_META_TIMELINE_H
#define PROFD_META_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "storage/embedded/meta_conn.h"
#include "storage/store.h"

/* What a profile adds to (or, deleted, takes from) the buckets. */
struct meta_timeline_row {
	const char	*service;
	const char	*type;
	int64_t		 created_at;	/* ns */
	const char	*sample_types;	/* "cpu/nanoseconds,..." */
	const char	*totals;	/* pprof.h's totals; NULL: none */
	const int64_t	*label_ids;	/* distinct */
	size_t		 nlabels;
};

/*
 * Adds (sign 1) or subtracts (sign -1) a row's totals to its buckets
 * inside the writer's open transaction. A row without totals, or whose
 * totals do not match its sample types, changes nothing.
 */
int	meta_timeline_apply(struct meta_conn *w,
	    const struct meta_timeline_row *r, int sign, char **cause);

/* store_timeline over the embedded metadata (see storage/store.h). */
int	meta_timeline_query(struct meta_pool *readers,
	    const struct store_query *q, struct store_timeline *tl,
	    char **cause);

#endif
