/*
 * Call trees of function names over one sample type of merged profiles:
 * what the flame graph, the top table and the diff are computed from.
 */
#ifndef PROFD_VIEW_TREE_H
#define PROFD_VIEW_TREE_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/pprof.h"

/* One call path: a frame under its caller (node 0 is the root). */
struct view_node {
	uint32_t	 name;		/* index into the tree's names */
	uint32_t	 parent;
	uint32_t	 child;		/* first child, or 0 */
	uint32_t	 next;		/* next sibling, or 0 */
	int64_t		 value;		/* this path's samples, callees included */
	int64_t		 self;		/* samples with this frame on top */
	int64_t		 base_value;	/* the same for the baseline (diff) */
	int64_t		 base_self;
};

struct view_tree {
	struct view_node	*nodes;
	size_t			 n, cap;
	char			**names;	/* interned function names */
	size_t			 nnames, names_cap;
	uint32_t		*name_slots;	/* hash of names: index + 1 */
	size_t			 name_slots_n;
	uint32_t		*child_slots;	/* hash of (parent, name): node */
	size_t			 child_slots_n;
	int64_t			 total, base_total;
	int			 profiles, base_profiles;
};

/*
 * Which frames count: focus keeps samples through a match, hide drops;
 * call_site keeps the samples whose stack, from the root, begins with
 * those function names (Pyroscope's stack trace selector).
 */
struct view_filter {
	const regex_t		*focus;		/* NULL: every sample */
	const regex_t		*hide;		/* NULL: every frame */
	const char *const	*call_site;	/* root first */
	size_t			 ncall_site;	/* 0: every sample */
};

void	view_tree_init(struct view_tree *);
void	view_tree_clear(struct view_tree *);
/*
 * The index of the sample type named name ("cpu", "alloc_space"); with
 * name NULL or "", the profile's default sample type, else the last one
 * (as pprof picks). -1 with *cause if there is no such type.
 */
int	view_tree_sample_index(const pprof_profile_t *, const char *name,
	    char **cause);
/*
 * Adds every sample of p's sample type idx to the tree (as the baseline
 * when base is set), filtered by f (may be NULL).
 */
void	view_tree_add(struct view_tree *, const pprof_profile_t *p, int idx,
	    const struct view_filter *f, int base);
/*
 * Drops from p (decoded with protobuf-c's default allocator) the samples
 * whose stack, from the root, does not begin with the function names
 * call_site[0..n), frames named as the tree names them.
 */
void	view_tree_keep_call_site(pprof_profile_t *p,
	    const char *const *call_site, size_t n);
/*
 * The least total a node needs to stay within max_nodes nodes, as
 * Pyroscope's trees compute it: the max_nodes-th largest total of the
 * tree's nodes (the root left out), or 0 when max_nodes is 0 or the tree
 * has no more nodes. diff: each node weighs the larger of its two sides
 * and the root counts as a node (Pyroscope's diff). Nodes of no value
 * (both sides in a diff) are no nodes. Uses max_nodes * 8 bytes while it
 * runs (no more than the tree's nodes).
 */
int64_t	view_tree_min_value(const struct view_tree *, size_t max_nodes,
	    int diff);
/* The bytes the tree holds (nodes, names, hash tables), about. */
size_t	view_tree_bytes(const struct view_tree *);
/* The name of node i. */
const char *view_tree_name(const struct view_tree *, uint32_t i);

#endif
