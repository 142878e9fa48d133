/*
 * Merging profiles by symbolized stack keys.
 *
 * Everything a merge holds lives in "keysets" (merge_keys.c): an
 * append-only pool of keys (byte strings) with an open-addressing hash
 * table of precomputed 32-bit hashes, so that each distinct string,
 * function, mapping, location and sample is stored once and found again
 * by content:
 *
 *   string    its bytes (kept NUL-terminated for the output string table)
 *   function  (name, system name, file name) as string ids
 *   mapping   (memory start, limit, file offset, file, build id)
 *   location  symbolized: every Line as (function id, line, column),
 *             innermost first; unsymbolized: (mapping file or build id,
 *             address - memory_start + file_offset). Addresses of
 *             symbolized locations are not part of the key, so two builds
 *             of one program merge function for function.
 *   sample    its location ids, then its labels sorted
 *
 * (merge_int.h gives the exact layouts.) An input is read in place from
 * its raw protobuf bytes (proto/pprof_stream.h): never decoded into
 * objects, so it costs its bytes, a pointer per string and a few words
 * per function, mapping and location, however many samples it has.
 * merge_add_raw translates the input's tables to these global ids once
 * (strings lazily, on first use), then reads its samples one at a time,
 * each costing one key build, one hash and one probe, so that a merge's
 * memory follows the distinct stacks, not the sample count. Values of
 * equal samples add per sample type, after the input's sample types are
 * aligned to the first input's order. merge_result (merge_result.c) builds
 * a fresh Profile from the keysets, keeping only the nonzero samples and
 * the locations, functions, mappings and strings they reach.
 * merge_combine folds one merge into another through that result's
 * bytes, which is how parallel shares are joined (merge_run.c).
 *
 * Every byte a merge holds is charged to its budget account
 * (common/budget.h) before it is allocated; when the account refuses,
 * the call fails with merge_out_of_memory() set and the merge is good
 * only for merge_free.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/budget.h"
#include "merge/merge.h"
#include "merge/merge_int.h"
#include "merge/merge_keys.h"
#include "common/xmalloc.h"
#include "proto/pprof.h"
#include "proto/pprof_stream.h"

/* An unknown input id, or an input string not interned yet. */
#define NONE	MERGE_KEYS_NONE

/* Grows one of m's arrays; -1 (with *cause) when the account refuses. */
#define MERGE_GROW(m, arr, cap, need, cause)				\
	(budget_grow((m)->acct, &(arr), &(cap), (need), sizeof *(arr)) != 0 ? \
	    merge_nomem((m), (cause)) : 0)

/* Interns a string of len bytes; *out gets its global id. */
static int
merge_intern(struct merge *m, const char *s, size_t len, uint32_t *out,
    char **cause)
{
	if ((*out = merge_keys_put(&m->strs, s, len, NULL)) == NONE)
		return merge_nomem(m, cause);
	return 0;
}

/* Global string id of input string idx, interned on first use. */
static int
merge_str(struct merge *m, const struct pprof_stream *in, int64_t idx,
    uint32_t *out, char **cause)
{
	const char *s;
	size_t len;

	if (idx < 0 || (uint64_t)idx >= in->n_string)
		return xcause(cause, "string index %lld out of range "
		    "(table has %zu)", (long long)idx, in->n_string);
	if (m->str_map[idx] == NONE) {
		s = pprof_stream_string(in, (size_t)idx, &len);
		if (merge_intern(m, s, len, &m->str_map[idx], cause) != 0)
			return -1;
	}
	*out = m->str_map[idx];
	return 0;
}

/* Makes sure string 0 is "" (merge_new's try may have been refused). */
static int
merge_ready(struct merge *m, char **cause)
{
	uint32_t empty;

	if (m->strs.n > 0)
		return 0;
	return merge_intern(m, "", 0, &empty, cause);
}

