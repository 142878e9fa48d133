/*
 * pprof wire scanner: the upload check without protobuf-c's object tree.
 *
 * protobuf_c_message_unpack() builds every Sample, Location and Line only
 * for pprof_check() to throw them away, and was the daemon's top CPU cost.
 * pprof_scan() reads the wire format in place instead. First a fast path
 * (pprof_scan_fast.c): one pass, no allocation, for profiles in the
 * canonical form profilers write, which it either accepts or hands over
 * untouched. Everything else, every refusal included, gets the exact
 * passes of this file, three over the top-level fields, which may come in
 * any order and interleave:
 *
 *   0. count the repeated fields, so one scratch block can hold the string
 *      table (a pointer per string), the sample types and the ids;
 *   1. check the wire format of everything, down to packed varints, exactly
 *      as protobuf-c 1.4 does (see proto/pprof_scan_wire.h), record the
 *      ids, and check every string index and the value count of every
 *      sample;
 *   2. once the id tables are built (a bitmap when ids are dense, as they
 *      usually are, a sorted array otherwise), check every location,
 *      function and mapping reference.
 *
 * pprof_validate() stops at the first problem in a fixed order (header,
 * mapping and function strings, id tables, locations, samples); since the
 * passes find problems in another order, each one gets a rank in that
 * order and the lowest ranked one is reported, so causes are the same
 * texts for the same inputs. A wire-format error anywhere wins over all of
 * them, as a failed unpack does.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/budget.h"
#include "common/xmalloc.h"
#include "proto/pprof.h"
#include "proto/pprof_scan.h"
#include "proto/pprof_scan_wire.h"

/* Field numbers of Profile (proto/profile.proto). */
enum scan_profile_field {
	SCAN_P_SAMPLE_TYPE = 1,
	SCAN_P_SAMPLE = 2,
	SCAN_P_MAPPING = 3,
	SCAN_P_LOCATION = 4,
	SCAN_P_FUNCTION = 5,
	SCAN_P_STRING_TABLE = 6,
	SCAN_P_DROP_FRAMES = 7,
	SCAN_P_KEEP_FRAMES = 8,
	SCAN_P_TIME_NANOS = 9,
	SCAN_P_DURATION_NANOS = 10,
	SCAN_P_PERIOD_TYPE = 11,
	SCAN_P_PERIOD = 12,
	SCAN_P_COMMENT = 13,
	SCAN_P_DEFAULT_SAMPLE_TYPE = 14,
	SCAN_P_DOC_URL = 15
};

/* Problem categories, in the order pprof_validate() checks them. */
enum scan_cat {
	SCAN_C_EMPTY,
	SCAN_C_STR0,
	SCAN_C_SAMPLE_TYPE,
	SCAN_C_PERIOD_TYPE,
	SCAN_C_DROP_FRAMES,
	SCAN_C_KEEP_FRAMES,
	SCAN_C_DEFAULT_SAMPLE_TYPE,
	SCAN_C_DOC_URL,
	SCAN_C_COMMENT,
	SCAN_C_NO_TYPES,
	SCAN_C_MAPPING,
	SCAN_C_FUNCTION,
	SCAN_C_IDS_MAPPING,
	SCAN_C_IDS_FUNCTION,
	SCAN_C_IDS_LOCATION,
	SCAN_C_LOCATION,
	SCAN_C_SAMPLE
};

/* First part of a rank: category, then index of the object. */
#define SCAN_RANK(cat, i)	(((uint64_t)(cat) << 56) | (uint64_t)(i))
/* Second part: which check of the object, then index inside it. */
#define SCAN_SUB(sub, j)	(((uint64_t)(sub) << 56) | (uint64_t)(j))

/* The ids of mappings, functions or locations. */
struct scan_ids {
	uint64_t	*ids;	/* by index; sorted if bits is NULL */
	uint64_t	*bits;	/* dense: bit id set if present */
	size_t		 n;
	uint64_t	 max;
};

/* The problem of lowest rank found so far. */
struct scan_err {
	int		 set;
	uint64_t	 a, b, c;
	char		*cause;
};

