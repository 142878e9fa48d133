/*
 * The parallel merge driver.
 *
 * A merge request runs as one job on a pool worker (the caller). It claims
 * inputs one at a time from an atomic counter, and queues helper jobs that
 * claim from the same counter. Each participant (caller or helper) fetches,
 * inflates, decodes and validates (pprof_load) its inputs into its own
 * arena and folds them into
 * its own struct merge, so memory is one result-sized merge per
 * participant however many inputs there are. When the counter runs out the
 * caller closes the run, waits only for helpers that had already joined,
 * and combines their merges into its own. A helper that starts after the
 * run closed returns at once: the caller never waits for a job that has
 * not started, so merges cannot deadlock even when every worker is inside
 * merge_run. The run's shared state is reference-counted (one reference
 * per queued helper), so a helper that runs late never touches freed
 * memory.
 *
 * The caller merges input 0 before any helper exists, so the result's
 * sample type order is always input 0's.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "merge/merge.h"
#include "merge/merge_run.h"
#include "common/pool.h"
#include "common/log.h"
#include "common/xmalloc.h"
#include "proto/pprof.h"

/* Cap on one inflated profile when the caller gives none (docs/DESIGN.md,
 * "Limits and bad input"). */
#define MERGE_RUN_MAX_INFLATED	((size_t)256 * 1024 * 1024)

struct merge_run_state {
	pthread_mutex_t		 lock;
	pthread_cond_t		 cond;		/* a helper left */
	int			 refs;		/* caller + queued helpers */
	int			 closed;	/* no helper may join now */
	int			 active;	/* helpers that joined, not left */
	struct merge		**results;	/* helpers' merges */
	size_t			 nresults;
	int			 code;		/* first failure */
	char			*cause;

	size_t			 n;
	merge_fetch_cb		 fetch;
	void			*arg;
	size_t			 max_inflated;
	const volatile int	*cancel;
	size_t			 ntypes;	/* input 0's sample types */
	char			**types;
	char			**units;
	atomic_size_t		 next;		/* next unclaimed input */
	atomic_int		 stop;		/* failure or cancel */
	struct merge_run_skips	 skips;		/* under lock */
};

/* What one participant owns while it works. */
struct merge_run_share {
	struct merge		*m;
	struct arena		*arena;		/* decoded inputs, one at a time */
};

struct merge_run_job {
	struct pool_job		 job;
	struct merge_run_state	*st;
};

/* Drops one reference; the last one frees the state. */
static void
merge_run_unref(struct merge_run_state *st)
{
	size_t i;
	int last;

	pthread_mutex_lock(&st->lock);
	last = --st->refs == 0;
	pthread_mutex_unlock(&st->lock);
	if (!last)
		return;
	for (i = 0; i < st->nresults; i++)
		merge_free(st->results[i]);
	free(st->results);
	free(st->cause);
	free(st->skips.first);
	for (i = 0; i < st->ntypes; i++) {
		free(st->types[i]);
		free(st->units[i]);
	}
	free(st->types);
	free(st->units);
	pthread_cond_destroy(&st->cond);
	pthread_mutex_destroy(&st->lock);
	free(st);
}

/* Records the first failure (takes ownership of cause) and stops the run. */
static void
merge_run_fail(struct merge_run_state *st, int code, char *cause)
{
	pthread_mutex_lock(&st->lock);
	if (st->code == 0) {
		st->code = code;
		st->cause = cause;
		cause = NULL;
	}
	pthread_mutex_unlock(&st->lock);
	atomic_store(&st->stop, 1);
	free(cause);
}

/* Leaves input i out as damaged (takes why), logging and counting it. */
static void
merge_run_skip(struct merge_run_state *st, size_t i, char *why)
{
	log_warn("merge: left out input %zu: %s", i, why);
	pthread_mutex_lock(&st->lock);
	st->skips.damaged++;
	if (st->skips.first == NULL) {
		st->skips.first = why;
		why = NULL;
	}
	pthread_mutex_unlock(&st->lock);
	free(why);
}

/*
 * Fetches, decodes and merges input i into the share. An input that is gone
 * or damaged is left out; only a sample type mismatch (422) fails the run.
 */