/* Creates an empty merge charged to acct (may be NULL). */
struct merge *
merge_new(struct budget_acct *acct)
{
	struct merge *m = xcalloc(1, sizeof *m);

	m->acct = acct;
	merge_keys_init(&m->strs, acct);
	merge_keys_init(&m->funcs, acct);
	merge_keys_init(&m->maps, acct);
	merge_keys_init(&m->locs, acct);
	merge_keys_init(&m->samples, acct);
	(void)merge_ready(m, NULL);	/* string 0 is always "" */
	m->nomem = 0;
	m->out = arena_new(0);
	return m;
}

/* Frees an array of cap elements of m's. */
#define MERGE_FREE(m, arr, cap)						\
	budget_dealloc((m)->acct, (arr), (cap) * sizeof *(arr))

/* Frees m and everything it holds. */
void
merge_free(struct merge *m)
{
	if (m == NULL)
		return;
	merge_keys_clear(&m->strs);
	merge_keys_clear(&m->funcs);
	merge_keys_clear(&m->maps);
	merge_keys_clear(&m->locs);
	merge_keys_clear(&m->samples);
	MERGE_FREE(m, m->func_start, m->info_cap[0]);
	MERGE_FREE(m, m->map_flags, m->info_cap[1]);
	MERGE_FREE(m, m->loc_info, m->info_cap[2]);
	MERGE_FREE(m, m->values, m->info_cap[3]);
	MERGE_FREE(m, m->type_type, m->type_cap);
	MERGE_FREE(m, m->type_unit, m->type_unit_cap);
	MERGE_FREE(m, m->comments, m->comments_cap);
	MERGE_FREE(m, m->str_map, m->str_map_cap);
	MERGE_FREE(m, m->fn_map, m->fn_cap);
	MERGE_FREE(m, m->map_map, m->map_cap);
	MERGE_FREE(m, m->map_key, m->map_key_cap);
	MERGE_FREE(m, m->loc_map, m->loc_cap);
	MERGE_FREE(m, m->in_types, m->in_types_cap);
	merge_keys_idmap_clear(&m->fn_ids, m->acct);
	merge_keys_idmap_clear(&m->map_ids, m->acct);
	merge_keys_idmap_clear(&m->loc_ids, m->acct);
	MERGE_FREE(m, m->id_scratch, m->id_scratch_cap);
	MERGE_FREE(m, m->key, m->key_cap);
	MERGE_FREE(m, m->labels, m->labels_cap);
	MERGE_FREE(m, m->perm, m->perm_cap);
	MERGE_FREE(m, m->type_used, m->type_used_cap);
	arena_free(m->out);
	free(m);
}

/* Inputs folded in, directly or through merge_combine. */
size_t merge_count(const struct merge *m) { return m->ninputs; }
/* Distinct samples held (some may sum to zero). */
size_t merge_samples(const struct merge *m) { return m->samples.n; }
/* Distinct locations held. */
size_t merge_locations(const struct merge *m) { return m->locs.n; }

/* Fixes the sample types before the first input. */
int
merge_expect_types(struct merge *m, size_t n, const char *const *type,
    const char *const *unit, char **cause)
{
	size_t i;

	if (merge_ready(m, cause) != 0 ||
	    MERGE_GROW(m, m->type_type, m->type_cap, n + 1, cause) != 0 ||
	    MERGE_GROW(m, m->type_unit, m->type_unit_cap, n + 1, cause) != 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (merge_intern(m, type[i], strlen(type[i]),
		    &m->type_type[i], cause) != 0 || merge_intern(m, unit[i],
		    strlen(unit[i]), &m->type_unit[i], cause) != 0)
			return -1;
	}
	m->ntypes = n;
	m->types_fixed = 1;
	return 0;
}
/* Number of sample types. */
size_t
merge_ntypes(const struct merge *m)
{
	return m->ntypes;
}

/* The i-th sample type; *unit gets its unit. */
const char *
merge_type(const struct merge *m, size_t i, const char **unit)
{
	if (unit != NULL)
		*unit = merge_keys_key(&m->strs, m->type_unit[i], NULL);
	return merge_keys_key(&m->strs, m->type_type[i], NULL);
}

/* True if the last failure was a sample type mismatch. */
int
merge_mismatch(const struct merge *m)
{
	return m->mismatch;
}

/* True if the last failure was the budget account refusing memory. */
int
merge_out_of_memory(const struct merge *m)
{
	return m->nomem;
}

