/*
 * Folded stacks to pprof: the text that stack collapsers, py-spy's raw
 * output, async-profiler's collapsed output and Pyroscope's SDKs send
 * ("main;work;hash 42", root first, one stack a line), turned into a
 * gzipped pprof at ingest. Each distinct frame name becomes one function
 * and one location (no mapping, no address: the names are all there
 * is); identical stacks are summed into one sample. In lines mode
 * (Pyroscope's format=lines) a line is a stack without a count and
 * counts once. Bad input is refused with the line it was found on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/budget.h"
#include "common/utf8.h"
#include "common/xmalloc.h"
#include "proto/folded.h"
#include "proto/pprof_write.h"

/* A frame name or a stack, interned by hash. */
struct folded_entry {
	uint64_t	 hash;
	size_t		 off, len;	/* frames: in the text; stacks: ids */
	int64_t		 value;		/* stacks: summed counts */
};

/* An open-addressing table of entries. */
struct folded_table {
	struct folded_entry	*e;
	size_t			 n, cap;
	size_t			*slot;		/* index + 1, 0 empty */
	size_t			 nslot;
};

/* The conversion's state. */
struct folded {
	struct budget_acct	*acct;		/* charged for every table */
	const char		*text;
	struct folded_table	 names;		/* id = index + 1 */
	struct folded_table	 stacks;
	uint64_t		*ids;		/* stacks' frame ids, leaf first */
	size_t			 nids, capids;
};

/* FNV-1a over bytes, seeded. */
static uint64_t
folded_hash(const void *p, size_t len, uint64_t h)
{
	const unsigned char	*s = p;
	size_t			 i;

	for (i = 0; i < len; i++)
		h = (h ^ s[i]) * 1099511628211ULL;
	return h;
}

/* Doubles the slots of t (hashes are kept): 0, or -1 when refused. */
static int
folded_rehash(struct folded *f, struct folded_table *t)
{
	size_t	 i, h, nslot = t->nslot ? t->nslot * 2 : 256;
	size_t	*slot;

	if ((slot = budget_calloc(f->acct, nslot, sizeof *slot)) == NULL)
		return -1;
	budget_dealloc(f->acct, t->slot, t->nslot * sizeof *t->slot);
	t->slot = slot;
	t->nslot = nslot;
	for (i = 0; i < t->n; i++) {
		for (h = t->e[i].hash; t->slot[h & (t->nslot - 1)] != 0; h++)
			;
		t->slot[h & (t->nslot - 1)] = i + 1;
	}
	return 0;
}

/*
 * The entry of bytes p[0..len) in t (ids: stacks), added if new; NULL when
 * the budget refuses the memory.
 */
static struct folded_entry *
folded_intern(struct folded *f, struct folded_table *t, const void *p,
    size_t len, size_t off, int stack)
{
	struct folded_entry	*e;
	uint64_t		 hash = folded_hash(p, len, 1469598103934665603ULL);
	size_t			 h, i;
	const void		*q;

	if (t->n * 2 >= t->nslot && folded_rehash(f, t) != 0)
		return NULL;
	for (h = hash;; h++) {
		if ((i = t->slot[h & (t->nslot - 1)]) == 0)
			break;
		e = &t->e[i - 1];
		q = stack ? (const void *)(f->ids + e->off) :
		    (const void *)(f->text + e->off);
		if (e->hash == hash && e->len == len && memcmp(q, p,
		    stack ? len * sizeof *f->ids : len) == 0)
			return e;
	}
	if (budget_grow(f->acct, &t->e, &t->cap, t->n + 1, sizeof *t->e) != 0)
		return NULL;
	e = &t->e[t->n];
	memset(e, 0, sizeof *e);
	e->hash = hash;
	e->off = off;
	e->len = len;
	t->slot[h & (t->nslot - 1)] = ++t->n;
	return e;
}

/* Parses the count at the end of a line: 0, or -1 if it is not one. */
static int
folded_count(const char *s, size_t len, int64_t *v)
{
	size_t	i;

	*v = 0;
	if (len == 0 || len > 18)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		*v = *v * 10 + (s[i] - '0');
	}
	return 0;
}

