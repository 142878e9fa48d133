/*
 * Deltas of cumulative profiles. A sample's identity is its stack (each
 * location's address and lines: function name, file, line, hashed once
 * per location) and its labels, so the two profiles' own ids, which
 * differ from one profile to the next, do not matter. prev's values of the named sample types are
 * summed per identity in a hash table, then taken from cur's samples of
 * the same identity; a value that would go below zero (a stack gone from
 * the later profile's sampling) stays at zero. Everything is decoded
 * with protobuf-c: this path serves old SDKs and is not on the hot path,
 * but its memory is still reserved from the caller's budget.
 */
#include <stdlib.h>
#include <string.h>

#include "common/budget.h"
#include "common/xmalloc.h"
#include "proto/pprof.h"
#include "proto/pprof_delta.h"

/* One identity of prev, with its summed values. */
struct pprof_delta_key {
	uint64_t	 hash;
	char		*key;
	size_t		 len;
	int64_t		*v;		/* by index into the names */
};

/* The table of prev's identities. */
struct pprof_delta_tab {
	struct pprof_delta_key	*e;
	size_t			 n, cap;
	size_t			*slot;
	size_t			 nslot;
	size_t			 nv;
};

/* A growing byte string. */
struct pprof_delta_buf {
	char	*b;
	size_t	 len, cap;
};

/* Appends n bytes. */
static void
pprof_delta_put(struct pprof_delta_buf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->b = xreallocarray(b->b, b->cap, 1);
	}
	memcpy(b->b + b->len, p, n);
	b->len += n;
}

/* An id and the hash of what it names, sorted by id for lookups. */
struct pprof_delta_id {
	uint64_t	id, hash;
};

