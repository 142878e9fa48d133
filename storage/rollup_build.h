/*
 * Building one compaction, whatever backend holds the rows: the groups
 * of a bucket (every profile's, and each label pair's, by sample types),
 * their pieces and the labels their profiles share. The backend feeds
 * what its tables hold through a rollup_build_src (the profiles of a
 * minute, the done buckets and rows of a level); rollup_build_collect
 * walks a bucket down to minutes; rollup_build_finish turns the groups
 * into the store_compaction the collector merges. docs/DESIGN.md,
 * "Rollups", has the rules this keeps.
 */
#ifndef PROFD_ROLLUP_BUILD_H
#define PROFD_ROLLUP_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "storage/store.h"

struct rollup_build;

/* What a backend reads for a compaction, all in one snapshot. */
struct rollup_build_src {
	void	*arg;
	/* Feeds every profile of [b0, b1) s with rollup_build_profile. */
	int	(*raw)(void *arg, struct rollup_build *b, int64_t b0,
		    int64_t b1, char **cause);
	/* The done buckets of level in [b0, b1) s: a new sorted array. */
	int	(*done)(void *arg, int level, int64_t b0, int64_t b1,
		    int64_t **out, size_t *n, char **cause);
	/* Feeds every row of level in [b0, b1) s with rollup_build_row. */
	int	(*rows)(void *arg, struct rollup_build *b, int level,
		    int64_t b0, int64_t b1, char **cause);
};

struct rollup_build	*rollup_build_new(void);
void	rollup_build_free(struct rollup_build *);
/* Collects what the rollups of bucket [b0, b1) s of level merge. */
int	rollup_build_collect(struct rollup_build *,
	    const struct rollup_build_src *src, int level, int64_t b0,
	    int64_t b1, char **cause);
/*
 * A profile of a minute: rolled -1 (fresh: the commit marks it, by pk)
 * or 1 (in its buckets' rollups already); others are left out. labels:
 * its label ids (sorted here).
 */
void	rollup_build_profile(struct rollup_build *, int64_t pk, int rolled,
	    const char *id, const char *sample_types, int64_t *labels,
	    size_t nlabels);
/*
 * A row of a part (bucket, a level below): its blob (rid) or the ids it
 * refers to (refs, separated by spaces). Rows of buckets not done are
 * left out.
 */
void	rollup_build_row(struct rollup_build *, int64_t bucket, int64_t rid,
	    const char *refs, int64_t label_id, const char *sample_types,
	    int64_t profiles, const char *common, int uniform);
/* The compaction of (service, type, level, bucket); frees the build. */
struct store_compaction	*rollup_build_finish(struct rollup_build *,
			    const char *service, const char *type, int level,
			    int64_t bucket);

#endif
