/*
 * Names of Python code objects (see pycode.h). The location table is
 * CPython's (Objects/locations.md): entries of a first byte (bit 7 set,
 * a 4-bit code, the length in code units less one in the low 3 bits)
 * then their operands: code 15 has no location, 14 is the long form
 * (signed varint line delta, then end line, column and end column as
 * varints), 13 only a line delta, 10 to 12 a line delta of code - 10 and
 * two column bytes, 0 to 9 no line delta and one column byte. Varints
 * are 6-bit groups, low group first, bit 6 meaning "more"; a signed one
 * keeps its sign in bit 0.
 */
#include <stdlib.h>
#include <string.h>

#include "agent/core/pycode.h"
#include "common/xmalloc.h"

/* One code object as read. */
struct pycode_entry {
	uint64_t	 space, code;		/* 0, 0: empty */
	uint64_t	 head[6];		/* type, file, name, qualname,
						   table, first line */
	uint64_t	 units;			/* ob_size: code units */
	uint64_t	 gen;			/* last checked */
	char		*name, *file;
	uint8_t		*table;
	size_t		 tlen;
};

struct pycode {
	struct pycode_entry	*v;
	size_t			 size, n, max;	/* size: power of two */
	uint64_t		 gen, reads;
};

/* A cache of at most max code objects. */
struct pycode *
pycode_new(size_t max)
{
	struct pycode *c = xcalloc(1, sizeof *c);

	c->max = max < 16 ? 16 : max;
	for (c->size = 32; c->size < c->max * 2; c->size *= 2)
		;
	c->v = xcalloc(c->size, sizeof *c->v);
	c->gen = 1;
	return c;
}

/* Frees an entry's memory and empties it. */
static void
pycode_clear(struct pycode_entry *e)
{
	free(e->name);
	free(e->file);
	free(e->table);
	memset(e, 0, sizeof *e);
}

/* Empties the whole cache. */
static void
pycode_empty(struct pycode *c)
{
	size_t i;

	for (i = 0; i < c->size; i++)
		if (c->v[i].code != 0)
			pycode_clear(&c->v[i]);
	c->n = 0;
}

void
pycode_free(struct pycode *c)
{
	if (c == NULL)
		return;
	pycode_empty(c);
	free(c->v);
	free(c);
}

/* A new generation: entries are checked again on their next use. */
void
pycode_tick(struct pycode *c)
{
	c->gen++;
}

/* Whether space is not the one forgotten (pycode_forget's predicate). */
static int
pycode_other(void *ctx, uint64_t space)
{
	return space != *(const uint64_t *)ctx;
}

/* Forgets space's entries. */
void
pycode_forget(struct pycode *c, uint64_t space)
{
	pycode_forget_dead(c, pycode_other, &space);
}

/* Forgets dead spaces' entries; the table is rebuilt to keep probing
 * right. */
void
pycode_forget_dead(struct pycode *c, int (*alive)(void *, uint64_t),
    void *ctx)
{
	struct pycode_entry *old = c->v;
	size_t i, j, size = c->size;

	c->v = xcalloc(size, sizeof *c->v);
	c->n = 0;
	for (i = 0; i < size; i++) {
		if (old[i].code == 0)
			continue;
		if (!alive(ctx, old[i].space)) {
			pycode_clear(&old[i]);
			continue;
		}
		j = (size_t)((old[i].code >> 4) ^ (old[i].space * 0x9e3779b1)) &
		    (size - 1);
		while (c->v[j].code != 0)
			j = (j + 1) & (size - 1);
		c->v[j] = old[i];
		c->n++;
	}
	free(old);
}

/* The slot of (space, code): its entry, or the empty slot to fill. */
static struct pycode_entry *
pycode_slot(struct pycode *c, uint64_t space, uint64_t code)
{
	size_t j = (size_t)((code >> 4) ^ (space * 0x9e3779b1)) &
	    (c->size - 1);

	while (c->v[j].code != 0 &&
	    (c->v[j].code != code || c->v[j].space != space))
		j = (j + 1) & (c->size - 1);
	return &c->v[j];
}