/* Everything the passes share. */
struct scan {
	const uint8_t	 *raw, *end;
	size_t		  n_sample_type, n_sample, n_string, n_comment;
	int64_t		  drop_frames, keep_frames, default_sample_type;
	int64_t		  doc_url, time_nanos, duration_nanos;
	int		  have_period;
	int64_t		  period_type, period_unit;
	const uint8_t	**strs;		/* string i: its length prefix */
	int64_t		 *st;		/* sample type i: type, unit */
	uint64_t	 *tot;		/* sample type i: sum of its values */
	struct scan_ids	  mappings, functions, locations;
	struct scan_err	  err;
	const volatile int *cancel;	/* the caller's flag, or NULL */
	size_t		  polls;
	int		  cancelled;
};

/* True (and remembered) once the caller's cancel flag is set. */
static inline int
pprof_scan_cancelled(struct scan *s)
{
	if (!s->cancelled && pprof_scan_wire_cancelled(s->cancel, &s->polls))
		s->cancelled = 1;
	return s->cancelled;
}
/* True if rank (a, b, c) is below the problem recorded so far. */
static inline int
pprof_scan_err_wins(const struct scan_err *e, uint64_t a, uint64_t b,
    uint64_t c)
{
	if (!e->set)
		return 1;
	if (a != e->a)
		return a < e->a;
	if (b != e->b)
		return b < e->b;
	return c < e->c;
}

/* Records a problem of rank (a, b, c) if it is the lowest so far. */
static void __attribute__((format(printf, 5, 6)))
pprof_scan_bad(struct scan *s, uint64_t a, uint64_t b, uint64_t c,
    const char *fmt, ...)
{
	va_list	ap;

	if (!pprof_scan_err_wins(&s->err, a, b, c))
		return;
	free(s->err.cause);
	va_start(ap, fmt);
	s->err.cause = xvasprintf(fmt, ap);
	va_end(ap);
	s->err.set = 1;
	s->err.a = a;
	s->err.b = b;
	s->err.c = c;
}

/* True if idx is a valid string index. */
static inline int
pprof_scan_str_ok(const struct scan *s, int64_t idx)
{
	return idx >= 0 && (uint64_t)idx < s->n_string;
}

/*
 * Records a bad string index idx of the formatted field at rank (a, b, c),
 * in pprof_validate()'s words.
 */
static void __attribute__((format(printf, 6, 7)))
pprof_scan_bad_str(struct scan *s, uint64_t a, uint64_t b, uint64_t c,
    int64_t idx, const char *fmt, ...)
{
	va_list	 ap;
	char	*what;

	if (!pprof_scan_err_wins(&s->err, a, b, c))
		return;
	va_start(ap, fmt);
	what = xvasprintf(fmt, ap);
	va_end(ap);
	pprof_scan_bad(s, a, b, c, "%s string index %" PRId64 " out of range "
	    "(%zu strings)", what, idx, s->n_string);
	free(what);
}

/* Pass 0: counts the top-level fields and checks their wire types. */
static int
pprof_scan_count(struct scan *s, struct scan_ids *m, struct scan_ids *fn,
    struct scan_ids *l)
{
	const uint8_t		*p = s->raw;
	struct scan_field	 f;
	int			 r;

	while ((r = pprof_scan_wire_next(&p, s->end, &f)) > 0) {
		if (pprof_scan_cancelled(s))
			return -1;
		switch (f.num) {
		case SCAN_P_SAMPLE_TYPE:
		case SCAN_P_SAMPLE:
		case SCAN_P_MAPPING:
		case SCAN_P_LOCATION:
		case SCAN_P_FUNCTION:
		case SCAN_P_STRING_TABLE:
		case SCAN_P_PERIOD_TYPE:
			if (f.wt != SCAN_LEN)
				return -1;
			break;
		case SCAN_P_COMMENT:
			if (f.wt != SCAN_LEN && f.wt != SCAN_VARINT)
				return -1;
			break;
		case SCAN_P_DROP_FRAMES:
		case SCAN_P_KEEP_FRAMES:
		case SCAN_P_TIME_NANOS:
		case SCAN_P_DURATION_NANOS:
		case SCAN_P_PERIOD:
		case SCAN_P_DEFAULT_SAMPLE_TYPE:
		case SCAN_P_DOC_URL:
			if (f.wt != SCAN_VARINT)
				return -1;
			break;
		}
		switch (f.num) {
		case SCAN_P_SAMPLE_TYPE:
			s->n_sample_type++;
			break;
		case SCAN_P_SAMPLE:
			s->n_sample++;
			break;
		case SCAN_P_MAPPING:
			m->n++;
			break;
		case SCAN_P_LOCATION:
			l->n++;
			break;
		case SCAN_P_FUNCTION:
			fn->n++;
			break;
		case SCAN_P_STRING_TABLE:
			s->n_string++;
			break;
		}
	}
	return r;
}

