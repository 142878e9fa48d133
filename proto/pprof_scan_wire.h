/*
 * The pprof wire scanner's private header: its wire-format layer, and what
 * its two files call in each other. The exact passes (pprof_scan.c) read
 * every field with pprof_scan_wire_next(); the fast path
 * (pprof_scan_fast.c) reads only the canonical forms, with the same varint
 * and packed-field rules. Callers use proto/pprof_scan.h.
 *
 * Wire rules of protobuf-c 1.4.1 (protobuf-c.c, and probed against the
 * installed library): a key takes at most 5 bytes and its first byte must
 * not be below 8 (field 0); an overlong key of field 0 such as 80 00 passes
 * there, but profd refuses field 0 in any form (see pprof_scan_wire_next);
 * unknown field numbers are skipped; wire types 3, 4, 6 and 7 fail; a varint
 * takes at most 10 bytes (bits past 64 are dropped); a length prefix takes
 * at most 5 bytes and must not run past the end; a known scalar field needs
 * the varint wire type, except that a repeated one may also come packed
 * (both forms may mix), and bool fields take any wire type; message and
 * string fields need a length prefix; a singular field given twice keeps its
 * last value (for period_type, whose fields are all scalars, protobuf-c's
 * merge also leaves the last one's values).
 */
#ifndef PROFD_PPROF_SCAN_WIRE_H
#define PROFD_PPROF_SCAN_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proto/pprof.h"

/* The wire types protobuf-c accepts. */
#define SCAN_VARINT	0
#define SCAN_I64	1
#define SCAN_LEN	2
#define SCAN_I32	5

/* One field as read off the wire. */
struct scan_field {
	uint32_t	 num;
	unsigned	 wt;
	uint64_t	 v;	/* SCAN_VARINT: the value */
	const uint8_t	*val;	/* the value's bytes, after the key */
	const uint8_t	*hdr;	/* SCAN_LEN: the length prefix */
	const uint8_t	*p;	/* SCAN_LEN: the payload */
	size_t		 len;
};

/* Reads a varint of at most max bytes; returns its length, 0 if bad. */
static inline __attribute__((always_inline)) size_t
pprof_scan_wire_varint(const uint8_t *p, const uint8_t *end, size_t max,
    uint64_t *v)
{
	size_t		avail = (size_t)(end - p), i;
	uint64_t	r = 0;

	if (avail >= 10) {
		/* No bounds to watch: the common case, unrolled. */
		for (i = 0; i < max; i++) {
			r |= (uint64_t)(p[i] & 0x7f) << (7 * i);
			if ((p[i] & 0x80) == 0) {
				*v = r;
				return i + 1;
			}
		}
		*v = 0;
		return 0;
	}
	if (avail < max)
		max = avail;
	for (i = 0; i < max; i++) {
		r |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if ((p[i] & 0x80) == 0) {
			*v = r;
			return i + 1;
		}
	}
	*v = 0;
	return 0;
}

/* Reads the field at *pp: 1 got one, 0 end of message, -1 malformed. */
static inline __attribute__((always_inline)) int
pprof_scan_wire_next(const uint8_t **pp, const uint8_t *end,
    struct scan_field *f)
{
	const uint8_t	*p = *pp;
	uint64_t	 v;
	size_t		 n;

	f->v = 0;
	f->hdr = f->p = NULL;
	f->len = 0;
	if (p == end)
		return 0;
	if (*p < 0x80) {
		/* protobuf-c refuses a first key byte < 8: field 0. */
		if (*p < 8)
			return -1;
		v = *p++;
	} else {
		if ((n = pprof_scan_wire_varint(p, end, 5, &v)) == 0)
			return -1;
		p += n;
	}
	/* Field 0 is never valid. protobuf-c accepts it in an overlong key
	 * (80 00), keeps it as an unknown field, and then packs it in the
	 * one-byte form its own unpack refuses: refuse it in every form. */
	if ((v >> 3) == 0)
		return -1;
	f->num = (uint32_t)(v >> 3);
	f->wt = (unsigned)(v & 7);
	f->val = p;
	switch (f->wt) {
	case SCAN_VARINT:
		if (p < end && *p < 0x80)
			f->v = *p++;
		else {
			n = pprof_scan_wire_varint(p, end, 10, &f->v);
			if (n == 0)
				return -1;
			p += n;
		}
		break;
	case SCAN_I64:
		if (end - p < 8)
			return -1;
		p += 8;
		break;
	case SCAN_LEN:
		f->hdr = p;
		if ((n = pprof_scan_wire_varint(p, end, 5, &v)) == 0)
			return -1;
		p += n;
		if (v > (uint64_t)(end - p))
			return -1;
		f->p = p;
		f->len = (size_t)v;
		p += v;
		break;
	case SCAN_I32:
		if (end - p < 4)
			return -1;
		p += 4;
		break;
	default:
		return -1;
	}
	*pp = p;
	return 1;
}

