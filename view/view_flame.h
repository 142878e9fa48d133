/*
 * The flame graph of a call tree as JSON (see view_flame.c).
 */
#ifndef PROFD_VIEW_FLAME_H
#define PROFD_VIEW_FLAME_H

#include <jansson.h>
#include <stddef.h>

#include "view/view_tree.h"

/*
 * {"name":"total","value":N,"self":0,"children":[...]}, at most max_nodes
 * nodes besides the root and the "other" ones; with diff, every node also
 * has base_value and base_self.
 */
json_t	*view_flame_json(const struct view_tree *, size_t max_nodes, int diff);

#endif