static int
merge_run_one(struct merge_run_state *st, struct merge_run_share *sh,
    size_t i)
{
	Perftools__Profiles__Profile *p;
	uint8_t *buf = NULL;
	size_t len = 0;
	char *why = NULL;
	int rc = 0;

	switch (st->fetch(st->arg, i, &buf, &len, &why)) {
	case 0:
		break;
	case 1:
		pthread_mutex_lock(&st->lock);
		st->skips.deleted++;
		pthread_mutex_unlock(&st->lock);
		goto out;
	default:
		merge_run_skip(st, i, xasprintf("profile %zu: %s", i,
		    why ? why : "unreadable"));
		goto out;
	}
	p = pprof_load(buf, len, st->max_inflated, arena_allocator(sh->arena),
	    &why);
	if (p == NULL) {
		merge_run_skip(st, i, xasprintf("stored profile %zu no longer "
		    "decodes: %s", i, why ? why : "invalid"));
		goto out;
	}
	if (merge_add(sh->m, p, &why) != 0) {
		if (merge_cancelled(sh->m)) {
			merge_run_fail(st, 499, xstrdup("merge cancelled"));
			rc = -1;
		} else if (merge_mismatch(sh->m)) {
			merge_run_fail(st, 422, xstrdup(why));
			rc = -1;
		} else
			merge_run_skip(st, i, xasprintf("profile %zu: %s", i,
			    why));
	}
out:
	arena_reset(sh->arena);
	free(why);
	free(buf);
	return rc;
}

/* Claims and merges inputs until none is left or the run stops. */
static void
merge_run_share_loop(struct merge_run_state *st, struct merge_run_share *sh)
{
	size_t i;

	while (!atomic_load(&st->stop)) {
		if (st->cancel != NULL && __atomic_load_n(st->cancel, __ATOMIC_RELAXED)) {
			merge_run_fail(st, 499, xstrdup("merge cancelled"));
			break;
		}
		i = atomic_fetch_add(&st->next, 1);
		if (i >= st->n)
			break;
		if (merge_run_one(st, sh, i) != 0)
			break;
	}
}

/* Prepares a participant's private state. */
static void
merge_run_share_init(struct merge_run_share *sh, const volatile int *cancel)
{
	memset(sh, 0, sizeof *sh);
	sh->m = merge_new();
	merge_set_cancel(sh->m, cancel);
	sh->arena = arena_new(256 * 1024);
}

/* Frees a participant's scratch; the merge is kept unless drop_merge. */
static void
merge_run_share_done(struct merge_run_share *sh, int drop_merge)
{
	arena_free(sh->arena);
	if (drop_merge) {
		merge_free(sh->m);
		sh->m = NULL;
	}
}

/* Helper job: joins the run if it is still open and works on it. */
static void
merge_run_job_work(struct pool_job *job)
{
	struct merge_run_state *st = ((struct merge_run_job *)job)->st;
	struct merge_run_share sh;
	int failed;

	pthread_mutex_lock(&st->lock);
	if (st->closed || atomic_load(&st->stop)) {
		pthread_mutex_unlock(&st->lock);
		merge_run_unref(st);
		return;
	}
	st->active++;
	pthread_mutex_unlock(&st->lock);

	merge_run_share_init(&sh, st->cancel);
	merge_expect_types(sh.m, st->ntypes, (const char *const *)st->types,
	    (const char *const *)st->units);
	merge_run_share_loop(st, &sh);
	failed = atomic_load(&st->stop);
	merge_run_share_done(&sh, failed || merge_count(sh.m) == 0);

	pthread_mutex_lock(&st->lock);
	if (sh.m != NULL) {
		st->results = xreallocarray(st->results, st->nresults + 1,
		    sizeof *st->results);
		st->results[st->nresults++] = sh.m;
	}
	st->active--;
	pthread_cond_broadcast(&st->cond);
	pthread_mutex_unlock(&st->lock);
	merge_run_unref(st);
}

/* Helper job, on the loop thread: frees the job. */
static void
merge_run_job_done(struct pool_job *job)
{
	free(job);
}

