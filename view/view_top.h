/*
 * The top table of a call tree: flat and cum per function name, as
 * `go tool pprof -top` gives them (see view_top.c).
 */
#ifndef PROFD_VIEW_TOP_H
#define PROFD_VIEW_TOP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "view/view_tree.h"

struct view_top_row {
	uint32_t	 name;		/* index into the tree's names */
	int64_t		 flat;
	int64_t		 cum;
};

/* Every function's row, flat descending then by name; *n rows. */
struct view_top_row	*view_top_rows(const struct view_tree *, size_t *n);
/* [{"name":..,"flat":..,"cum":..}, ...], the first limit rows. */
json_t			*view_top_json(const struct view_tree *, size_t limit);

#endif
