/*
 * The parallel merge driver: fetches, inflates, decodes and merges n stored
 * profiles on the worker pool and returns one gzipped pprof.
 */
#ifndef PROFD_MERGE_RUN_H
#define PROFD_MERGE_RUN_H

#include <stddef.h>
#include <stdint.h>

struct pool;
struct budget;

/*
 * Returns the stored bytes (gzipped or raw pprof) of input i in a new
 * malloc'd buffer that merge_run frees. Called from several threads at
 * once, each i once, or again after a helper short of memory gave it back
 * (never twice at the same time). Returns 1 when the input no longer exists
 * (deleted since it was listed: it is left out), -1 with *cause set when
 * it cannot be read (it is skipped as damaged), MERGE_FETCH_UNAVAILABLE
 * with *cause when the store cannot be reached (the merge fails with 503:
 * leaving inputs out would answer a partial merge as if whole).
 */
#define MERGE_FETCH_UNAVAILABLE	2
typedef int (*merge_fetch_cb)(void *arg, size_t i, uint8_t **buf,
    size_t *len, char **cause);

/* The inputs a merge left out. */
struct merge_run_skips {
	size_t	 deleted;	/* the fetch said it is gone */
	size_t	 damaged;	/* unreadable, undecodable or inconsistent */
	char	*first;		/* the first damaged one's cause (caller frees) */
};

/*
 * Merges inputs 0..n-1. Meant to run on a pool worker: the caller works on
 * the inputs itself and lends the rest to helper jobs it queues with
 * pool_submit_force; a helper that starts after the work is gone returns at
 * once, so the caller never waits for a job that has not started. pool may
 * be NULL (everything runs on the calling thread).
 * Every byte the merge holds is drawn from budget (common/budget.h; NULL:
 * no limit), which the daemon's merges share. max_inflated caps each
 * inflated profile (0: 256 MiB). *cancel (may be NULL) is checked between
 * inputs and, every few thousand samples, inside each one
 * (merge_set_cancel) and while shares are joined: once it is nonzero the
 * merge stops.
 * An input that is gone or damaged does not fail the merge: it is left
 * out, logged, and counted in *skips (may be NULL).
 * On success returns 0, *out (caller frees; no longer charged to the
 * budget) and *outlen, *http_code 200.
 * On failure returns -1, *cause and *http_code: 404 no inputs (or every
 * one was deleted), 422 sample types differ, 500 no input could be read,
 * 499 cancelled, 413 the merge alone needs more than the budget, 503 the
 * budget is held by other merges or malloc failed (retry later).
 */
int	merge_run(struct pool *pool, struct budget *budget, size_t n,
	    merge_fetch_cb fetch, void *arg, size_t max_inflated,
	    const volatile int *cancel, uint8_t **out, size_t *outlen,
	    struct merge_run_skips *skips, int *http_code, char **cause);

/*
 * merge_run, the result not gzipped (the protobuf bytes): for callers that
 * read the merged profile themselves (the UI's views) and would only
 * inflate it again.
 */
int	merge_run_raw(struct pool *pool, struct budget *budget, size_t n,
	    merge_fetch_cb fetch, void *arg, size_t max_inflated,
	    const volatile int *cancel, uint8_t **out, size_t *outlen,
	    struct merge_run_skips *skips, int *http_code, char **cause);

#endif
