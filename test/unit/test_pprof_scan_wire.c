/*
 * Differential tests of the wire scanner (proto/pprof_scan.c) against the
 * protobuf-c path it replaced in pprof_check() on hand-made wire-format
 * profiles: corner cases of the encoding (packed and unpacked fields,
 * unknown fields and wire types, overlong varints and keys, interleaved and
 * repeated fields, every validation error), each with the verdict and cause
 * it must give, and variants of a valid profile around the scanner's fast
 * path (ids out of order, long stacks, references one past the end). Both
 * paths must give the same verdict, cause and summary. No corpus needed;
 * test_pprof_scan.c runs the corpus and the mutations.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/lib/scan_testlib.h"
#include "test/lib/tap.h"

/* How the hand-made profile is encoded and what is broken in it. */
enum hand_case {
	H_BASE,
	H_UNPACKED,		/* location ids and values one per field */
	H_MIXED,		/* values half unpacked, half packed */
	H_REVERSED,		/* top-level fields in reverse order */
	H_INTERLEAVED,		/* samples between strings and locations */
	H_UNKNOWN,		/* unknown fields of every wire type */
	H_GROUP,		/* an unknown field of wire type 3 */
	H_WT6,			/* wire type 6 */
	H_FIELD0,		/* a one-byte key of field 0 */
	H_FIELD0_LONG,		/* an overlong key of field 0 */
	H_WT_TIME,		/* time_nanos as fixed64 */
	H_WT_SAMPLE_TYPE,	/* sample_type as a varint */
	H_WT_LOCID,		/* location_id as fixed32 */
	H_WT_STRING,		/* a string as a varint */
	H_WT_LABEL,		/* label key as fixed64 */
	H_WT_LINE,		/* Location.line as a varint */
	H_BOOL_FIXED,		/* Mapping.has_functions as fixed64 */
	H_VARINT10,		/* a 10-byte varint */
	H_VARINT11,		/* an 11-byte varint */
	H_TAG5,			/* a 5-byte tag of field 9 */
	H_TAG6,			/* a 6-byte tag */
	H_LEN6,			/* a 6-byte length prefix */
	H_LEN5,			/* a 5-byte length prefix of 1 */
	H_LEN5_HIGH,		/* a 5-byte length prefix of 2^32 */
	H_LEN_PAST,		/* a length past the end */
	H_PACKED_OPEN,		/* packed varints ending mid-varint */
	H_PERIOD_TWICE_OK,	/* a bad period_type, then a good one */
	H_PERIOD_TWICE_BAD,	/* a good period_type, then a bad one */
	H_STR0_NUL,		/* string 0 is "\0x": empty as a C string */
	H_STR_NUL,		/* a sample type string with a NUL inside */
	H_NO_STRINGS,
	H_STR0,			/* string 0 is "x" */
	H_ST_INDEX,		/* a sample type unit out of range */
	H_PERIOD_INDEX,
	H_DROP_INDEX,
	H_COMMENT_INDEX,	/* the second comment, unpacked */
	H_NO_TYPES,
	H_MAPPING_STR,
	H_FUNCTION_STR,
	H_LOC_ID0,
	H_LOC_DUP,
	H_SPARSE,		/* sparse location ids */
	H_SPARSE_DUP,
	H_MAPPING_REF,
	H_FUNCTION_REF,
	H_SAMPLE_LOC,
	H_VALUES,
	H_LABEL_STR,
	H_ORDER1,		/* label error and mapping error: mapping */
	H_ORDER2,		/* sample 1 values, sample 0 location */
	H_ORDER3,		/* bad location, then a wire error */
	H_NCASES
};

