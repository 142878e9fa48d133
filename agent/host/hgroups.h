/*
 * One period's samples of the host agent, grouped by service: per group
 * the mappings (one per process and mapping that a sample touched), the
 * locations (one per mapping and address), the functions (name and
 * file) and the distinct stacks with their counts, each stack keyed by
 * the process id and executable it was taken in. Memory is bounded: at
 * most max_groups groups a period (later services share one group named
 * "other"); in each at most HGROUPS_MAX_LOCS locations and
 * HGROUPS_MAX_STACKS distinct stacks, and in all the period's groups at
 * most HGROUPS_MAX_LOCS_ALL locations and HGROUPS_MAX_WORDS_ALL words of
 * distinct stacks (32 MiB); a sample that would pass a bound is counted
 * (dropped) and left out whole. hpprof.c turns a group into a profile.
 */
#ifndef PROFD_AGENT_HGROUPS_H
#define PROFD_AGENT_HGROUPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/core/stacks.h"

#define HGROUPS_MAX_LOCS	(256 * 1024)
#define HGROUPS_MAX_STACKS	(128 * 1024)
#define HGROUPS_MAX_LOCS_ALL	(512 * 1024)
#define HGROUPS_MAX_WORDS_ALL	(4 * 1024 * 1024)
#define HGROUPS_OTHER		"other"

/* (a, b) -> index, open addressing. */
struct hgroups_index {
	uint64_t	*keys;		/* 2 per slot */
	uint32_t	*vals;		/* index + 1, 0 empty */
	size_t		 size, n;
};

struct hgroups_map {
	pid_t		 pid;
	uint64_t	 start, limit, pgoff;
	uint32_t	 path, build_id;	/* strings */
	int		 is_exe;
	int		 named;		/* frames by name, not address
					   ("[python]"): addresses are keys */
};

struct hgroups_loc {
	uint32_t	 map;
	uint64_t	 addr;
	int64_t		 func;		/* -1: no name */
	int64_t		 line;		/* 0: none */
};

struct hgroups_func {
	uint32_t	 name, file;		/* strings */
};

struct hgroups;

struct hgroup {
	struct hgroup		*next;
	struct hgroups		*gs;		/* the period's */
	char			*service;
	char			*unit;		/* or NULL */
	char			*container;	/* or NULL */
	uint32_t		 exe;		/* string; first seen */
	int			 multi_exe;	/* more than one exe */
	char			**strs;		/* [0] = "" */
	size_t			 nstrs, strs_cap;
	struct hgroups_index	 str_index;	/* (hash, 0) chains: see .c */
	struct hgroups_map	*maps;
	size_t			 nmaps, maps_cap;
	struct hgroups_index	 map_index;	/* (pid, start) */
	struct hgroups_loc	*locs;
	size_t			 nlocs, locs_cap;
	struct hgroups_index	 loc_index;	/* (map, addr) */
	struct hgroups_func	*funcs;
	size_t			 nfuncs, funcs_cap;
	struct hgroups_index	 func_index;	/* (name, file) */
	struct stacks		 stacks;	/* [pid, exe, loc...] */
	int64_t			 samples;
	int64_t			 dropped;	/* over a table's bound */
};

struct hgroups {
	struct hgroup	*head;
	size_t		 n, max;	/* max: --max-groups */
	size_t		 locs, words;	/* in all groups this period */
};

/*
 * The group of a service (and unit, container: may be NULL) in this
 * period, made on first use; past max groups, the "other" group.
 */
struct hgroup	*hgroups_get(struct hgroups *, const char *service,
		    const char *unit, const char *container);
/* Interns a string in g. */
uint32_t	 hgroups_str(struct hgroup *, const char *);
/* The mapping of (pid, start), made from *m (strings interned) if new. */
uint32_t	 hgroups_map(struct hgroup *, const struct hgroups_map *m);
/* The mapping of (pid, start), or UINT32_MAX. */
uint32_t	 hgroups_map_find(struct hgroup *, pid_t pid, uint64_t start);
/* The location of (map, addr), or -1. */
int64_t		 hgroups_loc_find(struct hgroup *, uint32_t map,
		    uint64_t addr);
/*
 * Adds the location of (map, addr), named name in file (NULL: no name);
 * -1 when the group, or the period, holds its most locations already.
 */
int64_t		 hgroups_loc_add(struct hgroup *, uint32_t map,
		    uint64_t addr, const char *name, const char *file);
/* hgroups_loc_add with a line number (a named mapping's frames). */
int64_t		 hgroups_loc_add_line(struct hgroup *, uint32_t map,
		    uint64_t addr, const char *name, const char *file,
		    int64_t line);
/* Counts one stack of n locations (leaf first) taken in pid, exe. */
void		 hgroups_sample(struct hgroup *, pid_t pid, const char *exe,
		    const uint32_t *locs, uint32_t n);
/* Frees every group (the period is over). */
void		 hgroups_reset(struct hgroups *);

#endif
