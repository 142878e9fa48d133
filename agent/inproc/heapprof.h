/*
 * Go-shaped heap profiles (in use, and allocations per window) from the
 * heap sampler's tables (see heapprof.c).
 */
#ifndef PROFD_AGENT_HEAPPROF_H
#define PROFD_AGENT_HEAPPROF_H

#include <stddef.h>
#include <stdint.h>

#include "agent/core/build.h"

struct heapprof;

struct heapprof	*heapprof_new(void);
void		 heapprof_free(struct heapprof *);
/* Opens a window: its allocs profile counts from now. */
void		 heapprof_mark(struct heapprof *);
/*
 * Builds the heap profile (*heap) and the allocs profile of the window
 * since the last mark (*allocs), gzipped; either is NULL when it has no
 * sample. w: the window's time and duration. remark: the counts read
 * become the next window's mark (contiguous windows lose nothing between
 * them). Returns 0, or -1 with *cause set.
 */
int		 heapprof_build(struct heapprof *, struct build *,
		    const struct build_window *w, int remark, uint8_t **heap,
		    size_t *heaplen, uint8_t **allocs, size_t *allocslen,
		    char **cause);

#endif