/* Writes "type/unit,type/unit" of m's sample types into a new string. */
static char *
merge_types_string(const struct merge *m)
{
	char *s = xstrdup(""), *t;
	size_t i;

	for (i = 0; i < m->ntypes; i++) {
		t = xasprintf("%s%s%s/%s", s, i ? "," : "",
		    (const char *)merge_keys_key(&m->strs, m->type_type[i],
		    NULL), (const char *)merge_keys_key(&m->strs,
		    m->type_unit[i], NULL));
		free(s);
		s = t;
	}
	return s;
}

/* The same for an input profile (bad indices print as "?"). */
static char *
merge_input_types_string(const struct pprof_stream *in)
{
	char *s = xstrdup(""), *t;
	const char *ty, *un;
	size_t i, tl, ul;
	int64_t a, b;

	for (i = 0; i < in->n_sample_type; i++) {
		a = in->sample_type[2 * i];
		b = in->sample_type[2 * i + 1];
		ty = un = "?";
		tl = ul = 1;
		if (a >= 0 && (uint64_t)a < in->n_string)
			ty = pprof_stream_string(in, (size_t)a, &tl);
		if (b >= 0 && (uint64_t)b < in->n_string)
			un = pprof_stream_string(in, (size_t)b, &ul);
		t = xasprintf("%s%s%.*s/%.*s", s, i ? "," : "", (int)tl, ty,
		    (int)ul, un);
		free(s);
		s = t;
	}
	return s;
}

/*
 * Maps the input's sample types onto m's: m->perm[i] is the position of
 * input type i. m->in_types: OUT the input's types then units as string
 * ids.
 */
static int
merge_align_types(struct merge *m, const struct pprof_stream *in,
    char **cause)
{
	size_t i, j, nt = in->n_sample_type;
	uint32_t *types, *units;
	char *a, *b;

	if (MERGE_GROW(m, m->in_types, m->in_types_cap, 2 * nt + 1,
	    cause) != 0 || MERGE_GROW(m, m->perm, m->perm_cap, nt + 1,
	    cause) != 0)
		return -1;
	types = m->in_types;
	units = m->in_types + nt;
	for (i = 0; i < nt; i++) {
		if (merge_str(m, in, in->sample_type[2 * i], &types[i],
		    cause) != 0 || merge_str(m, in, in->sample_type[2 * i + 1],
		    &units[i], cause) != 0)
			return -1;
	}
	if (m->ninputs == 0 && !m->types_fixed) {
		for (i = 0; i < nt; i++)
			m->perm[i] = i;
		return 0;
	}
	if (nt != m->ntypes)
		goto mismatch;
	if (MERGE_GROW(m, m->type_used, m->type_used_cap, nt + 1, cause) != 0)
		return -1;
	memset(m->type_used, 0, nt + 1);
	for (i = 0; i < nt; i++) {
		/* First unclaimed match, so repeated types pair up in order. */
		for (j = 0; j < m->ntypes; j++) {
			if (!m->type_used[j] && m->type_type[j] == types[i] &&
			    m->type_unit[j] == units[i])
				break;
		}
		if (j == m->ntypes)
			goto mismatch;
		m->type_used[j] = 1;
		m->perm[i] = j;
	}
	return 0;
mismatch:
	m->mismatch = 1;
	a = merge_types_string(m);
	b = merge_input_types_string(in);
	xcause(cause, "sample types differ: %s vs %s", a, b);
	free(a);
	free(b);
	return -1;
}

/* The first input fixes the sample types: copies them from in_types. */
static int
merge_take_types(struct merge *m, size_t nt, char **cause)
{
	if (MERGE_GROW(m, m->type_type, m->type_cap, nt + 1, cause) != 0 ||
	    MERGE_GROW(m, m->type_unit, m->type_unit_cap, nt + 1, cause) != 0)
		return -1;
	if (nt > 0) {
		memcpy(m->type_type, m->in_types, nt * sizeof *m->type_type);
		memcpy(m->type_unit, m->in_types + nt,
		    nt * sizeof *m->type_unit);
	}
	m->ntypes = nt;
	return 0;
}

