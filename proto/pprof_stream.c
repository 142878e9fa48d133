/*
 * pprof stream reader (see pprof_stream.h).
 *
 * Opening checks the whole profile (pprof_check_raw: the upload check,
 * which walks every sample without allocating per sample), then walks the
 * top-level fields once to count the entries of each kind, note where
 * each kind's entries start and end, and read the header's scalars; a
 * second walk, over just the span that holds them, collects the string
 * table (a pointer per string), the sample types and the comments. After
 * that an entry costs a walk of its own bytes: a cursor per kind moves
 * from the first entry of that kind to the last, skipping the fields in
 * between (writers put each kind together, so the skips are few).
 *
 * Since the bytes were checked, every field has the wire type its schema
 * wants and every length fits; the decoders below rely on that and
 * follow protobuf-c 1.4's rules (see pprof_scan_wire.h): a singular field
 * keeps its last value, a singular message given twice keeps the last
 * one's fields (protobuf-c's merge of proto3 scalars), repeated scalars
 * may come packed and unpacked in any mix, unknown fields are skipped,
 * and a bool is true when any byte of the field's value (length prefix
 * included, whatever the wire type) has a low bit set.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/budget.h"
#include "common/xmalloc.h"
#include "proto/pprof.h"
#include "proto/pprof_scan_wire.h"
#include "proto/pprof_stream.h"

/* Field numbers of Profile (proto/profile.proto). */
enum {
	STREAM_P_SAMPLE_TYPE = 1,
	STREAM_P_SAMPLE = 2,
	STREAM_P_MAPPING = 3,
	STREAM_P_LOCATION = 4,
	STREAM_P_FUNCTION = 5,
	STREAM_P_STRING_TABLE = 6,
	STREAM_P_DROP_FRAMES = 7,
	STREAM_P_KEEP_FRAMES = 8,
	STREAM_P_TIME_NANOS = 9,
	STREAM_P_DURATION_NANOS = 10,
	STREAM_P_PERIOD_TYPE = 11,
	STREAM_P_PERIOD = 12,
	STREAM_P_COMMENT = 13,
	STREAM_P_DEFAULT_SAMPLE_TYPE = 14,
	STREAM_P_DOC_URL = 15
};

/* The Profile field of each kind. */
static const uint32_t pprof_stream_field[PPROF_STREAM_NKINDS] = {
	STREAM_P_SAMPLE, STREAM_P_MAPPING, STREAM_P_LOCATION,
	STREAM_P_FUNCTION
};

/* The kind of Profile field num, or PPROF_STREAM_NKINDS. */
static enum pprof_stream_kind
pprof_stream_kind_of(uint32_t num)
{
	switch (num) {
	case STREAM_P_SAMPLE:
		return PPROF_STREAM_SAMPLE;
	case STREAM_P_MAPPING:
		return PPROF_STREAM_MAPPING;
	case STREAM_P_LOCATION:
		return PPROF_STREAM_LOCATION;
	case STREAM_P_FUNCTION:
		return PPROF_STREAM_FUNCTION;
	}
	return PPROF_STREAM_NKINDS;
}

/* A bool field's value, as protobuf-c's parse_boolean reads it. */
static int
pprof_stream_bool(const struct scan_field *f, const uint8_t *next)
{
	const uint8_t *q;

	for (q = f->val; q < next; q++)
		if (*q & 0x7f)
			return 1;
	return 0;
}

/* Reads a ValueType (checked): type and unit, 0 when absent. */
static void
pprof_stream_value_type(const uint8_t *p, size_t len, int64_t *type,
    int64_t *unit)
{
	const uint8_t *end = p + len;
	struct scan_field f;

	*type = *unit = 0;
	while (pprof_scan_wire_next(&p, end, &f) > 0) {
		if (f.num == 1)
			*type = (int64_t)f.v;
		else if (f.num == 2)
			*unit = (int64_t)f.v;
	}
}

/* Counts the values of a repeated scalar field (checked). */
static size_t
pprof_stream_count(const struct scan_field *f)
{
	size_t n = 1;

	if (f->wt == SCAN_LEN && pprof_scan_wire_packed_count(f->p, f->len,
	    &n) != 0)
		n = 0;	/* cannot happen: the check passed */
	return n;
}

