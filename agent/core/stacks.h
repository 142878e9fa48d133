/*
 * Stack aggregation for one window: identical stacks are counted once.
 */
#ifndef PROFD_AGENT_STACKS_H
#define PROFD_AGENT_STACKS_H

#include <stddef.h>
#include <stdint.h>

struct stacks_entry {
	size_t		off;		/* into stacks.pcs */
	uint32_t	n;
	uint64_t	hash;
	int64_t		count;
};

struct stacks {
	struct stacks_entry	*v;
	size_t			 n, cap;
	uintptr_t		*pcs;
	size_t			 npcs, pcs_cap;
	uint32_t		*index;		/* entry + 1, 0 empty */
	size_t			 index_size;	/* power of two */
	int64_t			 total;		/* samples added */
};

/* Counts one stack of n pcs. */
void	stacks_add(struct stacks *, const uintptr_t *pcs, uint32_t n,
	    int64_t count);
/* Forgets all stacks, keeping the memory. */
void	stacks_reset(struct stacks *);
void	stacks_free(struct stacks *);

#endif