/* Builds an idmap from the n ids in m->id_scratch. */
static int
merge_idmap(struct merge *m, struct merge_idmap *im, size_t n,
    const char *what, char **cause)
{
	int rc = merge_keys_idmap_build(im, m->acct, m->id_scratch, n, what,
	    cause);

	if (rc == -2)
		m->nomem = 1;
	return rc == 0 ? 0 : -1;
}

/* Fills m->fn_map with the global id of each input function. */
static int
merge_functions_in(struct merge *m, struct pprof_stream *in, char **cause)
{
	struct pprof_stream_function f;
	size_t i, n = in->n[PPROF_STREAM_FUNCTION];
	uint32_t key[3];
	int added;

	if (MERGE_GROW(m, m->fn_map, m->fn_cap, n, cause) != 0 ||
	    MERGE_GROW(m, m->id_scratch, m->id_scratch_cap, n, cause) != 0)
		return -1;
	for (i = 0; i < n && pprof_stream_function(in, &f) == 1; i++) {
		m->id_scratch[i] = f.id;
		if (merge_str(m, in, f.name, &key[0], cause) != 0 ||
		    merge_str(m, in, f.system_name, &key[1], cause) != 0 ||
		    merge_str(m, in, f.filename, &key[2], cause) != 0)
			return -1;
		m->fn_map[i] = merge_keys_put(&m->funcs, key, sizeof key,
		    &added);
		if (m->fn_map[i] == NONE)
			return merge_nomem(m, cause);
		if (added) {
			if (MERGE_GROW(m, m->func_start, m->info_cap[0],
			    m->funcs.n, cause) != 0)
				return -1;
			m->func_start[m->fn_map[i]] = f.start_line;
		}
	}
	return merge_idmap(m, &m->fn_ids, n, "function", cause);
}

/* Counts weight inputs whose first mapping is ident (a string id). */
static void
merge_vote_main(struct merge *m, uint32_t ident, size_t weight)
{
	size_t i;

	for (i = 0; i < m->nmain; i++)
		if (m->main_ident[i] == ident) {
			m->main_votes[i] += weight;
			return;
		}
	if (m->nmain < MERGE_MAIN_VOTES) {
		m->main_ident[m->nmain] = ident;
		m->main_votes[m->nmain++] = weight;
	}
}

/*
 * Counts the votes of an input folded in: its first mapping's, once, or
 * (from not NULL: in is from's result) every vote from counted, so a
 * combined merge picks what its inputs had first, not what each share's
 * result has first.
 */
static int
merge_votes_in(struct merge *m, const struct pprof_stream *in,
    const struct merge *from, char **cause)
{
	const char *s;
	uint32_t len, id;
	size_t i;

	if (from == NULL) {
		if (in->n[PPROF_STREAM_MAPPING] > 0)
			merge_vote_main(m, m->map_key[0], 1);
		return 0;
	}
	for (i = 0; i < from->nmain; i++) {
		s = merge_keys_key(&from->strs, from->main_ident[i], &len);
		if (merge_intern(m, s, len, &id, cause) != 0)
			return -1;
		merge_vote_main(m, id, from->main_votes[i]);
	}
	return 0;
}

