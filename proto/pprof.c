/*
 * pprof helpers: everything an upload or a merge needs to turn bytes into a
 * checked perftools.profiles.Profile and back.
 *
 * pprof_inflate() gunzips with a hard cap on the output (a 255 KB body can
 * inflate to gigabytes), accepts concatenated gzip members like Go's reader
 * and rejects trailing junk like pprof does. pprof_decode() is protobuf-c's
 * unpack; since protobuf-c happily accepts bytes that merely happen to parse,
 * pprof_validate() then checks every reference the profile makes: string
 * indices, location/function/mapping ids and value counts. Ids are looked up
 * through a direct table when they are dense (the usual 1..n) and by binary
 * search otherwise, so validating a 40,000-sample profile costs about as
 * much as walking it once. All functions are pure and safe on any thread.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>
#include <zlib.h>

#include "common/budget.h"
#include "common/xmalloc.h"
#include "proto/gperf.h"
#include "proto/pprof.h"
#include "proto/pprof_scan.h"

/*
 * zlib level for pprof_encode_gzip: Go's runtime/pprof writes with
 * BestSpeed too. Profile protobufs (varints) compress poorly, and level 1 is
 * about 40% faster than 6 for 7% more bytes.
 */
#define PPROF_GZIP_LEVEL	1

/* First inflate buffer for a gzip body: a guess at the inflated size. */
#define PPROF_INFLATE_MIN	(64 * 1024)

/* One id of an id table kept sorted for binary search. */
struct pprof_id_ent {
	uint64_t	id;
	size_t		idx;
};

/* Maps the ids of locations, functions or mappings to their index. */
struct pprof_ids {
	size_t			*direct;	/* id -> idx + 1, 0: absent */
	uint64_t		 max;		/* largest id */
	struct pprof_id_ent	*sorted;	/* when ids are sparse */
	size_t			 n;
};

/* True if buf starts with the gzip magic bytes. */
int
pprof_is_gzip(const uint8_t *buf, size_t len)
{
	return len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b;
}

/*
 * Inflates gzip members into a buffer capped at max bytes, charged to acct
 * (may be NULL) with its capacity in *cap; raw is copied.
 */
