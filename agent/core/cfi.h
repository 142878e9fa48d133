/*
 * Call-frame information of one ELF object (.eh_frame, or .debug_frame
 * when there is no .eh_frame; cfi_elf.h finds them), flattened outside
 * the signal handler into
 * a table sorted by pc that the handler can binary-search (unwind.c).
 * The rules are the x86-64 ones: CFA from rsp or rbp, where the caller's
 * rbp was saved, the return address at CFA - 8.
 */
#ifndef PROFD_AGENT_CFI_H
#define PROFD_AGENT_CFI_H

#include <stddef.h>
#include <stdint.h>

#include "agent/core/elffile.h"

/* How to find the CFA (struct cfi_row.cfa). */
#define CFI_CFA_UNKNOWN		0	/* a rule we do not model: no CFI */
#define CFI_CFA_RSP		1	/* CFA = rsp + cfa_off */
#define CFI_CFA_RBP		2	/* CFA = rbp + cfa_off */
#define CFI_CFA_DEREF_RBP	3	/* CFA = *(rbp + cfa_off) (realigned) */
#define CFI_CFA_PLT		4	/* CFA = rsp + cfa_off +
					   ((pc & 15) >= rbp_off ? 8 : 0) */
#define CFI_CFA_END		5	/* return address undefined: outermost */
#define CFI_CFA_NONE		6	/* no FDE covers this pc */

/* Where the caller's rbp is (struct cfi_row.rbp). */
#define CFI_RBP_SAME		0	/* unchanged */
#define CFI_RBP_CFA		1	/* saved at CFA + rbp_off */
#define CFI_RBP_AT_RBP		2	/* saved at rbp + rbp_off */
#define CFI_RBP_LOST		3	/* not recoverable */

/* One row: the rules from pc up to the next row's pc. 12 bytes. */
struct cfi_row {
	uint32_t	pc;		/* link address - cfi_table.base */
	int32_t		cfa_off;
	int16_t		rbp_off;	/* for CFI_CFA_PLT: the (pc & 15)
					   threshold */
	uint8_t		cfa;		/* CFI_CFA_* */
	uint8_t		rbp;		/* CFI_RBP_* */
};

struct cfi_table {
	uint64_t		 base;		/* link address of pc 0 */
	struct cfi_row		*rows;		/* sorted by pc */
	size_t			 n;
	struct elffile_load	*loads;		/* PT_LOAD segments */
	size_t			 nloads;
	size_t			 fdes;		/* FDEs used */
	size_t			 bad;		/* FDEs skipped (malformed,
						   overlapping) */
	int			 debug_frame;	/* rows came from .debug_frame */
	/*
	 * page[k]: the first row at or past pc k << CFI_PAGE_SHIFT, for
	 * k <= npages (page[npages] = n): a lookup searches one page's
	 * rows (a few cache lines) instead of the whole table.
	 */
	uint32_t		*page;
	size_t			 npages;
};

#define CFI_PAGE_SHIFT	9	/* 512 bytes of code: ~25 rows */
#define CFI_PAGES_PER_ROW 4	/* an index past 4 pages a row is not made */

void			 cfi_free(struct cfi_table *);

/*
 * Link address of file offset off (through PT_LOAD); 0 and *vaddr set, or
 * -1. A mapping at start with file offset off has load bias start - *vaddr.
 */
int			 cfi_offset_to_vaddr(const struct cfi_table *,
			    uint64_t off, uint64_t *vaddr);

/*
 * The row covering link address vaddr, or NULL (async-signal-safe: a
 * binary search, no writes).
 */
const struct cfi_row	*cfi_find(const struct cfi_table *, uint64_t vaddr);

/*
 * Parses one section into t (which has no rows yet): .eh_frame when
 * is_eh, else .debug_frame, whose first byte has link address vaddr.
 */
void			 cfi_parse(struct cfi_table *t, const uint8_t *sec,
			    size_t size, uint64_t vaddr, int is_eh);
/* A new table from one raw section (tests). */
struct cfi_table	*cfi_from_section(const uint8_t *sec, size_t size,
			    uint64_t vaddr, int is_eh);
/*
 * The link address of .eh_frame named by an .eh_frame_hdr at vaddr.
 * Returns 0 and sets *out, or -1.
 */
int			 cfi_hdr_eh_frame(const uint8_t *hdr, size_t size,
			    uint64_t vaddr, uint64_t *out);

#endif