/* Reads a ValueType: type and unit, last value wins. */
static int
pprof_scan_value_type(const uint8_t *p, size_t len, int64_t *type,
    int64_t *unit)
{
	const uint8_t		*end = p + len;
	struct scan_field	 f;
	int			 r;

	*type = *unit = 0;
	while ((r = pprof_scan_wire_next(&p, end, &f)) > 0) {
		if (f.num != 1 && f.num != 2)
			continue;
		if (f.wt != SCAN_VARINT)
			return -1;
		if (f.num == 1)
			*type = (int64_t)f.v;
		else
			*unit = (int64_t)f.v;
	}
	return r;
}

/* Checks a Label's wire format and strings: label j of sample i. */
static int
pprof_scan_label(struct scan *s, size_t i, size_t j, const uint8_t *p,
    size_t len)
{
	const uint8_t		*end = p + len;
	struct scan_field	 f;
	int64_t			 key = 0, str = 0, num_unit = 0;
	uint64_t		 a = SCAN_RANK(SCAN_C_SAMPLE, i);
	uint64_t		 b = SCAN_SUB(2, j);
	int			 r;

	while ((r = pprof_scan_wire_next(&p, end, &f)) > 0) {
		if (f.num < 1 || f.num > 4)
			continue;
		if (f.wt != SCAN_VARINT)
			return -1;
		if (f.num == 1)
			key = (int64_t)f.v;
		else if (f.num == 2)
			str = (int64_t)f.v;
		else if (f.num == 4)
			num_unit = (int64_t)f.v;
	}
	if (r < 0)
		return -1;
	if (!pprof_scan_str_ok(s, key))
		pprof_scan_bad_str(s, a, b, 0, key,
		    "sample %zu: label %zu: key", i, j);
	if (!pprof_scan_str_ok(s, str))
		pprof_scan_bad_str(s, a, b, 1, str,
		    "sample %zu: label %zu: str", i, j);
	if (!pprof_scan_str_ok(s, num_unit))
		pprof_scan_bad_str(s, a, b, 2, num_unit,
		    "sample %zu: label %zu: num_unit", i, j);
	return 0;
}

/* Pass 1 of sample i: wire format, value count, label strings. */
static int
pprof_scan_sample(struct scan *s, size_t i, const uint8_t *p, size_t len)
{
	const uint8_t		*end = p + len;
	struct scan_field	 f;
	const uint8_t		*q;
	size_t			 n, n_value = 0, n_label = 0;
	int			 r;

	while ((r = pprof_scan_wire_next(&p, end, &f)) > 0) {
		switch (f.num) {
		case 1:
		case 2:
			if (f.wt == SCAN_VARINT)
				n = 1;
			else if (f.wt != SCAN_LEN ||
			    pprof_scan_wire_packed_count(f.p, f.len, &n) != 0)
				return -1;
			if (f.num != 2)
				break;
			if (f.wt == SCAN_VARINT) {
				if (n_value < s->n_sample_type)
					s->tot[n_value] += f.v;
				n_value++;
				break;
			}
			for (q = f.p; n > 0; n--, n_value++) {
				f.v = pprof_scan_wire_packed_next(&q);
				if (n_value < s->n_sample_type)
					s->tot[n_value] += f.v;
			}
			break;
		case 3:
			if (f.wt != SCAN_LEN ||
			    pprof_scan_label(s, i, n_label++, f.p, f.len) != 0)
				return -1;
			break;
		}
	}
	if (r < 0)
		return -1;
	if (n_value != s->n_sample_type)
		pprof_scan_bad(s, SCAN_RANK(SCAN_C_SAMPLE, i), 0, 0,
		    "sample %zu: %zu values for %zu sample types", i, n_value,
		    s->n_sample_type);
	return 0;
}