/* Appends the values of a repeated scalar field (room already made). */
static size_t
pprof_stream_values(const struct scan_field *f, uint64_t *to)
{
	const uint8_t *q, *qend;
	size_t n = 0;

	if (f->wt != SCAN_LEN) {
		to[0] = f->v;
		return 1;
	}
	for (q = f->p, qend = f->p + f->len; q < qend;)
		to[n++] = pprof_scan_wire_packed_next(&q);
	return n;
}

/* Notes field f (read at at) of the first walk. */
static void
pprof_stream_note(struct pprof_stream *s, const struct scan_field *f,
    const uint8_t *at, const uint8_t *next, const uint8_t **lo,
    const uint8_t **hi)
{
	enum pprof_stream_kind k = pprof_stream_kind_of(f->num);

	if (k != PPROF_STREAM_NKINDS) {
		if (s->n[k]++ == 0)
			s->first[k] = at;
		s->last[k] = next;
		return;
	}
	switch (f->num) {
	case STREAM_P_SAMPLE_TYPE:
	case STREAM_P_STRING_TABLE:
	case STREAM_P_COMMENT:
		if (*lo == NULL)
			*lo = at;
		*hi = next;
		if (f->num == STREAM_P_SAMPLE_TYPE)
			s->n_sample_type++;
		else if (f->num == STREAM_P_STRING_TABLE)
			s->n_string++;
		else
			s->n_comment += pprof_stream_count(f);
		break;
	case STREAM_P_DROP_FRAMES:
		s->drop_frames = (int64_t)f->v;
		break;
	case STREAM_P_KEEP_FRAMES:
		s->keep_frames = (int64_t)f->v;
		break;
	case STREAM_P_TIME_NANOS:
		s->time_nanos = (int64_t)f->v;
		break;
	case STREAM_P_DURATION_NANOS:
		s->duration_nanos = (int64_t)f->v;
		break;
	case STREAM_P_PERIOD_TYPE:
		pprof_stream_value_type(f->p, f->len, &s->period_type,
		    &s->period_unit);
		s->have_period_type = 1;
		break;
	case STREAM_P_PERIOD:
		s->period = (int64_t)f->v;
		break;
	case STREAM_P_DEFAULT_SAMPLE_TYPE:
		s->default_sample_type = (int64_t)f->v;
		break;
	case STREAM_P_DOC_URL:
		s->doc_url = (int64_t)f->v;
		break;
	}
}

/* Second walk: the string table, sample types and comments. */
static void
pprof_stream_tables(struct pprof_stream *s, const uint8_t *p,
    const uint8_t *end)
{
	struct scan_field f;
	size_t i_str = 0, i_st = 0, i_c = 0;

	while (pprof_scan_wire_next(&p, end, &f) > 0) {
		switch (f.num) {
		case STREAM_P_SAMPLE_TYPE:
			pprof_stream_value_type(f.p, f.len,
			    &s->sample_type[2 * i_st],
			    &s->sample_type[2 * i_st + 1]);
			i_st++;
			break;
		case STREAM_P_STRING_TABLE:
			s->strs[i_str++] = f.hdr;
			break;
		case STREAM_P_COMMENT:
			i_c += pprof_stream_values(&f,
			    (uint64_t *)(void *)&s->comment[i_c]);
			break;
		}
	}
}

/* Checks and opens raw as a profile. */
int
pprof_stream_open(struct pprof_stream *s, const uint8_t *raw, size_t len,
    struct budget_acct *acct, const volatile int *cancel, char **cause)
{
	const uint8_t *p = raw, *at, *lo = NULL, *hi = NULL;
	struct scan_field f;
	size_t polls = 0;
	int k, rc;

	memset(s, 0, sizeof *s);
	s->raw = raw;
	s->end = raw + len;
	s->acct = acct;
	if ((rc = pprof_check_raw(raw, len, acct, cancel, cause)) != 0)
		return rc;
	for (at = p; pprof_scan_wire_next(&p, s->end, &f) > 0; at = p) {
		if (pprof_scan_wire_cancelled(cancel, &polls)) {
			xcause(cause, "cancelled");
			return PPROF_ECANCELED;
		}
		pprof_stream_note(s, &f, at, p, &lo, &hi);
	}
	s->strs = budget_calloc(acct, s->n_string + 1, sizeof *s->strs);
	s->sample_type = budget_calloc(acct, 2 * s->n_sample_type + 1,
	    sizeof *s->sample_type);
	s->comment = budget_calloc(acct, s->n_comment + 1,
	    sizeof *s->comment);
	if (s->strs == NULL || s->sample_type == NULL || s->comment == NULL) {
		xcause(cause, "no memory to read the profile's tables");
		return PPROF_ENOMEM;
	}
	if (lo != NULL)
		pprof_stream_tables(s, lo, hi);
	for (k = 0; k < PPROF_STREAM_NKINDS; k++)
		pprof_stream_rewind(s, k);
	return 0;
}