/* Appends one sample: 2 locations, 2 values, a label, as the case says. */
static void
hand_sample(struct buf *b, enum hand_case c, int which)
{
	struct buf	s = { NULL, 0, 0 }, l = { NULL, 0, 0 };
	uint64_t	locs[2] = { 1, 2 }, vals[2] = { 5, 50000000 };

	if (c == H_SAMPLE_LOC && which == 0)
		locs[1] = 9;
	if (c == H_ORDER2)
		locs[1] = which == 0 ? 9 : 2;
	if (c == H_SPARSE || c == H_SPARSE_DUP) {
		locs[0] = 1000;
		locs[1] = 5000000;
	}
	if (c == H_UNPACKED) {
		put_int(&s, 2, vals[0]);
		put_int(&s, 1, locs[0]);
		put_int(&s, 2, vals[1]);
		put_int(&s, 1, locs[1]);
	} else if (c == H_MIXED) {
		put_int(&s, 2, vals[0]);
		put_packed(&s, 1, locs, 2);
		put_packed(&s, 2, vals + 1, 1);
	} else if (c == H_WT_LOCID) {
		put_tag(&s, 1, 5);
		put(&s, "\1\0\0\0", 4);
		put_packed(&s, 2, vals, 2);
	} else {
		put_packed(&s, 1, locs, 2);
		put_packed(&s, 2, vals,
		    c == H_VALUES || (c == H_ORDER2 && which == 1) ? 1 : 2);
	}
	if (c == H_PACKED_OPEN) {
		put_tag(&s, 1, 2);
		put_varint(&s, 2);
		put(&s, "\x01\x81", 2);
	}
	if (c == H_WT_LABEL) {
		put_tag(&l, 1, 1);
		put(&l, "\5\0\0\0\0\0\0\0", 8);
	} else
		put_int(&l, 1, c == H_LABEL_STR || c == H_ORDER1 ? 99 : 5);
	put_int(&l, 2, 6);
	if (c == H_UNKNOWN) {
		put_int(&l, 7, 1);
		put_int(&s, 12, 3);
		put_tag(&s, 9, 5);
		put(&s, "abcd", 4);
	}
	put_msg(&s, 3, &l);
	put_msg(b, 2, &s);
}

/* Appends the strings of the hand-made profile. */
static void
hand_strings(struct buf *b, enum hand_case c, int from, int to)
{
	static const char	*str[] = { "", "samples", "count", "cpu",
				    "nanoseconds", "endpoint", "/x", "/bin/app",
				    "main", "work" };
	int			 i;

	if (c == H_NO_STRINGS)
		return;
	for (i = from; i < to; i++) {
		if (i == 0 && c == H_STR0_NUL)
			put_str(b, 6, "\0x", 2);
		else if (i == 0 && c == H_STR0)
			put_str(b, 6, "x", 1);
		else if (i == 3 && c == H_STR_NUL)
			put_str(b, 6, "cp\0u", 4);
		else if (i == 4 && c == H_WT_STRING)
			put_int(b, 6, 4);
		else
			put_str(b, 6, str[i], strlen(str[i]));
	}
}

/* Appends a ValueType field. */
static void
hand_value_type(struct buf *b, uint32_t num, uint64_t type, uint64_t unit)
{
	struct buf	vt = { NULL, 0, 0 };

	put_int(&vt, 1, type);
	put_int(&vt, 2, unit);
	put_msg(b, num, &vt);
}

/* Appends the mapping, locations and functions. */
static void
hand_objects(struct buf *b, enum hand_case c)
{
	struct buf	m = { NULL, 0, 0 }, l = { NULL, 0, 0 };
	struct buf	ln = { NULL, 0, 0 }, f = { NULL, 0, 0 };
	uint64_t	lid[2] = { 1, 2 };

	put_int(&m, 1, 1);
	put_int(&m, 5, c == H_MAPPING_STR ? 77 : 7);
	if (c == H_BOOL_FIXED) {
		put_tag(&m, 7, 1);
		put(&m, "\1\0\0\0\0\0\0\0", 8);
	}
	put_msg(b, 3, &m);

	if (c == H_LOC_ID0)
		lid[1] = 0;
	if (c == H_LOC_DUP)
		lid[1] = 1;
	if (c == H_SPARSE || c == H_SPARSE_DUP) {
		lid[0] = c == H_SPARSE ? 1000 : 5000000;
		lid[1] = 5000000;
	}
	put_int(&ln, 1, c == H_FUNCTION_REF ? 3 : 1);
	put_int(&ln, 2, 10);
	put_msg(&l, 4, &ln);
	put_int(&l, 1, lid[0]);
	put_int(&l, 2, c == H_MAPPING_REF || c == H_ORDER1 ||
	    c == H_ORDER3 ? 4 : 1);
	if (c == H_UNKNOWN)
		put_int(&l, 6, 1);
	if (c == H_FIELD0_LONG)		/* field 0 again, inside a location */
		put(&l, "\x82\x00\x02zz", 5);
	put_msg(b, 4, &l);
	put_int(&l, 1, lid[1]);
	if (c == H_WT_LINE)
		put_int(&l, 4, 1);
	else {
		put_int(&ln, 1, 2);
		put_msg(&l, 4, &ln);
	}
	put_msg(b, 4, &l);

	put_int(&f, 1, 1);
	put_int(&f, 2, 8);
	put_int(&f, 4, c == H_FUNCTION_STR ? 10 : 7);
	put_msg(b, 5, &f);
	put_int(&f, 1, 2);
	put_int(&f, 2, 9);
	put_msg(b, 5, &f);
}