/* Pass 1 of mapping i: wire format, id, strings. */
static int
pprof_scan_mapping(struct scan *s, size_t i, const uint8_t *p, size_t len)
{
	const uint8_t		*end = p + len;
	struct scan_field	 f;
	uint64_t		 id = 0;
	int64_t			 filename = 0, build_id = 0;
	int			 r;

	while ((r = pprof_scan_wire_next(&p, end, &f)) > 0) {
		/* 7 to 10 are bools: protobuf-c takes any wire type. */
		if (f.num < 1 || f.num > 6)
			continue;
		if (f.wt != SCAN_VARINT)
			return -1;
		if (f.num == 1)
			id = f.v;
		else if (f.num == 5)
			filename = (int64_t)f.v;
		else if (f.num == 6)
			build_id = (int64_t)f.v;
	}
	if (r < 0)
		return -1;
	s->mappings.ids[i] = id;
	if (!pprof_scan_str_ok(s, filename))
		pprof_scan_bad_str(s, SCAN_RANK(SCAN_C_MAPPING, i), 0, 0,
		    filename, "mapping %" PRIu64 ": filename", id);
	if (!pprof_scan_str_ok(s, build_id))
		pprof_scan_bad_str(s, SCAN_RANK(SCAN_C_MAPPING, i), 1, 0,
		    build_id, "mapping %" PRIu64 ": build_id", id);
	return 0;
}

/* Pass 1 of function i: wire format, id, strings. */
static int
pprof_scan_function(struct scan *s, size_t i, const uint8_t *p, size_t len)
{
	const uint8_t		*end = p + len;
	struct scan_field	 f;
	uint64_t		 id = 0;
	int64_t			 name = 0, system_name = 0, filename = 0;
	uint64_t		 a = SCAN_RANK(SCAN_C_FUNCTION, i);
	int			 r;

	while ((r = pprof_scan_wire_next(&p, end, &f)) > 0) {
		if (f.num < 1 || f.num > 5)
			continue;
		if (f.wt != SCAN_VARINT)
			return -1;
		if (f.num == 1)
			id = f.v;
		else if (f.num == 2)
			name = (int64_t)f.v;
		else if (f.num == 3)
			system_name = (int64_t)f.v;
		else if (f.num == 4)
			filename = (int64_t)f.v;
	}
	if (r < 0)
		return -1;
	s->functions.ids[i] = id;
	if (!pprof_scan_str_ok(s, name))
		pprof_scan_bad_str(s, a, 0, 0, name,
		    "function %" PRIu64 ": name", id);
	if (!pprof_scan_str_ok(s, system_name))
		pprof_scan_bad_str(s, a, 1, 0, system_name,
		    "function %" PRIu64 ": system_name", id);
	if (!pprof_scan_str_ok(s, filename))
		pprof_scan_bad_str(s, a, 2, 0, filename,
		    "function %" PRIu64 ": filename", id);
	return 0;
}

/* Reads a Line's function id (0 if none); -1 if malformed. */
static int
pprof_scan_line(const uint8_t *p, size_t len, uint64_t *function_id)
{
	const uint8_t		*end = p + len;
	struct scan_field	 f;
	int			 r;

	*function_id = 0;
	while ((r = pprof_scan_wire_next(&p, end, &f)) > 0) {
		if (f.num < 1 || f.num > 3)
			continue;
		if (f.wt != SCAN_VARINT)
			return -1;
		if (f.num == 1)
			*function_id = f.v;
	}
	return r;
}

/* Reads a Location: id, mapping id; checks its lines' wire format. */
static int
pprof_scan_location_fields(const uint8_t *p, size_t len, uint64_t *id,
    uint64_t *mapping_id)
{
	const uint8_t		*end = p + len;
	struct scan_field	 f;
	uint64_t		 fid;
	int			 r;

	*id = *mapping_id = 0;
	while ((r = pprof_scan_wire_next(&p, end, &f)) > 0) {
		switch (f.num) {
		case 1:
		case 2:
		case 3:
			if (f.wt != SCAN_VARINT)
				return -1;
			if (f.num == 1)
				*id = f.v;
			else if (f.num == 2)
				*mapping_id = f.v;
			break;
		case 4:
			if (f.wt != SCAN_LEN ||
			    pprof_scan_line(f.p, f.len, &fid) != 0)
				return -1;
			break;
		}
		/* 5 is a bool: any wire type. */
	}
	return r;
}

/* Checks comment string index idx, the next comment. */
static void
pprof_scan_comment(struct scan *s, int64_t idx)
{
	if (!pprof_scan_str_ok(s, idx))
		pprof_scan_bad_str(s, SCAN_RANK(SCAN_C_COMMENT, s->n_comment),
		    0, 0, idx, "comment %zu:", s->n_comment);
	s->n_comment++;
}

