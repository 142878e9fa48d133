/*
 * One step of a stack walk, shared by the in-process agent's signal
 * handler (agent/inproc/unwind.c, reading its own stack) and the host
 * agent (agent/host/hunwind.c, reading a copy of another process's
 * stack): by a call-frame information row (cfi.h) or by the frame
 * pointer. Memory is read only through the caller's function, which
 * decides what is readable.
 */
#ifndef PROFD_AGENT_UNWSTEP_H
#define PROFD_AGENT_UNWSTEP_H

#include <stdint.h>

#include "agent/core/cfi.h"

#define UNWSTEP_STACK_SPAN	(64UL << 20)	/* deepest CFA above sp */

/* Registers of one frame during a walk. */
struct unwstep_frame {
	uintptr_t	pc, sp, fp;
	int		fp_ok;		/* fp still holds the caller's value */
};

/* Reads the word at addr into *out: 0, or -1 if it is not readable. */
typedef int (*unwstep_read_fn)(void *ctx, uintptr_t addr, uintptr_t *out);

/*
 * One step by a CFI row (x86-64 rules): the caller's sp (the CFA),
 * return address *ra and rbp into *f. Returns 1 done, 0 the outermost
 * frame, -1 failed (a rule not modelled, an unreadable word).
 */
int	unwstep_cfi(unwstep_read_fn, void *ctx, const struct cfi_row *,
	    struct unwstep_frame *f, uintptr_t *ra);
/*
 * One frame-pointer step: [fp] is the caller's fp, [fp + word] the return
 * address; the record must be aligned, at or above sp and within
 * UNWSTEP_STACK_SPAN. Returns 1 done, -1 failed.
 */
int	unwstep_fp(unwstep_read_fn, void *ctx, struct unwstep_frame *f,
	    uintptr_t *ra);

#endif