/* Appends code point u as UTF-8 to buf[*n] (room for 4 more kept). */
static void
pycode_utf8(char *buf, size_t *n, uint32_t u)
{
	if (u < 0x80)
		buf[(*n)++] = (char)u;
	else if (u < 0x800) {
		buf[(*n)++] = (char)(0xc0 | u >> 6);
		buf[(*n)++] = (char)(0x80 | (u & 0x3f));
	} else if (u < 0x10000) {
		if (u >= 0xd800 && u < 0xe000)
			u = 0xfffd;	/* a lone surrogate */
		buf[(*n)++] = (char)(0xe0 | u >> 12);
		buf[(*n)++] = (char)(0x80 | ((u >> 6) & 0x3f));
		buf[(*n)++] = (char)(0x80 | (u & 0x3f));
	} else if (u < 0x110000) {
		buf[(*n)++] = (char)(0xf0 | u >> 18);
		buf[(*n)++] = (char)(0x80 | ((u >> 12) & 0x3f));
		buf[(*n)++] = (char)(0x80 | ((u >> 6) & 0x3f));
		buf[(*n)++] = (char)(0x80 | (u & 0x3f));
	}
}

/*
 * Reads the compact str object at addr as UTF-8 into out (at most
 * PYCODE_MAX_NAME bytes and a NUL). 0, or -1 if it is not one.
 */
