/*
 * The host agent's user stack walk, after the fact: from the registers
 * and the copy of the stack's top that came with a sample, by the same
 * CFI tables and step (agent/core/unwstep.c) the in-process agent uses,
 * frame pointers where an object has no row. A walk reads only the copy:
 * one that needs a word beyond it ends there and is counted truncated.
 */
#ifndef PROFD_AGENT_HUNWIND_H
#define PROFD_AGENT_HUNWIND_H

#include <stdint.h>

#include "agent/host/hobjs.h"
#include "agent/host/hperf.h"
#include "agent/host/hprocs.h"

/* How a walk ended. */
enum hunwind_end {
	HUNWIND_OUTERMOST,	/* the CFI says the outermost frame */
	HUNWIND_TRUNCATED,	/* needed a word beyond the copied stack */
	HUNWIND_UNMAPPED,	/* a pc in no known executable mapping */
	HUNWIND_FAILED,		/* no rule and no frame pointer, a loop */
	HUNWIND_MAX_DEPTH,	/* max frames taken */
	HUNWIND_NENDS
};

/*
 * Walks the user stack of s in process p into pcs (pcs[0] the sampled
 * pc, then return addresses; at most max). Returns the count and sets
 * *end.
 */
uint32_t	hunwind_walk(struct hobjs *, const struct hproc *p,
		    uint64_t own_mntns, const struct hperf_sample *s,
		    uint64_t *pcs, uint32_t max, enum hunwind_end *end);
/* The object of a mapping of p (see hobjs_get). */
struct hobj	*hunwind_obj(struct hobjs *, const struct hproc *p,
		    const struct hprocs_map *m, uint64_t own_mntns);

#endif