/* Sets *cause for memory refused at line lineno: FOLDED_ENOMEM. */
static int
folded_nomem(size_t lineno, char **cause)
{
	xcause(cause, "line %zu: converting needs more memory than allowed",
	    lineno);
	return FOLDED_ENOMEM;
}

/*
 * Reads one line (without its newline): 0, 1 blank, FOLDED_EINVAL or
 * FOLDED_ENOMEM (*cause).
 */
static int
folded_line(struct folded *f, size_t start, size_t len, size_t lineno,
    int lines, char **cause)
{
	const char		*s = f->text + start;
	struct folded_entry	*e;
	size_t			 end = len, a, b, first = f->nids, n;
	int64_t			 v = 1;

	while (end > 0 && (s[end - 1] == '\r' || s[end - 1] == ' ' ||
	    s[end - 1] == '\t'))
		end--;
	if (end == 0)
		return 1;
	if (!utf8_valid(s, end))
		return xcause(cause, "line %zu: not UTF-8", lineno);
	if (!lines) {
		/* The count follows the last space. */
		for (b = end; b > 0 && s[b - 1] != ' '; b--)
			;
		if (b == 0 || folded_count(s + b, end - b, &v) == -1)
			return xcause(cause, "line %zu: no count after the "
			    "stack (\"frame;frame COUNT\")", lineno);
		end = b - 1;
		while (end > 0 && s[end - 1] == ' ')
			end--;
		if (end == 0)
			return xcause(cause, "line %zu: a count without a "
			    "stack", lineno);
	}
	/* Frames, root first; kept leaf first as pprof wants. */
	for (a = 0; a <= end; a = b + 1) {
		for (b = a; b < end && s[b] != ';'; b++)
			;
		if (b == a)
			return xcause(cause, "line %zu: an empty frame",
			    lineno);
		e = folded_intern(f, &f->names, s + a, b - a, start + a, 0);
		if (e == NULL || budget_grow(f->acct, &f->ids, &f->capids,
		    f->nids + 1, sizeof *f->ids) != 0)
			return folded_nomem(lineno, cause);
		f->ids[f->nids++] = (uint64_t)(e - f->names.e) + 1;
		if (b == end)
			break;
	}
	n = f->nids - first;
	for (a = 0; a < n / 2; a++) {
		uint64_t t = f->ids[first + a];

		f->ids[first + a] = f->ids[first + n - 1 - a];
		f->ids[first + n - 1 - a] = t;
	}
	e = folded_intern(f, &f->stacks, f->ids + first, n, first, 1);
	if (e == NULL)
		return folded_nomem(lineno, cause);
	if (e->off != first)
		f->nids = first;	/* seen before: its ids are kept */
	if (e->value > INT64_MAX - v)
		return xcause(cause, "line %zu: the counts overflow", lineno);
	e->value += v;
	return 0;
}

/* The string index of name in the table written as: 0 "", then frames. */
#define FOLDED_STR_FRAME(id)	((uint64_t)(id) + FOLDED_FIXED_STRINGS - 1)
#define FOLDED_FIXED_STRINGS	5	/* "", type, unit, type2, unit2 */

