/*
 * The signal handler's stack walk: call-frame information where the
 * object has it (cfi.c tables, looked up in a published snapshot of the
 * process's executable mappings), frame pointers where it has not, and
 * every return address checked against the executable mappings.
 */
#ifndef PROFD_AGENT_UNWIND_H
#define PROFD_AGENT_UNWIND_H

#include <stddef.h>
#include <stdint.h>

/* The interrupted thread's registers. */
struct unwind_regs {
	uintptr_t	pc;
	uintptr_t	sp;
	uintptr_t	fp;		/* rbp on x86-64, x29 on arm64 */
};

/*
 * Walks the stack of regs into pcs (pcs[0] = pc, then return addresses;
 * at most max). Async-signal-safe: table look-ups and stack reads, each
 * stack page proven readable first. *link: in, the arm64 link register
 * (0 on x86-64); out, where a frameless leaf keeps its return address if
 * frame 0 had no call-frame information (the word at sp on x86-64), else
 * 0 (build_fix_leaf has nothing to repair then).
 */
uint32_t	unwind_walk(const struct unwind_regs *, uintptr_t *pcs,
		    uint32_t max, uintptr_t *link);

/*
 * Agent thread, once per drain tick: publishes a new snapshot of the
 * executable mappings when the handler met a pc in none of them or the
 * maps are old, loads the tables of mappings the handler needed, and
 * frees retired snapshots no handler can still be reading. Returns 1 when
 * it published a new snapshot (walks may soon want more tables: tick
 * again soon), else 0.
 */
int		unwind_refresh(void);

/*
 * unwind_walk for the heap profiler, in the allocating thread (not a
 * signal handler): when the walk meets a mapping whose table is not
 * loaded, or a pc in no known mapping, the tables and maps are brought up
 * to date (as the agent thread's refresh does, under the same lock) and
 * the walk is taken again, so a stack, taken once, is whole. The parsing
 * budget applies (unwind_set_budget).
 */
uint32_t	unwind_walk_now(const struct unwind_regs *, uintptr_t *pcs,
		    uint32_t max);

/*
 * Registers fork handlers that hold the refresh lock across fork (a heap
 * sample may refresh in any thread): before any handler that allocates
 * in the child.
 */
void		unwind_atfork_register(void);

struct unwind_stats {
	uint64_t	snapshots;	/* published so far */
	uint64_t	retired;	/* waiting to be freed */
	uint64_t	tables;		/* objects with a table loaded */
	uint64_t	rows;		/* rows in those tables */
	uint64_t	table_bytes;	/* memory of those tables */
	uint64_t	misses;		/* pcs met in no known mapping */
	uint64_t	spent_ns;	/* CPU time spent parsing tables */
	uint64_t	deferred;	/* loads put off: over the budget */
};

/* Counters (agent thread or tests). */
void		unwind_get_stats(struct unwind_stats *);
/*
 * Sets the table parsing budget: free_ns plus pct percent of the
 * process's CPU time (default 1 ms + 2%; tests).
 */
void		unwind_set_budget(uint64_t free_ns, unsigned pct);

#endif