/* Appends the profile-wide scalar fields. */
static void
hand_scalars(struct buf *b, enum hand_case c)
{
	if (c == H_WT_TIME) {
		put_tag(b, 9, 1);
		put(b, "\1\2\3\4\5\6\7\0", 8);
	} else if (c == H_VARINT10) {
		put_tag(b, 9, 0);
		put(b, "\x81\x80\x80\x80\x80\x80\x80\x80\x80\x00", 10);
	} else if (c == H_VARINT11) {
		put_tag(b, 9, 0);
		put(b, "\x81\x80\x80\x80\x80\x80\x80\x80\x80\x80\x00", 11);
	} else if (c == H_TAG5) {
		put(b, "\xc8\x80\x80\x80\x00", 5);
		put_varint(b, 1234567);
	} else if (c == H_TAG6) {
		put(b, "\xc8\x80\x80\x80\x80\x00", 6);
		put_varint(b, 1234567);
	} else
		put_int(b, 9, 1795307233638768938ULL);
	put_int(b, 10, 1000000000);
	if (c == H_PERIOD_TWICE_OK || c == H_PERIOD_TWICE_BAD)
		hand_value_type(b, 11, c == H_PERIOD_TWICE_OK ? 3 : 33, 4);
	hand_value_type(b, 11, c == H_PERIOD_INDEX ||
	    c == H_PERIOD_TWICE_BAD ? 33 : 3, 4);
	put_int(b, 12, 10000000);
	put_int(b, 7, c == H_DROP_INDEX ? 10 : 0);
	put_int(b, 13, 1);
	put_int(b, 13, c == H_COMMENT_INDEX ? 10 : 2);
	if (c == H_FIELD0_LONG)
		put(b, "\x80\x00\x05", 3);	/* field 0, overlong key */
	if (c == H_UNKNOWN) {
		put_tag(b, 99, 1);
		put(b, "12345678", 8);
		put_tag(b, 100, 5);
		put(b, "1234", 4);
		put_str(b, 1000000, "unknown", 7);
		put_int(b, 536870911, 1);
	}
	if (c == H_GROUP)
		put_tag(b, 20, 3);
	if (c == H_WT6)
		put_tag(b, 20, 6);
	if (c == H_FIELD0)
		put_int(b, 0, 1);
	if (c == H_LEN5) {
		put_tag(b, 20, 2);
		put(b, "\x81\x80\x80\x80\x00x", 6);
	}
	if (c == H_LEN5_HIGH) {
		put_tag(b, 20, 2);
		put(b, "\x80\x80\x80\x80\x10", 5);
	}
	if (c == H_LEN6) {
		put_tag(b, 20, 2);
		put(b, "\x81\x80\x80\x80\x80\x00", 6);
	}
}

/* Encodes the hand-made profile for case c. */
static void
hand_encode(struct buf *b, enum hand_case c)
{
	memset(b, 0, sizeof *b);
	if (c == H_REVERSED) {
		hand_strings(b, c, 0, 10);
		hand_scalars(b, c);
		hand_objects(b, c);
		hand_sample(b, c, 1);
		hand_sample(b, c, 0);
		hand_value_type(b, 1, 1, 2);
		hand_value_type(b, 1, 3, 4);
		return;
	}
	if (c == H_WT_SAMPLE_TYPE)
		put_int(b, 1, 1);
	else if (c != H_NO_TYPES) {
		hand_value_type(b, 1, 1, 2);
		hand_value_type(b, 1, c == H_STR_NUL ? 3 : 3,
		    c == H_ST_INDEX ? 10 : 4);
	}
	if (c == H_INTERLEAVED) {
		hand_strings(b, c, 0, 4);
		hand_sample(b, c, 0);
		hand_objects(b, c);
		hand_strings(b, c, 4, 7);
		hand_sample(b, c, 1);
		hand_strings(b, c, 7, 10);
		hand_scalars(b, c);
		return;
	}
	hand_sample(b, c, 0);
	hand_sample(b, c, 1);
	hand_objects(b, c);
	hand_strings(b, c, 0, 10);
	hand_scalars(b, c);
	if (c == H_LEN_PAST) {
		put_tag(b, 6, 2);
		put_varint(b, 50);
		put(b, "short", 5);
	}
	if (c == H_ORDER3)
		put_tag(b, 20, 7);
}