/* The top bit of every byte of a 64-bit word. */
#define SCAN_TOP_BITS	0x8080808080808080ULL

/*
 * Counts the varints of a packed field; -1 if one is unterminated or longer
 * than 10 bytes (protobuf-c's scan_varint). Eight bytes at a time: a varint
 * ends at each byte whose top bit is clear, and a run of continuation bytes
 * can only reach 10 through a word's ends.
 */
static inline int
pprof_scan_wire_packed_count(const uint8_t *p, size_t len, size_t *count)
{
	uint64_t	w, stops;
	size_t		i = 0, n = 0, run = 0;

	for (; i + 8 <= len; i += 8) {
		memcpy(&w, p + i, sizeof w);
		stops = ~w & SCAN_TOP_BITS;	/* little endian: byte 0 low */
		if (stops == 0) {
			if ((run += 8) >= 10)
				return -1;
			continue;
		}
		/* Sums the stop bits, one per byte, into the top byte. */
		n += (size_t)(((stops >> 7) * 0x0101010101010101ULL) >> 56);
		if (run + (size_t)__builtin_ctzll(stops) / 8 >= 10)
			return -1;
		run = (size_t)__builtin_clzll(stops) / 8;
	}
	for (; i < len; i++) {
		if (p[i] & 0x80) {
			if (++run == 10)
				return -1;
		} else {
			run = 0;
			n++;
		}
	}
	if (run != 0)
		return -1;
	*count = n;
	return 0;
}

/* Decodes the next varint of a packed field already counted. */
static inline uint64_t
pprof_scan_wire_packed_next(const uint8_t **pp)
{
	const uint8_t	*q = *pp;
	uint64_t	 v, b = *q++;
	unsigned	 shift;

	v = b & 0x7f;
	for (shift = 7; b & 0x80; shift += 7) {
		b = *q++;
		v |= (b & 0x7f) << shift;
	}
	*pp = q;
	return v;
}

/* The passes look at the caller's cancel flag every this many fields. */
#define SCAN_CANCEL_EVERY	4096

/*
 * Counts one top-level field in *polls and, at the first and then every
 * SCAN_CANCEL_EVERY, reads *cancel (may be NULL): 1 once it is set.
 */
static inline int
pprof_scan_wire_cancelled(const volatile int *cancel, size_t *polls)
{
	if (cancel == NULL || (*polls)++ % SCAN_CANCEL_EVERY != 0)
		return 0;
	return __atomic_load_n(cancel, __ATOMIC_RELAXED) != 0;
}

/*
 * Fills *sum like pprof_summarize(), for either path: str(ctx, j) gives
 * the type (j = 2i) and unit (j = 2i + 1) strings of sample type i.
 */
void	pprof_scan_summary_fill(struct pprof_summary *sum, size_t n_types,
	    const uint8_t *(*str)(const void *ctx, size_t j, size_t *len),
	    const void *ctx, int64_t samples, int64_t time_nanos,
	    int64_t duration_nanos);
/*
 * Sets sum->totals from the per-type sums tot[n_types] and the default
 * sample type's name (def, def_len; def_len 0: none).
 */
void	pprof_scan_summary_totals(struct pprof_summary *sum, size_t n_types,
	    const uint64_t *tot, const uint8_t *(*str)(const void *ctx,
	    size_t j, size_t *len), const void *ctx, const uint8_t *def,
	    size_t def_len);

/*
 * The fast path: 1 if it proves raw valid, with *sum filled (sum may be
 * NULL); 0 to leave the bytes to the exact passes, sum untouched; -1 when
 * *cancel (may be NULL) was set.
 */
int	pprof_scan_fast_check(const uint8_t *raw, size_t len,
	    const volatile int *cancel, struct pprof_summary *sum);

#endif
