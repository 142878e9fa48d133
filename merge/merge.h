/*
 * Merging pprof profiles by symbolized stack keys (docs/DESIGN.md, "Merge by
 * symbolized stack keys"). A struct merge accumulates any number of decoded
 * profiles one at a time; each input can be freed as soon as merge_add
 * returns, so memory tracks the size of the result, not of the inputs.
 * A struct merge is not thread-safe: parallel merging gives each thread its
 * own and joins them with merge_combine (see merge_run.h).
 */
#ifndef PROFD_MERGE_H
#define PROFD_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "profile.pb-c.h"

struct merge;

struct merge	*merge_new(void);
void		 merge_free(struct merge *);

/*
 * Folds profile p into m. The first input fixes the order of sample types;
 * later ones must have the same (type, unit) set, in any order.
 * Returns -1 with *cause set ("sample types differ: A vs B", or a reference
 * out of range); m is then unchanged as far as samples go.
 */
int		 merge_add(struct merge *m, const Perftools__Profiles__Profile *p,
		    char **cause);
/* True if the last failing merge_add/merge_combine was a sample type mismatch. */
int		 merge_mismatch(const struct merge *m);
/*
 * Makes merge_add and merge_combine read *cancel (when not NULL) every few
 * thousand samples, from any thread, and fail with cause "merge cancelled"
 * once it is nonzero, so a caller can stop work on one huge input within
 * milliseconds. A cancelled call may leave part of its input in m: the
 * merge is then good only for merge_free.
 */
void		 merge_set_cancel(struct merge *m, const volatile int *cancel);
/* True if the last failing merge_add/merge_combine was cancelled. */
int		 merge_cancelled(const struct merge *m);
/*
 * Folds everything merged into from into into; from is left as it was.
 * Returns -1 with *cause set if their sample types differ.
 */
int		 merge_combine(struct merge *into, struct merge *from, char **cause);

/*
 * Fixes m's sample types before any input (n pairs type[i]/unit[i]), so
 * its first input is checked against them rather than setting them: a
 * parallel share then reports a mismatch against the run's first input.
 */
void		 merge_expect_types(struct merge *m, size_t n,
		    const char *const *type, const char *const *unit);
/* m's i-th sample type and unit (i < merge_ntypes(m)). */
size_t		 merge_ntypes(const struct merge *m);
const char	*merge_type(const struct merge *m, size_t i, const char **unit);

/* Number of input profiles folded in (directly or through combine). */
size_t		 merge_count(const struct merge *m);
/* Distinct samples and locations held so far. */
size_t		 merge_samples(const struct merge *m);
size_t		 merge_locations(const struct merge *m);

/*
 * Builds the merged profile: fresh deduplicated tables holding only what
 * the kept samples use, no all-zero samples, earliest nonzero time_nanos,
 * summed duration_nanos, the largest period, the first period_type and
 * default_sample_type, comments in first-seen order. The result is built
 * in the merge's own memory and stays valid until the next merge_add,
 * merge_combine, merge_result* or merge_free.
 */
const Perftools__Profiles__Profile *merge_result(struct merge *m);
/* merge_result, serialized and gzipped. *out: OUT new buffer (caller frees). */
int		 merge_result_gzip(struct merge *m, uint8_t **out, size_t *len,
		    char **cause);

#endif