static int
pprof_inflate_zlib(const uint8_t *in, size_t len, size_t max,
    struct budget_acct *acct, uint8_t **out, size_t *outlen, size_t *capp,
    char **cause)
{
	z_stream	 zs;
	uint8_t		*buf = NULL, *nbuf;
	size_t		 cap = 0, limit, produced = 0, pos = 0, chunk, room;
	size_t		 left, ncap;
	int		 zret, ret = PPROF_EINVAL;

	*out = NULL;
	*outlen = 0;
	if (len == 0) {
		xcause(cause, "empty body");
		return PPROF_EINVAL;
	}
	if (!pprof_is_gzip(in, len)) {
		if (len > max) {
			xcause(cause, "profile exceeds %zu bytes", max);
			return PPROF_ETOOBIG;
		}
		if ((buf = budget_alloc(acct, len)) == NULL) {
			xcause(cause, "no memory for the profile (%zu bytes)",
			    len);
			return PPROF_ENOMEM;
		}
		memcpy(buf, in, len);
		*out = buf;
		*outlen = *capp = len;
		return 0;
	}

	/* One byte of room past max tells "exactly max" from "too big". */
	limit = max < SIZE_MAX ? max + 1 : max;
	cap = len < SIZE_MAX / 4 ? len * 4 : SIZE_MAX;
	if (cap < PPROF_INFLATE_MIN)
		cap = PPROF_INFLATE_MIN;
	if (cap > limit)
		cap = limit;

	memset(&zs, 0, sizeof zs);
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
		xcause(cause, "gzip: cannot initialise zlib");
		return PPROF_EINVAL;
	}
	if ((buf = budget_alloc(acct, cap)) == NULL) {
		inflateEnd(&zs);
		xcause(cause, "no memory to inflate the profile (%zu bytes)",
		    cap);
		return PPROF_ENOMEM;
	}
	for (;;) {
		if (zs.avail_in == 0 && pos < len) {
			chunk = len - pos > UINT_MAX ? UINT_MAX : len - pos;
			zs.next_in = (Bytef *)(uintptr_t)(in + pos);
			zs.avail_in = (uInt)chunk;
			pos += chunk;
		}
		if (produced == cap) {
			if (cap >= limit) {
				ret = PPROF_ETOOBIG;
				xcause(cause, "inflated profile exceeds %zu bytes",
				    max);
				goto fail;
			}
			ncap = cap > limit / 2 ? limit : cap * 2;
			if ((nbuf = budget_realloc(acct, buf, cap, ncap)) ==
			    NULL) {
				ret = PPROF_ENOMEM;
				xcause(cause, "no memory to inflate the profile "
				    "(%zu bytes)", ncap);
				goto fail;
			}
			buf = nbuf;
			cap = ncap;
		}
		room = cap - produced > UINT_MAX ? UINT_MAX : cap - produced;
		zs.next_out = buf + produced;
		zs.avail_out = (uInt)room;
		zret = inflate(&zs, Z_NO_FLUSH);
		produced += room - zs.avail_out;
		if (produced > max) {
			ret = PPROF_ETOOBIG;
			xcause(cause, "inflated profile exceeds %zu bytes", max);
			goto fail;
		}
		left = zs.avail_in + (len - pos);
		switch (zret) {
		case Z_STREAM_END:
			if (left == 0)
				goto done;
			/* Unconsumed input is contiguous from next_in. */
			if (!pprof_is_gzip(zs.next_in, left)) {
				xcause(cause, "gzip: %zu bytes of trailing data "
				    "after the gzip stream", left);
				goto fail;
			}
			if (inflateReset(&zs) != Z_OK) {
				xcause(cause, "gzip: cannot reset zlib");
				goto fail;
			}
			break;
		case Z_OK:
			break;
		case Z_BUF_ERROR:
			/* No progress with room to write: input ran out. */
			if (zs.avail_out != 0) {
				xcause(cause, "gzip: unexpected end of stream");
				goto fail;
			}
			break;
		case Z_NEED_DICT:
			xcause(cause, "gzip: stream needs a preset dictionary");
			goto fail;
		case Z_MEM_ERROR:
			xcause(cause, "gzip: out of memory");
			goto fail;
		default:
			xcause(cause, "gzip: %s",
			    zs.msg != NULL ? zs.msg : "invalid data");
			goto fail;
		}
	}

done:
	inflateEnd(&zs);
	*out = buf;
	*outlen = produced;
	*capp = cap;
	return 0;

fail:
	inflateEnd(&zs);
	budget_dealloc(acct, buf, cap);
	return ret;
}

/*
 * The fast path: libdeflate inflates each gzip member in one call, about
 * twice as fast as zlib, into a buffer sized from the gzip length trailer
 * and grown (the member retried) when too small. Returns 0, PPROF_ETOOBIG,
 * or 1 when the input is not plain valid gzip: then zlib's path runs, to
 * give its exact reason.
 */
