/*
 * The heap profiler's tables: sampled allocations by stack and size
 * (buckets, cumulative counts as Go's runtime keeps them), filled from
 * the allocation wrappers of libprofd-heap
 * (agent/inproc/heapwrap.c) through the profd_agent_heap_* calls, read by the
 * agent thread for each heap profile (agent/inproc/heapprof.c).
 */
#ifndef PROFD_AGENT_HEAP_H
#define PROFD_AGENT_HEAP_H

#include <stddef.h>
#include <stdint.h>

#define HEAP_DEFAULT_RATE	(512 * 1024)	/* mean bytes between samples */
#define HEAP_MAX_FRAMES		64
#define HEAP_MAX_BUCKETS	(1 << 18)	/* (stack, size) pairs */
#define HEAP_MAX_STACKS		(1 << 16)
#define HEAP_MAX_PCS		(1 << 22)	/* frames of all stacks */

/* One bucket as a snapshot holds it. */
struct heap_bucket {
	uint32_t	stack;		/* index into heap_snapshot.stacks */
	uint64_t	size;		/* block size in bytes */
	uint64_t	allocs;		/* sampled allocations so far */
	uint64_t	frees;		/* of them, freed */
};

/* A stack: n return addresses at off in heap_snapshot.pcs. */
struct heap_stack {
	uint32_t	off;
	uint32_t	n;
};

/* A copy of the tables (agent thread). */
struct heap_snapshot {
	struct heap_bucket	*buckets;
	size_t			 nbuckets;
	struct heap_stack	*stacks;
	size_t			 nstacks;
	uintptr_t		*pcs;
	size_t			 npcs;
	int64_t			 rate;
	uint64_t		 dropped;	/* samples not recorded: full */
};

/*
 * Registers the fork handlers that hold the tables' lock across fork:
 * before any handler that allocates in the child (child handlers run in
 * the order registered), i.e. first thing in the agent's own.
 */
void	heap_atfork_register(void);
/* The calling thread (the agent's) is never sampled. */
void	heap_exclude_thread(void);
/* Whether heap profiling runs in this process (libprofd-heap loaded). */
int	heap_enabled(void);
/* The mean bytes between samples. */
int64_t	heap_rate(void);
/* Copies the tables into *out (caller frees with heap_snapshot_free). */
void	heap_snapshot(struct heap_snapshot *out);
void	heap_snapshot_free(struct heap_snapshot *);
/* The agent runs: heap profiling may start, at rate bytes (0: default). */
void	heap_arm(int64_t rate);

/*
 * The interface libprofd-heap calls (exported: profd_agent_heap_*).
 * start: from its constructor; returns the mean sampling distance in
 * bytes, or 0 when the agent is off (then nothing is ever sampled).
 */
int64_t	profd_agent_heap_start(void);
/*
 * A sampled allocation of size bytes at ptr (NULL: only draw the next
 * distance): records it with its caller's stack, skipping the wrapper's
 * skip frames, and sets *key (if key is not NULL) to its bucket's key
 * for the block's free (0: not recorded). Returns the next sampling
 * distance in bytes.
 */
int64_t	profd_agent_heap_alloc(void *ptr, size_t size, unsigned skip,
	    uint64_t *key);
/* A sampled block of bucket key is freed (0: one not recorded). */
void	profd_agent_heap_free(uint64_t key);

#endif
