/*
 * Internals shared by merge.c (which folds inputs into a struct merge) and
 * merge_result.c (which builds the merged profile from it): the struct
 * itself and the layout of its keys. Not for use outside merge/.
 *
 * Keys other than strings are arrays of uint32_t (a 64-bit field takes
 * two, copied with memcpy); the ids in them are global, i.e. indices in
 * the merge's own keysets:
 *
 *   strs      the string's bytes
 *   funcs     name, system name, file name (string ids)
 *   maps      memory start, memory limit, file offset (2 each), file name,
 *             build id (string ids)
 *   locs      symbolized: 1, then per line, innermost first, function
 *             index + 1 (0 none), line (2), column (2);
 *             unsymbolized: 0, mapping build id or else file name (string
 *             id, 0 without a mapping), address (2), made relative to the
 *             mapping's file when there is one
 *   samples   number of locations n, number of labels, n location
 *             indices, then per label (sorted) key, str (string ids), num
 *             (2), num unit (string id)
 */
#ifndef PROFD_MERGE_INT_H
#define PROFD_MERGE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "common/xmalloc.h"
#include "merge/merge_keys.h"

struct arena;
struct budget_acct;

/* A label while a sample key is being built. */
struct merge_label {
	uint32_t	 key;
	uint32_t	 str;
	int64_t		 num;
	uint32_t	 unit;
};

/* Everything one merge holds (see merge.h and merge.c). */
struct merge {
	struct budget_acct *acct;	/* charged for all the below */
	size_t		 ninputs;
	int		 mismatch;	/* last failure: sample types differ */
	int		 cancelled;	/* last failure: *cancel was set */
	int		 nomem;		/* last failure: acct refused memory */
	const volatile int *cancel;	/* merge_set_cancel, or NULL */
	size_t		 cancel_work;	/* work since cancel was last read */

	struct merge_keyset strs;
	struct merge_keyset funcs;
	int64_t		*func_start;	/* start_line per function */
	struct merge_keyset maps;
	uint8_t		*map_flags;	/* has_functions.. bits per mapping */
	/* The inputs' first mappings (build id, else file name: a string
	 * id) and how many inputs had each first (a combined share's
	 * counts added): the result's first mapping, which pprof names the
	 * profile by, is the most common. */
#define MERGE_MAIN_VOTES 16
	uint32_t	 main_ident[MERGE_MAIN_VOTES];
	size_t		 main_votes[MERGE_MAIN_VOTES];
	size_t		 nmain;
	struct merge_keyset locs;
	struct merge_loc {
		uint64_t address;
		uint32_t mapping;	/* mapping index + 1, 0 none */
		uint32_t folded;
	}		*loc_info;
	struct merge_keyset samples;
	int64_t		*values;	/* ntypes per sample */
	size_t		 info_cap[4];	/* capacities of the arrays above */

	/* Header of the result. */
	size_t		 ntypes;
	int		 types_fixed;	/* set by merge_expect_types */
	uint32_t	*type_type;
	uint32_t	*type_unit;
	size_t		 type_cap, type_unit_cap;
	int		 have_period_type;
	uint32_t	 period_type;
	uint32_t	 period_unit;
	int64_t		 period;
	int64_t		 time_nanos;
	int64_t		 duration_nanos;
	uint32_t	 default_sample_type;
	uint32_t	 drop_frames;
	uint32_t	 keep_frames;
	uint32_t	 doc_url;
	uint32_t	*comments;
	size_t		 ncomments;
	size_t		 comments_cap;

	/* Per-input scratch, reused from one input to the next. */
	uint32_t	*str_map;
	size_t		 str_map_cap;
	uint32_t	*fn_map, *map_map, *map_key, *loc_map;
	size_t		 fn_cap, map_cap, map_key_cap, loc_cap;
	uint32_t	*in_types;	/* the input's types and units */
	size_t		 in_types_cap;
	uint8_t		*type_used;
	size_t		 type_used_cap;
	struct merge_idmap fn_ids, map_ids, loc_ids;
	uint64_t	*id_scratch;
	size_t		 id_scratch_cap;
	uint32_t	*key;
	size_t		 key_cap;
	struct merge_label *labels;
	size_t		 labels_cap;
	size_t		*perm;
	size_t		 perm_cap;

	/* merge_result's output, rebuilt on each call (tests and tools). */
	struct arena	*out;
};

/* Records that the account refused memory and sets *cause. Returns -1. */
static inline int
merge_nomem(struct merge *m, char **cause)
{
	m->nomem = 1;
	return xcause(cause, "merge ran out of memory");
}

#endif
