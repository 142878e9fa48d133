/*
 * A stack walk's single step (see unwstep.h). The CFI rules are the
 * x86-64 ones cfi.c flattens: CFA from rsp or rbp plus an offset (or
 * loaded from rbp + offset for a realigned stack, or the PLT's
 * pc-dependent form), the return address at CFA - 8, the caller's rbp
 * unchanged, saved relative to the CFA or to rbp, or lost. Async-signal-
 * safe: no allocation, no locks, memory only through the reader.
 */
#include <stdint.h>

#include "agent/core/cfi.h"
#include "agent/core/unwstep.h"

/* One step by the CFI row (see unwstep.h). */
int
unwstep_cfi(unwstep_read_fn rd, void *ctx, const struct cfi_row *row,
    struct unwstep_frame *f, uintptr_t *ra)
{
	uintptr_t cfa, v;

	switch (row->cfa) {
	case CFI_CFA_END:
		return 0;
	case CFI_CFA_RSP:
		cfa = f->sp + (uintptr_t)(intptr_t)row->cfa_off;
		break;
	case CFI_CFA_RBP:
		if (!f->fp_ok)
			return -1;
		cfa = f->fp + (uintptr_t)(intptr_t)row->cfa_off;
		break;
	case CFI_CFA_DEREF_RBP:
		if (!f->fp_ok || rd(ctx, f->fp +
		    (uintptr_t)(intptr_t)row->cfa_off, &cfa) != 0)
			return -1;
		break;
	case CFI_CFA_PLT:
		cfa = f->sp + (uintptr_t)(intptr_t)row->cfa_off +
		    ((f->pc & 15) >= (uintptr_t)row->rbp_off ? 8 : 0);
		break;
	default:
		return -1;
	}
	if (rd(ctx, cfa - sizeof(uintptr_t), ra) != 0)
		return -1;
	switch (row->rbp) {
	case CFI_RBP_SAME:
		break;
	case CFI_RBP_CFA:
		if (rd(ctx, cfa + (uintptr_t)(intptr_t)row->rbp_off, &v) != 0)
			return -1;
		f->fp = v;
		f->fp_ok = 1;
		break;
	case CFI_RBP_AT_RBP:
		if (f->fp_ok && rd(ctx, f->fp +
		    (uintptr_t)(intptr_t)row->rbp_off, &v) == 0)
			f->fp = v;
		else
			f->fp_ok = 0;
		break;
	default:
		f->fp_ok = 0;
	}
	f->sp = cfa;
	return 1;
}

/* One frame-pointer step (see unwstep.h). */
int
unwstep_fp(unwstep_read_fn rd, void *ctx, struct unwstep_frame *f,
    uintptr_t *ra)
{
	uintptr_t fp = f->fp, next;

	if (!f->fp_ok || fp == 0 || (fp & (sizeof(uintptr_t) - 1)) != 0 ||
	    fp < f->sp || fp - f->sp > UNWSTEP_STACK_SPAN ||
	    fp > UINTPTR_MAX - 2 * sizeof(uintptr_t))
		return -1;
	if (rd(ctx, fp, &next) != 0 || rd(ctx, fp + sizeof(uintptr_t), ra) != 0)
		return -1;
	f->sp = fp + 2 * sizeof(uintptr_t);
	f->fp = next;
	f->fp_ok = next > fp;
	return 1;
}
