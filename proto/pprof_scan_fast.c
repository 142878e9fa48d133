/*
 * pprof wire scanner, fast path: pprof_scan() tries it before the exact
 * passes of pprof_scan.c.
 *
 * Real profiles are valid, and the profilers that write them number
 * mappings, functions and locations 1, 2, 3, ... in the order they write
 * them. For those, one pass over the bytes with no allocation proves
 * validity: ids are checked against their position as they come, so every
 * reference only has to fall in 1..n, and every string index only below the
 * string count, which the pass keeps as maxima to compare at the end. It
 * reads only the canonical wire forms (one-byte keys, known fields with
 * their usual wire types); at anything else, or at any sign of a problem, it
 * gives up and the exact passes decide and explain, so a profile it accepts
 * is one they accept too, with the same summary.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proto/pprof.h"
#include "proto/pprof_scan_wire.h"

/* Sample types and leading strings the fast path keeps for the summary. */
#define SCAN_FAST_TYPES	16
#define SCAN_FAST_STRS	64

/* What the fast pass gathers. */
struct scan_fast {
	size_t		 n_sample_type, n_sample, n_string;
	size_t		 n_mapping, n_function, n_location;
	size_t		 n_value;	/* values per sample, the same for all */
	uint64_t	 str_max;	/* largest string index (unsigned) */
	uint64_t	 loc_max;	/* largest location id - 1 of a sample */
	int		 loc_any;	/* some sample names a location */
	uint64_t	 map_max, fn_max; /* largest nonzero references */
	uint64_t	 drop_frames, keep_frames, default_sample_type;
	uint64_t	 doc_url, time_nanos, duration_nanos;
	int		 have_period;
	uint64_t	 period_type, period_unit;
	uint64_t	 st[2 * SCAN_FAST_TYPES];
	uint64_t	 tot[SCAN_FAST_TYPES];	/* sums of each type's values */
	const uint8_t	*str_p[SCAN_FAST_STRS];
	size_t		 str_len[SCAN_FAST_STRS];
	const volatile int *cancel;	/* the caller's flag, or NULL */
	size_t		 polls;
	int		 cancelled;
};

/* Folds v into the maximum *m. */
#define SCAN_MAX(m, v)	do { if ((v) > (m)) (m) = (v); } while (0)

/* Reads a varint at p (p < end) byte by byte: the byte after, NULL if bad. */
static __attribute__((noinline)) const uint8_t *
pprof_scan_fast_varint_loop(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
	size_t	n;

	if ((n = pprof_scan_wire_varint(p, end, 10, v)) == 0)
		return NULL;
	return p + n;
}

/*
 * Reads a varint of any length at p (p < end): the byte after it, or NULL
 * if bad. Up to 8 bytes without a loop: the 7-bit groups of a little-endian
 * word are squeezed together in three steps.
 */
static inline __attribute__((always_inline)) const uint8_t *
pprof_scan_fast_varint_long(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t	w, stops;
	unsigned	n;

	if (__builtin_expect(end - p >= 8, 1)) {
		memcpy(&w, p, sizeof w);
		if ((stops = ~w & SCAN_TOP_BITS) != 0) {
			n = (unsigned)__builtin_ctzll(stops) / 8 + 1;
			if (n < 8)
				w &= ((uint64_t)1 << (8 * n)) - 1;
			w &= 0x7f7f7f7f7f7f7f7fULL;
			w = (w & 0x007f007f007f007fULL) |
			    ((w & 0x7f007f007f007f00ULL) >> 1);
			w = (w & 0x00003fff00003fffULL) |
			    ((w & 0x3fff00003fff0000ULL) >> 2);
			w = (w & 0x000000000fffffffULL) |
			    ((w & 0x0fffffff00000000ULL) >> 4);
			*v = w;
			return p + n;
		}
	}
#endif
	return pprof_scan_fast_varint_loop(p, end, v);
}

/* pprof_scan_fast_varint_long() out of line, for the rare long varints. */
static __attribute__((noinline)) const uint8_t *
pprof_scan_fast_varint_rare(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
	return pprof_scan_fast_varint_long(p, end, v);
}

