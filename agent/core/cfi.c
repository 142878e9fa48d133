/*
 * DWARF call-frame information reader for the unwinder. Runs on the agent
 * thread only: given the bytes of .eh_frame or .debug_frame (cfi_elf.c
 * finds them in an ELF object), it walks the CIEs and FDEs, runs each
 * FDE's CFA program and keeps, per address
 * range, only what an x86-64 stack walk needs: how to find the CFA, where
 * the caller's rbp went, and whether the return address is defined. The
 * result is one array of 12-byte rows sorted by pc (cfi.h), which the
 * signal handler binary-searches without writing anything.
 *
 * The input is a file from disk: every read is bounded by its section
 * (struct cfi_rd), a malformed FDE or CIE is counted and skipped, and
 * rules we do not model (DW_CFA_def_cfa_expression other than the PLT's
 * and the stack-realignment one, a CFA in another register, a return
 * address moved elsewhere) become CFI_CFA_UNKNOWN rows, on which the walk
 * falls back to frame pointers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/core/cfi.h"
#include "agent/core/elffile.h"
#include "common/xmalloc.h"

/* x86-64 DWARF register numbers. */
#define CFI_REG_RBP		6
#define CFI_REG_RSP		7
#define CFI_REG_RIP		16

#define CFI_MAX_ROWS		(2UL << 20)	/* 24 MiB of rows per object */
#define CFI_STATE_DEPTH		8	/* DW_CFA_remember_state nesting */
#define CFI_PAD			16	/* smaller gaps are padding */

/* A bounded little-endian reader; ok drops to 0 on any overrun. */
struct cfi_rd {
	const uint8_t	*p, *end;
	int		 ok;
};

/* The register rules that matter while an FDE program runs. */
struct cfi_state {
	int		cfa;		/* CFI_CFA_* */
	uint64_t	cfa_reg;
	int64_t		cfa_off;
	int		cfa_aux;	/* PLT threshold */
	int		rbp;		/* CFI_RBP_* */
	int64_t		rbp_off;
	int		ra;		/* 0 at CFA-8, 1 undefined, 2 other */
};

/* A parsed CIE. */
struct cfi_cie {
	const uint8_t	*insns, *insns_end;
	uint64_t	 code_align;
	int64_t		 data_align;
	uint64_t	 ra_reg;
	int		 fde_enc;	/* DW_EH_PE_* for FDE addresses */
	int		 has_z;
	int		 addr_size;	/* .debug_frame v4 */
};

/* Rows and FDE ranges while a table is being built. */
struct cfi_brow {
	uint64_t	pc;
	int32_t		cfa_off;
	int16_t		rbp_off;
	uint8_t		cfa, rbp;
};
struct cfi_bfde {
	uint64_t	begin, end;
	size_t		first, n;
};
struct cfi_build {
	struct cfi_brow	*rows;
	size_t		 n, cap;
	struct cfi_bfde	*fdes;
	size_t		 nf, capf;
	size_t		 bad;
};

/* Section bytes with their link address (for pc-relative pointers). */
struct cfi_sec {
	const uint8_t	*p;
	size_t		 size;
	uint64_t	 vaddr;
};

/* Reads one byte. */
static uint64_t
cfi_u8(struct cfi_rd *r)
{
	if (!r->ok || r->p >= r->end) {
		r->ok = 0;
		return 0;
	}
	return *r->p++;
}

