/*
 * Offline stack walking (see hunwind.h). Frame 0 looks its row up at the
 * exact pc, callers at pc - 1 (inside the call). The copy starts at the
 * sampled sp; a word is readable when it lies wholly inside the bytes
 * the kernel copied (dyn_size: the stack may end before the size
 * asked). The stack pointer must grow frame by frame, stay within
 * UNWSTEP_STACK_SPAN of the sampled one, and every return address must
 * fall in a known executable mapping.
 */
#include <string.h>

#include "agent/core/cfi.h"
#include "agent/core/unwstep.h"
#include "agent/host/hobjs.h"
#include "agent/host/hunwind.h"

/* The copied stack. */
struct hunwind_mem {
	uint64_t	 base;		/* address of data[0] */
	const uint8_t	*data;
	uint64_t	 size;
	int		 beyond;	/* a read fell outside */
};

/* Reads an aligned word of the copy. */
static int
hunwind_read(void *ctx, uintptr_t addr, uintptr_t *out)
{
	struct hunwind_mem *m = ctx;

	if ((addr & 7) != 0 || addr < m->base || m->size < 8 ||
	    addr - m->base > m->size - 8) {
		m->beyond = 1;
		return -1;
	}
	memcpy(out, m->data + (addr - m->base), sizeof *out);
	return 0;
}

/* The object of a mapping (see hunwind.h). */
struct hobj *
hunwind_obj(struct hobjs *objs, const struct hproc *p,
    const struct hprocs_map *m, uint64_t own_mntns)
{
	return hobjs_get(objs, m->key, p->pid, m->path,
	    p->mntns == 0 || p->mntns == own_mntns);
}

/* The CFI row for pc (look: the address looked up) in mapping m. */
static const struct cfi_row *
hunwind_row(struct hobjs *objs, const struct hproc *p,
    const struct hprocs_map *m, uint64_t look, uint64_t own_mntns)
{
	const struct cfi_table *t;
	uint64_t vaddr;

	if (m->anon)
		return NULL;	/* JIT code: frame pointers */
	if ((t = hobjs_cfi(objs, hunwind_obj(objs, p, m, own_mntns))) == NULL ||
	    cfi_offset_to_vaddr(t, look - m->start + m->pgoff, &vaddr) != 0)
		return NULL;
	return cfi_find(t, vaddr);
}

/* Walks one sample's user stack (see hunwind.h). */
uint32_t
hunwind_walk(struct hobjs *objs, const struct hproc *p, uint64_t own_mntns,
    const struct hperf_sample *s, uint64_t *pcs, uint32_t max,
    enum hunwind_end *end)
{
	struct unwstep_frame f = { s->uip, s->sp, s->bp, 1 };
	struct hunwind_mem mem = { s->sp, s->stack, s->stack_size, 0 };
	const struct hprocs_map *m;
	const struct cfi_row *row;
	uintptr_t ra = 0, prev;
	uint32_t n = 0;
	int rc;

	*end = HUNWIND_MAX_DEPTH;
	if (max == 0 || !s->user_regs)
		return 0;
	pcs[n++] = f.pc;
	while (n < max) {
		if ((m = hprocs_find(p, n == 1 ? f.pc : f.pc - 1)) == NULL) {
			*end = HUNWIND_UNMAPPED;
			return n;
		}
		row = hunwind_row(objs, p, m, n == 1 ? f.pc : f.pc - 1,
		    own_mntns);
		prev = f.sp;
		rc = -1;
		if (row != NULL && row->cfa != CFI_CFA_UNKNOWN &&
		    row->cfa != CFI_CFA_NONE) {
			rc = unwstep_cfi(hunwind_read, &mem, row, &f, &ra);
			if (rc == 0 || (rc < 0 && mem.beyond)) {
				*end = rc == 0 ? HUNWIND_OUTERMOST :
				    HUNWIND_TRUNCATED;
				return n;
			}
			mem.beyond = 0;	/* a lost rbp is not the end */
		}
		if (rc < 0) {
			/* No rule, or one that failed: a frame-pointer step. */
			if (unwstep_fp(hunwind_read, &mem, &f, &ra) != 1) {
				*end = mem.beyond ? HUNWIND_TRUNCATED :
				    HUNWIND_FAILED;
				return n;
			}
		}
		if (f.sp <= prev || f.sp - s->sp > UNWSTEP_STACK_SPAN ||
		    ra < 4096) {
			*end = ra == 0 ? HUNWIND_OUTERMOST : HUNWIND_FAILED;
			return n;
		}
		if (hprocs_find(p, ra - 1) == NULL) {
			*end = HUNWIND_UNMAPPED;
			return n;
		}
		pcs[n++] = ra;
		f.pc = ra;
	}
	return n;
}