/*
 * Reads a varint at p (p < end); the byte after it, or NULL if bad. One or
 * two bytes, the most common lengths, without a branch on which.
 */
static inline __attribute__((always_inline)) const uint8_t *
pprof_scan_fast_varint(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
	uint64_t	b0, b1, c;

	if (__builtin_expect(end - p >= 2, 1)) {
		b0 = p[0];
		b1 = p[1];
		c = b0 >> 7;
		if (__builtin_expect((c & (b1 >> 7)) == 0, 1)) {
			*v = (b0 & 0x7f) | ((b1 << 7) & (0 - c));
			return p + 1 + c;
		}
	} else if (*p < 0x80) {
		*v = *p;
		return p + 1;
	}
	return pprof_scan_fast_varint_rare(p, end, v);
}

/*
 * Reads a length prefix at p (p < end) and checks that the payload fits:
 * the payload, or NULL if bad. *pend: OUT the payload's end.
 */
static inline __attribute__((always_inline)) const uint8_t *
pprof_scan_fast_len(const uint8_t *p, const uint8_t *end, const uint8_t **pend)
{
	uint64_t	v;
	size_t		n;

	if (*p < 0x80) {
		v = *p++;
	} else {
		if ((n = pprof_scan_wire_varint(p, end, 5, &v)) == 0)
			return NULL;
		p += n;
	}
	if (v > (uint64_t)(end - p))
		return NULL;
	*pend = p + v;
	return p;
}

/* Reads the next varint of a message ending at end into v, or gives up. */
#define SCAN_FAST_VARINT(q, end, v) do {				\
	if ((q) >= (end) ||						\
	    ((q) = pprof_scan_fast_varint((q), (end), &(v))) == NULL)	\
		return 0;						\
} while (0)

/* SCAN_FAST_VARINT for a field whose values are usually long. */
#define SCAN_FAST_VARINT_LONG(q, end, v) do {				\
	if ((q) >= (end) ||						\
	    ((q) = pprof_scan_fast_varint_long((q), (end), &(v))) ==	\
	    NULL)							\
		return 0;						\
} while (0)

/* True if the next key of a message ending at end is k (and skips it). */
#define SCAN_FAST_KEY(q, end, k)	((q) < (end) && *(q) == (k) && ++(q))

/* Reads the next length-delimited payload [r, rend), or gives up. */
#define SCAN_FAST_LEN(q, end, r, rend) do {				\
	if ((q) >= (end) ||						\
	    ((r) = pprof_scan_fast_len((q), (end), &(rend))) == NULL)	\
		return 0;						\
	(q) = (rend);							\
} while (0)

/* A ValueType; 0 to give up. */
static int
pprof_scan_fast_value_type(const uint8_t *q, const uint8_t *end, uint64_t *type,
    uint64_t *unit)
{
	*type = *unit = 0;
	while (q < end) {
		switch (*q++) {
		case 0x08:
			SCAN_FAST_VARINT(q, end, *type);
			break;
		case 0x10:
			SCAN_FAST_VARINT(q, end, *unit);
			break;
		default:
			return 0;
		}
	}
	return 1;
}

/* A Label: its string indices; 0 to give up. */
static int
pprof_scan_fast_label(struct scan_fast *x, const uint8_t *q, const uint8_t *end)
{
	uint64_t	v;

	while (q < end) {
		switch (*q++) {
		case 0x08:	/* key */
		case 0x10:	/* str */
		case 0x20:	/* num_unit */
			SCAN_FAST_VARINT(q, end, v);
			SCAN_MAX(x->str_max, v);
			break;
		case 0x18:	/* num */
			SCAN_FAST_VARINT(q, end, v);
			break;
		default:
			return 0;
		}
	}
	return 1;
}

/*
 * Decodes the next id of a packed run (r < rend, ids end before rend)
 * into the maximum m of id - 1; gives up at a bad varint. One or two
 * bytes without a branch on which; a byte past the id may be read, never
 * past rend.
 */
