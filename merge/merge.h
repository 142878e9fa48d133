/*
 * Merging pprof profiles by symbolized stack keys (docs/DESIGN.md, "Merge by
 * symbolized stack keys"). A struct merge accumulates any number of
 * profiles one at a time, each read in place from its raw bytes; each
 * input can be freed as soon as merge_add_raw returns, so memory tracks
 * the distinct stacks of the result, not the inputs or their sample
 * counts. All of it is charged to the budget account given to merge_new.
 * A struct merge is not thread-safe: parallel merging gives each thread
 * its own and joins them with merge_combine (see merge_run.h).
 */
#ifndef PROFD_MERGE_H
#define PROFD_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "profile.pb-c.h"

struct merge;
struct budget_acct;

/*
 * A new merge whose memory is charged to acct (common/budget.h; NULL: not
 * counted, but allocation failure still fails the call, never aborts).
 */
struct merge	*merge_new(struct budget_acct *acct);
void		 merge_free(struct merge *);

/*
 * Folds the raw (inflated) protobuf profile raw[0..len) into m, reading it
 * in place; it is checked first exactly as an upload is (pprof_check), and
 * refused with the same cause. The first input fixes the order of sample
 * types; later ones must have the same (type, unit) set, in any order.
 * Returns -1 with *cause set; after a refused input or a sample type
 * mismatch m is unchanged as far as samples go, after running out of
 * memory (merge_out_of_memory) or a cancel, m is good only for merge_free.
 */
int		 merge_add_raw(struct merge *m, const uint8_t *raw, size_t len,
		    char **cause);
/* merge_add_raw of a decoded profile (packed first: for tests and tools). */
int		 merge_add(struct merge *m, const Perftools__Profiles__Profile *p,
		    char **cause);
/* True if the last failing merge_add/merge_combine was a sample type mismatch. */
int		 merge_mismatch(const struct merge *m);
/*
 * True if the last failing call failed for memory: the budget account
 * refused it (budget_acct_fail says why) or malloc did.
 */
int		 merge_out_of_memory(const struct merge *m);
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
 * Returns -1 with *cause set if their sample types differ (or for memory).
 */
int		 merge_combine(struct merge *into, struct merge *from, char **cause);

/*
 * Fixes m's sample types before any input (n pairs type[i]/unit[i]), so
 * its first input is checked against them rather than setting them: a
 * parallel share then reports a mismatch against the run's first input.
 * Returns -1 with *cause only for memory.
 */
int		 merge_expect_types(struct merge *m, size_t n,
		    const char *const *type, const char *const *unit,
		    char **cause);
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
 * in the merge's own memory (not charged to its account: for tests and
 * tools) and stays valid until the next merge_add, merge_combine,
 * merge_result* or merge_free. NULL if the account refused memory.
 */
const Perftools__Profiles__Profile *merge_result(struct merge *m);
/*
 * The same profile written straight from the merge as protobuf bytes,
 * exactly what protobuf-c would pack from merge_result(m), without
 * building it. *out: OUT new buffer of *len bytes charged to m's account
 * (free with budget_dealloc(acct, *out, *len)).
 */
int		 merge_result_raw(struct merge *m, uint8_t **out, size_t *len,
		    char **cause);
/* merge_result_raw, gzipped as it is written (same ownership of *out). */
int		 merge_result_gzip(struct merge *m, uint8_t **out, size_t *len,
		    char **cause);

#endif