/* See merge_run.h. */
int
merge_run(struct pool *pool, size_t n, merge_fetch_cb fetch, void *arg,
    size_t max_inflated, const volatile int *cancel, uint8_t **out,
    size_t *outlen, struct merge_run_skips *skips, int *http_code,
    char **cause)
{
	struct merge_run_state *st;
	struct merge_run_share sh;
	struct merge_run_job *job;
	size_t i, nhelpers = 0;
	char *why = NULL;
	int rc = -1;

	*out = NULL;
	*outlen = 0;
	if (skips != NULL)
		memset(skips, 0, sizeof *skips);
	if (n == 0) {
		*http_code = 404;
		return xcause(cause, "no profiles to merge");
	}
	st = xcalloc(1, sizeof *st);
	pthread_mutex_init(&st->lock, NULL);
	pthread_cond_init(&st->cond, NULL);
	st->refs = 1;
	st->n = n;
	st->fetch = fetch;
	st->arg = arg;
	st->max_inflated = max_inflated ? max_inflated : MERGE_RUN_MAX_INFLATED;
	st->cancel = cancel;
	atomic_init(&st->next, 0);
	atomic_init(&st->stop, 0);

	merge_run_share_init(&sh, st->cancel);
	/*
	 * The first input that merges, alone: it fixes the order of the
	 * sample types (inputs left out before it do not count).
	 */
	while (!atomic_load(&st->stop) && merge_count(sh.m) == 0) {
		if (cancel != NULL && __atomic_load_n(cancel, __ATOMIC_RELAXED)) {
			merge_run_fail(st, 499, xstrdup("merge cancelled"));
			break;
		}
		i = atomic_fetch_add(&st->next, 1);
		if (i >= n)
			break;
		merge_run_one(st, &sh, i);
	}

	if (pool != NULL && !atomic_load(&st->stop) &&
	    atomic_load(&st->next) < n) {
		/* Helpers check their inputs against input 0's types. */
		st->ntypes = merge_ntypes(sh.m);
		st->types = xcalloc(st->ntypes + 1, sizeof *st->types);
		st->units = xcalloc(st->ntypes + 1, sizeof *st->units);
		for (i = 0; i < st->ntypes; i++) {
			const char *unit;

			st->types[i] = xstrdup(merge_type(sh.m, i, &unit));
			st->units[i] = xstrdup(unit);
		}
		nhelpers = (size_t)pool_workers(pool);
		if (nhelpers > 0)
			nhelpers--;
		if (nhelpers > n - 1)
			nhelpers = n - 1;
		if (nhelpers > 64)
			nhelpers = 64;
		pthread_mutex_lock(&st->lock);
		st->refs += (int)nhelpers;
		pthread_mutex_unlock(&st->lock);
		for (i = 0; i < nhelpers; i++) {
			job = xcalloc(1, sizeof *job);
			job->job.work = merge_run_job_work;
			job->job.done = merge_run_job_done;
			job->st = st;
			pool_submit_force(pool, &job->job);
		}
	}
	merge_run_share_loop(st, &sh);

	/* Close the run and wait for the helpers that joined it. */
	pthread_mutex_lock(&st->lock);
	st->closed = 1;
	while (st->active > 0)
		pthread_cond_wait(&st->cond, &st->lock);
	pthread_mutex_unlock(&st->lock);

	if (!atomic_load(&st->stop)) {
		for (i = 0; i < st->nresults; i++) {
			if (merge_combine(sh.m, st->results[i], &why) != 0) {
				merge_run_fail(st, merge_cancelled(sh.m) ? 499 :
				    merge_mismatch(sh.m) ? 422 : 500, why);
				why = NULL;
				break;
			}
		}
	}
	if (!atomic_load(&st->stop) && merge_count(sh.m) == 0) {
		if (st->skips.damaged > 0)
			merge_run_fail(st, 500, xasprintf("no profile could be "
			    "read (%zu damaged; first: %s)", st->skips.damaged,
			    st->skips.first));
		else
			merge_run_fail(st, 404, xasprintf("all %zu profiles "
			    "were deleted during the merge", n));
	}
	if (skips != NULL) {
		*skips = st->skips;
		st->skips.first = NULL;
	}
	if (atomic_load(&st->stop)) {
		*http_code = st->code ? st->code : 500;
		xcause(cause, "%s", st->cause ? st->cause : "merge failed");
		goto out;
	}
	log_debug("%s: %zu profiles, %zu helpers, %zu samples, %zu "
	    "locations", __func__, n, nhelpers, merge_samples(sh.m),
	    merge_locations(sh.m));
	if (merge_result_gzip(sh.m, out, outlen, &why) != 0) {
		*http_code = 500;
		xcause(cause, "%s", why);
		free(why);
		goto out;
	}
	*http_code = 200;
	rc = 0;
out:
	merge_run_share_done(&sh, 1);
	merge_run_unref(st);
	return rc;
}
