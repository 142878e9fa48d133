/*
 * The parallel merge driver.
 *
 * A merge request runs as one job on a pool worker (the caller). It claims
 * inputs one at a time from an atomic counter, and queues helper jobs that
 * claim from the same counter. Each participant (caller or helper) fetches
 * and inflates its inputs one at a time and folds each into its own struct
 * merge straight from the inflated bytes (merge_add_raw checks them as an
 * upload is checked and reads them in place), so memory is one inflated
 * input plus one result-sized merge per participant, however many inputs
 * and samples there are. Every byte of it (the stored and inflated input,
 * the reader's tables, the merges, the result) is charged to one budget
 * account for the run, drawn from the budget the caller passes (shared
 * by all merges of the daemon). When the budget refuses a participant
 * while others of the run are still at work, it gives up rather than fail
 * the run, since the merge might fit without parallel shares: it drops its
 * merge and hands every input it had folded in, and the one it was on,
 * back; once alone, the caller merges them itself, one at a time. Only a
 * refusal to a participant working alone stops the run, with 413 (this
 * merge alone needs more than the budget) or 503 (others hold it).
 * When the counter runs out the
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

#include "common/budget.h"
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
	struct budget_acct	 acct;		/* the run's memory */
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
	size_t			*retry;		/* inputs helpers gave back */
	size_t			 nretry;	/* (under lock) */
};

/* What one participant owns while it works. */
struct merge_run_share {
	struct merge		*m;		/* NULL once it gave up */
	int			 helper;
	size_t			*done;		/* the inputs in m */
	size_t			 ndone;
};

/* What merge_run_one says when a participant gave up for memory. */
#define MERGE_RUN_GAVE_UP	1

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
	free(st->results);	/* merge_run freed the merges in it */
	free(st->cause);
	free(st->skips.first);
	for (i = 0; i < st->ntypes; i++) {
		free(st->types[i]);
		free(st->units[i]);
	}
	free(st->types);
	free(st->units);
	free(st->retry);
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

/*
 * Stops the run because its account refused memory: 413 if this merge
 * alone would pass the budget, else 503 (retry once others are done).
 */
static void
merge_run_fail_memory(struct merge_run_state *st)
{
	size_t want;
	enum budget_fail why = budget_acct_fail(&st->acct, &want);
	size_t limit = st->acct.budget != NULL ?
	    budget_limit(st->acct.budget) : 0;

	switch (why) {
	case BUDGET_OVER:
		merge_run_fail(st, 413, xasprintf("needs more than the memory "
		    "budget of %zu bytes", limit));
		break;
	case BUDGET_BUSY:
		merge_run_fail(st, 503, xstrdup("other merges hold the "
		    "memory budget"));
		break;
	default:
		merge_run_fail(st, 503, xasprintf("out of memory (%zu bytes "
		    "refused)", want));
		break;
	}
}

/*
 * True if a participant the budget refused (on input i) should give up
 * rather than fail the run: it is a helper (the caller works on), or the
 * caller while helpers still work. Then its merge goes, and i and the
 * inputs in it go back for the caller to merge alone at the end.
 */