static int
pprof_inflate_fast(const uint8_t *in, size_t len, size_t max,
    struct budget_acct *acct, uint8_t **out, size_t *outlen, size_t *capp,
    char **cause)
{
	struct libdeflate_decompressor *d;
	enum libdeflate_result r;
	uint8_t *buf, *nbuf;
	size_t limit = max < SIZE_MAX ? max + 1 : max, cap, pos = 0;
	size_t produced = 0, used, made, ncap;
	uint32_t isize;

	if (len < 18)
		return 1;
	isize = (uint32_t)in[len - 4] | (uint32_t)in[len - 3] << 8 |
	    (uint32_t)in[len - 2] << 16 | (uint32_t)in[len - 1] << 24;
	cap = isize < limit ? isize : limit;
	/* Deflate cannot pass 1032:1; a larger claim is a lie. */
	if (len < SIZE_MAX / 1032 && cap > len * 1032)
		cap = len * 1032;
	if (cap < PPROF_INFLATE_MIN)
		cap = PPROF_INFLATE_MIN < limit ? PPROF_INFLATE_MIN : limit;
	if ((d = libdeflate_alloc_decompressor()) == NULL)
		return 1;
	if ((buf = budget_alloc(acct, cap)) == NULL) {
		libdeflate_free_decompressor(d);
		xcause(cause, "no memory to inflate the profile (%zu bytes)",
		    cap);
		return PPROF_ENOMEM;
	}
	while (pos < len) {
		if (!pprof_is_gzip(in + pos, len - pos))
			goto fallback;	/* trailing data: zlib says how much */
		r = libdeflate_gzip_decompress_ex(d, in + pos, len - pos,
		    buf + produced, cap - produced, &used, &made);
		if (r == LIBDEFLATE_INSUFFICIENT_SPACE) {
			if (cap >= limit) {
				libdeflate_free_decompressor(d);
				budget_dealloc(acct, buf, cap);
				xcause(cause, "inflated profile exceeds %zu bytes",
				    max);
				return PPROF_ETOOBIG;
			}
			ncap = cap > limit / 2 ? limit : cap * 2;
			if ((nbuf = budget_realloc(acct, buf, cap, ncap)) ==
			    NULL) {
				libdeflate_free_decompressor(d);
				budget_dealloc(acct, buf, cap);
				xcause(cause, "no memory to inflate the "
				    "profile (%zu bytes)", ncap);
				return PPROF_ENOMEM;
			}
			buf = nbuf;
			cap = ncap;
			continue;	/* the same member again */
		}
		if (r != LIBDEFLATE_SUCCESS)
			goto fallback;
		produced += made;
		pos += used;
		if (produced > max) {
			libdeflate_free_decompressor(d);
			budget_dealloc(acct, buf, cap);
			xcause(cause, "inflated profile exceeds %zu bytes", max);
			return PPROF_ETOOBIG;
		}
	}
	libdeflate_free_decompressor(d);
	*out = buf;
	*outlen = produced;
	*capp = cap;
	return 0;
fallback:
	libdeflate_free_decompressor(d);
	budget_dealloc(acct, buf, cap);
	return 1;
}

/* Bounded gunzip: libdeflate for valid input, zlib to explain bad input. */
int
pprof_inflate(const uint8_t *in, size_t len, size_t max, uint8_t **out,
    size_t *outlen, char **cause)
{
	size_t cap;
	int rc;

	*out = NULL;
	*outlen = 0;
	if (len > 0 && pprof_is_gzip(in, len) && (rc = pprof_inflate_fast(in,
	    len, max, NULL, out, outlen, &cap, cause)) != 1)
		return rc;
	return pprof_inflate_zlib(in, len, max, NULL, out, outlen, &cap,
	    cause);
}

/* pprof_inflate charged to acct; the buffer is trimmed to its length. */
int
pprof_inflate_acct(const uint8_t *in, size_t len, size_t max,
    struct budget_acct *acct, uint8_t **out, size_t *outlen, char **cause)
{
	size_t cap = 0;
	int rc;

	*out = NULL;
	*outlen = 0;
	if (len == 0 || !pprof_is_gzip(in, len) || (rc = pprof_inflate_fast(in,
	    len, max, acct, out, outlen, &cap, cause)) == 1)
		rc = pprof_inflate_zlib(in, len, max, acct, out, outlen, &cap,
		    cause);
	if (rc != 0)
		return rc;
	/* Give back the room the guess left (a shrink never fails). */
	if (cap > *outlen)
		*out = budget_realloc(acct, *out, cap, *outlen);
	return 0;
}

