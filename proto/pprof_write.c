/*
 * pprof wire writer (see pprof_write.h). Raw mode appends to one growing
 * buffer. Gzip mode appends to a chunk of PPROF_WRITE_CHUNK bytes and
 * deflates it into the output whenever it fills, so the raw profile is
 * never held whole; zlib's own state is allocated through the account
 * too. Field bodies never need moving: callers compute each message's
 * size first (pprof_write_*_size) and write its key and length before it.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/budget.h"
#include "common/xmalloc.h"
#include "proto/pprof_write.h"

/* Same level as pprof_encode_gzip (Go's runtime/pprof uses it too). */
#define PPROF_WRITE_GZIP_LEVEL	1
/* Raw bytes gathered before they are deflated. */
#define PPROF_WRITE_CHUNK	(64 * 1024)

/* zlib's allocator: account-charged blocks that remember their size. */
static voidpf
pprof_write_zalloc(voidpf opaque, uInt items, uInt size)
{
	size_t n = (size_t)items * size, *p;

	if ((p = budget_alloc(opaque, n + sizeof(max_align_t))) == NULL)
		return Z_NULL;
	*p = n + sizeof(max_align_t);
	return (char *)p + sizeof(max_align_t);
}

/* zlib's free for pprof_write_zalloc's blocks. */
static void
pprof_write_zfree(voidpf opaque, voidpf ptr)
{
	size_t *p;

	if (ptr == Z_NULL)
		return;
	p = (size_t *)(void *)((char *)ptr - sizeof(max_align_t));
	budget_dealloc(opaque, p, *p);
}

/* Starts a writer. */
int
pprof_write_init(struct pprof_write *w, struct budget_acct *acct, int gzip,
    char **cause)
{
	memset(w, 0, sizeof *w);
	w->acct = acct;
	w->gzip = gzip;
	if (!gzip)
		return 0;
	w->zs.zalloc = pprof_write_zalloc;
	w->zs.zfree = pprof_write_zfree;
	w->zs.opaque = acct;
	if (deflateInit2(&w->zs, PPROF_WRITE_GZIP_LEVEL, Z_DEFLATED,
	    16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		w->failed = 1;
		return xcause(cause, "gzip: cannot initialise zlib");
	}
	w->zinit = 1;
	return 0;
}

/* Deflates the pending bytes (all of them; finish: end the stream). */
static void
pprof_write_deflate(struct pprof_write *w, int finish)
{
	size_t room;
	int zret;

	w->zs.next_in = w->buf;
	w->zs.avail_in = (uInt)w->len;
	for (;;) {
		if (w->gzcap - w->gzlen < 64 && budget_grow(w->acct, &w->gz,
		    &w->gzcap, w->gzcap + PPROF_WRITE_CHUNK, 1) != 0) {
			w->failed = 1;
			return;
		}
		room = w->gzcap - w->gzlen > UINT_MAX ? UINT_MAX :
		    w->gzcap - w->gzlen;
		w->zs.next_out = w->gz + w->gzlen;
		w->zs.avail_out = (uInt)room;
		zret = deflate(&w->zs, finish ? Z_FINISH : Z_NO_FLUSH);
		w->gzlen += room - w->zs.avail_out;
		if (zret == Z_STREAM_ERROR || zret == Z_MEM_ERROR ||
		    (finish && zret == Z_BUF_ERROR && w->zs.avail_out != 0)) {
			w->failed = 1;
			return;
		}
		if (finish ? zret == Z_STREAM_END :
		    w->zs.avail_in == 0 && w->zs.avail_out != 0)
			break;
	}
	w->len = 0;
}

/* Makes room for n more bytes; 0, or -1 once the writer failed. */
static int
pprof_write_room(struct pprof_write *w, size_t n)
{
	if (w->failed)
		return -1;
	if (w->len + n <= w->cap)
		return 0;
	if (w->gzip && w->len > 0) {
		pprof_write_deflate(w, 0);
		if (w->failed)
			return -1;
		if (n <= w->cap)
			return 0;
	}
	if (budget_grow(w->acct, &w->buf, &w->cap, w->len + n < PPROF_WRITE_CHUNK
	    && w->gzip ? PPROF_WRITE_CHUNK : w->len + n, 1) != 0) {
		w->failed = 1;
		return -1;
	}
	return 0;
}

/* Appends a varint. */
void
pprof_write_varint(struct pprof_write *w, uint64_t v)
{
	uint8_t *p;

	if (pprof_write_room(w, 10) != 0)
		return;
	p = w->buf + w->len;
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	w->len = (size_t)(p - w->buf);
}

/* Appends a field key. */
void
pprof_write_key(struct pprof_write *w, uint32_t field, unsigned wt)
{
	pprof_write_varint(w, (uint64_t)field << 3 | wt);
}

/* Appends a varint field unless v is 0. */
void
pprof_write_uint(struct pprof_write *w, uint32_t field, uint64_t v)
{
	if (v == 0)
		return;
	pprof_write_key(w, field, PPROF_WRITE_VARINT);
	pprof_write_varint(w, v);
}

/* Appends a length-delimited field's key and length. */
void
pprof_write_len(struct pprof_write *w, uint32_t field, size_t len)
{
	pprof_write_key(w, field, PPROF_WRITE_LEN);
	pprof_write_varint(w, len);
}

/* Appends a ValueType of strings t and u. */
void
pprof_write_value_type(struct pprof_write *w, uint32_t field, uint64_t t,
    uint64_t u)
{
	pprof_write_len(w, field, pprof_write_field_size(t) +
	    pprof_write_field_size(u));
	pprof_write_uint(w, 1, t);
	pprof_write_uint(w, 2, u);
}

/* Appends a length-delimited field with its bytes. */
void
pprof_write_bytes(struct pprof_write *w, uint32_t field, const void *p,
    size_t len)
{
	pprof_write_len(w, field, len);
	if (len == 0 || pprof_write_room(w, len) != 0)
		return;
	memcpy(w->buf + w->len, p, len);
	w->len += len;
}

/* Frees everything the writer holds. */
void
pprof_write_abort(struct pprof_write *w)
{
	if (w->zinit)
		deflateEnd(&w->zs);
	budget_dealloc(w->acct, w->buf, w->cap);
	budget_dealloc(w->acct, w->gz, w->gzcap);
	memset(w, 0, sizeof *w);
}

/* Ends the writing and hands over the output, trimmed to its length. */
int
pprof_write_finish(struct pprof_write *w, uint8_t **out, size_t *len,
    char **cause)
{
	uint8_t **res;
	size_t *cap, n;

	*out = NULL;
	*len = 0;
	if (w->gzip && !w->failed)
		pprof_write_deflate(w, 1);
	if (w->failed) {
		pprof_write_abort(w);
		return xcause(cause, "no memory to write the profile");
	}
	res = w->gzip ? &w->gz : &w->buf;
	cap = w->gzip ? &w->gzcap : &w->cap;
	n = w->gzip ? w->gzlen : w->len;
	if (*res == NULL) {
		/* Nothing was written: an empty buffer of one byte. */
		if ((*res = budget_alloc(w->acct, 1)) == NULL) {
			pprof_write_abort(w);
			return xcause(cause, "no memory to write the profile");
		}
		*cap = 1;
	}
	*out = budget_realloc(w->acct, *res, *cap, n);	/* a shrink */
	*len = n;
	*res = NULL;
	*cap = 0;
	pprof_write_abort(w);
	return 0;
}