/* Pass 1 of the whole profile; -1 on a wire-format error. */
static int
pprof_scan_pass1(struct scan *s)
{
	const uint8_t		*p = s->raw, *q, *qend;
	struct scan_field	 f;
	size_t			 i_st = 0, i_s = 0, i_m = 0, i_l = 0, i_f = 0;
	size_t			 i_str = 0;
	uint64_t		 mapping_id;
	size_t			 n;
	int			 r;

	while ((r = pprof_scan_wire_next(&p, s->end, &f)) > 0) {
		if (pprof_scan_cancelled(s))
			return -1;
		switch (f.num) {
		case SCAN_P_SAMPLE_TYPE:
			if (pprof_scan_value_type(f.p, f.len, &s->st[2 * i_st],
			    &s->st[2 * i_st + 1]) != 0)
				return -1;
			if (!pprof_scan_str_ok(s, s->st[2 * i_st]))
				pprof_scan_bad_str(s,
				    SCAN_RANK(SCAN_C_SAMPLE_TYPE, i_st), 0, 0,
				    s->st[2 * i_st],
				    "sample type %zu: type", i_st);
			if (!pprof_scan_str_ok(s, s->st[2 * i_st + 1]))
				pprof_scan_bad_str(s,
				    SCAN_RANK(SCAN_C_SAMPLE_TYPE, i_st), 1, 0,
				    s->st[2 * i_st + 1],
				    "sample type %zu: unit", i_st);
			i_st++;
			break;
		case SCAN_P_SAMPLE:
			if (pprof_scan_sample(s, i_s++, f.p, f.len) != 0)
				return -1;
			break;
		case SCAN_P_MAPPING:
			if (pprof_scan_mapping(s, i_m++, f.p, f.len) != 0)
				return -1;
			break;
		case SCAN_P_LOCATION:
			if (pprof_scan_location_fields(f.p, f.len,
			    &s->locations.ids[i_l++], &mapping_id) != 0)
				return -1;
			break;
		case SCAN_P_FUNCTION:
			if (pprof_scan_function(s, i_f++, f.p, f.len) != 0)
				return -1;
			break;
		case SCAN_P_STRING_TABLE:
			if (i_str == 0 && f.len != 0 && f.p[0] != '\0')
				pprof_scan_bad(s, SCAN_RANK(SCAN_C_STR0, 0), 0,
				    0, "string table entry 0 is not empty");
			s->strs[i_str++] = f.hdr;
			break;
		case SCAN_P_DROP_FRAMES:
			s->drop_frames = (int64_t)f.v;
			break;
		case SCAN_P_KEEP_FRAMES:
			s->keep_frames = (int64_t)f.v;
			break;
		case SCAN_P_TIME_NANOS:
			s->time_nanos = (int64_t)f.v;
			break;
		case SCAN_P_DURATION_NANOS:
			s->duration_nanos = (int64_t)f.v;
			break;
		case SCAN_P_PERIOD_TYPE:
			if (pprof_scan_value_type(f.p, f.len, &s->period_type,
			    &s->period_unit) != 0)
				return -1;
			s->have_period = 1;
			break;
		case SCAN_P_COMMENT:
			if (f.wt == SCAN_VARINT) {
				pprof_scan_comment(s, (int64_t)f.v);
				break;
			}
			if (pprof_scan_wire_packed_count(f.p, f.len, &n) != 0)
				return -1;
			for (q = f.p, qend = f.p + f.len; q < qend;)
				pprof_scan_comment(s,
				    (int64_t)pprof_scan_wire_packed_next(&q));
			break;
		case SCAN_P_DEFAULT_SAMPLE_TYPE:
			s->default_sample_type = (int64_t)f.v;
			break;
		case SCAN_P_DOC_URL:
			s->doc_url = (int64_t)f.v;
			break;
		}
	}
	return r;
}

