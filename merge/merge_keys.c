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

#include "common/budget.h"
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

/* Prepares an empty keyset; the first put allocates. */
void
merge_keys_init(struct merge_keyset *ks, struct budget_acct *acct)
{
	memset(ks, 0, sizeof *ks);
	ks->acct = acct;
}

/* Frees the keyset's pool, entries and index. */
void
merge_keys_clear(struct merge_keyset *ks)
{
	struct budget_acct *acct = ks->acct;

	budget_dealloc(acct, ks->pool, ks->pool_cap);
	budget_dealloc(acct, ks->ents, ks->cap * sizeof *ks->ents);
	if (ks->slots != NULL)
		budget_dealloc(acct, ks->slots, (ks->mask + 1) *
		    sizeof *ks->slots);
	merge_keys_init(ks, acct);
}

/* Bytes held: pool, entries and index. */
size_t
merge_keys_bytes(const struct merge_keyset *ks)
{
	return ks->pool_cap + ks->cap * sizeof *ks->ents +
	    (ks->slots != NULL ? (ks->mask + 1) * sizeof *ks->slots : 0);
}

/* Makes the index 2^bits slots (at least 64), rehashing what it holds. */
static int
merge_keys_rehash(struct merge_keyset *ks, size_t nslots)
{
	size_t nmask = nslots - 1, i, pos;
	uint64_t *nslot;

	if ((nslot = budget_calloc(ks->acct, nslots, sizeof *nslot)) == NULL)
		return -1;
	for (i = 0; ks->slots != NULL && i <= ks->mask; i++) {
		if (ks->slots[i] == 0)
			continue;
		pos = (ks->slots[i] >> 32) & nmask;
		while (nslot[pos] != 0)
			pos = (pos + 1) & nmask;
		nslot[pos] = ks->slots[i];
	}
	if (ks->slots != NULL)
		budget_dealloc(ks->acct, ks->slots, (ks->mask + 1) *
		    sizeof *ks->slots);
	ks->slots = nslot;
	ks->mask = nmask;
	return 0;
}

/*
 * Makes room for one more key of len bytes: pool, entry and an index at
 * most half full afterwards. -1 (nothing changed but capacities) if the
 * account refuses.
 */
static int
merge_keys_room(struct merge_keyset *ks, size_t len)
{
	size_t need = ks->pool_len + ((len + 1 + 3) & ~(size_t)3), ncap;
	uint8_t *np;

	if (ks->slots == NULL && merge_keys_rehash(ks, 64) != 0)
		return -1;
	if ((ks->n + 1) * 2 > ks->mask + 1 &&
	    merge_keys_rehash(ks, (ks->mask + 1) * 2) != 0)
		return -1;
	if (need > ks->pool_cap) {
		ncap = ks->pool_cap ? ks->pool_cap : 4096;
		while (ncap < need)
			ncap *= 2;
		if ((np = budget_realloc(ks->acct, ks->pool, ks->pool_cap,
		    ncap)) == NULL)
			return -1;
		ks->pool = np;
		ks->pool_cap = ncap;
	}
	return budget_grow(ks->acct, &ks->ents, &ks->cap, ks->n + 1,
	    sizeof *ks->ents);
}

/* Finds key (len bytes) or adds it; returns its index, *added says which. */
uint32_t
merge_keys_put(struct merge_keyset *ks, const void *key, size_t len,
    int *added)
{
	uint32_t h = merge_keys_hash(key, len), idx;
	size_t pos, need;
	uint64_t slot;
	struct merge_keyset_entry *e;

	for (pos = h & ks->mask; ks->slots != NULL &&
	    (slot = ks->slots[pos]) != 0; pos = (pos + 1) & ks->mask) {
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
	}
	if (len > UINT32_MAX - 8 || ks->n >= MERGE_KEYS_NONE - 1 ||
	    merge_keys_room(ks, len) != 0)
		return MERGE_KEYS_NONE;
	/* The index may have grown: find the free slot again. */
	for (pos = h & ks->mask; ks->slots[pos] != 0;
	    pos = (pos + 1) & ks->mask)
		;
	need = ks->pool_len + ((len + 1 + 3) & ~(size_t)3);
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
	if (added != NULL)
		*added = 1;
	return idx;
}

/* Frees the idmap's tables and leaves it zeroed. */
void
merge_keys_idmap_clear(struct merge_idmap *im, struct budget_acct *acct)
{
	budget_dealloc(acct, im->keys, im->cap * sizeof *im->keys);
	budget_dealloc(acct, im->vals, im->cap * sizeof *im->vals);
	memset(im, 0, sizeof *im);
}

/* Builds the id -> index translation for n ids. */
int
merge_keys_idmap_build(struct merge_idmap *im, struct budget_acct *acct,
    const uint64_t *ids, size_t n, const char *what, char **cause)
{
	size_t i, pos, size;
	uint64_t *nk;
	uint32_t *nv;

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
		nk = budget_alloc(acct, size * sizeof *im->keys);
		nv = nk == NULL ? NULL : budget_alloc(acct,
		    size * sizeof *im->vals);
		if (nv == NULL) {
			if (nk != NULL)
				budget_dealloc(acct, nk, size * sizeof *nk);
			xcause(cause, "no memory for %s ids", what);
			return -2;
		}
		merge_keys_idmap_clear(im, acct);
		im->keys = nk;
		im->vals = nv;
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