/* What a hand-made case must give: verdict and start of the cause. */
struct hand_want {
	enum hand_case	 c;
	const char	*name;
	int		 code;
	const char	*cause;	/* prefix; a summary's types if accepted */
};

static const struct hand_want hand_wants[] = {
	{ H_BASE, "base", 0, "samples/count,cpu/nanoseconds" },
	{ H_UNPACKED, "unpacked repeated", 0,
	    "samples/count,cpu/nanoseconds" },
	{ H_MIXED, "packed and unpacked mixed", 0,
	    "samples/count,cpu/nanoseconds" },
	{ H_REVERSED, "fields in reverse order", 0,
	    "samples/count,cpu/nanoseconds" },
	{ H_INTERLEAVED, "fields interleaved", 0,
	    "samples/count,cpu/nanoseconds" },
	{ H_UNKNOWN, "unknown fields", 0,
	    "samples/count,cpu/nanoseconds" },
	{ H_GROUP, "wire type 3", PPROF_EINVAL, "not a pprof profile" },
	{ H_WT6, "wire type 6", PPROF_EINVAL, "not a pprof profile" },
	{ H_FIELD0, "key byte of field 0", PPROF_EINVAL,
	    "not a pprof profile" },
	/* protobuf-c accepts this one, then cannot unpack what it packs
	 * from it (fuzz_pprof found it): the scanner refuses it. */
	{ H_FIELD0_LONG, "overlong key of field 0", PPROF_EINVAL,
	    "not a pprof profile" },
	{ H_WT_TIME, "time_nanos as fixed64", PPROF_EINVAL,
	    "not a pprof profile" },
	{ H_WT_SAMPLE_TYPE, "sample_type as varint", PPROF_EINVAL,
	    "not a pprof profile" },
	{ H_WT_LOCID, "location_id as fixed32", PPROF_EINVAL,
	    "not a pprof profile" },
	{ H_WT_STRING, "string as varint", PPROF_EINVAL,
	    "not a pprof profile" },
	{ H_WT_LABEL, "label key as fixed64", PPROF_EINVAL,
	    "not a pprof profile" },
	{ H_WT_LINE, "line as varint", PPROF_EINVAL, "not a pprof profile" },
	{ H_BOOL_FIXED, "bool as fixed64 (protobuf-c takes it)", 0,
	    "samples/count,cpu/nanoseconds" },
	{ H_VARINT10, "10-byte varint", 0, "samples/count,cpu/nanoseconds" },
	{ H_VARINT11, "11-byte varint", PPROF_EINVAL, "not a pprof profile" },
	{ H_TAG5, "5-byte tag", 0, "samples/count,cpu/nanoseconds" },
	{ H_TAG6, "6-byte tag", PPROF_EINVAL, "not a pprof profile" },
	{ H_LEN6, "6-byte length", PPROF_EINVAL, "not a pprof profile" },
	{ H_LEN5, "5-byte length of 1", 0, "samples/count,cpu/nanoseconds" },
	{ H_LEN5_HIGH, "5-byte length of 2^32", PPROF_EINVAL,
	    "not a pprof profile" },
	{ H_LEN_PAST, "length past the end", PPROF_EINVAL,
	    "not a pprof profile" },
	{ H_PACKED_OPEN, "packed varint cut off", PPROF_EINVAL,
	    "not a pprof profile" },
	{ H_PERIOD_TWICE_OK, "period_type twice, last good", 0,
	    "samples/count,cpu/nanoseconds" },
	{ H_PERIOD_TWICE_BAD, "period_type twice, last bad", PPROF_EINVAL,
	    "period type: type string index 33" },
	{ H_STR0_NUL, "string 0 with a NUL first", 0,
	    "samples/count,cpu/nanoseconds" },
	{ H_STR_NUL, "NUL inside a type string", 0,
	    "samples/count,cp/nanoseconds" },
	{ H_NO_STRINGS, "no strings", PPROF_EINVAL, "string table is empty" },
	{ H_STR0, "string 0 not empty", PPROF_EINVAL,
	    "string table entry 0 is not empty" },
	{ H_ST_INDEX, "sample type unit", PPROF_EINVAL,
	    "sample type 1: unit string index 10 out of range (10 strings)" },
	{ H_PERIOD_INDEX, "period type", PPROF_EINVAL,
	    "period type: type string index 33" },
	{ H_DROP_INDEX, "drop_frames", PPROF_EINVAL,
	    "drop_frames: string index 10" },
	{ H_COMMENT_INDEX, "comment", PPROF_EINVAL,
	    "comment 1: string index 10" },
	{ H_NO_TYPES, "no sample types", PPROF_EINVAL,
	    "2 samples but no sample types" },
	{ H_MAPPING_STR, "mapping filename", PPROF_EINVAL,
	    "mapping 1: filename string index 77" },
	{ H_FUNCTION_STR, "function filename", PPROF_EINVAL,
	    "function 1: filename string index 10" },
	{ H_LOC_ID0, "location id 0", PPROF_EINVAL,
	    "location at index 1 has id 0" },
	{ H_LOC_DUP, "duplicate location id", PPROF_EINVAL,
	    "location 1: duplicate id" },
	{ H_SPARSE, "sparse location ids", 0,
	    "samples/count,cpu/nanoseconds" },
	{ H_SPARSE_DUP, "sparse duplicate ids", PPROF_EINVAL,
	    "location 5000000: duplicate id" },
	{ H_MAPPING_REF, "unknown mapping", PPROF_EINVAL,
	    "location 1: mapping id 4 not found" },
	{ H_FUNCTION_REF, "unknown function", PPROF_EINVAL,
	    "location 1: line 0: function id 3 not found" },
	{ H_SAMPLE_LOC, "unknown sample location", PPROF_EINVAL,
	    "sample 0: location id 9 not found" },
	{ H_VALUES, "value count", PPROF_EINVAL,
	    "sample 0: 1 values for 2 sample types" },
	{ H_LABEL_STR, "label key", PPROF_EINVAL,
	    "sample 0: label 0: key string index 99" },
	{ H_ORDER1, "location error before sample error", PPROF_EINVAL,
	    "location 1: mapping id 4 not found" },
	{ H_ORDER2, "sample 0 before sample 1", PPROF_EINVAL,
	    "sample 0: location id 9 not found" },
	{ H_ORDER3, "wire error after a reference error", PPROF_EINVAL,
	    "not a pprof profile" },
};