/* Fills m->map_map (global mapping) and m->map_key (identity string). */
static int
merge_mappings_in(struct merge *m, struct pprof_stream *in, char **cause)
{
	struct pprof_stream_mapping mp;
	size_t i, n = in->n[PPROF_STREAM_MAPPING];
	uint32_t key[8];
	int added;

	if (MERGE_GROW(m, m->map_map, m->map_cap, n, cause) != 0 ||
	    MERGE_GROW(m, m->map_key, m->map_key_cap, n, cause) != 0 ||
	    MERGE_GROW(m, m->id_scratch, m->id_scratch_cap, n, cause) != 0)
		return -1;
	for (i = 0; i < n && pprof_stream_mapping(in, &mp) == 1; i++) {
		m->id_scratch[i] = mp.id;
		memcpy(&key[0], &mp.memory_start, 8);
		memcpy(&key[2], &mp.memory_limit, 8);
		memcpy(&key[4], &mp.file_offset, 8);
		if (merge_str(m, in, mp.filename, &key[6], cause) != 0 ||
		    merge_str(m, in, mp.build_id, &key[7], cause) != 0)
			return -1;
		m->map_map[i] = merge_keys_put(&m->maps, key, sizeof key,
		    &added);
		if (m->map_map[i] == NONE)
			return merge_nomem(m, cause);
		m->map_key[i] = key[7] != 0 ? key[7] : key[6];
		if (added) {
			if (MERGE_GROW(m, m->map_flags, m->info_cap[1],
			    m->maps.n, cause) != 0)
				return -1;
			m->map_flags[m->map_map[i]] =
			    (mp.has_functions ? 1 : 0) |
			    (mp.has_filenames ? 2 : 0) |
			    (mp.has_line_numbers ? 4 : 0) |
			    (mp.has_inline_frames ? 8 : 0);
		}
	}
	return merge_idmap(m, &m->map_ids, n, "mapping", cause);
}

/*
 * Builds the key of location l (see merge_int.h) in m->key; *klen: OUT
 * its length in words, *mi: OUT the input index of its mapping or NONE.
 */
static int
merge_location_key(struct merge *m, const struct pprof_stream *in,
    const struct pprof_stream_location *l, size_t *klen, uint32_t *mi,
    char **cause)
{
	const uint32_t *mkey;
	uint64_t addr, start, offset;
	uint32_t fi, *key;
	size_t j;

	*mi = NONE;
	if (l->mapping_id != 0) {
		*mi = merge_keys_idmap_get(&m->map_ids, l->mapping_id,
		    in->n[PPROF_STREAM_MAPPING]);
		if (*mi == NONE)
			return xcause(cause, "location %llu references unknown "
			    "mapping %llu", (unsigned long long)l->id,
			    (unsigned long long)l->mapping_id);
	}
	*klen = l->n_line > 0 ? 1 + 5 * l->n_line : 4;
	if (MERGE_GROW(m, m->key, m->key_cap, *klen, cause) != 0)
		return -1;
	key = m->key;
	if (l->n_line > 0) {
		key[0] = 1;
		for (j = 0; j < l->n_line; j++) {
			const struct pprof_stream_line *ln = &l->line[j];
			uint32_t *k = &key[1 + 5 * j];

			fi = 0;
			if (ln->function_id != 0) {
				fi = merge_keys_idmap_get(&m->fn_ids,
				    ln->function_id,
				    in->n[PPROF_STREAM_FUNCTION]);
				if (fi == NONE)
					return xcause(cause, "location %llu "
					    "references unknown function %llu",
					    (unsigned long long)l->id,
					    (unsigned long long)ln->function_id);
				fi = m->fn_map[fi] + 1;
			}
			k[0] = fi;
			memcpy(&k[1], &ln->line, 8);
			memcpy(&k[3], &ln->column, 8);
		}
		return 0;
	}
	key[0] = 0;
	addr = l->address;
	key[1] = 0;
	if (*mi != NONE) {
		/* The mapping's key holds its start and file offset. */
		mkey = merge_keys_key(&m->maps, m->map_map[*mi], NULL);
		memcpy(&start, &mkey[0], 8);
		memcpy(&offset, &mkey[4], 8);
		key[1] = m->map_key[*mi];
		addr = addr - start + offset;
	}
	memcpy(&key[2], &addr, 8);
	return 0;
}