/* Checks the profile-wide fields once pass 1 has read them. */
static void
pprof_scan_header(struct scan *s)
{
	if (s->n_string == 0)
		pprof_scan_bad(s, SCAN_RANK(SCAN_C_EMPTY, 0), 0, 0,
		    "string table is empty");
	if (s->have_period) {
		if (!pprof_scan_str_ok(s, s->period_type))
			pprof_scan_bad_str(s, SCAN_RANK(SCAN_C_PERIOD_TYPE, 0),
			    0, 0, s->period_type, "period type: type");
		if (!pprof_scan_str_ok(s, s->period_unit))
			pprof_scan_bad_str(s, SCAN_RANK(SCAN_C_PERIOD_TYPE, 0),
			    1, 0, s->period_unit, "period type: unit");
	}
	if (!pprof_scan_str_ok(s, s->drop_frames))
		pprof_scan_bad_str(s, SCAN_RANK(SCAN_C_DROP_FRAMES, 0), 0, 0,
		    s->drop_frames, "drop_frames:");
	if (!pprof_scan_str_ok(s, s->keep_frames))
		pprof_scan_bad_str(s, SCAN_RANK(SCAN_C_KEEP_FRAMES, 0), 0, 0,
		    s->keep_frames, "keep_frames:");
	if (!pprof_scan_str_ok(s, s->default_sample_type))
		pprof_scan_bad_str(s, SCAN_RANK(SCAN_C_DEFAULT_SAMPLE_TYPE, 0),
		    0, 0, s->default_sample_type, "default_sample_type:");
	if (!pprof_scan_str_ok(s, s->doc_url))
		pprof_scan_bad_str(s, SCAN_RANK(SCAN_C_DOC_URL, 0), 0, 0,
		    s->doc_url, "doc_url:");
	if (s->n_sample != 0 && s->n_sample_type == 0)
		pprof_scan_bad(s, SCAN_RANK(SCAN_C_NO_TYPES, 0), 0, 0,
		    "%zu samples but no sample types", s->n_sample);
}