#define SCAN_FAST_LOC_ID(r, rend, m) do {				\
	uint64_t	b0_, b1_, c_, v_;				\
									\
	b0_ = (r)[0];							\
	b1_ = (rend) - (r) >= 2 ? (r)[1] : 0x80;			\
	c_ = b0_ >> 7;							\
	if (__builtin_expect((c_ & (b1_ >> 7)) == 0, 1)) {		\
		v_ = (b0_ & 0x7f) | ((b1_ << 7) & (0 - c_));		\
		(r) += 1 + c_;						\
	} else if (((r) = pprof_scan_fast_varint_rare((r), (rend),	\
	    &v_)) == NULL)						\
		return 0;						\
	v_--;	/* id 0 becomes the largest */				\
	SCAN_MAX(m, v_);						\
} while (0)

/*
 * The location ids of a sample, packed, into the maximum *mp of id - 1;
 * 0 to give up. Each id's position depends on the one before's length, so
 * a long run is cut in two at an id boundary past its middle, and the
 * halves are decoded in step: two chains of loads instead of one.
 */
static inline __attribute__((always_inline)) int
pprof_scan_fast_loc_ids(const uint8_t *r, const uint8_t *rend, uint64_t *mp)
{
	const uint8_t	*h, *mid;
	uint64_t	 m = *mp, m2 = 0;

	if (rend - r >= 32) {
		/* h: the first id starting at or after the middle. */
		for (h = mid = r + (rend - r) / 2; h < rend && h[-1] >= 0x80;
		    h++)
			if (h - mid >= 10)
				break;
		if (h - mid < 10 && h < rend) {
			/* [r, mid) and [mid, rend) from here on. */
			mid = h;
			while (r < mid && h < rend) {
				SCAN_FAST_LOC_ID(r, mid, m);
				SCAN_FAST_LOC_ID(h, rend, m2);
			}
			while (h < rend)
				SCAN_FAST_LOC_ID(h, rend, m2);
			rend = mid;
			SCAN_MAX(m, m2);
		}
	}
	while (r < rend)
		SCAN_FAST_LOC_ID(r, rend, m);
	*mp = m;
	return 1;
}

/* A Sample: value count, location ids, labels; 0 to give up. */
static int
pprof_scan_fast_sample(struct scan_fast *x, const uint8_t *q,
    const uint8_t *end)
{
	const uint8_t	*r, *rend;
	uint64_t	 v, m = x->loc_max;
	size_t		 nv = 0, n;

	/* The order profilers write, without a dispatch per field. */
	if (SCAN_FAST_KEY(q, end, 0x0a)) {
		SCAN_FAST_LEN(q, end, r, rend);
		if (r != rend)
			x->loc_any = 1;
		if (!pprof_scan_fast_loc_ids(r, rend, &m))
			return 0;
	}
	while (SCAN_FAST_KEY(q, end, 0x10)) {
		SCAN_FAST_VARINT_LONG(q, end, v);
		if (nv < SCAN_FAST_TYPES)
			x->tot[nv] += v;
		nv++;
	}
	while (q < end) {
		switch (*q++) {
		case 0x0a:	/* location_id, packed */
			SCAN_FAST_LEN(q, end, r, rend);
			if (r != rend)
				x->loc_any = 1;
			if (!pprof_scan_fast_loc_ids(r, rend, &m))
				return 0;
			break;
		case 0x08:	/* location_id */
			SCAN_FAST_VARINT(q, end, v);
			x->loc_any = 1;
			v--;
			SCAN_MAX(m, v);
			break;
		case 0x10:	/* value */
			SCAN_FAST_VARINT_LONG(q, end, v);
			if (nv < SCAN_FAST_TYPES)
				x->tot[nv] += v;
			nv++;
			break;
		case 0x12:	/* value, packed */
			SCAN_FAST_LEN(q, end, r, rend);
			if (pprof_scan_wire_packed_count(r, (size_t)(rend - r),
			    &n) != 0)
				return 0;
			for (; n > 0; n--, nv++) {
				v = pprof_scan_wire_packed_next(&r);
				if (nv < SCAN_FAST_TYPES)
					x->tot[nv] += v;
			}
			break;
		case 0x1a:	/* label */
			SCAN_FAST_LEN(q, end, r, rend);
			if (!pprof_scan_fast_label(x, r, rend))
				return 0;
			break;
		default:
			return 0;
		}
	}
	x->loc_max = m;
	if (x->n_sample++ == 0)
		x->n_value = nv;
	else if (nv != x->n_value)
		return 0;	/* one of them is wrong */
	return 1;
}