static int
merge_run_give_up(struct merge_run_state *st, struct merge_run_share *sh,
    size_t i)
{
	int others;

	pthread_mutex_lock(&st->lock);
	others = st->active > 0;
	pthread_mutex_unlock(&st->lock);
	if (!sh->helper && !others)
		return 0;
	log_debug("%s: a %s gives %zu inputs back for want of memory",
	    __func__, sh->helper ? "helper" : "caller", sh->ndone + 1);
	merge_free(sh->m);
	sh->m = NULL;
	pthread_mutex_lock(&st->lock);
	st->retry = xreallocarray(st->retry, st->nretry + sh->ndone + 1,
	    sizeof *st->retry);
	if (sh->ndone > 0)
		memcpy(st->retry + st->nretry, sh->done,
		    sh->ndone * sizeof *sh->done);
	st->nretry += sh->ndone;
	st->retry[st->nretry++] = i;
	pthread_mutex_unlock(&st->lock);
	sh->ndone = 0;
	return 1;
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
 * Fetches, inflates and merges input i into the share. An input that is
 * gone or damaged is left out; a sample type mismatch (422), a cancel
 * (499) or the budget (413, 503) fails the run, except that a participant
 * the budget refuses while others work gives up (MERGE_RUN_GAVE_UP).
 */
static int
merge_run_one(struct merge_run_state *st, struct merge_run_share *sh,
    size_t i)
{
	uint8_t *buf = NULL, *raw = NULL;
	size_t len = 0, rawlen = 0;
	char *why = NULL;
	int rc = 0, held = 0, code;

	switch (st->fetch(st->arg, i, &buf, &len, &why)) {
	case 0:
		break;
	case 1:
		pthread_mutex_lock(&st->lock);
		st->skips.deleted++;
		pthread_mutex_unlock(&st->lock);
		goto out;
	case MERGE_FETCH_UNAVAILABLE:
		merge_run_fail(st, 503, xasprintf("profile %zu: %s", i,
		    why ? why : "store unavailable"));
		rc = -1;
		goto out;
	default:
		merge_run_skip(st, i, xasprintf("profile %zu: %s", i,
		    why ? why : "unreadable"));
		goto out;
	}
	/* The stored bytes were read already: charge them now. */
	if (budget_reserve(&st->acct, len) != 0)
		goto memory;
	held = 1;
	if (len > 0 && len <= st->max_inflated && !pprof_is_gzip(buf, len)) {
		/* Stored raw: read it where it is, charged as it was. */
		raw = buf;
		rawlen = len;
		buf = NULL;
		held = 0;
		goto merge;
	}
	code = pprof_inflate_acct(buf, len, st->max_inflated, &st->acct, &raw,
	    &rawlen, &why);
	budget_release(&st->acct, len);
	held = 0;
	free(buf);
	buf = NULL;
	if (code == PPROF_ENOMEM)
		goto memory;
	if (code != 0) {
		merge_run_skip(st, i, xasprintf("stored profile %zu no longer "
		    "decodes: %s", i, why ? why : "invalid"));
		goto out;
	}
merge:
	if (merge_add_raw(sh->m, raw, rawlen, &why) != 0) {
		if (merge_cancelled(sh->m)) {
			merge_run_fail(st, 499, xstrdup("merge cancelled"));
			rc = -1;
		} else if (merge_mismatch(sh->m)) {
			merge_run_fail(st, 422, xstrdup(why));
			rc = -1;
		} else if (merge_out_of_memory(sh->m))
			goto memory;
		else
			merge_run_skip(st, i, xasprintf("stored profile %zu no "
			    "longer decodes: %s", i, why));
	} else {
		sh->done = xreallocarray(sh->done, sh->ndone + 1,
		    sizeof *sh->done);
		sh->done[sh->ndone++] = i;
	}
	goto out;
memory:
	if (merge_run_give_up(st, sh, i))
		rc = MERGE_RUN_GAVE_UP;
	else {
		merge_run_fail_memory(st);
		rc = -1;
	}
out:
	if (raw != NULL)
		budget_dealloc(&st->acct, raw, rawlen);
	if (held)
		budget_release(&st->acct, len);
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
merge_run_share_init(struct merge_run_state *st, struct merge_run_share *sh,
    int helper)
{
	memset(sh, 0, sizeof *sh);
	sh->m = merge_new(&st->acct);
	sh->helper = helper;
	merge_set_cancel(sh->m, st->cancel);
}

/* Frees a participant's merge unless keep_merge. */
static void
merge_run_share_done(struct merge_run_share *sh, int keep_merge)
{
	free(sh->done);
	sh->done = NULL;
	if (!keep_merge) {
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

	merge_run_share_init(st, &sh, 1);
	if (merge_expect_types(sh.m, st->ntypes,
	    (const char *const *)st->types, (const char *const *)st->units,
	    NULL) != 0) {
		/* Not even that much memory: leave the work to the caller. */
		merge_free(sh.m);
		sh.m = NULL;
	} else
		merge_run_share_loop(st, &sh);
	failed = atomic_load(&st->stop);
	merge_run_share_done(&sh, !failed && sh.m != NULL &&
	    merge_count(sh.m) > 0);

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

/* A new merge for the caller, which gave its own up. */
static void
merge_run_restart(struct merge_run_state *st, struct merge_run_share *sh)
{
	sh->m = merge_new(&st->acct);
	merge_set_cancel(sh->m, st->cancel);
	if (merge_expect_types(sh->m, st->ntypes,
	    (const char *const *)st->types, (const char *const *)st->units,
	    NULL) != 0)
		merge_run_fail_memory(st);
}

/* Frees the helpers' merges (all have left: the run is closed). */
static void
merge_run_free_results(struct merge_run_state *st)
{
	size_t i;

	pthread_mutex_lock(&st->lock);
	for (i = 0; i < st->nresults; i++)
		merge_free(st->results[i]);
	st->nresults = 0;
	pthread_mutex_unlock(&st->lock);
}

/* Folds the helpers' merges into the caller's, freeing each once in. */
static void
merge_run_join(struct merge_run_state *st, struct merge_run_share *sh)
{
	char *why = NULL;
	size_t i;

	for (i = 0; i < st->nresults && !atomic_load(&st->stop); i++) {
		if (merge_combine(sh->m, st->results[i], &why) != 0) {
			if (merge_out_of_memory(sh->m)) {
				merge_run_fail_memory(st);
				free(why);
			} else
				merge_run_fail(st, merge_cancelled(sh->m) ?
				    499 : merge_mismatch(sh->m) ? 422 : 500,
				    why);
			why = NULL;
			break;
		}
		merge_free(st->results[i]);
		st->results[i] = NULL;
	}
}

/* Queues the helper jobs; they check their inputs against input 0's types. */
static size_t
merge_run_helpers(struct pool *pool, struct merge_run_state *st,
    struct merge_run_share *sh)
{
	struct merge_run_job *job;
	size_t i, nhelpers, n = st->n;

	st->ntypes = merge_ntypes(sh->m);
	st->types = xcalloc(st->ntypes + 1, sizeof *st->types);
	st->units = xcalloc(st->ntypes + 1, sizeof *st->units);
	for (i = 0; i < st->ntypes; i++) {
		const char *unit;

		st->types[i] = xstrdup(merge_type(sh->m, i, &unit));
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
	return nhelpers;
}

/* merge_run and merge_run_raw: the result gzipped, or not. */
static int
merge_run_do(struct pool *pool, struct budget *budget, size_t n,
    merge_fetch_cb fetch, void *arg, size_t max_inflated,
    const volatile int *cancel, int gzip, uint8_t **out, size_t *outlen,
    struct merge_run_skips *skips, int *http_code, char **cause)
{
	struct merge_run_state *st;
	struct merge_run_share sh;
	size_t i, nhelpers = 0, left;
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
	budget_acct_init(&st->acct, budget);
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

	merge_run_share_init(st, &sh, 0);
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
	    atomic_load(&st->next) < n)
		nhelpers = merge_run_helpers(pool, st, &sh);
	merge_run_share_loop(st, &sh);

	/* Close the run and wait for the helpers that joined it. */
	pthread_mutex_lock(&st->lock);
	st->closed = 1;
	while (st->active > 0)
		pthread_cond_wait(&st->cond, &st->lock);
	pthread_mutex_unlock(&st->lock);

	if (sh.m == NULL && !atomic_load(&st->stop))
		merge_run_restart(st, &sh);
	merge_run_join(st, &sh);
	merge_run_free_results(st);
	/* What was given back, alone now (no lock needed). */
	for (i = 0; i < st->nretry && !atomic_load(&st->stop); i++) {
		if (cancel != NULL && __atomic_load_n(cancel, __ATOMIC_RELAXED))
			merge_run_fail(st, 499, xstrdup("merge cancelled"));
		else
			merge_run_one(st, &sh, st->retry[i]);
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
	    "locations, %zu bytes of memory at most", __func__, n, nhelpers,
	    merge_samples(sh.m), merge_locations(sh.m),
	    atomic_load(&st->acct.peak));
	if ((gzip ? merge_result_gzip(sh.m, out, outlen, &why) :
	    merge_result_raw(sh.m, out, outlen, &why)) != 0) {
		if (merge_out_of_memory(sh.m)) {
			merge_run_fail_memory(st);
			*http_code = st->code;
			xcause(cause, "%s", st->cause);
		} else {
			*http_code = 500;
			xcause(cause, "%s", why);
		}
		free(why);
		goto out;
	}
	*http_code = 200;
	rc = 0;
out:
	merge_run_share_done(&sh, 0);
	/* What is left charged is the result, which the caller now owns. */
	left = atomic_load(&st->acct.held);
	if (left != (*out != NULL ? (*outlen ? *outlen : 1) : 0))
		log_warn("%s: %zu bytes still charged after the merge",
		    __func__, left);
	budget_acct_done(&st->acct);
	merge_run_unref(st);
	return rc;
}

/* See merge_run.h. */
int
merge_run(struct pool *pool, struct budget *budget, size_t n,
    merge_fetch_cb fetch, void *arg, size_t max_inflated,
    const volatile int *cancel, uint8_t **out, size_t *outlen,
    struct merge_run_skips *skips, int *http_code, char **cause)
{
	return merge_run_do(pool, budget, n, fetch, arg, max_inflated, cancel,
	    1, out, outlen, skips, http_code, cause);
}

/* See merge_run.h. */
int
merge_run_raw(struct pool *pool, struct budget *budget, size_t n,
    merge_fetch_cb fetch, void *arg, size_t max_inflated,
    const volatile int *cancel, uint8_t **out, size_t *outlen,
    struct merge_run_skips *skips, int *http_code, char **cause)
{
	return merge_run_do(pool, budget, n, fetch, arg, max_inflated, cancel,
	    0, out, outlen, skips, http_code, cause);
}
