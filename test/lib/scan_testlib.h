/*
 * What the wire scanner's differential tests (test_pprof_scan.c and
 * test_pprof_scan_wire.c) share: a protobuf wire writer (put_* append
 * varints, keys, fields, packed fields and sub-messages to a growing
 * buffer) to build test profiles byte by byte, the old upload check
 * (inflate, protobuf-c decode, validate, summarize) and both(), which runs
 * a body through the scanner's pprof_check() and the old check, and through
 * the scanner's exact passes alone when accepted, and says what differs:
 * the verdict, the cause or the summary.
 */
#ifndef PROFD_SCAN_TESTLIB_H
#define PROFD_SCAN_TESTLIB_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/xmalloc.h"
#include "proto/pprof.h"
#include "proto/pprof_scan.h"

#define MAX_INFLATED	((size_t)64 * 1024 * 1024)

/* A growing byte buffer for encoding test profiles. */
struct buf {
	uint8_t	*p;
	size_t	 len, cap;
};

/* What one check path said. */
struct verdict {
	int			 code;
	char			*cause;
	struct pprof_summary	 sum;
};

/* Appends n bytes. */
static inline void
put(struct buf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		if ((b->p = realloc(b->p, b->cap)) == NULL)
			abort();
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

/* Appends a varint. */
static inline void
put_varint(struct buf *b, uint64_t v)
{
	uint8_t	c;

	do {
		c = v & 0x7f;
		v >>= 7;
		if (v != 0)
			c |= 0x80;
		put(b, &c, 1);
	} while (v != 0);
}

/* Appends a field key. */
static inline void
put_tag(struct buf *b, uint32_t num, unsigned wt)
{
	put_varint(b, ((uint64_t)num << 3) | wt);
}

/* Appends a varint field. */
static inline void
put_int(struct buf *b, uint32_t num, uint64_t v)
{
	put_tag(b, num, 0);
	put_varint(b, v);
}

/* Appends a length-delimited field holding sub (freed). */
static inline void
put_msg(struct buf *b, uint32_t num, struct buf *sub)
{
	put_tag(b, num, 2);
	put_varint(b, sub->len);
	put(b, sub->p, sub->len);
	free(sub->p);
	memset(sub, 0, sizeof *sub);
}

/* Appends a string field. */
static inline void
put_str(struct buf *b, uint32_t num, const char *s, size_t n)
{
	put_tag(b, num, 2);
	put_varint(b, n);
	put(b, s, n);
}

/* Appends a packed varint field of n values. */
static inline void
put_packed(struct buf *b, uint32_t num, const uint64_t *v, size_t n)
{
	struct buf	sub = { NULL, 0, 0 };
	size_t		i;

	for (i = 0; i < n; i++)
		put_varint(&sub, v[i]);
	if (sub.p == NULL)
		put(&sub, "", 0);
	put_msg(b, num, &sub);
}

/* The old upload check: inflate, protobuf-c decode, validate, summarize. */
static inline int
slow_check(const uint8_t *body, size_t len, size_t max,
    struct pprof_summary *sum, char **cause)
{
	struct arena		*arena;
	pprof_profile_t		*p;
	uint8_t			*raw;
	size_t			 rawlen;
	int			 code;

	memset(sum, 0, sizeof *sum);
	if ((code = pprof_inflate(body, len, max, &raw, &rawlen, cause)) != 0)
		return code;
	arena = arena_new(0);
	p = pprof_decode(raw, rawlen, arena_allocator(arena), cause);
	free(raw);
	code = PPROF_EINVAL;
	if (p != NULL && pprof_validate(p, cause) == 0) {
		pprof_summarize(p, sum);
		code = 0;
	}
	arena_free(arena);
	return code;
}

/* Runs one path into *v. */
static inline void
run(int fast, const uint8_t *body, size_t len, size_t max, struct verdict *v)
{
	v->cause = NULL;
	if (fast)
		v->code = pprof_check(body, len, max, &v->sum, &v->cause);
	else
		v->code = slow_check(body, len, max, &v->sum, &v->cause);
}

/* Frees a verdict. */
static inline void
verdict_free(struct verdict *v)
{
	free(v->cause);
	pprof_summary_free(&v->sum);
}

/* Compares two verdicts; returns NULL if equal, else what differs (new). */
static inline char *
verdict_diff(const struct verdict *f, const struct verdict *s)
{
	char	*d = NULL;
	size_t	 n = 0;
	FILE	*m;

	if (f->code == s->code &&
	    (f->code != 0 ? f->cause != NULL && s->cause != NULL &&
	    strcmp(f->cause, s->cause) == 0 :
	    f->sum.samples == s->sum.samples &&
	    f->sum.time_nanos == s->sum.time_nanos &&
	    f->sum.duration_nanos == s->sum.duration_nanos &&
	    strcmp(f->sum.sample_types, s->sum.sample_types) == 0 &&
	    f->sum.totals != NULL && s->sum.totals != NULL &&
	    strcmp(f->sum.totals, s->sum.totals) == 0))
		return NULL;
	if ((m = open_memstream(&d, &n)) == NULL)
		abort();
	fprintf(m, "scanner %d [%s] %" PRId64 " %s %s | protobuf-c %d [%s] %"
	    PRId64 " %s %s", f->code, f->cause ? f->cause : "",
	    f->sum.samples, f->sum.sample_types ? f->sum.sample_types : "-",
	    f->sum.totals ? f->sum.totals : "-",
	    s->code, s->cause ? s->cause : "", s->sum.samples,
	    s->sum.sample_types ? s->sum.sample_types : "-",
	    s->sum.totals ? s->sum.totals : "-");
	fclose(m);
	return d;
}

/*
 * An accepted body (most take the scanner's fast path) must also pass the
 * exact passes alone with the same summary: they decide every profile the
 * fast path hands back. Returns NULL if so, else what differs.
 */
static inline char *
exact_diff(const uint8_t *body, size_t len, size_t max,
    const struct verdict *f)
{
	struct verdict	 e;
	uint8_t		*raw;
	size_t		 rawlen;
	char		*d, *why;

	memset(&e, 0, sizeof e);
	if (pprof_inflate(body, len, max, &raw, &rawlen, &e.cause) != 0)
		e.code = PPROF_EINVAL;
	else {
		e.code = pprof_scan_exact(raw, rawlen, &e.sum, &e.cause);
		free(raw);
	}
	d = verdict_diff(f, &e);
	verdict_free(&e);
	if (d == NULL)
		return NULL;
	why = xasprintf("exact passes alone differ: %s", d);
	free(d);
	return why;
}

/*
 * Checks body both ways; returns NULL if they agree, else what differs.
 * *code: OUT the scanner's verdict; *cause: OUT its cause (caller frees),
 * if not NULL.
 */
static inline char *
both(const uint8_t *body, size_t len, size_t max, int *code, char **cause,
    struct pprof_summary *sum)
{
	struct verdict	f, s;
	char		*d;

	run(1, body, len, max, &f);
	run(0, body, len, max, &s);
	d = verdict_diff(&f, &s);
	if (d == NULL && f.code == 0)
		d = exact_diff(body, len, max, &f);
	if (code != NULL)
		*code = f.code;
	if (cause != NULL) {
		*cause = f.cause;
		f.cause = NULL;
	}
	if (sum != NULL) {
		*sum = f.sum;
		memset(&f.sum, 0, sizeof f.sum);
	}
	verdict_free(&f);
	verdict_free(&s);
	return d;
}

#endif