/* The hand-made wire cases: expected verdicts and agreement. */
static void
test_hand(void)
{
	const struct hand_want	*w;
	struct pprof_summary	 sum;
	struct buf		 b;
	char			*d, *cause;
	size_t			 i;
	int			 code, good;

	for (i = 0; i < sizeof hand_wants / sizeof hand_wants[0]; i++) {
		w = &hand_wants[i];
		hand_encode(&b, w->c);
		d = both(b.p, b.len, MAX_INFLATED, &code, &cause, &sum);
		if (w->code == 0)
			good = code == 0 && sum.samples == 2 &&
			    strcmp(sum.sample_types, w->cause) == 0;
		else
			good = code == w->code && cause != NULL &&
			    strncmp(cause, w->cause, strlen(w->cause)) == 0;
		ok(good && (d == NULL || w->c == H_FIELD0_LONG),
		    "hand: %s: %s%s%s", w->name,
		    code == 0 ? sum.sample_types : cause, d ? "; " : "",
		    d ? d : "");
		free(d);
		free(cause);
		pprof_summary_free(&sum);
		free(b.p);
	}
}

/*
 * Variants of a valid profile around the scanner's fast path (canonical
 * field order, ids 1..n in order, string indices and references checked
 * as maxima): each gives up there or not, and must agree with protobuf-c.
 */
