/*
 * The period's groups (see hgroups.h). Groups are few (at most max a
 * period) and kept in a list; inside a group, strings, mappings,
 * locations and functions are interned through one kind of open-
 * addressing index from a pair of 64-bit keys to an array index. A
 * string's key is its hash and 0, so equal hashes are told apart by
 * comparing the strings.
 */
#include <stdlib.h>
#include <string.h>

#include "agent/core/stacks.h"
#include "agent/host/hgroups.h"
#include "common/strhash.h"
#include "common/xmalloc.h"

/* Mixes a key pair. */
static uint64_t
hgroups_mix(uint64_t a, uint64_t b)
{
	uint64_t k = a * 0x9e3779b97f4a7c15ULL ^ b;

	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return k;
}

/* Doubles an index. */
static void
hgroups_grow(struct hgroups_index *x)
{
	size_t size = x->size ? x->size * 2 : 256, i, j;
	uint64_t *keys = xcalloc(size * 2, sizeof *keys);
	uint32_t *vals = xcalloc(size, sizeof *vals);

	for (i = 0; i < x->size; i++) {
		if (x->vals[i] == 0)
			continue;
		j = hgroups_mix(x->keys[2 * i], x->keys[2 * i + 1]) &
		    (size - 1);
		while (vals[j] != 0)
			j = (j + 1) & (size - 1);
		keys[2 * j] = x->keys[2 * i];
		keys[2 * j + 1] = x->keys[2 * i + 1];
		vals[j] = x->vals[i];
	}
	free(x->keys);
	free(x->vals);
	x->keys = keys;
	x->vals = vals;
	x->size = size;
}

/*
 * Finds (a, b); returns its slot's value pointer (0: empty slot, where a
 * new entry goes). eq, when set, must also accept the entry.
 */
static uint32_t *
hgroups_slot(struct hgroups_index *x, uint64_t a, uint64_t b,
    int (*eq)(void *, uint32_t), void *arg)
{
	size_t j;

	if ((x->n + 1) * 2 > x->size)
		hgroups_grow(x);
	j = hgroups_mix(a, b) & (x->size - 1);
	while (x->vals[j] != 0) {
		if (x->keys[2 * j] == a && x->keys[2 * j + 1] == b &&
		    (eq == NULL || eq(arg, x->vals[j] - 1)))
			return &x->vals[j];
		j = (j + 1) & (x->size - 1);
	}
	x->keys[2 * j] = a;
	x->keys[2 * j + 1] = b;
	return &x->vals[j];
}

/* Frees an index. */
static void
hgroups_index_free(struct hgroups_index *x)
{
	free(x->keys);
	free(x->vals);
	memset(x, 0, sizeof *x);
}

/* Strings compare: (struct hgroup, candidate) for hgroups_slot. */
struct hgroups_streq {
	struct hgroup	*g;
	const char	*s;
};

/* Whether string i of the group is the one looked for. */
static int
hgroups_str_eq(void *arg, uint32_t i)
{
	struct hgroups_streq *q = arg;

	return strcmp(q->g->strs[i], q->s) == 0;
}

/* Interns a string. */
uint32_t
hgroups_str(struct hgroup *g, const char *s)
{
	struct hgroups_streq q = { g, s };
	uint32_t *v;

	v = hgroups_slot(&g->str_index, strhash_str(STRHASH_INIT, s), 0,
	    hgroups_str_eq, &q);
	if (*v != 0)
		return *v - 1;
	if (g->nstrs == g->strs_cap) {
		g->strs_cap = g->strs_cap ? g->strs_cap * 2 : 256;
		g->strs = xreallocarray(g->strs, g->strs_cap, sizeof *g->strs);
	}
	g->strs[g->nstrs] = xstrdup(s);
	*v = (uint32_t)++g->nstrs;
	g->str_index.n++;
	return *v - 1;
}

/* Whether two optional names are equal. */
static int
hgroups_same(const char *a, const char *b)
{
	return a == NULL ? b == NULL : b != NULL && strcmp(a, b) == 0;
}

/* The group of a service (see hgroups.h). */
struct hgroup *
hgroups_get(struct hgroups *gs, const char *service, const char *unit,
    const char *container)
{
	struct hgroup *g;

	for (g = gs->head; g != NULL; g = g->next)
		if (strcmp(g->service, service) == 0 &&
		    hgroups_same(g->unit, unit) &&
		    hgroups_same(g->container, container))
			return g;
	if (gs->max > 0 && gs->n + 1 >= gs->max) {
		for (g = gs->head; g != NULL; g = g->next)
			if (strcmp(g->service, HGROUPS_OTHER) == 0 &&
			    g->unit == NULL && g->container == NULL)
				return g;
		service = HGROUPS_OTHER;
		unit = container = NULL;
	}
	g = xcalloc(1, sizeof *g);
	g->gs = gs;
	g->service = xstrdup(service);
	g->unit = unit != NULL ? xstrdup(unit) : NULL;
	g->container = container != NULL ? xstrdup(container) : NULL;
	hgroups_str(g, "");
	g->exe = UINT32_MAX;
	g->next = gs->head;
	gs->head = g;
	gs->n++;
	return g;
}

