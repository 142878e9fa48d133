/*
 * The hash sets of the merge engine (merge.c): a keyset interns byte-string
 * keys (strings, functions, mappings, locations, samples) in an append-only
 * pool and finds them again by content; an idmap translates one input's
 * 64-bit ids (functions, mappings, locations) to their table indices.
 * merge_keys_grow is the growable-array helper both they and merge.c use.
 * The lookups the merge runs per sample are inline here.
 */
#ifndef PROFD_MERGE_KEYS_H
#define PROFD_MERGE_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "common/xmalloc.h"

/* What merge_keys_idmap_get returns for an unknown id. */
#define MERGE_KEYS_NONE	UINT32_MAX

/* An append-only set of byte-string keys with a hash index. */
struct merge_keyset {
	uint8_t		*pool;		/* keys, each NUL-terminated, 4-aligned */
	size_t		 pool_len;
	size_t		 pool_cap;
	struct merge_keyset_entry {
		size_t	 off;
		uint32_t len;
		uint32_t hash;
	}		*ents;
	size_t		 n;
	size_t		 cap;
	uint64_t	*slots;		/* hash << 32 | (index + 1); 0 empty */
	size_t		 mask;
};

/* Translation of one input id space (functions, mappings, locations). */
struct merge_idmap {
	int		 dense;		/* id == index + 1 for every entry */
	uint64_t	*keys;
	uint32_t	*vals;
	size_t		 mask;
	size_t		 cap;
};

/* Grows *arr (of elsize elements, capacity *cap) to hold need elements. */
static inline void
merge_keys_grow(void *arrp, size_t *cap, size_t need, size_t elsize)
{
	void **arr = arrp;
	size_t ncap;

	if (need <= *cap)
		return;
	ncap = *cap ? *cap : 16;
	while (ncap < need)
		ncap *= 2;
	*arr = xreallocarray(*arr, ncap, elsize);
	*cap = ncap;
}

/* Prepares an empty keyset. */
void		 merge_keys_init(struct merge_keyset *);
/* Frees what the keyset holds and leaves it zeroed. */
void		 merge_keys_clear(struct merge_keyset *);
/*
 * Finds key (len bytes) or adds it. Returns its index; *added (may be
 * NULL) tells which.
 */
uint32_t	 merge_keys_put(struct merge_keyset *, const void *key,
		    size_t len, int *added);

/* The key stored at index i; *len (may be NULL) gets its length. */
static inline const void *
merge_keys_key(const struct merge_keyset *ks, uint32_t i, uint32_t *len)
{
	if (len != NULL)
		*len = ks->ents[i].len;
	return ks->pool + ks->ents[i].off;
}

/*
 * Builds the id -> index translation for n ids. Returns -1 with *cause set
 * ("<what> N has id 0", "duplicate <what> id N").
 */
int		 merge_keys_idmap_build(struct merge_idmap *,
		    const uint64_t *ids, size_t n, const char *what,
		    char **cause);
/* Frees the idmap's tables. */
void		 merge_keys_idmap_clear(struct merge_idmap *);

/* Index of id among the n entries, or MERGE_KEYS_NONE. */
static inline uint32_t
merge_keys_idmap_get(const struct merge_idmap *im, uint64_t id, size_t n)
{
	size_t pos;

	if (im->dense)
		return (id >= 1 && id <= n) ? (uint32_t)(id - 1) :
		    MERGE_KEYS_NONE;
	if (id == 0)
		return MERGE_KEYS_NONE;
	pos = (id * 0x9e3779b97f4a7c15ULL >> 32) & im->mask;
	while (im->keys[pos] != 0) {
		if (im->keys[pos] == id)
			return im->vals[pos];
		pos = (pos + 1) & im->mask;
	}
	return MERGE_KEYS_NONE;
}

#endif