/* Unpacks raw protobuf bytes into a Profile message. */
pprof_profile_t *
pprof_decode(const uint8_t *raw, size_t len, ProtobufCAllocator *alloc,
    char **cause)
{
	pprof_profile_t	*p;

	if (gperf_detect(raw, len)) {
		xcause(cause, "a legacy gperftools CPU profile, not a pprof "
		    "(uploads convert it; this path does not)");
		return NULL;
	}
	p = perftools__profiles__profile__unpack(alloc, len, raw);
	if (p == NULL)
		xcause(cause, "not a pprof profile: protobuf decode failed");
	return p;
}

/* Frees a decoded profile; NULL is fine. */
void
pprof_free(pprof_profile_t *p, ProtobufCAllocator *alloc)
{
	if (p != NULL)
		perftools__profiles__profile__free_unpacked(p, alloc);
}

/* True if idx is a valid index into p's string table. */
static inline int
pprof_str_ok(const pprof_profile_t *p, int64_t idx)
{
	return idx >= 0 && (uint64_t)idx < p->n_string_table;
}

/* Sets *cause for a bad string index of the formatted field. */
static int __attribute__((format(printf, 4, 5)))
pprof_str_fail(char **cause, const pprof_profile_t *p, int64_t idx,
    const char *fmt, ...)
{
	va_list	 ap;
	char	*what;

	va_start(ap, fmt);
	what = xvasprintf(fmt, ap);
	va_end(ap);
	xcause(cause, "%s string index %" PRId64 " out of range (%zu strings)",
	    what, idx, p->n_string_table);
	free(what);
	return PPROF_EINVAL;
}

