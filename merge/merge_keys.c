/*
 * The merge engine's hash sets (see merge_keys.h).
 *
 * A keyset keeps its keys back to back in one pool, each NUL-terminated and
 * padded to 4 bytes (so string keys double as C strings and uint32_t keys
 * stay aligned), with an open-addressing table of (32-bit hash, index + 1)
 * slots kept at most half full. An idmap is either "dense" (the input's ids
 * are 1..n in order, the usual case, and need no table) or an
 * open-addressing table from id to index built once per input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "merge/merge_keys.h"

/* A 64-bit hash of n bytes, folded to 32 bits (inputs are not hostile
 * enough to need a keyed hash: a flood only slows its own merge). */
static uint32_t
merge_keys_hash(const void *data, size_t n)
{
	const uint8_t *p = data;
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ (n * 0xff51afd7ed558ccdULL);
	uint64_t w;

	while (n >= 8) {
		memcpy(&w, p, 8);
		w *= 0x87c37b91114253d5ULL;
		w = (w << 31) | (w >> 33);
		h ^= w * 0x4cf5ad432745937fULL;
		h = ((h << 27) | (h >> 37)) * 5 + 0x52dce729;
		p += 8;
		n -= 8;
	}
	if (n > 0) {
		w = 0;
		memcpy(&w, p, n);
		w *= 0x87c37b91114253d5ULL;
		w = (w << 31) | (w >> 33);
		h ^= w * 0x4cf5ad432745937fULL;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return (uint32_t)h;
}

/* Prepares an empty keyset. */
void
merge_keys_init(struct merge_keyset *ks)
{
	memset(ks, 0, sizeof *ks);
	ks->mask = 63;
	ks->slots = xcalloc(ks->mask + 1, sizeof *ks->slots);
}

/* Frees the keyset's pool, entries and index. */
void
merge_keys_clear(struct merge_keyset *ks)
{
	free(ks->pool);
	free(ks->ents);
	free(ks->slots);
	memset(ks, 0, sizeof *ks);
}

/* Doubles the hash index. */
static void
merge_keys_rehash(struct merge_keyset *ks)
{
	size_t nmask = ks->mask * 2 + 1, i, pos;
	uint64_t *nslots = xcalloc(nmask + 1, sizeof *nslots);

	for (i = 0; i <= ks->mask; i++) {
		if (ks->slots[i] == 0)
			continue;
		pos = (ks->slots[i] >> 32) & nmask;
		while (nslots[pos] != 0)
			pos = (pos + 1) & nmask;
		nslots[pos] = ks->slots[i];
	}
	free(ks->slots);
	ks->slots = nslots;
	ks->mask = nmask;
}

/* Finds key (len bytes) or adds it; returns its index, *added says which. */
uint32_t
merge_keys_put(struct merge_keyset *ks, const void *key, size_t len,
    int *added)
{
	uint32_t h = merge_keys_hash(key, len), idx;
	size_t pos = h & ks->mask, need;
	uint64_t slot;
	struct merge_keyset_entry *e;

	while ((slot = ks->slots[pos]) != 0) {
		if ((uint32_t)(slot >> 32) == h) {
			idx = (uint32_t)slot - 1;
			e = &ks->ents[idx];
			if (e->len == len && memcmp(ks->pool + e->off, key,
			    len) == 0) {
				if (added != NULL)
					*added = 0;
				return idx;
			}
		}
		pos = (pos + 1) & ks->mask;
	}
	need = ks->pool_len + ((len + 1 + 3) & ~(size_t)3);
	if (need > ks->pool_cap) {
		size_t ncap = ks->pool_cap ? ks->pool_cap : 4096;

		while (ncap < need)
			ncap *= 2;
		ks->pool = xreallocarray(ks->pool, ncap, 1);
		ks->pool_cap = ncap;
	}
	merge_keys_grow(&ks->ents, &ks->cap, ks->n + 1, sizeof *ks->ents);
	idx = (uint32_t)ks->n++;
	e = &ks->ents[idx];
	e->off = ks->pool_len;
	e->len = (uint32_t)len;
	e->hash = h;
	if (len > 0)
		memcpy(ks->pool + e->off, key, len);
	memset(ks->pool + e->off + len, 0, need - ks->pool_len - len);
	ks->pool_len = need;
	ks->slots[pos] = ((uint64_t)h << 32) | ((uint64_t)idx + 1);
	if (ks->n * 2 > ks->mask + 1)
		merge_keys_rehash(ks);
	if (added != NULL)
		*added = 1;
	return idx;
}

/* Builds the id -> index translation for n ids. */
int
merge_keys_idmap_build(struct merge_idmap *im, const uint64_t *ids, size_t n,
    const char *what, char **cause)
{
	size_t i, pos, size;

	im->dense = 1;
	for (i = 0; i < n; i++) {
		if (ids[i] != i + 1) {
			im->dense = 0;
			break;
		}
	}
	if (im->dense)
		return 0;
	for (size = 16; size < n * 2; size *= 2)
		;
	if (size > im->cap) {
		im->keys = xreallocarray(im->keys, size, sizeof *im->keys);
		im->vals = xreallocarray(im->vals, size, sizeof *im->vals);
		im->cap = size;
	}
	im->mask = size - 1;
	memset(im->keys, 0, size * sizeof *im->keys);
	for (i = 0; i < n; i++) {
		if (ids[i] == 0)
			return xcause(cause, "%s %zu has id 0", what, i);
		pos = (ids[i] * 0x9e3779b97f4a7c15ULL >> 32) & im->mask;
		while (im->keys[pos] != 0) {
			if (im->keys[pos] == ids[i])
				return xcause(cause, "duplicate %s id %llu",
				    what, (unsigned long long)ids[i]);
			pos = (pos + 1) & im->mask;
		}
		im->keys[pos] = ids[i];
		im->vals[pos] = (uint32_t)i;
	}
	return 0;
}

/* Frees the idmap's tables and leaves it zeroed. */
void
merge_keys_idmap_clear(struct merge_idmap *im)
{
	free(im->keys);
	free(im->vals);
	memset(im, 0, sizeof *im);
}