/* A Mapping: its id must be the next one; 0 to give up. */
static int
pprof_scan_fast_mapping(struct scan_fast *x, const uint8_t *q,
    const uint8_t *end)
{
	uint64_t	v, id = 0;

	while (q < end) {
		switch (*q++) {
		case 0x08:	/* id */
			SCAN_FAST_VARINT(q, end, id);
			break;
		case 0x28:	/* filename */
		case 0x30:	/* build_id */
			SCAN_FAST_VARINT(q, end, v);
			SCAN_MAX(x->str_max, v);
			break;
		case 0x10:	/* memory_start, memory_limit, file_offset */
		case 0x18:
		case 0x20:
		case 0x38:	/* has_functions ... has_inline_frames */
		case 0x40:
		case 0x48:
		case 0x50:
			SCAN_FAST_VARINT(q, end, v);
			break;
		default:
			return 0;
		}
	}
	return id == ++x->n_mapping;
}

/* A Line: its function reference into the maximum *fm; 0 to give up. */
static inline __attribute__((always_inline)) int
pprof_scan_fast_line(uint64_t *fm, const uint8_t *q, const uint8_t *end)
{
	uint64_t	v;

	if (SCAN_FAST_KEY(q, end, 0x08)) {
		SCAN_FAST_VARINT(q, end, v);
		SCAN_MAX(*fm, v);
	}
	if (SCAN_FAST_KEY(q, end, 0x10))
		SCAN_FAST_VARINT(q, end, v);
	while (q < end) {
		switch (*q++) {
		case 0x08:	/* function_id */
			SCAN_FAST_VARINT(q, end, v);
			SCAN_MAX(*fm, v);
			break;
		case 0x10:	/* line, column */
		case 0x18:
			SCAN_FAST_VARINT(q, end, v);
			break;
		default:
			return 0;
		}
	}
	return 1;
}

/* A Location: its id must be the next one; 0 to give up. */
static int
pprof_scan_fast_location(struct scan_fast *x, const uint8_t *q,
    const uint8_t *end)
{
	const uint8_t	*r, *rend;
	uint64_t	 v, id = 0, fm = x->fn_max;

	/* The order profilers write, without a dispatch per field. */
	if (SCAN_FAST_KEY(q, end, 0x08))
		SCAN_FAST_VARINT(q, end, id);
	if (SCAN_FAST_KEY(q, end, 0x10)) {
		SCAN_FAST_VARINT(q, end, v);
		SCAN_MAX(x->map_max, v);
	}
	if (SCAN_FAST_KEY(q, end, 0x18))
		SCAN_FAST_VARINT_LONG(q, end, v);
	while (SCAN_FAST_KEY(q, end, 0x22)) {
		SCAN_FAST_LEN(q, end, r, rend);
		if (!pprof_scan_fast_line(&fm, r, rend))
			return 0;
	}
	while (q < end) {
		switch (*q++) {
		case 0x08:	/* id */
			SCAN_FAST_VARINT(q, end, id);
			break;
		case 0x10:	/* mapping_id */
			SCAN_FAST_VARINT(q, end, v);
			SCAN_MAX(x->map_max, v);
			break;
		case 0x18:	/* address */
		case 0x28:	/* is_folded */
			SCAN_FAST_VARINT(q, end, v);
			break;
		case 0x22:	/* line */
			SCAN_FAST_LEN(q, end, r, rend);
			if (!pprof_scan_fast_line(&fm, r, rend))
				return 0;
			break;
		default:
			return 0;
		}
	}
	x->fn_max = fm;
	return id == ++x->n_location;
}

