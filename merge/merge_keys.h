/*
 * The hash sets of the merge engine (merge.c): a keyset interns byte-string
 * keys (strings, functions, mappings, locations, samples) in an append-only
 * pool and finds them again by content; an idmap translates one input's
 * 64-bit ids (functions, mappings, locations) to their table indices.
 * Their memory is charged to a budget account (common/budget.h), which
 * may refuse it: then the call fails and the set stays as it was. The
 * lookups the merge runs per sample are inline here.
 */
#ifndef PROFD_MERGE_KEYS_H
#define PROFD_MERGE_KEYS_H

#include <stddef.h>
#include <stdint.h>

struct budget_acct;

/* What merge_keys_idmap_get returns for an unknown id. */
#define MERGE_KEYS_NONE	UINT32_MAX

/* An append-only set of byte-string keys with a hash index. */
struct merge_keyset {
	struct budget_acct *acct;	/* charged for everything below */
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
	size_t		 mask;		/* slots - 1; 0 before the first put */
};

/* Translation of one input id space (functions, mappings, locations). */
struct merge_idmap {
	int		 dense;		/* id == index + 1 for every entry */
	uint64_t	*keys;
	uint32_t	*vals;
	size_t		 mask;
	size_t		 cap;
};

/* Prepares an empty keyset charged to acct (may be NULL); allocates nothing. */
void		 merge_keys_init(struct merge_keyset *, struct budget_acct *acct);
/* Frees what the keyset holds and leaves it empty. */
void		 merge_keys_clear(struct merge_keyset *);
/*
 * Finds key (len bytes) or adds it. Returns its index; *added (may be
 * NULL) tells which. Returns MERGE_KEYS_NONE, the set unchanged, when the
 * account refuses the room to add it.
 */
uint32_t	 merge_keys_put(struct merge_keyset *, const void *key,
		    size_t len, int *added);
/* Bytes the keyset holds (what it is charged). */
size_t		 merge_keys_bytes(const struct merge_keyset *);

/* The key stored at index i; *len (may be NULL) gets its length. */
static inline const void *
merge_keys_key(const struct merge_keyset *ks, uint32_t i, uint32_t *len)
{
	if (len != NULL)
		*len = ks->ents[i].len;
	return ks->pool + ks->ents[i].off;
}

/*
 * Builds the id -> index translation for n ids, its tables charged to acct.
 * Returns -1 with *cause set ("<what> N has id 0", "duplicate <what> id
 * N"), or -2 when the account refused its memory.
 */
int		 merge_keys_idmap_build(struct merge_idmap *,
		    struct budget_acct *acct, const uint64_t *ids, size_t n,
		    const char *what, char **cause);
/* Frees the idmap's tables (charged to acct). */
void		 merge_keys_idmap_clear(struct merge_idmap *,
		    struct budget_acct *acct);

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
