/*
 * Memory budgets (see budget.h). The budget is one atomic counter of the
 * bytes its accounts hold: a reservation adds to it with a compare and
 * swap that never lets it pass the limit, so the bytes counted never pass
 * the limit however many threads reserve at once. An account adds its own
 * counter beside it, which tells a request that could never fit (the task
 * alone would pass the limit: BUDGET_OVER) from one that only has to wait
 * for other tasks to give memory back (BUDGET_BUSY).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/budget.h"
#include "common/xmalloc.h"

struct budget {
	size_t		 limit;		/* 0: none */
	atomic_size_t	 used;
	atomic_size_t	 peak;
};

/* Creates a budget of limit bytes (0: counting only). */
struct budget *
budget_new(size_t limit)
{
	struct budget *b = xcalloc(1, sizeof *b);

	b->limit = limit;
	atomic_init(&b->used, 0);
	atomic_init(&b->peak, 0);
	return b;
}

/* Frees a budget; its accounts must be done. */
void
budget_free(struct budget *b)
{
	free(b);
}

/* The limit in bytes (0: none). */
size_t
budget_limit(const struct budget *b)
{
	return b->limit;
}

/* Bytes reserved now. */
size_t
budget_used(const struct budget *b)
{
	return atomic_load(&((struct budget *)b)->used);
}

/* The most bytes ever reserved at once. */
size_t
budget_peak(const struct budget *b)
{
	return atomic_load(&((struct budget *)b)->peak);
}

/* Raises *peak to v if v is more. */
static void
budget_raise(atomic_size_t *peak, size_t v)
{
	size_t old = atomic_load(peak);

	while (old < v && !atomic_compare_exchange_weak(peak, &old, v))
		;
}

/* Starts an account on b. */
void
budget_acct_init(struct budget_acct *a, struct budget *b)
{
	memset(a, 0, sizeof *a);
	a->budget = b;
	atomic_init(&a->held, 0);
	atomic_init(&a->peak, 0);
	atomic_init(&a->fail, BUDGET_OK);
	atomic_init(&a->fail_want, 0);
}

/* Ends an account: whatever it still holds goes back to the budget. */
void
budget_acct_done(struct budget_acct *a)
{
	size_t held = atomic_exchange(&a->held, 0);

	if (a->budget != NULL && held > 0)
		atomic_fetch_sub(&a->budget->used, held);
}

/* The account's latest failure; *want (may be NULL) gets its request. */
enum budget_fail
budget_acct_fail(const struct budget_acct *a, size_t *want)
{
	struct budget_acct *w = (struct budget_acct *)a;

	if (want != NULL)
		*want = atomic_load(&w->fail_want);
	return (enum budget_fail)atomic_load(&w->fail);
}

/* Records the account's latest failure. */
static void
budget_failed(struct budget_acct *a, enum budget_fail why, size_t want)
{
	atomic_store(&a->fail_want, want);
	atomic_store(&a->fail, (int)why);
}

/* Reserves n bytes, never letting the budget pass its limit. */
int
budget_reserve(struct budget_acct *a, size_t n)
{
	struct budget *b;
	size_t used, own;

	if (a == NULL)
		return 0;
	if ((b = a->budget) != NULL && b->limit > 0) {
		used = atomic_load(&b->used);
		do {
			if (n > b->limit || used > b->limit - n) {
				own = atomic_load(&a->held);
				budget_failed(a, n > b->limit ||
				    own > b->limit - n ? BUDGET_OVER :
				    BUDGET_BUSY, n);
				return -1;
			}
		} while (!atomic_compare_exchange_weak(&b->used, &used,
		    used + n));
		budget_raise(&b->peak, used + n);
	} else if (b != NULL)
		budget_raise(&b->peak, atomic_fetch_add(&b->used, n) + n);
	budget_raise(&a->peak, atomic_fetch_add(&a->held, n) + n);
	return 0;
}

/* Gives back n bytes. */
void
budget_release(struct budget_acct *a, size_t n)
{
	if (a == NULL || n == 0)
		return;
	atomic_fetch_sub(&a->held, n);
	if (a->budget != NULL)
		atomic_fetch_sub(&a->budget->used, n);
}

/* malloc charged to the account. */
void *
budget_alloc(struct budget_acct *a, size_t n)
{
	void *p;

	if (n == 0)
		n = 1;
	if (budget_reserve(a, n) != 0)
		return NULL;
	if ((p = malloc(n)) == NULL) {
		budget_release(a, n);
		if (a != NULL)
			budget_failed(a, BUDGET_NOMEM, n);
	}
	return p;
}

/* calloc charged to the account. */
void *
budget_calloc(struct budget_acct *a, size_t nmemb, size_t size)
{
	void *p;

	if (size != 0 && nmemb > SIZE_MAX / size) {
		if (a != NULL)
			budget_failed(a, BUDGET_OVER, SIZE_MAX);
		return NULL;
	}
	if ((p = budget_alloc(a, nmemb * size)) != NULL)
		memset(p, 0, nmemb * size);
	return p;
}

/* realloc charged to the account: the new size first, the old one after. */
void *
budget_realloc(struct budget_acct *a, void *p, size_t old, size_t n)
{
	void *np;

	if (n == 0)
		n = 1;
	if (p == NULL)
		old = 0;
	if (p != NULL && n <= old) {
		/* A shrink needs no room and never fails: if realloc
		 * refuses, the block simply stays as large as it was. */
		if ((np = realloc(p, n)) == NULL)
			np = p;
		budget_release(a, old - n);
		return np;
	}
	if (budget_reserve(a, n) != 0)
		return NULL;
	if ((np = realloc(p, n)) == NULL) {
		budget_release(a, n);
		if (a != NULL)
			budget_failed(a, BUDGET_NOMEM, n);
		return NULL;
	}
	budget_release(a, old);
	return np;
}

/* Grows an array by doubling to hold need elements. */
int
budget_grow(struct budget_acct *a, void *arrp, size_t *cap, size_t need,
    size_t elsize)
{
	void **arr = arrp, *np;
	size_t ncap;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 16;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			goto overflow;
		ncap *= 2;
	}
	if (elsize != 0 && ncap > SIZE_MAX / elsize)
		goto overflow;
	np = budget_realloc(a, *arr, *cap * elsize, ncap * elsize);
	if (np == NULL)
		return -1;
	*arr = np;
	*cap = ncap;
	return 0;
overflow:
	if (a != NULL)
		budget_failed(a, BUDGET_OVER, SIZE_MAX);
	return -1;
}

/* free charged to the account. */
void
budget_dealloc(struct budget_acct *a, void *p, size_t n)
{
	if (p == NULL)
		return;
	free(p);
	budget_release(a, n == 0 ? 1 : n);
}
