/*
 * Pyroscope's serialized call tree (SelectMergeStacktraces' format TREE,
 * the bytes its own queriers exchange, read by its UnmarshalTree): nodes
 * in preorder, each its name's length (uvarint), the name, its self value
 * (uvarint) and its number of children (uvarint), under a nameless
 * virtual root of self 0; children past the node budget folded into
 * "other", as Pyroscope's MarshalTruncate does (see view_ptree.c). Nodes
 * of total 0 are left out, and a tree without any is no bytes at all.
 */
#ifndef PROFD_VIEW_PTREE_H
#define PROFD_VIEW_PTREE_H

#include <stddef.h>
#include <stdint.h>

#include "view/view_tree.h"

/* The tree's bytes (0 max_nodes: every node): *out malloc'd, *len. */
void	view_ptree_encode(const struct view_tree *t, size_t max_nodes,
	    uint8_t **out, size_t *len);
/*
 * At least what view_ptree_encode(t, ...) allocates (its answer and its
 * scratch), known before encoding: for charging first.
 */
size_t	view_ptree_bytes_max(const struct view_tree *t);

#endif