/* Frees the reader's tables and buffers. */
void
pprof_stream_close(struct pprof_stream *s)
{
	struct budget_acct *a = s->acct;

	if (s->strs != NULL)
		budget_dealloc(a, s->strs, (s->n_string + 1) * sizeof *s->strs);
	if (s->sample_type != NULL)
		budget_dealloc(a, s->sample_type, (2 * s->n_sample_type + 1) *
		    sizeof *s->sample_type);
	if (s->comment != NULL)
		budget_dealloc(a, s->comment, (s->n_comment + 1) *
		    sizeof *s->comment);
	budget_dealloc(a, s->locs, s->locs_cap * sizeof *s->locs);
	budget_dealloc(a, s->vals, s->vals_cap * sizeof *s->vals);
	budget_dealloc(a, s->labels, s->labels_cap * sizeof *s->labels);
	budget_dealloc(a, s->lines, s->lines_cap * sizeof *s->lines);
	memset(s, 0, sizeof *s);
}

/* String i up to its first NUL. */
const char *
pprof_stream_string(const struct pprof_stream *s, size_t i, size_t *len)
{
	const uint8_t *hdr = s->strs[i], *nul;
	uint64_t v;
	size_t n;

	n = pprof_scan_wire_varint(hdr, s->end, 5, &v);
	*len = (size_t)v;
	if ((nul = memchr(hdr + n, '\0', *len)) != NULL)
		*len = (size_t)(nul - (hdr + n));
	return (const char *)hdr + n;
}

/* Restarts kind k. */
void
pprof_stream_rewind(struct pprof_stream *s, enum pprof_stream_kind k)
{
	s->at[k] = s->n[k] > 0 ? s->first[k] : NULL;
}

/* The payload of the next entry of kind k: 1, or 0 after the last. */
static int
pprof_stream_next(struct pprof_stream *s, enum pprof_stream_kind k,
    struct scan_field *out)
{
	const uint8_t *p = s->at[k];

	if (p == NULL)
		return 0;
	while (p < s->last[k] && pprof_scan_wire_next(&p, s->end, out) > 0) {
		if (out->num == pprof_stream_field[k]) {
			s->at[k] = p;
			return 1;
		}
	}
	s->at[k] = NULL;
	return 0;
}

/* The next function. */
int
pprof_stream_function(struct pprof_stream *s,
    struct pprof_stream_function *fn)
{
	struct scan_field e, f;
	const uint8_t *p, *end;

	if (!pprof_stream_next(s, PPROF_STREAM_FUNCTION, &e))
		return 0;
	memset(fn, 0, sizeof *fn);
	for (p = e.p, end = e.p + e.len; pprof_scan_wire_next(&p, end, &f) > 0;) {
		switch (f.num) {
		case 1: fn->id = f.v; break;
		case 2: fn->name = (int64_t)f.v; break;
		case 3: fn->system_name = (int64_t)f.v; break;
		case 4: fn->filename = (int64_t)f.v; break;
		case 5: fn->start_line = (int64_t)f.v; break;
		}
	}
	return 1;
}

/* The next mapping. */
int
pprof_stream_mapping(struct pprof_stream *s, struct pprof_stream_mapping *mp)
{
	struct scan_field e, f;
	const uint8_t *p, *end;

	if (!pprof_stream_next(s, PPROF_STREAM_MAPPING, &e))
		return 0;
	memset(mp, 0, sizeof *mp);
	for (p = e.p, end = e.p + e.len; pprof_scan_wire_next(&p, end, &f) > 0;) {
		switch (f.num) {
		case 1: mp->id = f.v; break;
		case 2: mp->memory_start = f.v; break;
		case 3: mp->memory_limit = f.v; break;
		case 4: mp->file_offset = f.v; break;
		case 5: mp->filename = (int64_t)f.v; break;
		case 6: mp->build_id = (int64_t)f.v; break;
		case 7: mp->has_functions = pprof_stream_bool(&f, p); break;
		case 8: mp->has_filenames = pprof_stream_bool(&f, p); break;
		case 9: mp->has_line_numbers = pprof_stream_bool(&f, p); break;
		case 10: mp->has_inline_frames = pprof_stream_bool(&f, p); break;
		}
	}
	return 1;
}