/* Orders id table entries by id. */
static int
pprof_id_cmp(const void *a, const void *b)
{
	const struct pprof_id_ent	*x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * Builds an id table over n objects whose ids id_of() returns, refusing
 * zero and duplicate ids. what names the objects in *cause.
 */
static int
pprof_ids_build(struct pprof_ids *t, const char *what, size_t n,
    uint64_t (*id_of)(const void *, size_t), const void *arr, char **cause)
{
	size_t		i;
	uint64_t	id;

	memset(t, 0, sizeof *t);
	t->n = n;
	for (i = 0; i < n; i++) {
		id = id_of(arr, i);
		if (id == 0) {
			xcause(cause, "%s at index %zu has id 0", what, i);
			return PPROF_EINVAL;
		}
		if (id > t->max)
			t->max = id;
	}
	if (n == 0)
		return 0;
	if (t->max / 4 <= n) {
		t->direct = xcalloc(t->max + 1, sizeof *t->direct);
		for (i = 0; i < n; i++) {
			id = id_of(arr, i);
			if (t->direct[id] != 0) {
				xcause(cause, "%s %" PRIu64 ": duplicate id",
				    what, id);
				return PPROF_EINVAL;
			}
			t->direct[id] = i + 1;
		}
		return 0;
	}
	t->sorted = xreallocarray(NULL, n, sizeof *t->sorted);
	for (i = 0; i < n; i++) {
		t->sorted[i].id = id_of(arr, i);
		t->sorted[i].idx = i;
	}
	qsort(t->sorted, n, sizeof *t->sorted, pprof_id_cmp);
	for (i = 1; i < n; i++) {
		if (t->sorted[i].id == t->sorted[i - 1].id) {
			xcause(cause, "%s %" PRIu64 ": duplicate id", what,
			    t->sorted[i].id);
			return PPROF_EINVAL;
		}
	}
	return 0;
}

/* True if id is in the table. */
static inline int
pprof_ids_has(const struct pprof_ids *t, uint64_t id)
{
	size_t	lo, hi, mid;

	if (id == 0 || id > t->max)
		return 0;
	if (t->direct != NULL)
		return t->direct[id] != 0;
	lo = 0;
	hi = t->n;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (t->sorted[mid].id == id)
			return 1;
		if (t->sorted[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* Frees an id table's arrays. */
static void
pprof_ids_clear(struct pprof_ids *t)
{
	free(t->direct);
	free(t->sorted);
	memset(t, 0, sizeof *t);
}

/* Id of mapping i (for pprof_ids_build). */
static uint64_t
pprof_mapping_id(const void *arr, size_t i)
{
	return ((Perftools__Profiles__Mapping *const *)arr)[i]->id;
}

/* Id of function i (for pprof_ids_build). */
static uint64_t
pprof_function_id(const void *arr, size_t i)
{
	return ((Perftools__Profiles__Function *const *)arr)[i]->id;
}

/* Id of location i (for pprof_ids_build). */
static uint64_t
pprof_location_id(const void *arr, size_t i)
{
	return ((Perftools__Profiles__Location *const *)arr)[i]->id;
}

/* Checks the profile-wide fields: string table, types, frames, comments. */
static int
pprof_validate_header(const pprof_profile_t *p, char **cause)
{
	const Perftools__Profiles__ValueType	*vt;
	size_t					 i;

	if (p->n_string_table == 0)
		return xcause(cause, "string table is empty");
	if (p->string_table[0] == NULL || p->string_table[0][0] != '\0')
		return xcause(cause, "string table entry 0 is not empty");
	for (i = 0; i < p->n_sample_type; i++) {
		vt = p->sample_type[i];
		if (!pprof_str_ok(p, vt->type))
			return pprof_str_fail(cause, p, vt->type,
			    "sample type %zu: type", i);
		if (!pprof_str_ok(p, vt->unit))
			return pprof_str_fail(cause, p, vt->unit,
			    "sample type %zu: unit", i);
	}
	if ((vt = p->period_type) != NULL) {
		if (!pprof_str_ok(p, vt->type))
			return pprof_str_fail(cause, p, vt->type,
			    "period type: type");
		if (!pprof_str_ok(p, vt->unit))
			return pprof_str_fail(cause, p, vt->unit,
			    "period type: unit");
	}
	if (!pprof_str_ok(p, p->drop_frames))
		return pprof_str_fail(cause, p, p->drop_frames, "drop_frames:");
	if (!pprof_str_ok(p, p->keep_frames))
		return pprof_str_fail(cause, p, p->keep_frames, "keep_frames:");
	if (!pprof_str_ok(p, p->default_sample_type))
		return pprof_str_fail(cause, p, p->default_sample_type,
		    "default_sample_type:");
	if (!pprof_str_ok(p, p->doc_url))
		return pprof_str_fail(cause, p, p->doc_url, "doc_url:");
	for (i = 0; i < p->n_comment; i++) {
		if (!pprof_str_ok(p, p->comment[i]))
			return pprof_str_fail(cause, p, p->comment[i],
			    "comment %zu:", i);
	}
	if (p->n_sample != 0 && p->n_sample_type == 0)
		return xcause(cause, "%zu samples but no sample types",
		    p->n_sample);
	return 0;
}

/* Checks the string indices of mappings and functions. */
static int
pprof_validate_strings(const pprof_profile_t *p, char **cause)
{
	const Perftools__Profiles__Mapping	*m;
	const Perftools__Profiles__Function	*f;
	size_t					 i;

	for (i = 0; i < p->n_mapping; i++) {
		m = p->mapping[i];
		if (!pprof_str_ok(p, m->filename))
			return pprof_str_fail(cause, p, m->filename,
			    "mapping %" PRIu64 ": filename", m->id);
		if (!pprof_str_ok(p, m->build_id))
			return pprof_str_fail(cause, p, m->build_id,
			    "mapping %" PRIu64 ": build_id", m->id);
	}
	for (i = 0; i < p->n_function; i++) {
		f = p->function[i];
		if (!pprof_str_ok(p, f->name))
			return pprof_str_fail(cause, p, f->name,
			    "function %" PRIu64 ": name", f->id);
		if (!pprof_str_ok(p, f->system_name))
			return pprof_str_fail(cause, p, f->system_name,
			    "function %" PRIu64 ": system_name", f->id);
		if (!pprof_str_ok(p, f->filename))
			return pprof_str_fail(cause, p, f->filename,
			    "function %" PRIu64 ": filename", f->id);
	}
	return 0;
}

/* Checks that locations refer to existing mappings and functions. */
static int
pprof_validate_locations(const pprof_profile_t *p,
    const struct pprof_ids *mappings, const struct pprof_ids *functions,
    char **cause)
{
	const Perftools__Profiles__Location	*l;
	const Perftools__Profiles__Line		*ln;
	size_t					 i, j;

	for (i = 0; i < p->n_location; i++) {
		l = p->location[i];
		if (l->mapping_id != 0 &&
		    !pprof_ids_has(mappings, l->mapping_id))
			return xcause(cause, "location %" PRIu64 ": mapping id "
			    "%" PRIu64 " not found", l->id, l->mapping_id);
		for (j = 0; j < l->n_line; j++) {
			ln = l->line[j];
			if (ln->function_id != 0 &&
			    !pprof_ids_has(functions, ln->function_id))
				return xcause(cause, "location %" PRIu64
				    ": line %zu: function id %" PRIu64
				    " not found", l->id, j, ln->function_id);
		}
	}
	return 0;
}

/* Checks samples: value counts, location ids and label strings. */
static int
pprof_validate_samples(const pprof_profile_t *p,
    const struct pprof_ids *locations, char **cause)
{
	const Perftools__Profiles__Sample	*s;
	const Perftools__Profiles__Label	*lb;
	size_t					 i, j;

	for (i = 0; i < p->n_sample; i++) {
		s = p->sample[i];
		if (s->n_value != p->n_sample_type)
			return xcause(cause, "sample %zu: %zu values for %zu "
			    "sample types", i, s->n_value, p->n_sample_type);
		for (j = 0; j < s->n_location_id; j++) {
			if (!pprof_ids_has(locations, s->location_id[j]))
				return xcause(cause, "sample %zu: location id "
				    "%" PRIu64 " not found", i,
				    s->location_id[j]);
		}
		for (j = 0; j < s->n_label; j++) {
			lb = s->label[j];
			if (!pprof_str_ok(p, lb->key))
				return pprof_str_fail(cause, p, lb->key,
				    "sample %zu: label %zu: key", i, j);
			if (!pprof_str_ok(p, lb->str))
				return pprof_str_fail(cause, p, lb->str,
				    "sample %zu: label %zu: str", i, j);
			if (!pprof_str_ok(p, lb->num_unit))
				return pprof_str_fail(cause, p, lb->num_unit,
				    "sample %zu: label %zu: num_unit", i, j);
		}
	}
	return 0;
}

/* Checks every reference inside a decoded profile. */
int
pprof_validate(const pprof_profile_t *p, char **cause)
{
	struct pprof_ids	mappings, functions, locations;
	int			ret = PPROF_EINVAL;

	memset(&mappings, 0, sizeof mappings);
	memset(&functions, 0, sizeof functions);
	memset(&locations, 0, sizeof locations);

	if (pprof_validate_header(p, cause) != 0 ||
	    pprof_validate_strings(p, cause) != 0)
		goto out;
	if (pprof_ids_build(&mappings, "mapping", p->n_mapping,
	    pprof_mapping_id, p->mapping, cause) != 0)
		goto out;
	if (pprof_ids_build(&functions, "function", p->n_function,
	    pprof_function_id, p->function, cause) != 0)
		goto out;
	if (pprof_ids_build(&locations, "location", p->n_location,
	    pprof_location_id, p->location, cause) != 0)
		goto out;
	if (pprof_validate_locations(p, &mappings, &functions, cause) != 0)
		goto out;
	if (pprof_validate_samples(p, &locations, cause) != 0)
		goto out;
	ret = 0;

out:
	pprof_ids_clear(&mappings);
	pprof_ids_clear(&functions);
	pprof_ids_clear(&locations);
	return ret;
}

/* String i of p, or "" when i is out of range. */
static const char *
pprof_str(const pprof_profile_t *p, int64_t i)
{
	return pprof_str_ok(p, i) ? p->string_table[i] : "";
}

/* Sets sum->totals: each sample type's sum, then the default's index. */
static void
pprof_summarize_totals(const pprof_profile_t *p, struct pprof_summary *sum)
{
	const char	*def = pprof_str(p, p->default_sample_type);
	size_t		 i, j, len = 24 + p->n_sample_type * 21, off = 0;
	uint64_t	 t;
	long long	 k = -1;

	if (p->n_sample_type > PPROF_TOTALS_MAX_TYPES) {
		sum->totals = xstrdup("");
		return;
	}
	sum->totals = xmalloc(len);
	sum->totals[0] = '\0';
	for (i = 0; i < p->n_sample_type; i++) {
		t = 0;
		for (j = 0; j < p->n_sample; j++)
			if (i < p->sample[j]->n_value)
				t += (uint64_t)p->sample[j]->value[i];
		off += (size_t)snprintf(sum->totals + off, len - off, "%s%lld",
		    i != 0 ? "," : "", (long long)(int64_t)t);
		if (*def != '\0' && k < 0 && strcmp(def,
		    pprof_str(p, p->sample_type[i]->type)) == 0)
			k = (long long)i;
	}
	if (k >= 0)
		snprintf(sum->totals + off, len - off, ";%lld", k);
}

/* Fills *sum from a validated profile. */
void
pprof_summarize(const pprof_profile_t *p, struct pprof_summary *sum)
{
	const Perftools__Profiles__ValueType	*vt;
	const char				*type, *unit;
	size_t					 i, len = 1, tl, ul;
	char					*s, *w;

	for (i = 0; i < p->n_sample_type; i++) {
		vt = p->sample_type[i];
		len += strlen(pprof_str(p, vt->type)) +
		    strlen(pprof_str(p, vt->unit)) + 2;
	}
	w = s = xmalloc(len);
	for (i = 0; i < p->n_sample_type; i++) {
		vt = p->sample_type[i];
		type = pprof_str(p, vt->type);
		unit = pprof_str(p, vt->unit);
		tl = strlen(type);
		ul = strlen(unit);
		if (i != 0)
			*w++ = ',';
		memcpy(w, type, tl);
		w += tl;
		*w++ = '/';
		memcpy(w, unit, ul);
		w += ul;
	}
	*w = '\0';

	sum->samples = (int64_t)p->n_sample;
	sum->sample_types = s;
	pprof_summarize_totals(p, sum);
	sum->time_nanos = p->time_nanos;
	sum->duration_nanos = p->duration_nanos;
}

/* Frees what pprof_summarize allocated; the struct itself stays. */
void
pprof_summary_free(struct pprof_summary *sum)
{
	if (sum == NULL)
		return;
	free(sum->sample_types);
	sum->sample_types = NULL;
	free(sum->totals);
	sum->totals = NULL;
}

/* Inflates, decodes and validates a body; NULL with *cause on failure. */
static pprof_profile_t *
pprof_load_code(const uint8_t *body, size_t len, size_t max_inflated,
    ProtobufCAllocator *alloc, int *code, char **cause)
{
	pprof_profile_t	*p;
	uint8_t		*raw;
	size_t		 rawlen;

	if ((*code = pprof_inflate(body, len, max_inflated, &raw, &rawlen,
	    cause)) != 0)
		return NULL;
	*code = PPROF_EINVAL;
	p = pprof_decode(raw, rawlen, alloc, cause);
	free(raw);
	if (p == NULL)
		return NULL;
	if (pprof_validate(p, cause) != 0) {
		pprof_free(p, alloc);
		return NULL;
	}
	*code = 0;
	return p;
}

/*
 * The whole upload check; sum may be NULL to check only. The profile is
 * thrown away, so pprof_scan() checks the wire bytes in place instead of
 * decoding them; it accepts, refuses and summarizes exactly what
 * pprof_decode() + pprof_validate() + pprof_summarize() do.
 */
int
pprof_check(const uint8_t *body, size_t len, size_t max_inflated,
    struct pprof_summary *sum, char **cause)
{
	uint8_t	*raw;
	size_t	 rawlen;
	int	 code;

	if (sum != NULL)
		memset(sum, 0, sizeof *sum);
	if ((code = pprof_inflate(body, len, max_inflated, &raw, &rawlen,
	    cause)) != 0)
		return code;
	if (gperf_detect(raw, rawlen)) {
		/* Same words as pprof_decode(). */
		xcause(cause, "a legacy gperftools CPU profile, not a pprof "
		    "(uploads convert it; this path does not)");
		code = PPROF_EINVAL;
	} else
		code = pprof_scan(raw, rawlen, sum, cause);
	free(raw);
	return code;
}

/* The upload check of raw bytes: the legacy format, then pprof_scan. */
int
pprof_check_raw(const uint8_t *raw, size_t len, struct budget_acct *acct,
    const volatile int *cancel, char **cause)
{
	if (gperf_detect(raw, len)) {
		/* Same words as pprof_decode(). */
		xcause(cause, "a legacy gperftools CPU profile, not a pprof "
		    "(uploads convert it; this path does not)");
		return PPROF_EINVAL;
	}
	return pprof_scan_acct(raw, len, acct, cancel, cause);
}

/* Reads a stored blob into a decoded, validated profile. */
pprof_profile_t *
pprof_load(const uint8_t *body, size_t len, size_t max_inflated,
    ProtobufCAllocator *alloc, char **cause)
{
	int	code;

	return pprof_load_code(body, len, max_inflated, alloc, &code, cause);
}

/* Serializes and gzips a profile into a new buffer. */
int
pprof_encode_gzip(const pprof_profile_t *p, uint8_t **out, size_t *outlen,
    char **cause)
{
	z_stream	 zs;
	uint8_t		*raw, *buf;
	size_t		 rawlen, cap, produced = 0, pos = 0, chunk, room;
	int		 zret, flush;

	*out = NULL;
	*outlen = 0;
	rawlen = perftools__profiles__profile__get_packed_size(p);
	raw = xmalloc(rawlen);
	perftools__profiles__profile__pack(p, raw);

	memset(&zs, 0, sizeof zs);
	if (deflateInit2(&zs, PPROF_GZIP_LEVEL, Z_DEFLATED, 16 + MAX_WBITS, 8,
	    Z_DEFAULT_STRATEGY) != Z_OK) {
		free(raw);
		return xcause(cause, "gzip: cannot initialise zlib");
	}
	cap = deflateBound(&zs, rawlen > ULONG_MAX ? ULONG_MAX : rawlen);
	buf = xmalloc(cap);
	do {
		if (zs.avail_in == 0 && pos < rawlen) {
			chunk = rawlen - pos > UINT_MAX ? UINT_MAX :
			    rawlen - pos;
			zs.next_in = raw + pos;
			zs.avail_in = (uInt)chunk;
			pos += chunk;
		}
		flush = pos == rawlen ? Z_FINISH : Z_NO_FLUSH;
		if (produced == cap) {
			cap *= 2;
			buf = xreallocarray(buf, cap, 1);
		}
		room = cap - produced > UINT_MAX ? UINT_MAX : cap - produced;
		zs.next_out = buf + produced;
		zs.avail_out = (uInt)room;
		zret = deflate(&zs, flush);
		produced += room - zs.avail_out;
		if (zret == Z_STREAM_ERROR) {
			deflateEnd(&zs);
			free(raw);
			free(buf);
			return xcause(cause, "gzip: deflate failed");
		}
	} while (zret != Z_STREAM_END);
	deflateEnd(&zs);
	free(raw);
	*out = buf;
	*outlen = produced;
	return 0;
}