/* A Function: its id must be the next one; 0 to give up. */
static int
pprof_scan_fast_function(struct scan_fast *x, const uint8_t *q,
    const uint8_t *end)
{
	uint64_t	v, id = 0, sm = x->str_max;

	/* The order profilers write, without a dispatch per field. */
	if (SCAN_FAST_KEY(q, end, 0x08))
		SCAN_FAST_VARINT(q, end, id);
	if (SCAN_FAST_KEY(q, end, 0x10)) {
		SCAN_FAST_VARINT(q, end, v);
		SCAN_MAX(sm, v);
	}
	if (SCAN_FAST_KEY(q, end, 0x18)) {
		SCAN_FAST_VARINT(q, end, v);
		SCAN_MAX(sm, v);
	}
	if (SCAN_FAST_KEY(q, end, 0x20)) {
		SCAN_FAST_VARINT(q, end, v);
		SCAN_MAX(sm, v);
	}
	if (SCAN_FAST_KEY(q, end, 0x28))
		SCAN_FAST_VARINT(q, end, v);
	x->str_max = sm;
	while (q < end) {
		switch (*q++) {
		case 0x08:	/* id */
			SCAN_FAST_VARINT(q, end, id);
			break;
		case 0x10:	/* name, system_name, filename */
		case 0x18:
		case 0x20:
			SCAN_FAST_VARINT(q, end, v);
			SCAN_MAX(x->str_max, v);
			break;
		case 0x28:	/* start_line */
			SCAN_FAST_VARINT(q, end, v);
			break;
		default:
			return 0;
		}
	}
	return id == ++x->n_function;
}

/* The fast pass over a whole profile: 1 valid, 0 to give up. */
static int
pprof_scan_fast_pass(struct scan_fast *x, const uint8_t *q, const uint8_t *end)
{
	const uint8_t	*r, *rend;
	uint64_t	 v;
	size_t		 i;

	while (q < end) {
		if (pprof_scan_wire_cancelled(x->cancel, &x->polls)) {
			x->cancelled = 1;
			return 0;
		}
		switch (*q++) {
		case 0x0a:	/* sample_type */
			SCAN_FAST_LEN(q, end, r, rend);
			if ((i = x->n_sample_type++) >= SCAN_FAST_TYPES ||
			    !pprof_scan_fast_value_type(r, rend, &x->st[2 * i],
			    &x->st[2 * i + 1]))
				return 0;
			break;
		case 0x12:	/* sample */
			SCAN_FAST_LEN(q, end, r, rend);
			if (!pprof_scan_fast_sample(x, r, rend))
				return 0;
			break;
		case 0x1a:	/* mapping */
			SCAN_FAST_LEN(q, end, r, rend);
			if (!pprof_scan_fast_mapping(x, r, rend))
				return 0;
			break;
		case 0x22:	/* location */
			SCAN_FAST_LEN(q, end, r, rend);
			if (!pprof_scan_fast_location(x, r, rend))
				return 0;
			break;
		case 0x2a:	/* function */
			SCAN_FAST_LEN(q, end, r, rend);
			if (!pprof_scan_fast_function(x, r, rend))
				return 0;
			break;
		case 0x32:	/* string_table */
			SCAN_FAST_LEN(q, end, r, rend);
			i = x->n_string++;
			if (i == 0 && r != rend && r[0] != '\0')
				return 0;	/* entry 0 is not empty */
			if (i < SCAN_FAST_STRS) {
				x->str_p[i] = r;
				x->str_len[i] = (size_t)(rend - r);
			}
			break;
		case 0x38:
			SCAN_FAST_VARINT(q, end, x->drop_frames);
			break;
		case 0x40:
			SCAN_FAST_VARINT(q, end, x->keep_frames);
			break;
		case 0x48:
			SCAN_FAST_VARINT(q, end, x->time_nanos);
			break;
		case 0x50:
			SCAN_FAST_VARINT(q, end, x->duration_nanos);
			break;
		case 0x5a:	/* period_type */
			SCAN_FAST_LEN(q, end, r, rend);
			if (!pprof_scan_fast_value_type(r, rend,
			    &x->period_type, &x->period_unit))
				return 0;
			x->have_period = 1;
			break;
		case 0x60:	/* period */
			SCAN_FAST_VARINT(q, end, v);
			break;
		case 0x68:	/* comment */
			SCAN_FAST_VARINT(q, end, v);
			SCAN_MAX(x->str_max, v);
			break;
		case 0x6a:	/* comment, packed */
			SCAN_FAST_LEN(q, end, r, rend);
			while (r < rend) {
				SCAN_FAST_VARINT(r, rend, v);
				SCAN_MAX(x->str_max, v);
			}
			break;
		case 0x70:
			SCAN_FAST_VARINT(q, end, x->default_sample_type);
			break;
		case 0x78:
			SCAN_FAST_VARINT(q, end, x->doc_url);
			break;
		default:
			return 0;
		}
	}

	/* What pprof_validate() checks, all at once. */
	if (x->n_string == 0)
		return 0;
	SCAN_MAX(x->str_max, x->drop_frames);
	SCAN_MAX(x->str_max, x->keep_frames);
	SCAN_MAX(x->str_max, x->default_sample_type);
	if (x->default_sample_type >= SCAN_FAST_STRS)
		return 0;	/* the summary needs its string */
	SCAN_MAX(x->str_max, x->doc_url);
	if (x->have_period) {
		SCAN_MAX(x->str_max, x->period_type);
		SCAN_MAX(x->str_max, x->period_unit);
	}
	for (i = 0; i < 2 * x->n_sample_type; i++) {
		/* The summary needs these strings. */
		if (x->st[i] >= SCAN_FAST_STRS)
			return 0;
		SCAN_MAX(x->str_max, x->st[i]);
	}
	if (x->str_max >= x->n_string)
		return 0;
	if (x->n_sample != 0 && (x->n_sample_type == 0 ||
	    x->n_value != x->n_sample_type))
		return 0;
	if (x->loc_any && x->loc_max >= x->n_location)
		return 0;
	return x->map_max <= x->n_mapping && x->fn_max <= x->n_function;
}