/* Fills m->loc_map with the global id of each input location. */
static int
merge_locations_in(struct merge *m, struct pprof_stream *in, char **cause)
{
	struct pprof_stream_location l;
	struct merge_loc *li;
	size_t i, n = in->n[PPROF_STREAM_LOCATION], klen = 0;
	uint32_t mi;
	int added, rc;

	if (MERGE_GROW(m, m->loc_map, m->loc_cap, n, cause) != 0 ||
	    MERGE_GROW(m, m->id_scratch, m->id_scratch_cap, n, cause) != 0)
		return -1;
	for (i = 0; i < n; i++) {
		if ((rc = pprof_stream_location(in, &l)) < 0)
			return merge_nomem(m, cause);
		if (rc == 0)
			break;
		m->id_scratch[i] = l.id;
		if (merge_location_key(m, in, &l, &klen, &mi, cause) != 0)
			return -1;
		m->loc_map[i] = merge_keys_put(&m->locs, m->key, klen * 4,
		    &added);
		if (m->loc_map[i] == NONE)
			return merge_nomem(m, cause);
		if (added) {
			if (MERGE_GROW(m, m->loc_info, m->info_cap[2],
			    m->locs.n, cause) != 0)
				return -1;
			li = &m->loc_info[m->loc_map[i]];
			li->address = l.address;
			li->mapping = mi == NONE ? 0 : m->map_map[mi] + 1;
			li->folded = l.is_folded ? 1 : 0;
		}
	}
	return merge_idmap(m, &m->loc_ids, n, "location", cause);
}

/* Orders labels by key, string, number, unit. */
static int
merge_label_cmp(const struct merge_label *a, const struct merge_label *b)
{
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	if (a->str != b->str)
		return a->str < b->str ? -1 : 1;
	if (a->num != b->num)
		return a->num < b->num ? -1 : 1;
	if (a->unit != b->unit)
		return a->unit < b->unit ? -1 : 1;
	return 0;
}

/* merge_label_cmp for qsort. */
static int
merge_label_qcmp(const void *a, const void *b)
{
	return merge_label_cmp(a, b);
}

/*
 * Counts work done on the current input and, every MERGE_CANCEL_WORK
 * units (a sample plus its locations and labels), looks at the cancel
 * flag. Returns -1 once it is set.
 */
#define MERGE_CANCEL_WORK	65536
static int
merge_cancel_poll(struct merge *m, size_t work)
{
	if (m->cancel == NULL)
		return 0;
	m->cancel_work += work;
	if (m->cancel_work < MERGE_CANCEL_WORK)
		return 0;
	m->cancel_work = 0;
	if (__atomic_load_n(m->cancel, __ATOMIC_RELAXED) == 0)
		return 0;
	m->cancelled = 1;
	return -1;
}

/*
 * a + b wrapping around like Go's int64 (what go tool pprof -proto does
 * with such inputs), without C's undefined signed overflow.
 */
