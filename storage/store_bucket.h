/*
 * Time in buckets of whole seconds, as rollups and timelines count it:
 * which bucket of a given size a time falls in, and the sizes of the
 * rollup levels (docs/DESIGN.md, "Rollups"). Below store.c and both
 * backends, which all count in them.
 */
#ifndef PROFD_STORE_BUCKET_H
#define PROFD_STORE_BUCKET_H

#include <stdint.h>

#include "storage/store.h"

/* The rollup levels' bucket sizes, seconds: a minute, ten, an hour, a day. */
extern const int64_t store_bucket_step[STORE_ROLLUP_LEVELS];

/* The bucket of time ns (ns since the epoch) for step seconds. */
int64_t	store_bucket_of(int64_t ns, int64_t step);

#endif
