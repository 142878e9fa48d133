/*
 * Memory budgets. A struct budget is a byte limit that threads share (the
 * merges of a daemon draw on one, so that their total memory is bounded
 * whatever their number). A struct budget_acct is one task's charges
 * against it: the task reserves bytes before it allocates them and gives
 * them back when it frees them, and a reservation that would pass the
 * limit fails instead of allocating. The allocation helpers below never
 * abort: they return NULL when the budget or malloc refuses, and the
 * account remembers why (see budget_acct_fail), so one task fails and the
 * process goes on. Everything is safe from any thread.
 */
#ifndef PROFD_BUDGET_H
#define PROFD_BUDGET_H

#include <stdatomic.h>
#include <stddef.h>

struct budget;

/* Why an account's latest failed reservation or allocation failed. */
enum budget_fail {
	BUDGET_OK = 0,
	BUDGET_OVER,	/* the task alone would need more than the limit */
	BUDGET_BUSY,	/* it fits the limit, but other tasks hold the rest */
	BUDGET_NOMEM	/* the budget allowed it and malloc refused */
};

/* One task's charges (may be shared by the task's threads). */
struct budget_acct {
	struct budget	*budget;	/* NULL: counts, never refuses */
	atomic_size_t	 held;		/* bytes reserved now */
	atomic_size_t	 peak;		/* most bytes reserved at once */
	atomic_int	 fail;		/* latest enum budget_fail */
	atomic_size_t	 fail_want;	/* the request that failed */
};

/* A budget of limit bytes (0: no limit, only counting). */
struct budget	*budget_new(size_t limit);
void		 budget_free(struct budget *);
size_t		 budget_limit(const struct budget *);
/* Bytes reserved now by every account, and the most ever at once. */
size_t		 budget_used(const struct budget *);
size_t		 budget_peak(const struct budget *);

/* Starts an account on b (NULL: unlimited). */
void		 budget_acct_init(struct budget_acct *, struct budget *b);
/* Ends an account, giving back anything still reserved. */
void		 budget_acct_done(struct budget_acct *);
/* The latest failure (BUDGET_OK if none) and the request that failed. */
enum budget_fail budget_acct_fail(const struct budget_acct *, size_t *want);

/*
 * Reserves n bytes for the account. Returns 0, or -1 (recording why) when
 * the budget cannot give them. a may be NULL: no accounting at all.
 */
int		 budget_reserve(struct budget_acct *a, size_t n);
/* Gives back n bytes reserved earlier. */
void		 budget_release(struct budget_acct *a, size_t n);

/* malloc(n) charged to a; NULL when refused (a records why). */
void		*budget_alloc(struct budget_acct *a, size_t n);
/* calloc(nmemb, size) charged to a; NULL on refusal or overflow. */
void		*budget_calloc(struct budget_acct *a, size_t nmemb, size_t size);
/*
 * Resizes p (of old bytes) to n bytes. To grow, the new size is reserved
 * before and the old one released after, since realloc may hold both at
 * once; on failure returns NULL and p is untouched (still charged old
 * bytes). A shrink never fails.
 */
void		*budget_realloc(struct budget_acct *a, void *p, size_t old,
		    size_t n);
/*
 * Grows *arr (elements of elsize, capacity *cap) to hold need elements,
 * doubling. Returns 0, or -1 with *arr and *cap untouched.
 */
int		 budget_grow(struct budget_acct *a, void *arrp, size_t *cap,
		    size_t need, size_t elsize);
/* Frees p (of n bytes) and gives its bytes back. */
void		 budget_dealloc(struct budget_acct *a, void *p, size_t n);

#endif
