/*
 * Unit tests of common/budget.c: reservations never pass the limit, even
 * from many threads at once; a refusal says whether the task alone would
 * pass the limit (BUDGET_OVER) or others hold the rest (BUDGET_BUSY); the
 * allocation helpers charge and give back exactly, and fail instead of
 * aborting.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/budget.h"
#include "test/lib/tap.h"

#define THREADS	8
#define ROUNDS	20000

/* Reservations and their refusals on one budget. */
static void
test_reserve(void)
{
	struct budget *b = budget_new(1000);
	struct budget_acct x, y;
	size_t want;

	budget_acct_init(&x, b);
	budget_acct_init(&y, b);
	ok(budget_reserve(&x, 600) == 0, "600 of 1000 reserved");
	ok(budget_reserve(&y, 500) == -1 &&
	    budget_acct_fail(&y, &want) == BUDGET_BUSY && want == 500,
	    "500 more is refused as busy: it fits the limit alone");
	ok(budget_reserve(&x, 500) == -1 &&
	    budget_acct_fail(&x, NULL) == BUDGET_OVER,
	    "the holder of 600 asking 500 more is over: 1100 > 1000");
	ok(budget_reserve(&y, 1001) == -1 &&
	    budget_acct_fail(&y, NULL) == BUDGET_OVER,
	    "more than the limit at once is over");
	ok(budget_reserve(&y, 400) == 0 && budget_used(b) == 1000,
	    "exactly the limit fits");
	budget_release(&x, 600);
	ok(budget_used(b) == 400 && budget_peak(b) == 1000,
	    "release gives back; the peak stays");
	budget_acct_done(&y);
	ok(budget_used(b) == 0, "ending an account gives back what it holds");
	budget_acct_done(&x);
	ok(budget_reserve(NULL, SIZE_MAX) == 0, "no account: no accounting");
	budget_free(b);

	b = budget_new(0);
	budget_acct_init(&x, b);
	ok(budget_reserve(&x, (size_t)1 << 40) == 0 &&
	    budget_used(b) == (size_t)1 << 40, "limit 0 counts, never refuses");
	budget_acct_done(&x);
	budget_free(b);
}

/* The allocation helpers. */
static void
test_alloc(void)
{
	struct budget *b = budget_new(1 << 20);
	struct budget_acct a;
	uint32_t *arr = NULL;
	size_t cap = 0;
	char *p, *q;

	budget_acct_init(&a, b);
	p = budget_alloc(&a, 1000);
	ok(p != NULL && budget_used(b) == 1000, "alloc charges its size");
	q = budget_realloc(&a, p, 1000, 5000);
	ok(q != NULL && budget_used(b) == 5000, "realloc charges the new size");
	q = budget_realloc(&a, q, 5000, 10);
	ok(q != NULL && budget_used(b) == 10, "a shrink gives back");
	ok(budget_realloc(&a, q, 10, 2 << 20) == NULL && budget_used(b) == 10,
	    "a refused realloc leaves the block and its charge");
	budget_dealloc(&a, q, 10);
	ok(budget_grow(&a, &arr, &cap, 100, sizeof *arr) == 0 && cap == 128 &&
	    budget_used(b) == 128 * sizeof *arr, "grow doubles from 16");
	ok(budget_grow(&a, &arr, &cap, SIZE_MAX / 2, sizeof *arr) == -1 &&
	    cap == 128 && budget_acct_fail(&a, NULL) == BUDGET_OVER,
	    "grow refuses an overflowing size and keeps the array");
	budget_dealloc(&a, arr, cap * sizeof *arr);
	ok(budget_calloc(&a, SIZE_MAX / 4, 8) == NULL,
	    "calloc refuses an overflowing size");
	ok(budget_used(b) == 0 && atomic_load(&a.peak) == 6000,
	    "everything given back; the peak was 6000 (realloc holds both)");
	budget_acct_done(&a);
	budget_free(b);
}

struct worker {
	struct budget	*b;
	unsigned	 seed;
	size_t		 refused;
};

/* Reserves and releases random sizes, keeping a few at a time. */
static void *
worker_run(void *arg)
{
	struct worker *w = arg;
	struct budget_acct a;
	size_t held[4] = { 0, 0, 0, 0 }, i, k, n;

	budget_acct_init(&a, w->b);
	for (i = 0; i < ROUNDS; i++) {
		k = i % 4;
		budget_release(&a, held[k]);
		held[k] = 0;
		n = (size_t)rand_r(&w->seed) % 10000;
		if (budget_reserve(&a, n) == 0)
			held[k] = n;
		else
			w->refused++;
	}
	budget_acct_done(&a);
	return NULL;
}

/* Many threads at once never take the budget past its limit. */
static void
test_threads(void)
{
	struct budget *b = budget_new(20000);
	struct worker w[THREADS];
	pthread_t th[THREADS];
	size_t i, refused = 0;

	for (i = 0; i < THREADS; i++) {
		w[i].b = b;
		w[i].seed = (unsigned)i + 1;
		w[i].refused = 0;
		pthread_create(&th[i], NULL, worker_run, &w[i]);
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		refused += w[i].refused;
	}
	ok(budget_peak(b) <= 20000 && refused > 0,
	    "%d threads: peak %zu of 20000, %zu refusals", THREADS,
	    budget_peak(b), refused);
	ok(budget_used(b) == 0, "all given back");
	budget_free(b);
}

int
main(void)
{
	test_reserve();
	test_alloc();
	test_threads();
	return tap_done();
}
