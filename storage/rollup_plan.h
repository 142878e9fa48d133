/*
 * Time-window merges over rollups, whatever backend holds them: the
 * pieces whose merge equals the merge of every profile a query selects
 * (store_plan). The backend resolves the query's labels and reads its
 * tables through a rollup_plan_src; rollup_plan_run decides which
 * buckets its rows answer and which profiles are read as themselves.
 * docs/DESIGN.md, "Rollups", has the design.
 */
#ifndef PROFD_ROLLUP_PLAN_H
#define PROFD_ROLLUP_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "storage/store.h"

struct rollup_plan;

/* What a backend reads for a plan, all in one snapshot. */
struct rollup_plan_src {
	void	*arg;
	/*
	 * Feeds the query's profiles of [a, z) ns with rollup_plan_profile:
	 * all of them, or (loose) only those no rollup holds (rolled <= 0).
	 */
	int	(*profiles)(void *arg, struct rollup_plan *p, int64_t a,
		    int64_t z, int loose, char **cause);
	/* The done buckets of level in [b0, b1) s: a new sorted array. */
	int	(*done)(void *arg, int level, int64_t b0, int64_t b1,
		    int64_t **out, size_t *n, char **cause);
	/*
	 * Feeds the rows of group label_id (0: every profile's) of level in
	 * [b0, b1) s, by bucket, with rollup_plan_row.
	 */
	int	(*rows)(void *arg, struct rollup_plan *p, int64_t label_id,
		    int level, int64_t b0, int64_t b1, char **cause);
};

/*
 * The pieces of [from, to) ns for the query's label ids (every one must
 * match; none: every profile) into *out (cleared first).
 */
int	rollup_plan_run(const struct rollup_plan_src *src,
	    const int64_t *labels, size_t nlabels, int64_t from, int64_t to,
	    struct store_plan *out, char **cause);
/* A profile read by src->profiles (created_at in ns). */
void	rollup_plan_profile(struct rollup_plan *, const char *id,
	    const char *sample_types, int64_t created_at);
/* A row read by src->rows (refs: the ids it refers to, or NULL). */
void	rollup_plan_row(struct rollup_plan *, int64_t bucket, int64_t rid,
	    int64_t profiles, const char *sample_types, const char *refs,
	    const char *common, int uniform);

#endif