/* Orders ids. */
static int
pprof_delta_id_cmp(const void *a, const void *b)
{
	const struct pprof_delta_id *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* The hash of id in the sorted table t[0..n), or 0 when absent. */
static uint64_t
pprof_delta_id_hash(const struct pprof_delta_id *t, size_t n, uint64_t id)
{
	struct pprof_delta_id	 k = { id, 0 };
	const struct pprof_delta_id *f;

	f = bsearch(&k, t, n, sizeof *t, pprof_delta_id_cmp);
	return f != NULL ? f->hash : 0;
}

/* FNV-1a of bytes. */
static uint64_t
pprof_delta_hash(const char *s, size_t n, uint64_t h)
{
	size_t		i;

	for (i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return h;
}

/* Mixes v into h. */
static uint64_t
pprof_delta_mix(uint64_t h, uint64_t v)
{
	return pprof_delta_hash((const char *)&v, sizeof v, h);
}

/* The hash of string i of p (0 for a bad index). */
static uint64_t
pprof_delta_strhash(const pprof_profile_t *p, int64_t i)
{
	const char	*s;

	if (i < 0 || (size_t)i >= p->n_string_table)
		return 0;
	s = p->string_table[i];
	return pprof_delta_hash(s, strlen(s), 1469598103934665603ULL);
}

/*
 * Hashes every location once (its address, and each line's function name,
 * file and line): a table by location id. A sample's identity is then 8
 * bytes a frame and a label, however long the names (a profile of one
 * long name repeated in every frame must not make identities huge).
 */
static struct pprof_delta_id *
pprof_delta_locations(const pprof_profile_t *p)
{
	struct pprof_delta_id	*fn, *loc;
	const Perftools__Profiles__Location *l;
	const Perftools__Profiles__Function *f;
	uint64_t		 h;
	size_t			 i, j;

	fn = xcalloc(p->n_function + 1, sizeof *fn);
	for (i = 0; i < p->n_function; i++) {
		f = p->function[i];
		fn[i].id = f->id;
		fn[i].hash = pprof_delta_mix(pprof_delta_strhash(p, f->name),
		    pprof_delta_strhash(p, f->filename));
	}
	qsort(fn, p->n_function, sizeof *fn, pprof_delta_id_cmp);
	loc = xcalloc(p->n_location + 1, sizeof *loc);
	for (i = 0; i < p->n_location; i++) {
		l = p->location[i];
		h = pprof_delta_mix(1469598103934665603ULL, l->address);
		for (j = 0; j < l->n_line; j++) {
			h = pprof_delta_mix(h, pprof_delta_id_hash(fn,
			    p->n_function, l->line[j]->function_id));
			h = pprof_delta_mix(h, (uint64_t)l->line[j]->line);
		}
		loc[i].id = l->id;
		loc[i].hash = h;
	}
	qsort(loc, p->n_location, sizeof *loc, pprof_delta_id_cmp);
	free(fn);
	return loc;
}

/* Writes sample s's identity into b (loc: pprof_delta_locations). */
static void
pprof_delta_identity(const pprof_profile_t *p,
    const struct pprof_delta_id *loc, const Perftools__Profiles__Sample *s,
    struct pprof_delta_buf *b)
{
	const Perftools__Profiles__Label	*lb;
	uint64_t				 h;
	size_t					 i;

	b->len = 0;
	for (i = 0; i < s->n_location_id; i++) {
		h = pprof_delta_id_hash(loc, p->n_location, s->location_id[i]);
		pprof_delta_put(b, &h, sizeof h);
	}
	pprof_delta_put(b, "|", 1);
	for (i = 0; i < s->n_label; i++) {
		lb = s->label[i];
		h = pprof_delta_mix(pprof_delta_mix(pprof_delta_mix(
		    pprof_delta_strhash(p, lb->key), pprof_delta_strhash(p,
		    lb->str)), (uint64_t)lb->num), pprof_delta_strhash(p,
		    lb->num_unit));
		pprof_delta_put(b, &h, sizeof h);
	}
}

/* The entry of key (added, zeroed, when add and new), or NULL. */
static struct pprof_delta_key *
pprof_delta_find(struct pprof_delta_tab *t, const char *key, size_t len,
    int add)
{
	uint64_t	 hash = pprof_delta_hash(key, len,
			    1469598103934665603ULL);
	size_t		 h, i;

	if (add && (t->n + 1) * 2 > t->nslot) {
		free(t->slot);
		t->nslot = t->nslot ? t->nslot * 2 : 1024;
		t->slot = xcalloc(t->nslot, sizeof *t->slot);
		for (i = 0; i < t->n; i++) {
			for (h = t->e[i].hash; t->slot[h & (t->nslot - 1)];
			    h++)
				;
			t->slot[h & (t->nslot - 1)] = i + 1;
		}
	}
	if (t->nslot == 0)
		return NULL;
	for (h = hash; (i = t->slot[h & (t->nslot - 1)]) != 0; h++)
		if (t->e[i - 1].hash == hash && t->e[i - 1].len == len &&
		    memcmp(t->e[i - 1].key, key, len) == 0)
			return &t->e[i - 1];
	if (!add)
		return NULL;
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 256;
		t->e = xreallocarray(t->e, t->cap, sizeof *t->e);
	}
	t->e[t->n].hash = hash;
	t->e[t->n].key = xmalloc(len ? len : 1);
	memcpy(t->e[t->n].key, key, len);
	t->e[t->n].len = len;
	t->e[t->n].v = xcalloc(t->nv ? t->nv : 1, sizeof *t->e[t->n].v);
	t->slot[h & (t->nslot - 1)] = ++t->n;
	return &t->e[t->n - 1];
}

/* Frees the table. */
static void
pprof_delta_tab_free(struct pprof_delta_tab *t)
{
	size_t	i;

	for (i = 0; i < t->n; i++) {
		free(t->e[i].key);
		free(t->e[i].v);
	}
	free(t->e);
	free(t->slot);
}

/* Index of the sample type named name in p, or -1. */
static int64_t
pprof_delta_type(const pprof_profile_t *p, const char *name)
{
	size_t	i;

	for (i = 0; i < p->n_sample_type; i++)
		if (strcmp(p->string_table[p->sample_type[i]->type], name) ==
		    0)
			return (int64_t)i;
	return -1;
}

/*
 * Inflates (charged), reserves the decode's share and decodes one
 * profile: NULL with *code and *cause on failure. *held: bytes reserved.
 */
static pprof_profile_t *
pprof_delta_load(const uint8_t *body, size_t len, size_t max,
    struct budget_acct *acct, size_t *held, int *code, char **cause)
{
	pprof_profile_t	*p;
	uint8_t		*raw;
	size_t		 rawlen;

	*held = 0;
	if ((*code = pprof_inflate_acct(body, len, max, acct, &raw, &rawlen,
	    cause)) != 0)
		return NULL;
	if (budget_reserve(acct, rawlen * PPROF_DELTA_DECODE_FACTOR) != 0) {
		budget_dealloc(acct, raw, rawlen ? rawlen : 1);
		*code = PPROF_ENOMEM;
		xcause(cause, "decoding needs more memory than allowed");
		return NULL;
	}
	*held = rawlen * PPROF_DELTA_DECODE_FACTOR;
	/* The upload check's verdict first: protobuf-c takes (and writes
	 * back) fields the check refuses. */
	if ((*code = pprof_check_raw(raw, rawlen, acct, NULL, cause)) != 0) {
		budget_dealloc(acct, raw, rawlen ? rawlen : 1);
		return NULL;
	}
	p = pprof_decode(raw, rawlen, NULL, cause);
	budget_dealloc(acct, raw, rawlen ? rawlen : 1);
	if (p != NULL && pprof_validate(p, cause) != 0) {
		pprof_free(p, NULL);
		p = NULL;
	}
	*code = p == NULL ? PPROF_EINVAL : 0;
	return p;
}

/* cur - prev for the named sample types; see the header. */
int
pprof_delta(const uint8_t *cur, size_t curlen, const uint8_t *prev,
    size_t prevlen, const char *const *names, size_t n, size_t max_inflated,
    struct budget_acct *acct, uint8_t **out, size_t *outlen, char **cause)
{
	pprof_profile_t			*c = NULL, *p = NULL;
	struct pprof_delta_tab		 t;
	struct pprof_delta_buf		 b;
	struct pprof_delta_key		*e;
	Perftools__Profiles__Sample	*s;
	int64_t				*ci = NULL, *pi = NULL;
	struct pprof_delta_id		*ploc = NULL, *cloc = NULL;
	size_t				 i, j, k, heldc = 0, heldp = 0;
	int				 code, zero;

	memset(&t, 0, sizeof t);
	memset(&b, 0, sizeof b);
	*out = NULL;
	*outlen = 0;
	if ((c = pprof_delta_load(cur, curlen, max_inflated, acct, &heldc,
	    &code, cause)) == NULL)
		goto out;
	if ((p = pprof_delta_load(prev, prevlen, max_inflated, acct, &heldp,
	    &code, cause)) == NULL) {
		char *why = *cause;

		*cause = NULL;
		xcause(cause, "prev_profile: %s", why);
		free(why);
		goto out;
	}
	ci = xcalloc(n ? n : 1, sizeof *ci);
	pi = xcalloc(n ? n : 1, sizeof *pi);
	for (k = 0; k < n; k++) {
		ci[k] = pprof_delta_type(c, names[k]);
		pi[k] = pprof_delta_type(p, names[k]);
	}
	t.nv = n;
	ploc = pprof_delta_locations(p);
	cloc = pprof_delta_locations(c);
	for (i = 0; i < p->n_sample; i++) {
		s = p->sample[i];
		pprof_delta_identity(p, ploc, s, &b);
		e = pprof_delta_find(&t, b.b, b.len, 1);
		for (k = 0; k < n; k++)
			if (pi[k] >= 0 && (size_t)pi[k] < s->n_value)
				e->v[k] += s->value[pi[k]];
	}
	for (i = j = 0; i < c->n_sample; i++) {
		s = c->sample[i];
		pprof_delta_identity(c, cloc, s, &b);
		if ((e = pprof_delta_find(&t, b.b, b.len, 0)) != NULL)
			for (k = 0; k < n; k++) {
				if (ci[k] < 0 || (size_t)ci[k] >= s->n_value)
					continue;
				s->value[ci[k]] = s->value[ci[k]] > e->v[k] ?
				    s->value[ci[k]] - e->v[k] : 0;
			}
		for (zero = 1, k = 0; k < s->n_value; k++)
			zero = zero && s->value[k] == 0;
		if (zero)
			perftools__profiles__sample__free_unpacked(s, NULL);
		else
			c->sample[j++] = s;
	}
	c->n_sample = j;
	code = pprof_encode_gzip(c, out, outlen, cause) == 0 ? 0 :
	    PPROF_ENOMEM;
out:
	free(ploc);
	free(cloc);
	free(ci);
	free(pi);
	free(b.b);
	pprof_delta_tab_free(&t);
	pprof_free(c, NULL);
	pprof_free(p, NULL);
	budget_release(acct, heldc);
	budget_release(acct, heldp);
	return code;
}