static inline int64_t
merge_add64(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

/*
 * Builds the key of sample s (see merge_int.h) in m->key, its labels
 * sorted so their order in the input does not count. *klen: OUT its
 * length in words.
 */
static int
merge_sample_key(struct merge *m, const struct pprof_stream *in,
    const struct pprof_stream_sample *s, size_t *klen, char **cause)
{
	size_t j, nl = s->n_label, nloc = s->n_location_id;
	struct merge_label *lb;
	uint32_t *key, li;

	if (MERGE_GROW(m, m->labels, m->labels_cap, nl + 1, cause) != 0)
		return -1;
	for (j = 0; j < nl; j++) {
		lb = &m->labels[j];
		if (merge_str(m, in, s->label[j].key, &lb->key, cause) != 0 ||
		    merge_str(m, in, s->label[j].str, &lb->str, cause) != 0 ||
		    merge_str(m, in, s->label[j].num_unit, &lb->unit,
		    cause) != 0)
			return -1;
		lb->num = s->label[j].num;
	}
	/*
	 * The order is total over every field a label keeps, so labels that
	 * compare equal are identical and qsort's instability cannot change
	 * the key.
	 */
	if (nl > 1)
		qsort(m->labels, nl, sizeof *m->labels, merge_label_qcmp);

	*klen = 2 + nloc + 5 * nl;
	if (MERGE_GROW(m, m->key, m->key_cap, *klen, cause) != 0)
		return -1;
	key = m->key;
	key[0] = (uint32_t)nloc;
	key[1] = (uint32_t)nl;
	for (j = 0; j < nloc; j++) {
		li = merge_keys_idmap_get(&m->loc_ids, s->location_id[j],
		    in->n[PPROF_STREAM_LOCATION]);
		if (li == NONE)
			return xcause(cause, "sample references unknown "
			    "location %llu",
			    (unsigned long long)s->location_id[j]);
		key[2 + j] = m->loc_map[li];
	}
	for (j = 0; j < nl; j++) {
		uint32_t *kk = &key[2 + nloc + 5 * j];

		kk[0] = m->labels[j].key;
		kk[1] = m->labels[j].str;
		memcpy(&kk[2], &m->labels[j].num, 8);
		kk[4] = m->labels[j].unit;
	}
	return 0;
}

/*
 * Adds the input's samples, read one at a time. Returns -1 with *cause
 * set if cancelled or out of memory part way, leaving m with some of
 * the input's samples.
 */
static int
merge_samples_in(struct merge *m, struct pprof_stream *in, char **cause)
{
	struct pprof_stream_sample s;
	size_t j, klen, nt = m->ntypes;
	uint32_t idx;
	int64_t *v;
	int added, zero, rc;

	while ((rc = pprof_stream_sample(in, &s)) == 1) {
		if (merge_cancel_poll(m, 1 + s.n_location_id + s.n_label))
			return xcause(cause, "merge cancelled");
		if (s.n_value != in->n_sample_type)
			return xcause(cause, "sample has %zu values for %zu "
			    "sample types", s.n_value, in->n_sample_type);
		zero = 1;
		for (j = 0; j < s.n_value; j++)
			if (s.value[j] != 0)
				zero = 0;
		if (zero)
			continue;
		if (merge_sample_key(m, in, &s, &klen, cause) != 0)
			return -1;
		idx = merge_keys_put(&m->samples, m->key, klen * 4, &added);
		if (idx == NONE)
			return merge_nomem(m, cause);
		if (added) {
			if (MERGE_GROW(m, m->values, m->info_cap[3],
			    m->samples.n * (nt ? nt : 1), cause) != 0)
				return -1;
			if (nt > 0)
				memset(&m->values[(size_t)idx * nt], 0,
				    nt * sizeof *m->values);
		}
		v = &m->values[(size_t)idx * nt];
		for (j = 0; j < nt; j++)
			v[m->perm[j]] = merge_add64(v[m->perm[j]], s.value[j]);
	}
	return rc < 0 ? merge_nomem(m, cause) : 0;
}

/* Folds the header fields of the input into m. */
static int
merge_header_in(struct merge *m, const struct pprof_stream *in,
    char **cause)
{
	uint32_t id;
	size_t i, j;

	if (in->time_nanos != 0 && (m->time_nanos == 0 ||
	    in->time_nanos < m->time_nanos))
		m->time_nanos = in->time_nanos;
	m->duration_nanos = merge_add64(m->duration_nanos, in->duration_nanos);
	if (in->period > m->period)
		m->period = in->period;
	if (!m->have_period_type && in->have_period_type) {
		if (merge_str(m, in, in->period_type, &m->period_type,
		    cause) != 0 || merge_str(m, in, in->period_unit,
		    &m->period_unit, cause) != 0)
			return -1;
		m->have_period_type = 1;
	}
	if ((m->default_sample_type == 0 && merge_str(m, in,
	    in->default_sample_type, &m->default_sample_type, cause) != 0) ||
	    (m->drop_frames == 0 && merge_str(m, in, in->drop_frames,
	    &m->drop_frames, cause) != 0) ||
	    (m->keep_frames == 0 && merge_str(m, in, in->keep_frames,
	    &m->keep_frames, cause) != 0) ||
	    (m->doc_url == 0 && merge_str(m, in, in->doc_url, &m->doc_url,
	    cause) != 0))
		return -1;
	for (i = 0; i < in->n_comment; i++) {
		if (merge_str(m, in, in->comment[i], &id, cause) != 0)
			return -1;
		for (j = 0; j < m->ncomments; j++)
			if (m->comments[j] == id)
				break;
		if (j < m->ncomments || m->ncomments >= 1024)
			continue;
		if (MERGE_GROW(m, m->comments, m->comments_cap,
		    m->ncomments + 1, cause) != 0)
			return -1;
		m->comments[m->ncomments++] = id;
	}
	return 0;
}

/*
 * Folds an opened input into m: one input, or (from not NULL) from's
 * result, counted as all of from's inputs. The input was checked when it
 * was opened, so only a sample type mismatch, the budget or a cancel can
 * refuse it; the first leaves m as it was.
 */
static int
merge_add_stream(struct merge *m, struct pprof_stream *in,
    const struct merge *from, char **cause)
{
	size_t nstr = in->n_string;

	if (MERGE_GROW(m, m->str_map, m->str_map_cap, nstr + 1, cause) != 0)
		return -1;
	memset(m->str_map, 0xff, (nstr + 1) * sizeof *m->str_map);
	if (merge_align_types(m, in, cause) != 0)
		return -1;
	if (m->ninputs == 0 && !m->types_fixed &&
	    merge_take_types(m, in->n_sample_type, cause) != 0)
		return -1;
	if (merge_functions_in(m, in, cause) != 0 ||
	    merge_mappings_in(m, in, cause) != 0 ||
	    merge_locations_in(m, in, cause) != 0)
		return -1;
	if (merge_cancel_poll(m, MERGE_CANCEL_WORK))
		return xcause(cause, "merge cancelled");
	if (merge_header_in(m, in, cause) != 0 ||
	    merge_samples_in(m, in, cause) != 0)
		return -1;
	if (merge_votes_in(m, in, from, cause) != 0)
		return -1;
	m->ninputs += from != NULL ? from->ninputs : 1;
	return 0;
}

/* merge_add_raw of one input, or (from not NULL) of from's result. */
static int
merge_add_raw_from(struct merge *m, const uint8_t *raw, size_t len,
    const struct merge *from, char **cause)
{
	struct pprof_stream in;
	int rc;

	m->mismatch = 0;
	m->cancelled = 0;
	m->nomem = 0;
	m->cancel_work = 0;
	if (merge_ready(m, cause) != 0)
		return -1;
	if ((rc = pprof_stream_open(&in, raw, len, m->acct, m->cancel,
	    cause)) != 0) {
		if (rc == PPROF_ENOMEM)
			m->nomem = 1;
		if (rc == PPROF_ECANCELED && cause != NULL) {
			free(*cause);
			xcause(cause, "merge cancelled");
		}
		m->cancelled = rc == PPROF_ECANCELED;
		pprof_stream_close(&in);
		return -1;
	}
	rc = merge_add_stream(m, &in, from, cause);
	pprof_stream_close(&in);
	return rc;
}

/* Folds one raw (inflated) profile into m, read in place. */
int
merge_add_raw(struct merge *m, const uint8_t *raw, size_t len, char **cause)
{
	return merge_add_raw_from(m, raw, len, NULL, cause);
}

/* Folds one decoded profile into m: packed, then read as raw bytes. */
int
merge_add(struct merge *m, const Perftools__Profiles__Profile *p, char **cause)
{
	uint8_t *raw;
	size_t len;
	int rc;

	m->nomem = 0;
	len = perftools__profiles__profile__get_packed_size(p);
	if ((raw = budget_alloc(m->acct, len)) == NULL) {
		m->mismatch = m->cancelled = 0;
		return merge_nomem(m, cause);
	}
	perftools__profiles__profile__pack(p, raw);
	rc = merge_add_raw(m, raw, len, cause);
	budget_dealloc(m->acct, raw, len);
	return rc;
}

/* Sets the flag merge_add and merge_combine poll (NULL: none). */
void
merge_set_cancel(struct merge *m, const volatile int *cancel)
{
	m->cancel = cancel;
}

/* True if the last failing merge_add/merge_combine was cancelled. */
int
merge_cancelled(const struct merge *m)
{
	return m->cancelled;
}

/* Folds from's merged result into into, through its raw bytes. */
int
merge_combine(struct merge *into, struct merge *from, char **cause)
{
	uint8_t *raw;
	size_t len;
	int rc;

	into->mismatch = 0;
	into->cancelled = 0;
	into->nomem = 0;
	if (from->ninputs == 0)
		return 0;
	if (merge_result_raw(from, &raw, &len, cause) != 0) {
		into->nomem = from->nomem;
		return -1;
	}
	rc = merge_add_raw_from(into, raw, len, from, cause);
	budget_dealloc(from->acct, raw, len);
	return rc;
}