enum fast_case {
	F_PLAIN,		/* the fast path's profile */
	F_MANY_STRINGS,		/* sample type strings past index 64 */
	F_MANY_TYPES,		/* 17 sample types */
	F_IDS_REVERSED,		/* ids n..1: valid, not in order */
	F_IDS_GAP,		/* location ids 1, 3 */
	F_LONG_VARINTS,		/* 10-byte values and 9-byte addresses */
	F_MIXED,		/* unpacked location ids, packed values */
	F_FIELD_ORDER,		/* every message's fields reversed */
	F_DUP_IDS,		/* a location id given twice, last one 2 */
	F_LOC0,			/* a sample naming location 0 */
	F_LOC_PAST,		/* a sample naming location n + 1 */
	F_LOC_PAST_LAST,	/* ... as the last byte of its packed ids */
	F_FN_PAST,		/* a line naming function n + 1 */
	F_MAP_PAST,		/* a location naming mapping n + 1 */
	F_STR_PAST,		/* a label string index n */
	F_FN_STR_PAST,		/* a function name index n */
	F_VALUES_FIRST,		/* sample 0 has 1 value, the others 2 */
	F_VALUES_LATER,		/* sample 2 has 3 values */
	F_NEG_INDEX,		/* a label key of -1 */
	F_UNKNOWN,		/* an unknown field in a location */
	F_LONG_STACK,		/* 60 location ids of 1 and 2 bytes */
	F_LONG_STACK_PAST,	/* ... with n + 1 late in the second half */
	F_LONG_STACK_ZERO,	/* ... with 0 early in the first half */
	F_LONG_STACK_OPEN,	/* ... ending mid-varint */
	F_NCASES
};

