/*
 * /proc/self/maps reader: keeps the executable mappings (the only ones a
 * sampled pc can fall in), sorted by address for lookup.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/core/maps.h"
#include "common/xmalloc.h"

/* Orders mappings by start address. */
static int
maps_cmp(const void *a, const void *b)
{
	const struct maps_entry *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Parses lines "start-end perms offset dev inode   path". */
void
maps_parse(const char *text, struct maps *out)
{
	const char *line = text, *nl, *p;
	unsigned long long start, end, off;
	char perms[8];
	size_t cap = 0, len;
	int n;

	memset(out, 0, sizeof *out);
	for (; *line != '\0'; line = nl + 1) {
		nl = strchr(line, '\n');
		if (nl == NULL)
			nl = line + strlen(line);
		n = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end,
		    perms, &off, &n) >= 4 && strchr(perms, 'x') != NULL &&
		    n > 0) {
			/* An anonymous mapping (JIT code) has no path: the
			 * blanks %n skipped may run into the next line. */
			p = line + n <= nl ? line + n : nl;
			len = (size_t)(nl - p);
			while (len > 0 && p[len - 1] == ' ')
				len--;
			if (out->n == cap) {
				cap = cap ? cap * 2 : 32;
				out->v = xreallocarray(out->v, cap,
				    sizeof *out->v);
			}
			out->v[out->n].start = start;
			out->v[out->n].limit = end;
			out->v[out->n].offset = off;
			out->v[out->n].path = xstrndup(p, len);
			out->v[out->n].gone = 0;
			out->n++;
		}
		if (*nl == '\0')
			break;
	}
	if (out->n > 1)
		qsort(out->v, out->n, sizeof *out->v, maps_cmp);
}

/* Carries the mappings gone since from into to (see maps.h). */
void
maps_carry(struct maps *to, const struct maps *from)
{
	size_t i, j, n = to->n;
	int overlap;

	for (i = 0; i < from->n; i++) {
		if (from->v[i].gone)
			continue;
		for (j = 0, overlap = 0; j < n && !overlap; j++)
			overlap = to->v[j].start < from->v[i].limit &&
			    from->v[i].start < to->v[j].limit;
		if (overlap)
			continue;
		to->v = xreallocarray(to->v, to->n + 1, sizeof *to->v);
		to->v[to->n] = from->v[i];
		to->v[to->n].path = xstrdup(from->v[i].path);
		to->v[to->n].gone = 1;
		to->n++;
	}
	if (to->n > n)
		qsort(to->v, to->n, sizeof *to->v, maps_cmp);
}

/* Reads the whole maps file and parses it. */
int
maps_read(const char *path, struct maps *out, char **cause)
{
	FILE *f;
	char *text = NULL;
	size_t cap = 0, len = 0, got;

	memset(out, 0, sizeof *out);
	if ((f = fopen(path, "re")) == NULL)
		return xcause(cause, "%s: %s", path, strerror(errno));
	do {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 16384;
			text = xreallocarray(text, cap, 1);
		}
		got = fread(text + len, 1, cap - len - 1, f);
		len += got;
	} while (got > 0);
	fclose(f);
	text[len] = '\0';
	maps_parse(text, out);
	free(text);
	return 0;
}

/* Binary search: the mapping with start <= addr < limit. */
const struct maps_entry *
maps_find(const struct maps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (addr < m->v[mid].start)
			hi = mid;
		else if (addr >= m->v[mid].limit)
			lo = mid + 1;
		else
			return &m->v[mid];
	}
	return NULL;
}

/* Frees the entries. */
void
maps_clear(struct maps *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	memset(m, 0, sizeof *m);
}
