/*
 * Pyroscope's serialized call tree (SelectMergeStacktraces' format TREE,
 * the bytes its own queriers exchange): nodes in preorder, each its
 * name's length (uvarint), the name, its self value (uvarint) and its
 * number of children (uvarint), under a nameless virtual root; children
 * past the node budget folded into "other", as in view_levels.c.
 */
#ifndef PROFD_VIEW_PTREE_H
#define PROFD_VIEW_PTREE_H

#include <stddef.h>
#include <stdint.h>

#include "view/view_tree.h"

/* The tree's bytes (0 max_nodes: every node): *out malloc'd, *len. */
void	view_ptree_encode(const struct view_tree *t, size_t max_nodes,
	    uint8_t **out, size_t *len);

#endif
