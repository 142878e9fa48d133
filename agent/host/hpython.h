/*
 * Python's own frames in the host agent's samples. A sample carries the
 * registers and a copy of the user stack, not the interpreter's frames,
 * which live in heap chunks: as soon as the sample is copied out of its
 * ring (a millisecond or two after it was taken: hperf_ops.early), the
 * sampled thread's frame chain is read with process_vm_readv (pyrt.h)
 * and mixed in place of the evaluator's native frames. The chain and
 * the sampled stack are paired by evaluator activations from the root,
 * which lasts: activations begun since the sample are dropped, and the
 * evaluator frames of activations ended since stay native (counted as
 * partial). For 3.11 and 3.12 the stack copy also tells which frame was
 * running at the sample (pyrt_sampled_frame): the frames called since
 * are dropped. When that frame has returned, and in 3.13, which has no
 * such anchor, the frames are those of when the chain was read: a sample
 * that much later, which keeps the shares of time fair (dropping such
 * samples would not: short calls would lose more). All of it is counted,
 * with how late the chains were read. A process is looked at once
 * (again when its mappings change): its python executable or libpython,
 * read through /proc/PID/root, tells the version; a CPython the agent
 * does not know is said once per executable on stderr. At most
 * HPYTHON_MAX_PROCS processes, HPYTHON_MAX_CODES code objects and
 * HPYTHON_STASH early chains are held.
 */
#ifndef PROFD_AGENT_HPYTHON_H
#define PROFD_AGENT_HPYTHON_H

#include <stdint.h>
#include <sys/types.h>

#include "agent/core/pycode.h"
#include "agent/host/hperf.h"
#include "agent/host/hprocs.h"

#define HPYTHON_MAX_PROCS	4096
#define HPYTHON_MAX_CODES	16384
#define HPYTHON_CHECK_MS	100	/* code objects checked again */

struct hpython_stats {
	uint64_t	processes;	/* CPython processes found */
	uint64_t	mixed;		/* samples with Python frames */
	uint64_t	anchored;	/* of those, checked against the frame
					   running at the sample */
	uint64_t	partial;	/* of those, with evaluator frames
					   left native: their activations had
					   ended when the chain was read */
	uint64_t	native;		/* kept native: no chain */
	uint64_t	late_ns;	/* sum over mixed samples of how late
					   the chain was read */
	uint64_t	late_max_ns;
};

struct hpython;

struct hpython	*hpython_new(void);
void		 hpython_free(struct hpython *);
/*
 * The user pcs (n, leaf first) of sample s of p mixed with its Python
 * frames into out (at most max): PYRT_WORDs in place of evaluator
 * frames. Returns the count; out holds pcs unchanged when p runs no
 * known CPython or its thread has no frames.
 */
uint32_t	 hpython_mix(struct hpython *, const struct hproc *p,
		    const struct hperf_sample *s, const uint64_t *pcs,
		    uint32_t n, uint64_t *out, uint32_t max);
/*
 * Reads the frame chain of thread tid of p for its sample taken at time,
 * as the sample is copied out of its ring (hperf_ops.early): hpython_mix
 * then uses it, not a later read. At most HPYTHON_STASH are held.
 */
void		 hpython_early(struct hpython *, const struct hproc *p,
		    pid_t tid, uint64_t time);
/* Names the PYRT_WORD w of p (strings valid until the next call). */
int		 hpython_name(struct hpython *, const struct hproc *p,
		    uint64_t w, struct pycode_frame *out);
/* Forgets the processes procs no longer knows (once a period). */
void		 hpython_reap(struct hpython *, struct hprocs *procs);
/* Whether a CPython program was sampled in the last second. */
int		 hpython_active(const struct hpython *);
/*
 * A drain begins at now_ms: each code object is checked again on its
 * next use (pycode_tick) if HPYTHON_CHECK_MS passed since the last.
 */
void		 hpython_tick(struct hpython *, int64_t now_ms);
void		 hpython_stats(const struct hpython *, struct hpython_stats *);

#endif