static int
pycode_str(const struct pyrt *rt, pyrt_read_fn read, void *ctx,
    uint64_t addr, char *out)
{
	uint8_t raw[PYCODE_MAX_NAME * 4];
	uint64_t len;
	uint32_t state, kind, u;
	size_t i, n = 0, bytes;
	int ascii;

	if (addr < 4096 || (addr & 7) != 0 ||
	    read(ctx, addr + 16, &len, 8) != 0 ||
	    read(ctx, addr + 32, &state, 4) != 0)
		return -1;
	kind = (state >> 2) & 7;
	ascii = (state >> 6) & 1;
	if (!((state >> 5) & 1) || (kind != 1 && kind != 2 && kind != 4) ||
	    (ascii && kind != 1))
		return -1;
	if (len > PYCODE_MAX_NAME)
		len = PYCODE_MAX_NAME;
	bytes = (size_t)len * kind;
	if (bytes > 0 && read(ctx, addr + (uint64_t)(ascii ?
	    rt->off.uni_ascii_size : rt->off.uni_compact_size), raw,
	    bytes) != 0)
		return -1;
	for (i = 0; i < len && n + 4 < PYCODE_MAX_NAME; i++) {
		if (kind == 1)
			u = raw[i];
		else if (kind == 2)
			u = (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8;
		else
			memcpy(&u, raw + 4 * i, 4);
		if (ascii && u >= 0x80)
			return -1;
		pycode_utf8(out, &n, u);
	}
	out[n] = '\0';
	return 0;
}

/* "module.qualname": the module from the file's name. */
static char *
pycode_qualify(const char *file, const char *qualname)
{
	const char *b = strrchr(file, '/'), *e, *d;
	size_t blen;

	if (strncmp(file, "<frozen ", 8) == 0 &&
	    (e = strchr(file, '>')) != NULL)
		return xasprintf("%.*s.%s", (int)(e - file - 8), file + 8,
		    qualname);
	if (file[0] == '<' || file[0] == '\0')
		return xstrdup(qualname);
	b = b != NULL ? b + 1 : file;
	blen = strlen(b);
	if (blen > 3 && strcmp(b + blen - 3, ".py") == 0)
		blen -= 3;
	if (blen == 8 && strncmp(b, "__init__", 8) == 0 && b > file + 1) {
		/* A package: its directory's name. */
		for (d = b - 2; d > file && d[-1] != '/'; d--)
			;
		return xasprintf("%.*s.%s", (int)(b - 1 - d), d, qualname);
	}
	return xasprintf("%.*s.%s", (int)blen, b, qualname);
}

/* Reads the code object at code into e. 0, or -1. */
static int
pycode_load(struct pycode *c, const struct pyrt *rt, pyrt_read_fn read,
    void *ctx, uint64_t code, const uint64_t head[6], uint64_t units,
    struct pycode_entry *e)
{
	char file[PYCODE_MAX_NAME + 1], qual[PYCODE_MAX_NAME + 1];
	uint64_t tlen;

	if (pycode_str(rt, read, ctx, head[1], file) != 0 ||
	    pycode_str(rt, read, ctx, head[3], qual) != 0)
		return -1;
	c->reads++;
	if (head[4] < 4096 || read(ctx, head[4] + 16, &tlen, 8) != 0)
		return -1;
	if (tlen > PYCODE_MAX_TABLE)
		tlen = PYCODE_MAX_TABLE;	/* later lines stay unknown */
	e->table = xmalloc(tlen ? tlen : 1);
	if (tlen > 0 && read(ctx, head[4] + 32, e->table, tlen) != 0) {
		free(e->table);
		e->table = NULL;
		return -1;
	}
	e->tlen = (size_t)tlen;
	e->code = code;
	memcpy(e->head, head, sizeof e->head);
	e->units = units;
	e->file = xstrdup(file);
	e->name = pycode_qualify(file, qual);
	return 0;
}

/* Names a frame word (see pycode.h). */
int
pycode_name(struct pycode *c, const struct pyrt *rt, pyrt_read_fn read,
    void *ctx, uint64_t space, uint64_t w, struct pycode_frame *out)
{
	const struct pyrt_offsets *o = &rt->off;
	uint64_t code = PYRT_WORD_CODE(w), head[6], units;
	uint8_t raw[256];
	uint32_t idx = PYRT_WORD_IDX(w), first;
	struct pycode_entry *e;
	size_t need = (size_t)o->co_linetable + 8;

	if (code == 0 || need > sizeof raw)
		return -1;
	e = pycode_slot(c, space, code);
	if (e->code == 0 || e->gen != c->gen) {
		if (read(ctx, code, raw, need) != 0)
			return -1;
		memcpy(&head[0], raw + 8, 8);
		memcpy(&units, raw + 16, 8);
		memcpy(&head[1], raw + o->co_filename, 8);
		memcpy(&head[2], raw + o->co_name, 8);
		memcpy(&head[3], raw + o->co_qualname, 8);
		memcpy(&head[4], raw + o->co_linetable, 8);
		memcpy(&first, raw + o->co_firstlineno, 4);
		head[5] = first;
		if (head[0] != rt->code_type)
			return -1;
		if (e->code == 0 && c->n >= c->max) {
			pycode_empty(c);
			e = pycode_slot(c, space, code);
		}
		if (e->code == 0 || memcmp(e->head, head, sizeof head) != 0) {
			/* New, or another code object at the address: the
			 * slot keeps its key, read again (or left empty). */
			if (e->code == 0)
				c->n++;
			free(e->name);
			free(e->file);
			free(e->table);
			e->name = e->file = NULL;
			e->table = NULL;
			memset(e->head, 0, sizeof e->head);
			e->units = 0;
			e->space = space;
			e->code = code;
			e->gen = 0;
			if (pycode_load(c, rt, read, ctx, code, head, units,
			    e) != 0)
				return -1;
		}
		e->gen = c->gen;
	}
	if (idx >= e->units)
		return -1;
	out->name = e->name;
	out->file = e->file;
	out->start_line = (int)e->head[5];
	out->line = pycode_line(e->table, e->tlen, (int)e->head[5], idx);
	return 0;
}

/* An unsigned varint of the table at *p, or -1 past its end. */
static int64_t
pycode_varint(const uint8_t *t, size_t len, size_t *p)
{
	uint64_t v = 0;
	int shift = 0;

	while (*p < len && shift < 60) {
		v |= (uint64_t)(t[*p] & 63) << shift;
		shift += 6;
		if (!(t[(*p)++] & 64))
			return (int64_t)v;
	}
	return -1;
}

/* The line of code unit idx (see pycode.h). */
int
pycode_line(const uint8_t *t, size_t len, int first, uint32_t idx)
{
	size_t p = 0;
	uint64_t addr = 0;
	int64_t line = first, v;
	int code, n, none;

	while (p < len) {
		if (!(t[p] & 0x80))
			return 0;		/* not an entry's first byte */
		code = (t[p] >> 3) & 15;
		n = (t[p] & 7) + 1;
		p++;
		none = 0;
		if (code == 15)
			none = 1;
		else if (code == 14 || code == 13) {
			if ((v = pycode_varint(t, len, &p)) < 0)
				return 0;
			line += (v & 1) ? -(v >> 1) : (v >> 1);
			if (code == 14 && (pycode_varint(t, len, &p) < 0 ||
			    pycode_varint(t, len, &p) < 0 ||
			    pycode_varint(t, len, &p) < 0))
				return 0;
		} else if (code >= 10) {
			line += code - 10;
			p += 2;
		} else
			p += 1;
		if (idx < addr + (uint64_t)n)
			return none || line <= 0 || line > 1 << 30 ? 0 :
			    (int)line;
		addr += (uint64_t)n;
	}
	return 0;
}

/* Counters. */
void
pycode_stats(const struct pycode *c, size_t *entries, uint64_t *reads)
{
	*entries = c->n;
	*reads = c->reads;
}