/* Reads n (1..8) little-endian bytes. */
static uint64_t
cfi_un(struct cfi_rd *r, size_t n)
{
	uint64_t v = 0;
	size_t i;

	if (!r->ok || (size_t)(r->end - r->p) < n) {
		r->ok = 0;
		return 0;
	}
	for (i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

/*
 * Reads a LEB128 (at most 10 bytes): its low 64 bits, the bits it held
 * (*shift) and its last byte (*last, whose 0x40 is a signed one's sign).
 */
static uint64_t
cfi_leb(struct cfi_rd *r, unsigned *shift, uint64_t *last)
{
	uint64_t v = 0, b;

	*shift = 0;
	do {
		b = cfi_u8(r);
		if (*shift < 64)
			v |= (b & 0x7f) << *shift;
		*shift += 7;
	} while (r->ok && (b & 0x80) && *shift < 70);
	if (b & 0x80)
		r->ok = 0;
	*last = b;
	return v;
}

/* Reads an unsigned LEB128. */
static uint64_t
cfi_uleb(struct cfi_rd *r)
{
	unsigned shift;
	uint64_t last;

	return cfi_leb(r, &shift, &last);
}

/* Reads a signed LEB128. */
static int64_t
cfi_sleb(struct cfi_rd *r)
{
	unsigned shift;
	uint64_t last, v = cfi_leb(r, &shift, &last);

	if (shift < 64 && (last & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

/*
 * Reads a pointer in DW_EH_PE encoding enc; sec gives the link address of
 * the bytes for pc-relative values. Indirect pointers (only used for the
 * personality, which is skipped) and text/func-relative bases fail.
 */
static uint64_t
cfi_ptr(struct cfi_rd *r, int enc, const struct cfi_sec *sec)
{
	uint64_t here = sec->vaddr + (uint64_t)(r->p - sec->p), v;

	if (enc == 0xff) {	/* DW_EH_PE_omit */
		r->ok = 0;
		return 0;
	}
	switch (enc & 0x0f) {
	case 0x00: v = cfi_un(r, 8); break;
	case 0x01: v = cfi_uleb(r); break;
	case 0x02: v = cfi_un(r, 2); break;
	case 0x03: v = cfi_un(r, 4); break;
	case 0x04: v = cfi_un(r, 8); break;
	case 0x09: v = (uint64_t)cfi_sleb(r); break;
	case 0x0a: v = (uint64_t)(int64_t)(int16_t)cfi_un(r, 2); break;
	case 0x0b: v = (uint64_t)(int64_t)(int32_t)cfi_un(r, 4); break;
	case 0x0c: v = cfi_un(r, 8); break;
	default:
		r->ok = 0;
		return 0;
	}
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: v += here; break;		/* pcrel */
	default:
		r->ok = 0;			/* textrel, datarel, ... */
		return 0;
	}
	if (enc & 0x80)				/* indirect */
		r->ok = 0;
	return v;
}

/* Skips a pointer of encoding enc without interpreting it. */
static void
cfi_skip_ptr(struct cfi_rd *r, int enc)
{
	switch (enc & 0x0f) {
	case 0x00: case 0x04: case 0x0c: cfi_un(r, 8); break;
	case 0x01: cfi_uleb(r); break;
	case 0x09: cfi_sleb(r); break;
	case 0x02: case 0x0a: cfi_un(r, 2); break;
	case 0x03: case 0x0b: cfi_un(r, 4); break;
	default: r->ok = 0;
	}
}

/*
 * Parses the CIE at [p, end) (after its length and id fields). Returns 0,
 * or -1 for a CIE we cannot use.
 */
static int
cfi_cie_parse(const uint8_t *p, const uint8_t *end, int is_eh,
    struct cfi_cie *cie)
{
	struct cfi_rd r = { p, end, 1 };
	const char *aug;
	const uint8_t *aug_end = NULL;
	uint64_t version, len;
	size_t i;
	int unknown = 0;

	(void)is_eh;
	memset(cie, 0, sizeof *cie);
	cie->fde_enc = 0;	/* absptr */
	cie->addr_size = 8;
	version = cfi_u8(&r);
	if (version != 1 && version != 3 && version != 4)
		return -1;
	aug = (const char *)r.p;
	while (r.ok && cfi_u8(&r) != 0)
		;
	if (!r.ok)
		return -1;
	if (version == 4) {
		cie->addr_size = (int)cfi_u8(&r);
		if (cfi_u8(&r) != 0 || (cie->addr_size != 8 &&
		    cie->addr_size != 4))
			return -1;	/* segmented addresses */
	}
	cie->code_align = cfi_uleb(&r);
	cie->data_align = cfi_sleb(&r);
	cie->ra_reg = version == 1 ? cfi_u8(&r) : cfi_uleb(&r);
	if (aug[0] != '\0' && aug[0] != 'z')
		return -1;	/* "eh" and other ancient forms */
	if (aug[0] == 'z') {
		cie->has_z = 1;
		len = cfi_uleb(&r);
		if (!r.ok || len > (uint64_t)(r.end - r.p))
			return -1;
		aug_end = r.p + len;
		for (i = 1; aug[i] != '\0' && r.ok; i++) {
			switch (aug[i]) {
			case 'R':
				cie->fde_enc = (int)cfi_u8(&r);
				break;
			case 'P': {
				int enc = (int)cfi_u8(&r);

				/* aligned: not on x86-64; skipped as is */
				cfi_skip_ptr(&r, enc);
				break;
			}
			case 'L':
				cfi_u8(&r);
				break;
			case 'S':
			case 'B':
				break;
			default:
				/* Unknown: the length lets us skip the rest. */
				r.p = aug_end;
				unknown = 1;
				break;
			}
			if (unknown)
				break;
		}
		if (!r.ok || r.p > aug_end)
			return -1;
		r.p = aug_end;
	}
	if (!r.ok || cie->code_align == 0)
		return -1;
	cie->insns = r.p;
	cie->insns_end = end;
	return 0;
}

/* Appends a row unless it repeats the last one of the same FDE. */
static int
cfi_emit(struct cfi_build *b, size_t first, uint64_t pc,
    const struct cfi_state *s)
{
	struct cfi_brow row, *last;

	memset(&row, 0, sizeof row);
	row.pc = pc;
	if (s->ra == 1)
		row.cfa = CFI_CFA_END;
	else if (s->ra != 0)
		row.cfa = CFI_CFA_UNKNOWN;
	else
		row.cfa = (uint8_t)s->cfa;
	if (row.cfa != CFI_CFA_UNKNOWN && row.cfa != CFI_CFA_END) {
		if (s->cfa_off < INT32_MIN || s->cfa_off > INT32_MAX)
			row.cfa = CFI_CFA_UNKNOWN;
		else
			row.cfa_off = (int32_t)s->cfa_off;
		if (row.cfa == CFI_CFA_PLT)
			row.rbp_off = (int16_t)s->cfa_aux;
		else if (s->rbp_off < INT16_MIN || s->rbp_off > INT16_MAX)
			row.rbp = CFI_RBP_LOST;
		else {
			row.rbp = (uint8_t)s->rbp;
			row.rbp_off = (int16_t)s->rbp_off;
		}
	}
	if (b->n > first) {
		last = &b->rows[b->n - 1];
		if (last->cfa == row.cfa && last->cfa_off == row.cfa_off &&
		    last->rbp == row.rbp && last->rbp_off == row.rbp_off)
			return 0;
		if (last->pc == pc) {	/* same address: the later rule wins */
			*last = row;
			return 0;
		}
	}
	if (b->n >= CFI_MAX_ROWS)
		return -1;
	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 1024;
		b->rows = xreallocarray(b->rows, b->cap, sizeof *b->rows);
	}
	b->rows[b->n++] = row;
	return 0;
}

/* Recognizes the two DW_CFA_def_cfa_expression forms we model. */
static void
cfi_cfa_expr(struct cfi_state *s, const uint8_t *e, size_t len)
{
	struct cfi_rd r = { e, e + len, 1 };
	int64_t off;

	s->cfa = CFI_CFA_UNKNOWN;
	if (len >= 2 && e[0] == 0x76) {		/* DW_OP_breg6 (rbp) */
		r.p++;
		off = cfi_sleb(&r);
		if (r.ok && r.p + 1 == r.end && *r.p == 0x06) {	/* deref */
			s->cfa = CFI_CFA_DEREF_RBP;
			s->cfa_off = off;
		}
		return;
	}
	/*
	 * The PLT: DW_OP_breg7 (rsp) 8; DW_OP_breg16 (rip) 0; DW_OP_lit15;
	 * DW_OP_and; DW_OP_litN; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus.
	 */
	if (len >= 2 && e[0] == 0x77) {
		r.p++;
		off = cfi_sleb(&r);
		if (!r.ok || r.end - r.p != 9 || r.p[0] != 0x80 ||
		    r.p[1] != 0x00 || r.p[2] != 0x3f || r.p[3] != 0x1a ||
		    r.p[4] < 0x30 || r.p[4] > 0x3f || r.p[5] != 0x2a ||
		    r.p[6] != 0x33 || r.p[7] != 0x24 || r.p[8] != 0x22)
			return;
		s->cfa = CFI_CFA_PLT;
		s->cfa_off = off;
		s->cfa_aux = r.p[4] - 0x30;
	}
}

/* DW_CFA_expression for rbp: "DW_OP_breg6 n" (saved at rbp + n) only. */
static void
cfi_rbp_expr(struct cfi_state *s, const uint8_t *e, size_t len)
{
	struct cfi_rd r = { e + 1, e + len, 1 };
	int64_t off;

	if (len < 2 || e[0] != 0x76)
		return;
	off = cfi_sleb(&r);
	if (r.ok && r.p == r.end) {
		s->rbp = CFI_RBP_AT_RBP;
		s->rbp_off = off;
	}
}

/* Sets the rule of register reg from a DW_CFA_* kind. */
static void
cfi_set_reg(struct cfi_state *s, const struct cfi_cie *cie, uint64_t reg,
    int what, int64_t off)
{
	/* what: 0 offset(off), 1 undefined, 2 same value, 3 other */
	if (reg == CFI_REG_RBP) {
		s->rbp = what == 0 ? CFI_RBP_CFA : what == 2 ? CFI_RBP_SAME :
		    CFI_RBP_LOST;
		s->rbp_off = off;
	} else if (reg == cie->ra_reg)
		s->ra = what == 0 && off == -8 ? 0 : what == 1 ? 1 : 2;
}

/* Updates the CFA rule after def_cfa, def_cfa_register, def_cfa_offset. */
static void
cfi_set_cfa(struct cfi_state *s)
{
	if (s->cfa_reg == CFI_REG_RSP)
		s->cfa = CFI_CFA_RSP;
	else if (s->cfa_reg == CFI_REG_RBP)
		s->cfa = CFI_CFA_RBP;
	else
		s->cfa = CFI_CFA_UNKNOWN;
}

/* Puts register reg's rule back to what the CIE set up. */
static void
cfi_restore(struct cfi_state *s, const struct cfi_state *init,
    const struct cfi_cie *cie, uint64_t reg)
{
	if (reg == CFI_REG_RBP) {
		s->rbp = init->rbp;
		s->rbp_off = init->rbp_off;
	} else if (reg == cie->ra_reg)
		s->ra = init->ra;
}

/*
 * One CFA instruction that changes a rule without advancing (everything
 * but advance_loc*, set_loc and remember/restore_state). init is the CIE's
 * state for DW_CFA_restore_extended, NULL inside the CIE. Returns 0, or
 * -1 for an unknown or malformed instruction.
 */
static int
cfi_rule(struct cfi_rd *r, int op, const struct cfi_cie *cie,
    struct cfi_state *s, const struct cfi_state *init)
{
	uint64_t reg, len;
	int64_t off;

	switch (op) {
	case 0x00:	/* DW_CFA_nop */
		return 0;
	case 0x05:	/* DW_CFA_offset_extended */
		reg = cfi_uleb(r);
		off = (int64_t)cfi_uleb(r) * cie->data_align;
		cfi_set_reg(s, cie, reg, 0, off);
		return 0;
	case 0x06:	/* DW_CFA_restore_extended */
		reg = cfi_uleb(r);
		if (init == NULL)
			return -1;
		cfi_restore(s, init, cie, reg);
		return 0;
	case 0x07:	/* DW_CFA_undefined */
		cfi_set_reg(s, cie, cfi_uleb(r), 1, 0);
		return 0;
	case 0x08:	/* DW_CFA_same_value */
		cfi_set_reg(s, cie, cfi_uleb(r), 2, 0);
		return 0;
	case 0x09:	/* DW_CFA_register */
		reg = cfi_uleb(r);
		cfi_uleb(r);
		cfi_set_reg(s, cie, reg, 3, 0);
		return 0;
	case 0x0c:	/* DW_CFA_def_cfa */
		s->cfa_reg = cfi_uleb(r);
		s->cfa_off = (int64_t)cfi_uleb(r);
		cfi_set_cfa(s);
		return 0;
	case 0x0d:	/* DW_CFA_def_cfa_register */
		s->cfa_reg = cfi_uleb(r);
		cfi_set_cfa(s);
		return 0;
	case 0x0e:	/* DW_CFA_def_cfa_offset */
		s->cfa_off = (int64_t)cfi_uleb(r);
		if (s->cfa == CFI_CFA_RSP || s->cfa == CFI_CFA_RBP)
			cfi_set_cfa(s);
		return 0;
	case 0x0f:	/* DW_CFA_def_cfa_expression */
		len = cfi_uleb(r);
		if (!r->ok || len > (uint64_t)(r->end - r->p))
			return -1;
		cfi_cfa_expr(s, r->p, (size_t)len);
		s->cfa_reg = ~(uint64_t)0;
		r->p += len;
		return 0;
	case 0x10:	/* DW_CFA_expression */
	case 0x16:	/* DW_CFA_val_expression */
		reg = cfi_uleb(r);
		len = cfi_uleb(r);
		if (!r->ok || len > (uint64_t)(r->end - r->p))
			return -1;
		cfi_set_reg(s, cie, reg, 3, 0);
		if (op == 0x10 && reg == CFI_REG_RBP)
			cfi_rbp_expr(s, r->p, (size_t)len);
		r->p += len;
		return 0;
	case 0x11:	/* DW_CFA_offset_extended_sf */
		reg = cfi_uleb(r);
		off = cfi_sleb(r) * cie->data_align;
		cfi_set_reg(s, cie, reg, 0, off);
		return 0;
	case 0x12:	/* DW_CFA_def_cfa_sf */
		s->cfa_reg = cfi_uleb(r);
		s->cfa_off = cfi_sleb(r) * cie->data_align;
		cfi_set_cfa(s);
		return 0;
	case 0x13:	/* DW_CFA_def_cfa_offset_sf */
		s->cfa_off = cfi_sleb(r) * cie->data_align;
		if (s->cfa == CFI_CFA_RSP || s->cfa == CFI_CFA_RBP)
			cfi_set_cfa(s);
		return 0;
	case 0x14:	/* DW_CFA_val_offset */
		reg = cfi_uleb(r);
		cfi_uleb(r);
		cfi_set_reg(s, cie, reg, 3, 0);
		return 0;
	case 0x15:	/* DW_CFA_val_offset_sf */
		reg = cfi_uleb(r);
		cfi_sleb(r);
		cfi_set_reg(s, cie, reg, 3, 0);
		return 0;
	case 0x2e:	/* DW_CFA_GNU_args_size */
		cfi_uleb(r);
		return 0;
	case 0x2f:	/* DW_CFA_GNU_negative_offset_extended */
		reg = cfi_uleb(r);
		off = -(int64_t)cfi_uleb(r) * cie->data_align;
		cfi_set_reg(s, cie, reg, 0, off);
		return 0;
	}
	return -1;
}

/*
 * Runs CFA instructions [p, end) from state *s at loc. With b != NULL
 * (an FDE), emits a row at every advance, up to end_pc; init is the state
 * after the CIE's instructions (for DW_CFA_restore). Returns 0, or -1 for
 * a malformed program.
 */
static int
cfi_run(const uint8_t *p, const uint8_t *end, const struct cfi_cie *cie,
    const struct cfi_sec *sec, struct cfi_state *s,
    const struct cfi_state *init, struct cfi_build *b, size_t first,
    uint64_t loc, uint64_t end_pc)
{
	struct cfi_rd r = { p, end, 1 };
	struct cfi_state stack[CFI_STATE_DEPTH];
	int depth = 0, op;
	uint64_t delta, to;

	while (r.ok && r.p < r.end) {
		op = (int)cfi_u8(&r);
		switch (op & 0xc0) {
		case 0x40:	/* DW_CFA_advance_loc */
			delta = (uint64_t)(op & 0x3f) * cie->code_align;
			goto advance;
		case 0x80:	/* DW_CFA_offset */
			cfi_set_reg(s, cie, (uint64_t)(op & 0x3f), 0,
			    (int64_t)cfi_uleb(&r) * cie->data_align);
			continue;
		case 0xc0:	/* DW_CFA_restore */
			if (init == NULL)
				return -1;
			cfi_restore(s, init, cie, (uint64_t)(op & 0x3f));
			continue;
		}
		switch (op) {
		case 0x01:	/* DW_CFA_set_loc */
			to = cfi_ptr(&r, cie->fde_enc, sec);
			if (!r.ok || to < loc)
				return -1;
			delta = to - loc;
			goto advance;
		case 0x02:	/* DW_CFA_advance_loc1 */
			delta = cfi_u8(&r) * cie->code_align;
			goto advance;
		case 0x03:	/* DW_CFA_advance_loc2 */
			delta = cfi_un(&r, 2) * cie->code_align;
			goto advance;
		case 0x04:	/* DW_CFA_advance_loc4 */
			delta = cfi_un(&r, 4) * cie->code_align;
			goto advance;
		case 0x0a:	/* DW_CFA_remember_state */
			if (depth == CFI_STATE_DEPTH)
				return -1;
			stack[depth++] = *s;
			continue;
		case 0x0b:	/* DW_CFA_restore_state */
			if (depth == 0)
				return -1;
			*s = stack[--depth];
			continue;
		default:
			if (cfi_rule(&r, op, cie, s, init) != 0)
				return -1;
			continue;
		}
advance:
		if (b == NULL)
			return -1;	/* an advance in a CIE: not supported */
		if (!r.ok)
			break;
		if (cfi_emit(b, first, loc, s) != 0)
			return -1;
		if (delta > end_pc - loc)
			delta = end_pc - loc;
		loc += delta;
	}
	if (!r.ok)
		return -1;
	if (b != NULL && loc < end_pc && cfi_emit(b, first, loc, s) != 0)
		return -1;
	return 0;
}

/* The state a CIE's initial instructions set up. */
static int
cfi_cie_state(const struct cfi_cie *cie, const struct cfi_sec *sec,
    struct cfi_state *s)
{
	memset(s, 0, sizeof *s);
	s->cfa = CFI_CFA_UNKNOWN;
	s->rbp = CFI_RBP_SAME;
	s->ra = 2;	/* until the CIE says where it is */
	return cfi_run(cie->insns, cie->insns_end, cie, sec, s, NULL, NULL, 0,
	    0, 0);
}

/* Runs one FDE's program into rows. Returns 0, or -1 to skip it. */
static int
cfi_fde(struct cfi_build *b, const struct cfi_cie *cie,
    const struct cfi_state *init, const uint8_t *p, const uint8_t *end,
    const struct cfi_sec *sec, int is_eh)
{
	struct cfi_rd r = { p, end, 1 };
	struct cfi_state s = *init;
	struct cfi_bfde *f;
	uint64_t begin, range, len;
	size_t first = b->n;

	if (is_eh) {
		begin = cfi_ptr(&r, cie->fde_enc, sec);
		range = cfi_ptr(&r, cie->fde_enc & 0x0f, sec);
	} else {
		begin = cfi_un(&r, (size_t)cie->addr_size);
		range = cfi_un(&r, (size_t)cie->addr_size);
	}
	if (cie->has_z) {
		len = cfi_uleb(&r);
		if (!r.ok || len > (uint64_t)(r.end - r.p))
			return -1;
		r.p += len;
	}
	if (!r.ok || range == 0 || begin == 0 || begin + range < begin)
		return -1;
	if (cfi_run(r.p, r.end, cie, sec, &s, init, b, first, begin,
	    begin + range) != 0) {
		b->n = first;
		return -1;
	}
	if (b->nf == b->capf) {
		b->capf = b->capf ? b->capf * 2 : 256;
		b->fdes = xreallocarray(b->fdes, b->capf, sizeof *b->fdes);
	}
	f = &b->fdes[b->nf++];
	f->begin = begin;
	f->end = begin + range;
	f->first = first;
	f->n = b->n - first;
	return 0;
}

/*
 * Walks every CIE and FDE of one section. .eh_frame: a zero length ends
 * it, the CIE id is 0 and an FDE's CIE pointer is relative to itself;
 * .debug_frame: the CIE id is all ones and the pointer a section offset.
 */
static void
cfi_section(struct cfi_build *b, const struct cfi_sec *sec, int is_eh)
{
	const uint8_t *p = sec->p, *end = sec->p + sec->size, *ent, *ent_end;
	const uint8_t *cie_at = NULL, *cp;
	struct cfi_cie cie;
	struct cfi_state init;
	struct cfi_rd r;
	uint64_t len, id, cie_len;
	int dwarf64, cie64, cie_ok = 0;

	while ((size_t)(end - p) >= 4) {
		r.p = p;
		r.end = end;
		r.ok = 1;
		len = cfi_un(&r, 4);
		dwarf64 = len == 0xffffffff;
		if (dwarf64)
			len = cfi_un(&r, 8);
		if (!r.ok || len == 0) {
			if (is_eh || !r.ok)
				break;
			p = r.p;
			continue;
		}
		if (len > (uint64_t)(end - r.p))
			break;
		ent = r.p;
		ent_end = r.p + len;
		p = ent_end;
		r.end = ent_end;
		id = cfi_un(&r, dwarf64 ? 8 : 4);
		if (!r.ok)
			continue;
		if (is_eh ? id == 0 : id == (dwarf64 ? ~(uint64_t)0 :
		    0xffffffffULL))
			continue;	/* a CIE: parsed when an FDE uses it */
		/* Find the FDE's CIE. */
		if (is_eh) {
			if (id > (uint64_t)(ent - sec->p))
				goto bad;
			cp = ent - id;
		} else {
			if (id >= sec->size)
				goto bad;
			cp = sec->p + id;
		}
		if (cp != cie_at) {
			cie_at = cp;
			cie_ok = 0;
			r.p = cp;
			r.end = end;
			r.ok = 1;
			cie_len = cfi_un(&r, 4);
			cie64 = cie_len == 0xffffffff;
			if (cie64)
				cie_len = cfi_un(&r, 8);
			if (!r.ok || cie_len < 5 ||
			    cie_len > (uint64_t)(end - r.p))
				goto bad;
			cp = r.p + cie_len;
			id = cfi_un(&r, cie64 ? 8 : 4);
			if (!r.ok || (is_eh ? id != 0 : (id != 0xffffffffULL &&
			    id != ~(uint64_t)0)))
				goto bad;
			if (cfi_cie_parse(r.p, cp, is_eh, &cie) != 0)
				goto bad;
			if (!is_eh)
				cie.fde_enc = cie.addr_size == 4 ? 0x03 : 0x00;
			if (cfi_cie_state(&cie, sec, &init) != 0)
				goto bad;
			cie_ok = 1;
		}
		if (!cie_ok)
			goto bad;
		r.p = ent + (dwarf64 ? 8 : 4);
		if (cfi_fde(b, &cie, &init, r.p, ent_end, sec, is_eh) == 0)
			continue;
bad:
		b->bad++;
	}
}

/* Orders FDEs by start, longest first. */
static int
cfi_fde_cmp(const void *a, const void *b)
{
	const struct cfi_bfde *x = a, *y = b;

	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end;
}

/* Appends a final row to t (no duplicates of the rule before it). */
static void
cfi_put(struct cfi_table *t, size_t *cap, uint64_t pc,
    const struct cfi_brow *br, int none)
{
	struct cfi_row row, *last;

	memset(&row, 0, sizeof row);
	row.pc = (uint32_t)(pc - t->base);
	if (none)
		row.cfa = CFI_CFA_NONE;
	else {
		row.cfa = br->cfa;
		row.rbp = br->rbp;
		row.cfa_off = br->cfa_off;
		row.rbp_off = br->rbp_off;
	}
	if (t->n > 0) {
		last = &t->rows[t->n - 1];
		if (last->cfa == row.cfa && last->rbp == row.rbp &&
		    last->cfa_off == row.cfa_off &&
		    last->rbp_off == row.rbp_off)
			return;
		if (last->pc == row.pc) {
			*last = row;
			return;
		}
	}
	if (t->n == *cap) {
		*cap = *cap ? *cap * 2 : 1024;
		t->rows = xreallocarray(t->rows, *cap, sizeof *t->rows);
	}
	t->rows[t->n++] = row;
}

/*
 * Builds the page index of t (see cfi.h): 4 bytes per 512 bytes of
 * code, 0.8% of the text's size. A table spread thin over a wide range
 * (more pages than CFI_PAGES_PER_ROW a row: up to 32 MiB for the 4 GiB
 * a table may span) gets none and is searched whole.
 */
static void
cfi_index_pages(struct cfi_table *t)
{
	size_t k, i = 0, npages;

	free(t->page);
	t->page = NULL;
	t->npages = 0;
	if (t->n == 0)
		return;
	npages = ((size_t)t->rows[t->n - 1].pc >> CFI_PAGE_SHIFT) + 1;
	if (npages > CFI_PAGES_PER_ROW * t->n + 1024)
		return;
	t->npages = npages;
	t->page = xreallocarray(NULL, t->npages + 1, sizeof *t->page);
	for (k = 0; k <= t->npages; k++) {
		while (i < t->n && (t->rows[i].pc >> CFI_PAGE_SHIFT) < k)
			i++;
		t->page[k] = (uint32_t)i;
	}
}

/*
 * Sorts the FDEs, drops any that overlaps one kept before it, and writes
 * the rows with pcs relative to the lowest address, a CFI_CFA_NONE row
 * at the end of each FDE not followed directly by the next.
 */
static void
cfi_flatten(struct cfi_table *t, struct cfi_build *b)
{
	uint64_t prev_end = 0;
	size_t i, j, cap = 0;
	struct cfi_bfde *f;

	if (b->nf == 0)
		return;
	qsort(b->fdes, b->nf, sizeof *b->fdes, cfi_fde_cmp);
	t->base = b->fdes[0].begin;
	for (i = 0; i < b->nf; i++) {
		f = &b->fdes[i];
		if (f->end - t->base > UINT32_MAX) {
			b->bad += b->nf - i;
			break;
		}
		if (i > 0 && f->begin < prev_end) {
			b->bad++;
			continue;
		}
		/* Alignment padding between functions needs no row. */
		if (i > 0 && f->begin - prev_end >= CFI_PAD)
			cfi_put(t, &cap, prev_end, NULL, 1);
		for (j = 0; j < f->n; j++)
			cfi_put(t, &cap, b->rows[f->first + j].pc,
			    &b->rows[f->first + j], 0);
		if (f->n == 0)
			cfi_put(t, &cap, f->begin, NULL, 1);
		prev_end = f->end;
		t->fdes++;
	}
	if (t->fdes > 0)
		cfi_put(t, &cap, prev_end, NULL, 1);
	t->bad = b->bad;
	if (t->n > 0 && t->n < cap)
		t->rows = xreallocarray(t->rows, t->n, sizeof *t->rows);
	cfi_index_pages(t);
}

/* Parses one section into t, which must have no rows yet. */
void
cfi_parse(struct cfi_table *t, const uint8_t *p, size_t size, uint64_t vaddr,
    int is_eh)
{
	struct cfi_sec sec = { p, size, vaddr };
	struct cfi_build b;

	memset(&b, 0, sizeof b);
	cfi_section(&b, &sec, is_eh);
	cfi_flatten(t, &b);
	t->debug_frame = !is_eh && t->n > 0;
	free(b.rows);
	free(b.fdes);
}

/* A table from one raw section. */
struct cfi_table *
cfi_from_section(const uint8_t *sec, size_t size, uint64_t vaddr, int is_eh)
{
	struct cfi_table *t = xcalloc(1, sizeof *t);

	cfi_parse(t, sec, size, vaddr, is_eh);
	return t;
}

/*
 * The link address of .eh_frame from an .eh_frame_hdr at vaddr: version 1,
 * then the encoding of eh_frame_ptr. Returns 0, or -1.
 */
int
cfi_hdr_eh_frame(const uint8_t *hdr, size_t size, uint64_t vaddr,
    uint64_t *out)
{
	struct cfi_sec sec = { hdr, size, vaddr };
	struct cfi_rd r = { hdr, hdr + size, 1 };
	int enc;

	if (cfi_u8(&r) != 1)
		return -1;
	enc = (int)cfi_u8(&r);
	cfi_u8(&r);
	cfi_u8(&r);
	*out = cfi_ptr(&r, enc, &sec);
	return r.ok ? 0 : -1;
}

/* Frees a table. */
void
cfi_free(struct cfi_table *t)
{
	if (t == NULL)
		return;
	free(t->rows);
	free(t->page);
	free(t->loads);
	free(t);
}

/* File offset to link address through the covering PT_LOAD. */
int
cfi_offset_to_vaddr(const struct cfi_table *t, uint64_t off, uint64_t *vaddr)
{
	return elffile_offset_to_vaddr(t->loads, t->nloads, off, vaddr);
}

/* The last row at or below vaddr: a binary search of its page's rows. */
const struct cfi_row *
cfi_find(const struct cfi_table *t, uint64_t vaddr)
{
	size_t lo = 0, hi = t->n, mid, k;
	uint64_t rel;

	if (t->n == 0 || vaddr < t->base || vaddr - t->base > UINT32_MAX)
		return NULL;
	rel = vaddr - t->base;
	/*
	 * Rows of earlier pages are all <= rel, rows of later ones all
	 * above it: the answer's successor is within the page's range.
	 */
	if (t->page != NULL && (k = (size_t)(rel >> CFI_PAGE_SHIFT)) <
	    t->npages) {
		lo = t->page[k];
		hi = t->page[k + 1];
	}
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (t->rows[mid].pc <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == 0 ? NULL : &t->rows[lo - 1];
}
