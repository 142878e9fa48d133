/*
 * /proc/kallsyms reader (see hkernel.h). Lines are "ADDR TYPE NAME
 * [MODULE]"; text symbols (t, T, w, W) are kept, their names in one
 * buffer, sorted by address. A symbol covers up to the next one's
 * address; the last one's size is not known, so it covers 1 MiB at most.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/host/hkernel.h"
#include "common/xmalloc.h"

#define HKERNEL_LAST_SPAN	(1ULL << 20)

struct hkernel_sym {
	uint64_t	addr;
	size_t		name;		/* offset into names */
};

struct hkernel {
	struct hkernel_sym	*v;
	size_t			 n, cap;
	char			*names;
	size_t			 nlen, ncap;
};

/* Orders symbols by address. */
static int
hkernel_cmp(const void *a, const void *b)
{
	const struct hkernel_sym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Appends one symbol. */
static void
hkernel_add(struct hkernel *k, uint64_t addr, const char *name)
{
	size_t len = strlen(name) + 1;

	if (k->n == k->cap) {
		k->cap = k->cap ? k->cap * 2 : 4096;
		k->v = xreallocarray(k->v, k->cap, sizeof *k->v);
	}
	while (k->nlen + len > k->ncap) {
		k->ncap = k->ncap ? k->ncap * 2 : 65536;
		k->names = xreallocarray(k->names, k->ncap, 1);
	}
	memcpy(k->names + k->nlen, name, len);
	k->v[k->n].addr = addr;
	k->v[k->n].name = k->nlen;
	k->nlen += len;
	k->n++;
}

/* Reads the symbols (see hkernel.h). */
struct hkernel *
hkernel_open(const char *path)
{
	struct hkernel *k = xcalloc(1, sizeof *k);
	char line[512], type, name[256];
	unsigned long long addr;
	FILE *f;

	if ((f = fopen(path, "r")) == NULL)
		return k;
	while (fgets(line, sizeof line, f) != NULL) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 ||
		    addr == 0 || strchr("tTwW", type) == NULL)
			continue;
		hkernel_add(k, addr, name);
	}
	fclose(f);
	if (k->n > 1)
		qsort(k->v, k->n, sizeof *k->v, hkernel_cmp);
	return k;
}

/* Frees the table. */
void
hkernel_free(struct hkernel *k)
{
	if (k == NULL)
		return;
	free(k->v);
	free(k->names);
	free(k);
}

/* The symbol holding addr (the last at or below it). */
const char *
hkernel_lookup(const struct hkernel *k, uint64_t addr)
{
	size_t lo = 0, hi = k->n, mid;

	if (k->n == 0 || addr < k->v[0].addr)
		return NULL;
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (k->v[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	if (lo == k->n - 1 && addr - k->v[lo].addr >= HKERNEL_LAST_SPAN)
		return NULL;
	return k->names + k->v[lo].name;
}

/* The text range. */
void
hkernel_range(const struct hkernel *k, uint64_t *start, uint64_t *limit)
{
	*start = k->n > 0 ? k->v[0].addr : 0;
	*limit = k->n > 0 ? k->v[k->n - 1].addr + HKERNEL_LAST_SPAN : 0;
}

/* Symbols read. */
size_t
hkernel_count(const struct hkernel *k)
{
	return k->n;
}
