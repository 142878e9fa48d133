/*
 * Names of JIT-compiled code for the host agent: the perf map a process
 * writes (/tmp/perf-PID.map, perfmap.h: node --perf-basic-prof, a JVM's
 * perf-map agent), read through /proc/PID/root with the pid the process
 * has in its own namespace (NSpid), so a container's map is found. A map
 * is read again (what it gained) when a lookup misses, at most every
 * HJIT_REFRESH_MS. At most HJIT_MAX_MAPS processes' maps are held, the
 * least recently used dropped first, and HJIT_MAX_BYTES of map files
 * read in all of them.
 */
#ifndef PROFD_AGENT_HJIT_H
#define PROFD_AGENT_HJIT_H

#include <stdint.h>

#include "agent/host/hprocs.h"

#define HJIT_MAX_MAPS		64
#define HJIT_MAX_BYTES		(64 * 1024 * 1024)
#define HJIT_REFRESH_MS		200

struct hjit;

struct hjit	*hjit_new(void);
void		 hjit_free(struct hjit *);
/* The name of the JIT code holding addr in p, or NULL (valid until the
 * next call). */
const char	*hjit_lookup(struct hjit *, const struct hproc *p,
		    uint64_t addr);
/* Forgets the maps of processes procs no longer knows. */
void		 hjit_reap(struct hjit *, struct hprocs *procs);

#endif
