/*
 * Stack aggregation: an open-addressing hash table over the distinct
 * stacks of a window, with all frames in one growing array, so a window
 * costs memory in proportion to its distinct stacks, not its samples.
 */
#include <stdlib.h>
#include <string.h>

#include "agent/core/stacks.h"
#include "common/xmalloc.h"

/* FNV-1a over the pcs. */
static uint64_t
stacks_hash(const uintptr_t *pcs, uint32_t n)
{
	uint64_t h = 1469598103934665603ULL;
	uint32_t i;

	for (i = 0; i < n; i++) {
		h ^= (uint64_t)pcs[i];
		h *= 1099511628211ULL;
	}
	return h ^ n;
}

/* Doubles the index and reinserts every entry. */
static void
stacks_grow(struct stacks *s)
{
	size_t size = s->index_size ? s->index_size * 2 : 1024, i, j;

	free(s->index);
	s->index = xcalloc(size, sizeof *s->index);
	s->index_size = size;
	for (i = 0; i < s->n; i++) {
		j = s->v[i].hash & (size - 1);
		while (s->index[j] != 0)
			j = (j + 1) & (size - 1);
		s->index[j] = (uint32_t)(i + 1);
	}
}

/* Adds count to the entry for this stack, creating it if new. */
void
stacks_add(struct stacks *s, const uintptr_t *pcs, uint32_t n, int64_t count)
{
	struct stacks_entry *e;
	uint64_t h = stacks_hash(pcs, n);
	size_t j;

	s->total += count;
	if ((s->n + 1) * 2 > s->index_size)
		stacks_grow(s);
	j = h & (s->index_size - 1);
	while (s->index[j] != 0) {
		e = &s->v[s->index[j] - 1];
		if (e->hash == h && e->n == n &&
		    memcmp(s->pcs + e->off, pcs, n * sizeof *pcs) == 0) {
			e->count += count;
			return;
		}
		j = (j + 1) & (s->index_size - 1);
	}
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		s->v = xreallocarray(s->v, s->cap, sizeof *s->v);
	}
	while (s->npcs + n > s->pcs_cap) {
		s->pcs_cap = s->pcs_cap ? s->pcs_cap * 2 : 4096;
		s->pcs = xreallocarray(s->pcs, s->pcs_cap, sizeof *s->pcs);
	}
	memcpy(s->pcs + s->npcs, pcs, n * sizeof *pcs);
	e = &s->v[s->n];
	e->off = s->npcs;
	e->n = n;
	e->hash = h;
	e->count = count;
	s->npcs += n;
	s->n++;
	s->index[j] = (uint32_t)s->n;
}

/* Empties the table for the next window. */
void
stacks_reset(struct stacks *s)
{
	s->n = 0;
	s->npcs = 0;
	s->total = 0;
	if (s->index != NULL)
		memset(s->index, 0, s->index_size * sizeof *s->index);
}

/* Frees everything. */
void
stacks_free(struct stacks *s)
{
	free(s->v);
	free(s->pcs);
	free(s->index);
	memset(s, 0, sizeof *s);
}
