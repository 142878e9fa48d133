/*
 * One sample of the host agent, from the ring to its group: the process
 * it was taken in (hprocs.c), the filters and the libprofd-agent rule,
 * the user stack walked (hunwind.c), every frame given its mapping and,
 * once per location a period, its function's name (symbols of the
 * object, C++ names demangled as perf shows them; kernel frames from
 * kallsyms), then counted in its service's group (hgroups.c).
 */
#ifndef PROFD_AGENT_HSAMPLE_H
#define PROFD_AGENT_HSAMPLE_H

#include <stdint.h>
#include <sys/types.h>

#include "agent/host/hgroups.h"
#include "agent/host/hkernel.h"
#include "agent/host/hobjs.h"
#include "agent/host/hperf.h"
#include "agent/host/hprocs.h"
#include "agent/host/hunwind.h"

struct hsample_stats {
	uint64_t	taken;		/* counted in a group */
	uint64_t	idle;		/* the idle task */
	uint64_t	unknown;	/* a process gone before it was read */
	uint64_t	filtered;	/* --pid, --exe */
	uint64_t	agent;		/* in a process running libprofd-agent */
	uint64_t	kernel_only;	/* no user stack (kernel threads) */
	uint64_t	ends[HUNWIND_NENDS];	/* how user walks ended */
	uint64_t	frames;		/* user frames taken */
	uint64_t	spent_ns;	/* CPU time handling samples */
};

struct hjit;
struct hpython;

struct hsample {
	struct hprocs		*procs;
	struct hobjs		*objs;
	struct hkernel		*kernel;
	struct hgroups		*groups;
	uint64_t		 own_mntns;
	pid_t			 only_pid;	/* 0: all */
	const char		*only_exe;	/* NULL: all */
	int			 include_agent;	/* profile agent processes */
	struct hpython		*python;	/* NULL: native frames only */
	struct hjit		*jit;		/* JIT code's names, or NULL */
	struct hsample_stats	 stats;
};

/* A sample just copied out of its ring: reads its Python frames now. */
void	hsample_early(struct hsample *, pid_t pid, pid_t tid, uint64_t time);
/* Takes one sample into its group. */
void	hsample_take(struct hsample *, const struct hperf_sample *);

#endif