/* Serializes the profile. */
static int
folded_write(struct folded *f, const struct folded_options *o, uint8_t **out,
    size_t *outlen, char **cause)
{
	struct pprof_write	 w;
	const char		*fixed[FOLDED_FIXED_STRINGS] = { "",
	    o->type, o->unit, o->type2 ? o->type2 : "", o->unit2 ? o->unit2 :
	    "" };
	struct folded_entry	*e;
	size_t			 i, j, len, vlen;
	uint64_t		 id, v2;
	int			 two = o->type2 != NULL && o->unit2 != NULL;

	if (pprof_write_init(&w, f->acct, 1, cause) != 0)
		return FOLDED_ENOMEM;
	pprof_write_value_type(&w, 1, 1, 2);
	if (two)
		pprof_write_value_type(&w, 1, 3, 4);
	for (i = 0; i < f->stacks.n; i++) {
		e = &f->stacks.e[i];
		len = 0;
		for (j = 0; j < e->len; j++)
			len += pprof_write_varint_size(f->ids[e->off + j]);
		v2 = (uint64_t)e->value * (uint64_t)o->period;
		vlen = pprof_write_varint_size((uint64_t)e->value) +
		    (two ? pprof_write_varint_size(v2) : 0);
		pprof_write_len(&w, 2, 1 + pprof_write_varint_size(len) + len +
		    1 + pprof_write_varint_size(vlen) + vlen);
		pprof_write_len(&w, 1, len);
		for (j = 0; j < e->len; j++)
			pprof_write_varint(&w, f->ids[e->off + j]);
		pprof_write_len(&w, 2, vlen);
		pprof_write_varint(&w, (uint64_t)e->value);
		if (two)
			pprof_write_varint(&w, v2);
	}
	for (id = 1; id <= f->names.n; id++) {
		/* Location id: line { function_id }. */
		len = pprof_write_field_size(id);
		pprof_write_len(&w, 4, len + 2 + len);
		pprof_write_uint(&w, 1, id);
		pprof_write_len(&w, 4, len);
		pprof_write_uint(&w, 1, id);
	}
	for (id = 1; id <= f->names.n; id++) {
		/* Function id, name and system name. */
		len = pprof_write_field_size(id) + 2 * pprof_write_field_size(
		    FOLDED_STR_FRAME(id));
		pprof_write_len(&w, 5, len);
		pprof_write_uint(&w, 1, id);
		pprof_write_uint(&w, 2, FOLDED_STR_FRAME(id));
		pprof_write_uint(&w, 3, FOLDED_STR_FRAME(id));
	}
	for (i = 0; i < FOLDED_FIXED_STRINGS; i++)
		pprof_write_bytes(&w, 6, fixed[i], strlen(fixed[i]));
	for (i = 0; i < f->names.n; i++)
		pprof_write_bytes(&w, 6, f->text + f->names.e[i].off,
		    f->names.e[i].len);
	pprof_write_uint(&w, 9, (uint64_t)o->time_nanos);
	pprof_write_uint(&w, 10, (uint64_t)o->duration_nanos);
	if (two) {
		pprof_write_value_type(&w, 11, 3, 4);
		pprof_write_uint(&w, 12, (uint64_t)o->period);
	}
	if (pprof_write_finish(&w, out, outlen, cause) != 0)
		return FOLDED_ENOMEM;
	return 0;
}

/* Frees the state, giving its bytes back. */
static void
folded_free(struct folded *f)
{
	budget_dealloc(f->acct, f->names.e, f->names.cap * sizeof *f->names.e);
	budget_dealloc(f->acct, f->names.slot, f->names.nslot *
	    sizeof *f->names.slot);
	budget_dealloc(f->acct, f->stacks.e, f->stacks.cap *
	    sizeof *f->stacks.e);
	budget_dealloc(f->acct, f->stacks.slot, f->stacks.nslot *
	    sizeof *f->stacks.slot);
	budget_dealloc(f->acct, f->ids, f->capids * sizeof *f->ids);
}

/* Converts folded (or lines) text into a gzipped pprof. */
int
folded_to_pprof(const char *text, size_t len, const struct folded_options *o,
    uint8_t **out, size_t *outlen, char **cause)
{
	struct folded	 f;
	size_t		 at, nl, lineno = 0, nstacks = 0;
	int		 rc = 0;

	*out = NULL;
	*outlen = 0;
	memset(&f, 0, sizeof f);
	f.acct = o->acct;
	f.text = text;
	if (memchr(text, '\0', len) != NULL) {
		xcause(cause, "a NUL byte: not text");
		return FOLDED_EINVAL;
	}
	for (at = 0; at < len && rc == 0; at = nl + 1) {
		lineno++;
		nl = at;
		while (nl < len && text[nl] != '\n')
			nl++;
		rc = folded_line(&f, at, nl - at, lineno, o->lines, cause);
		if (rc == 0)
			nstacks++;
		else if (rc == 1)
			rc = 0;
		if (rc == 0 && o->max_frames > 0 &&
		    f.names.n > o->max_frames) {
			xcause(cause, "line %zu: more than %zu distinct "
			    "frames", lineno, o->max_frames);
			rc = FOLDED_ETOOBIG;
		}
	}
	if (rc == 0 && nstacks == 0) {
		xcause(cause, "no stacks");
		rc = FOLDED_EINVAL;
	}
	if (rc == 0)
		rc = folded_write(&f, o, out, outlen, cause);
	folded_free(&f);
	return rc;
}