/* Reads a Line (checked). */
static void
pprof_stream_line(const uint8_t *p, size_t len, struct pprof_stream_line *ln)
{
	const uint8_t *end = p + len;
	struct scan_field f;

	memset(ln, 0, sizeof *ln);
	while (pprof_scan_wire_next(&p, end, &f) > 0) {
		if (f.num == 1)
			ln->function_id = f.v;
		else if (f.num == 2)
			ln->line = (int64_t)f.v;
		else if (f.num == 3)
			ln->column = (int64_t)f.v;
	}
}

/* The next location, its lines in the reader's buffer. */
int
pprof_stream_location(struct pprof_stream *s,
    struct pprof_stream_location *l)
{
	struct scan_field e, f;
	const uint8_t *p, *end;
	size_t n = 0;

	if (!pprof_stream_next(s, PPROF_STREAM_LOCATION, &e))
		return 0;
	memset(l, 0, sizeof *l);
	for (p = e.p, end = e.p + e.len; pprof_scan_wire_next(&p, end, &f) > 0;) {
		switch (f.num) {
		case 1: l->id = f.v; break;
		case 2: l->mapping_id = f.v; break;
		case 3: l->address = f.v; break;
		case 4:
			if (budget_grow(s->acct, &s->lines, &s->lines_cap,
			    n + 1, sizeof *s->lines) != 0)
				return -1;
			pprof_stream_line(f.p, f.len, &s->lines[n++]);
			break;
		case 5: l->is_folded = pprof_stream_bool(&f, p); break;
		}
	}
	l->n_line = n;
	l->line = s->lines;
	return 1;
}

/* Reads a Label (checked). */
static void
pprof_stream_label(const uint8_t *p, size_t len,
    struct pprof_stream_label *lb)
{
	const uint8_t *end = p + len;
	struct scan_field f;

	memset(lb, 0, sizeof *lb);
	while (pprof_scan_wire_next(&p, end, &f) > 0) {
		switch (f.num) {
		case 1: lb->key = (int64_t)f.v; break;
		case 2: lb->str = (int64_t)f.v; break;
		case 3: lb->num = (int64_t)f.v; break;
		case 4: lb->num_unit = (int64_t)f.v; break;
		}
	}
}

/* The next sample, its ids, values and labels in the reader's buffers. */
int
pprof_stream_sample(struct pprof_stream *s, struct pprof_stream_sample *sm)
{
	struct scan_field e, f;
	const uint8_t *p, *end;
	size_t nl = 0, nv = 0, nlb = 0, n;

	if (!pprof_stream_next(s, PPROF_STREAM_SAMPLE, &e))
		return 0;
	for (p = e.p, end = e.p + e.len; pprof_scan_wire_next(&p, end, &f) > 0;) {
		switch (f.num) {
		case 1:
			if ((n = pprof_stream_count(&f)) == 0)
				break;
			if (budget_grow(s->acct, &s->locs, &s->locs_cap,
			    nl + n, sizeof *s->locs) != 0)
				return -1;
			nl += pprof_stream_values(&f, &s->locs[nl]);
			break;
		case 2:
			if ((n = pprof_stream_count(&f)) == 0)
				break;
			if (budget_grow(s->acct, &s->vals, &s->vals_cap,
			    nv + n, sizeof *s->vals) != 0)
				return -1;
			nv += pprof_stream_values(&f,
			    (uint64_t *)(void *)&s->vals[nv]);
			break;
		case 3:
			if (budget_grow(s->acct, &s->labels, &s->labels_cap,
			    nlb + 1, sizeof *s->labels) != 0)
				return -1;
			pprof_stream_label(f.p, f.len, &s->labels[nlb++]);
			break;
		}
	}
	sm->n_location_id = nl;
	sm->location_id = s->locs;
	sm->n_value = nv;
	sm->value = s->vals;
	sm->n_label = nlb;
	sm->label = s->labels;
	return 1;
}