/* The mapping of (pid, start) (see hgroups.h). */
uint32_t
hgroups_map(struct hgroup *g, const struct hgroups_map *m)
{
	uint32_t *v = hgroups_slot(&g->map_index, (uint64_t)m->pid,
	    m->start, NULL, NULL);

	if (*v != 0)
		return *v - 1;
	if (g->nmaps == g->maps_cap) {
		g->maps_cap = g->maps_cap ? g->maps_cap * 2 : 64;
		g->maps = xreallocarray(g->maps, g->maps_cap, sizeof *g->maps);
	}
	g->maps[g->nmaps] = *m;
	*v = (uint32_t)++g->nmaps;
	g->map_index.n++;
	return *v - 1;
}

/* The mapping of (pid, start), or UINT32_MAX. */
uint32_t
hgroups_map_find(struct hgroup *g, pid_t pid, uint64_t start)
{
	uint32_t *v;

	if (g->map_index.size == 0)
		return UINT32_MAX;
	v = hgroups_slot(&g->map_index, (uint64_t)pid, start, NULL, NULL);
	return *v != 0 ? *v - 1 : UINT32_MAX;
}

/* The location of (map, addr), or -1. */
int64_t
hgroups_loc_find(struct hgroup *g, uint32_t map, uint64_t addr)
{
	uint32_t *v;

	if (g->loc_index.size == 0)
		return -1;
	v = hgroups_slot(&g->loc_index, map, addr, NULL, NULL);
	return *v != 0 ? (int64_t)*v - 1 : -1;
}

/* The function of (name, file), made if new. */
static int64_t
hgroups_func(struct hgroup *g, const char *name, const char *file)
{
	uint32_t n = hgroups_str(g, name), f = hgroups_str(g, file), *v;

	v = hgroups_slot(&g->func_index, n, f, NULL, NULL);
	if (*v != 0)
		return *v - 1;
	if (g->nfuncs == g->funcs_cap) {
		g->funcs_cap = g->funcs_cap ? g->funcs_cap * 2 : 256;
		g->funcs = xreallocarray(g->funcs, g->funcs_cap,
		    sizeof *g->funcs);
	}
	g->funcs[g->nfuncs].name = n;
	g->funcs[g->nfuncs].file = f;
	*v = (uint32_t)++g->nfuncs;
	g->func_index.n++;
	return *v - 1;
}

/* Adds a location (see hgroups.h). */
int64_t
hgroups_loc_add(struct hgroup *g, uint32_t map, uint64_t addr,
    const char *name, const char *file)
{
	return hgroups_loc_add_line(g, map, addr, name, file, 0);
}

/* Adds a location with its line (see hgroups.h). */
int64_t
hgroups_loc_add_line(struct hgroup *g, uint32_t map, uint64_t addr,
    const char *name, const char *file, int64_t line)
{
	int64_t func;
	uint32_t *v;

	if (g->nlocs >= HGROUPS_MAX_LOCS || g->gs->locs >= HGROUPS_MAX_LOCS_ALL)
		return -1;
	func = name != NULL ? hgroups_func(g, name, file) : -1;
	v = hgroups_slot(&g->loc_index, map, addr, NULL, NULL);
	if (*v != 0)
		return *v - 1;
	if (g->nlocs == g->locs_cap) {
		g->locs_cap = g->locs_cap ? g->locs_cap * 2 : 1024;
		g->locs = xreallocarray(g->locs, g->locs_cap, sizeof *g->locs);
	}
	g->locs[g->nlocs].map = map;
	g->locs[g->nlocs].addr = addr;
	g->locs[g->nlocs].func = func;
	g->locs[g->nlocs].line = line;
	*v = (uint32_t)++g->nlocs;
	g->loc_index.n++;
	g->gs->locs++;
	return *v - 1;
}

/* Counts one stack (see hgroups.h). */
void
hgroups_sample(struct hgroup *g, pid_t pid, const char *exe,
    const uint32_t *locs, uint32_t n)
{
	uintptr_t key[2 + 256];
	uint32_t i, e;
	size_t before;

	if (n > 256)
		n = 256;
	e = hgroups_str(g, exe);
	if (g->exe == UINT32_MAX)
		g->exe = e;
	else if (g->exe != e)
		g->multi_exe = 1;
	if (g->stacks.n >= HGROUPS_MAX_STACKS ||
	    g->gs->words + n + 2 > HGROUPS_MAX_WORDS_ALL) {
		g->dropped++;
		return;
	}
	key[0] = (uintptr_t)pid;
	key[1] = e;
	for (i = 0; i < n; i++)
		key[2 + i] = locs[i];
	before = g->stacks.npcs;
	stacks_add(&g->stacks, key, n + 2, 1);
	g->gs->words += g->stacks.npcs - before;
	g->samples++;
}

/* Frees a group. */
static void
hgroups_free_one(struct hgroup *g)
{
	size_t i;

	for (i = 0; i < g->nstrs; i++)
		free(g->strs[i]);
	free(g->strs);
	free(g->maps);
	free(g->locs);
	free(g->funcs);
	hgroups_index_free(&g->str_index);
	hgroups_index_free(&g->map_index);
	hgroups_index_free(&g->loc_index);
	hgroups_index_free(&g->func_index);
	stacks_free(&g->stacks);
	free(g->service);
	free(g->unit);
	free(g->container);
	free(g);
}

/* Frees every group. */
void
hgroups_reset(struct hgroups *gs)
{
	struct hgroup *g, *n;

	for (g = gs->head; g != NULL; g = n) {
		n = g->next;
		hgroups_free_one(g);
	}
	gs->head = NULL;
	gs->n = 0;
	gs->locs = gs->words = 0;
}