/* Orders ids. */
static int
pprof_scan_id_cmp(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Builds an id table like pprof.c's pprof_ids_build: refuses zero and
 * duplicate ids, a bitmap when ids are dense, else sorts ids in place.
 */
static int
pprof_scan_ids_build(struct scan *s, struct scan_ids *t, const char *what,
    enum scan_cat cat)
{
	size_t		i;
	uint64_t	id;

	t->max = 0;
	for (i = 0; i < t->n; i++) {
		if ((id = t->ids[i]) == 0) {
			pprof_scan_bad(s, SCAN_RANK(cat, 0), 0, 0,
			    "%s at index %zu has id 0", what, i);
			return -1;
		}
		if (id > t->max)
			t->max = id;
	}
	if (t->n == 0)
		return 0;
	if (t->max / 4 <= t->n) {
		/* Room for 4n + 4 bits was reserved: max <= 4n + 3. */
		memset(t->bits, 0, (t->max / 64 + 1) * sizeof *t->bits);
		for (i = 0; i < t->n; i++) {
			id = t->ids[i];
			if (t->bits[id >> 6] & ((uint64_t)1 << (id & 63))) {
				pprof_scan_bad(s, SCAN_RANK(cat, 0), 0, 0,
				    "%s %" PRIu64 ": duplicate id", what, id);
				return -1;
			}
			t->bits[id >> 6] |= (uint64_t)1 << (id & 63);
		}
		return 0;
	}
	t->bits = NULL;
	qsort(t->ids, t->n, sizeof *t->ids, pprof_scan_id_cmp);
	for (i = 1; i < t->n; i++) {
		if (t->ids[i] == t->ids[i - 1]) {
			pprof_scan_bad(s, SCAN_RANK(cat, 0), 0, 0,
			    "%s %" PRIu64 ": duplicate id", what, t->ids[i]);
			return -1;
		}
	}
	return 0;
}

/* True if id is in the table. */
static inline int
pprof_scan_ids_has(const struct scan_ids *t, uint64_t id)
{
	size_t	lo, hi, mid;

	if (id == 0 || id > t->max)
		return 0;
	if (t->bits != NULL)
		return (t->bits[id >> 6] >> (id & 63)) & 1;
	lo = 0;
	hi = t->n;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (t->ids[mid] == id)
			return 1;
		if (t->ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* Pass 2 of location i: its mapping and function references. */
static void
pprof_scan_location_refs(struct scan *s, size_t i, const uint8_t *p, size_t len)
{
	const uint8_t		*end = p + len;
	struct scan_field	 f;
	uint64_t		 id = 0, mapping_id = 0, fid, bad_fid = 0;
	size_t			 j = 0, bad_j = SIZE_MAX;

	/* Pass 1 checked the wire format. */
	while (pprof_scan_wire_next(&p, end, &f) > 0) {
		if (f.num == 1)
			id = f.v;
		else if (f.num == 2)
			mapping_id = f.v;
		else if (f.num == 4) {
			(void)pprof_scan_line(f.p, f.len, &fid);
			if (bad_j == SIZE_MAX && fid != 0 &&
			    !pprof_scan_ids_has(&s->functions, fid)) {
				bad_j = j;
				bad_fid = fid;
			}
			j++;
		}
	}
	if (mapping_id != 0 && !pprof_scan_ids_has(&s->mappings, mapping_id))
		pprof_scan_bad(s, SCAN_RANK(SCAN_C_LOCATION, i), 0, 0,
		    "location %" PRIu64 ": mapping id %" PRIu64 " not found",
		    id, mapping_id);
	if (bad_j != SIZE_MAX)
		pprof_scan_bad(s, SCAN_RANK(SCAN_C_LOCATION, i),
		    SCAN_SUB(1, bad_j), 0, "location %" PRIu64 ": line %zu: "
		    "function id %" PRIu64 " not found", id, bad_j, bad_fid);
}

/* Pass 2 of sample i: its location ids. */
static void
pprof_scan_sample_refs(struct scan *s, size_t i, const uint8_t *p, size_t len)
{
	const uint8_t		*end = p + len, *q, *qend;
	struct scan_field	 f;
	uint64_t		 v;
	size_t			 j = 0;

	while (pprof_scan_wire_next(&p, end, &f) > 0) {
		if (f.num != 1)
			continue;
		if (f.wt == SCAN_VARINT) {
			v = f.v;
			if (!pprof_scan_ids_has(&s->locations, v))
				goto bad;
			j++;
			continue;
		}
		q = f.p;
		qend = f.p + f.len;
		while (q < qend) {
			v = pprof_scan_wire_packed_next(&q);
			if (!pprof_scan_ids_has(&s->locations, v))
				goto bad;
			j++;
		}
	}
	return;
bad:
	pprof_scan_bad(s, SCAN_RANK(SCAN_C_SAMPLE, i), SCAN_SUB(1, j), 0,
	    "sample %zu: location id %" PRIu64 " not found", i, v);
}

/* Pass 2: every location and sample reference. */
static void
pprof_scan_pass2(struct scan *s)
{
	const uint8_t		*p = s->raw;
	struct scan_field	 f;
	size_t			 i_s = 0, i_l = 0;

	while (pprof_scan_wire_next(&p, s->end, &f) > 0) {
		if (pprof_scan_cancelled(s))
			return;
		if (f.num == SCAN_P_SAMPLE)
			pprof_scan_sample_refs(s, i_s++, f.p, f.len);
		else if (f.num == SCAN_P_LOCATION)
			pprof_scan_location_refs(s, i_l++, f.p, f.len);
	}
}

/* String idx (valid) up to its first NUL, as the C string would be. */
static const uint8_t *
pprof_scan_string(const struct scan *s, int64_t idx, size_t *len)
{
	const uint8_t	*hdr = s->strs[idx], *nul;
	uint64_t	 v;
	size_t		 n;

	n = pprof_scan_wire_varint(hdr, s->end, 5, &v);
	*len = (size_t)v;
	if ((nul = memchr(hdr + n, '\0', *len)) != NULL)
		*len = (size_t)(nul - (hdr + n));
	return hdr + n;
}

/* Sample type string j of the exact passes (see pprof_scan_summary_fill). */
static const uint8_t *
pprof_scan_type_string(const void *ctx, size_t j, size_t *len)
{
	const struct scan *s = ctx;

	return pprof_scan_string(s, s->st[j], len);
}

/* Fills *sum like pprof_summarize(). */
static void
pprof_scan_summarize(const struct scan *s, struct pprof_summary *sum)
{
	const uint8_t	*def = NULL;
	size_t		 def_len = 0;

	pprof_scan_summary_fill(sum, s->n_sample_type, pprof_scan_type_string,
	    s, (int64_t)s->n_sample, s->time_nanos, s->duration_nanos);
	if (s->default_sample_type != 0)
		def = pprof_scan_string(s, s->default_sample_type, &def_len);
	pprof_scan_summary_totals(sum, s->n_sample_type, s->tot,
	    pprof_scan_type_string, s, def, def_len);
}

/* 64-bit words of a dense id bitmap for n ids: 4n + 4 bits. */
static size_t
pprof_scan_bits_words(size_t n)
{
	return (4 * n + 4) / 64 + 1;
}
/*
 * Checks and summarizes raw bytes; try_fast: the fast path first. The
 * exact passes' scratch is charged to acct (may be NULL).
 */
static int
pprof_scan_run(const uint8_t *raw, size_t len, struct pprof_summary *sum,
    struct budget_acct *acct, const volatile int *cancel, char **cause,
    int try_fast)
{
	struct scan	 s;
	uint64_t	*scratch = NULL, *w;
	size_t		 words = 0;
	int		 ret = PPROF_EINVAL;

	if (sum != NULL)
		memset(sum, 0, sizeof *sum);
	if (try_fast && (ret = pprof_scan_fast_check(raw, len, cancel,
	    sum)) != 0) {
		if (ret > 0)
			return 0;
		xcause(cause, "cancelled");
		return PPROF_ECANCELED;
	}
	ret = PPROF_EINVAL;
	memset(&s, 0, sizeof s);
	s.raw = raw;
	s.end = raw + len;
	s.cancel = cancel;
	if (pprof_scan_count(&s, &s.mappings, &s.functions, &s.locations) != 0)
		goto decode;

	/* One scratch block; counts are bounded by len / 2. */
	words = s.n_string + 3 * s.n_sample_type + s.mappings.n +
	    s.functions.n + s.locations.n +
	    pprof_scan_bits_words(s.mappings.n) +
	    pprof_scan_bits_words(s.functions.n) +
	    pprof_scan_bits_words(s.locations.n);
	if (words > SIZE_MAX / sizeof *scratch || (scratch = budget_alloc(acct,
	    words * sizeof *scratch)) == NULL) {
		xcause(cause, "no memory to check the profile (%zu bytes)",
		    words * sizeof *scratch);
		return PPROF_ENOMEM;
	}
	w = scratch;
	s.strs = (const uint8_t **)(void *)w;
	w += s.n_string;
	s.st = (int64_t *)(void *)w;
	w += 2 * s.n_sample_type;
	s.tot = w;
	memset(s.tot, 0, s.n_sample_type * sizeof *s.tot);
	w += s.n_sample_type;
	s.mappings.ids = w;
	w += s.mappings.n;
	s.functions.ids = w;
	w += s.functions.n;
	s.locations.ids = w;
	w += s.locations.n;
	s.mappings.bits = w;
	w += pprof_scan_bits_words(s.mappings.n);
	s.functions.bits = w;
	w += pprof_scan_bits_words(s.functions.n);
	s.locations.bits = w;

	if (pprof_scan_pass1(&s) != 0)
		goto decode;
	pprof_scan_header(&s);
	if (s.err.set && s.err.a < SCAN_RANK(SCAN_C_IDS_MAPPING, 0))
		goto fail;
	if (pprof_scan_ids_build(&s, &s.mappings, "mapping",
	    SCAN_C_IDS_MAPPING) != 0 ||
	    pprof_scan_ids_build(&s, &s.functions, "function",
	    SCAN_C_IDS_FUNCTION) != 0 ||
	    pprof_scan_ids_build(&s, &s.locations, "location",
	    SCAN_C_IDS_LOCATION) != 0)
		goto fail;
	pprof_scan_pass2(&s);
	if (s.cancelled)
		goto decode;
	if (s.err.set)
		goto fail;
	if (sum != NULL)
		pprof_scan_summarize(&s, sum);
	ret = 0;
	goto out;

decode:
	free(s.err.cause);
	s.err.cause = NULL;
	if (s.cancelled) {
		ret = PPROF_ECANCELED;
		xcause(cause, "cancelled");
		goto out;
	}
	/* Same words as pprof_decode() when protobuf-c refuses the bytes. */
	xcause(cause, "not a pprof profile: protobuf decode failed");
	goto out;
fail:
	if (cause != NULL) {
		*cause = s.err.cause;
		s.err.cause = NULL;
	}
out:
	free(s.err.cause);
	budget_dealloc(acct, scratch, words * sizeof *scratch);
	return ret;
}

/* Checks and summarizes raw protobuf bytes. */
int
pprof_scan(const uint8_t *raw, size_t len, struct pprof_summary *sum,
    char **cause)
{
	return pprof_scan_run(raw, len, sum, NULL, NULL, cause, 1);
}

/* The same, the scratch charged to acct, stopping at *cancel. */
int
pprof_scan_acct(const uint8_t *raw, size_t len, struct budget_acct *acct,
    const volatile int *cancel, char **cause)
{
	return pprof_scan_run(raw, len, NULL, acct, cancel, cause, 1);
}

/* The same with the exact passes only (tests compare the two). */
int
pprof_scan_exact(const uint8_t *raw, size_t len, struct pprof_summary *sum,
    char **cause)
{
	return pprof_scan_run(raw, len, sum, NULL, NULL, cause, 0);
}