/* Appends the profile of case c. */
static void
fast_encode(struct buf *b, enum fast_case c)
{
	struct buf	m = { NULL, 0, 0 }, l = { NULL, 0, 0 };
	uint64_t	locs[3], stack[60];
	char		name[32];
	int		i, n_loc = 3, n_fn = 2, nst, strs, id;

	memset(b, 0, sizeof *b);
	if (c >= F_LONG_STACK)
		n_loc = 300;
	nst = c == F_MANY_TYPES ? 17 : 2;
	strs = c == F_MANY_STRINGS ? 80 : 10;
	for (i = 0; i < nst; i++) {
		put_int(&m, 1, c == F_MANY_STRINGS ? 70 + i % 2 : 1 + i % 4);
		put_int(&m, 2, c == F_MANY_STRINGS ? 72 + i % 3 : 5);
		put_msg(b, 1, &m);
	}
	for (i = 0; i < 3; i++) {
		locs[0] = c == F_LOC0 && i == 1 ? 0 : 1 + (uint64_t)i % 2;
		locs[1] = 2;
		locs[2] = c == F_LOC_PAST && i == 2 ? 4 : 3;
		if ((c == F_LOC_PAST_LAST && i == 1) || c == F_IDS_GAP)
			locs[2] = 4;
		if (c >= F_LONG_STACK) {
			for (id = 0; id < 60; id++)
				stack[id] = (uint64_t)(id * 37 + i * 11) % 300 +
				    1;
			if (c == F_LONG_STACK_PAST && i == 1)
				stack[55] = 301;
			if (c == F_LONG_STACK_ZERO && i == 2)
				stack[3] = 0;
			put_packed(&m, 1, stack, 60);
			if (c == F_LONG_STACK_OPEN && i == 0)
				m.p[m.len - 1] |= 0x80;
			put_int(&m, 2, 1);
			put_int(&m, 2, 2);
		} else if (c == F_MIXED) {
			put_int(&m, 1, locs[0]);
			put_packed(&m, 1, locs + 1, 2);
			put_packed(&m, 2, (uint64_t[]){ 7, 8 }, 2);
		} else if (c == F_MANY_TYPES) {
			put_packed(&m, 1, locs, 3);
			put_packed(&m, 2, locs, 3);
			put_packed(&m, 2, (uint64_t[]){ 1, 2, 3, 4, 5, 6, 7,
			    8, 9, 10, 11, 12, 13, 14 }, 14);
		} else if (c == F_FIELD_ORDER) {
			put_int(&m, 2, 300);
			put_int(&m, 2, 5);
			put_packed(&m, 1, locs, 3);
		} else {
			put_packed(&m, 1, locs, 3);
			put_int(&m, 2, c == F_LONG_VARINTS ? (uint64_t)-5 :
			    1000000 + (uint64_t)i);
			if (!(c == F_VALUES_FIRST && i == 0))
				put_int(&m, 2, 300);
			if (c == F_VALUES_LATER && i == 2)
				put_int(&m, 2, 1);
		}
		put_int(&l, 1, c == F_NEG_INDEX && i == 1 ? (uint64_t)-1 : 6);
		put_int(&l, 2, c == F_STR_PAST && i == 2 ? (uint64_t)strs : 7);
		put_int(&l, 3, 42);
		put_msg(&m, 3, &l);
		put_msg(b, 2, &m);
	}
	put_int(&m, 1, 1);
	put_int(&m, 2, 0x400000);
	put_int(&m, 3, 0x7fffffffffffULL);
	put_int(&m, 5, 8);
	put_int(&m, 7, 1);
	put_msg(b, 3, &m);
	for (i = 0; i < n_loc; i++) {
		id = c == F_IDS_REVERSED ? n_loc - i : i + 1;
		if (c == F_IDS_GAP && i == 2)
			id = 4;
		if (c == F_FIELD_ORDER) {
			put_int(&l, 2, 10 + (uint64_t)i);
			put_int(&l, 1, 1 + (uint64_t)i % 2);
			put_msg(&m, 4, &l);
			put_int(&m, 3, 0x401000 + (uint64_t)i);
			put_int(&m, 2, 1);
			put_int(&m, 1, (uint64_t)id);
		} else {
			put_int(&m, 1, c == F_DUP_IDS && i == 1 ? 9 :
			    (uint64_t)id);
			if (c == F_DUP_IDS && i == 1)
				put_int(&m, 1, 2);
			put_int(&m, 2, c == F_MAP_PAST && i == 2 ? 2 : 1);
			put_int(&m, 3, c == F_LONG_VARINTS ?
			    0x7fffffffffffffffULL : 0x401000 + (uint64_t)i);
			if (c == F_UNKNOWN)
				put_int(&m, 9, 1);
			put_int(&l, 1, c == F_FN_PAST && i == 1 ? 3 :
			    1 + (uint64_t)i % 2);
			put_int(&l, 2, 200 + (uint64_t)i);
			put_msg(&m, 4, &l);
		}
		put_msg(b, 4, &m);
	}
	for (i = 0; i < n_fn; i++) {
		put_int(&m, 1, c == F_IDS_REVERSED ? (uint64_t)(n_fn - i) :
		    (uint64_t)i + 1);
		put_int(&m, 2, c == F_FN_STR_PAST && i == 1 ? (uint64_t)strs :
		    9);
		put_int(&m, 4, 8);
		put_int(&m, 5, 17);
		put_msg(b, 5, &m);
	}
	put_str(b, 6, "", 0);
	for (i = 1; i < strs; i++) {
		snprintf(name, sizeof name, "s%d", i);
		put_str(b, 6, name, strlen(name));
	}
	put_int(b, 9, 1700000000000000000ULL);
	put_int(b, 10, 10000000000ULL);
	put_int(&m, 1, 1);
	put_int(&m, 2, 5);
	put_msg(b, 11, &m);
	put_int(b, 12, 10000000);
	put_packed(b, 13, (uint64_t[]){ 3, 4 }, 2);
}

/* The fast path's variants: the same verdicts as protobuf-c. */
static void
test_fast(void)
{
	struct buf	b;
	char		*d, *cause;
	int		c, code;

	for (c = 0; c < F_NCASES; c++) {
		fast_encode(&b, (enum fast_case)c);
		d = both(b.p, b.len, MAX_INFLATED, &code, &cause, NULL);
		ok(d == NULL && (code == 0) == (c <= F_DUP_IDS ||
		    c == F_UNKNOWN || c == F_LONG_STACK),
		    "fast path case %d: %s%s%s", c,
		    code == 0 ? "accepted" : cause, d ? "; " : "",
		    d ? d : "");
		free(d);
		free(cause);
		free(b.p);
	}
}

/* The hand-made wire cases, then the fast path's variants. */
int
main(void)
{
	test_hand();
	test_fast();
	return tap_done();
}