/* String i of the fast pass (i < SCAN_FAST_STRS) up to its first NUL. */
static const uint8_t *
pprof_scan_fast_string(const struct scan_fast *x, size_t i, size_t *len)
{
	const uint8_t	*nul;

	*len = x->str_len[i];
	if (*len != 0 && (nul = memchr(x->str_p[i], '\0', *len)) != NULL)
		*len = (size_t)(nul - x->str_p[i]);
	return x->str_p[i];
}

/* Sample type string j of the fast pass (see pprof_scan_summary_fill). */
static const uint8_t *
pprof_scan_fast_type_string(const void *ctx, size_t j, size_t *len)
{
	const struct scan_fast *x = ctx;

	return pprof_scan_fast_string(x, x->st[j], len);
}

/* Fills *sum like pprof_summarize() after a successful fast pass. */
static void
pprof_scan_fast_summarize(const struct scan_fast *x, struct pprof_summary *sum)
{
	const uint8_t	*def;
	size_t		 def_len = 0;

	pprof_scan_summary_fill(sum, x->n_sample_type,
	    pprof_scan_fast_type_string, x, (int64_t)x->n_sample,
	    (int64_t)x->time_nanos, (int64_t)x->duration_nanos);
	def = pprof_scan_fast_string(x, x->default_sample_type, &def_len);
	pprof_scan_summary_totals(sum, x->n_sample_type, x->tot,
	    pprof_scan_fast_type_string, x, def, def_len);
}

/*
 * The fast path of pprof_scan(): 1 valid, *sum filled; 0 to give up; -1
 * cancelled.
 */
int
pprof_scan_fast_check(const uint8_t *raw, size_t len,
    const volatile int *cancel, struct pprof_summary *sum)
{
	struct scan_fast	fast;

	memset(&fast, 0, sizeof fast);
	fast.cancel = cancel;
	if (!pprof_scan_fast_pass(&fast, raw, raw + len))
		return fast.cancelled ? -1 : 0;
	if (sum != NULL)
		pprof_scan_fast_summarize(&fast, sum);
	return 1;
}
