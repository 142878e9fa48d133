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
 * (merge_int.h gives the exact layouts.) merge_add translates one input's
 * tables to these global ids once (strings lazily, on first use), after
 * which each sample costs one key build, one hash and one probe. Values of
 * equal samples add per sample type, after the input's sample types are
 * aligned to the first input's order. merge_result (merge_result.c) builds
 * a fresh Profile from the keysets, keeping only the nonzero samples and
 * the locations, functions, mappings and strings they reach.
 * merge_combine folds one merge into another through that result, which
 * is how parallel shares are joined (merge_run.c).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "merge/merge.h"
#include "merge/merge_int.h"
#include "merge/merge_keys.h"
#include "common/xmalloc.h"

/* An unknown input id, or an input string not interned yet. */
#define NONE	MERGE_KEYS_NONE

/* Interns a string; returns its global id. */
static uint32_t
merge_intern(struct merge *m, const char *s)
{
	return merge_keys_put(&m->strs, s, strlen(s), NULL);
}

/* Global string id of input string idx, interned on first use. */
static int
merge_str(struct merge *m, const Perftools__Profiles__Profile *p,
    int64_t idx, uint32_t *out, char **cause)
{
	if (idx < 0 || (uint64_t)idx >= p->n_string_table)
		return xcause(cause, "string index %lld out of range "
		    "(table has %zu)", (long long)idx, p->n_string_table);
	if (m->str_map[idx] == NONE)
		m->str_map[idx] = merge_intern(m, p->string_table[idx] ?
		    p->string_table[idx] : "");
	*out = m->str_map[idx];
	return 0;
}

/* Creates an empty merge. */
struct merge *
merge_new(void)
{
	struct merge *m = xcalloc(1, sizeof *m);

	merge_keys_init(&m->strs);
	merge_keys_init(&m->funcs);
	merge_keys_init(&m->maps);
	merge_keys_init(&m->locs);
	merge_keys_init(&m->samples);
	merge_intern(m, "");		/* string 0 is always "" */
	m->out = arena_new(0);
	return m;
}

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
	free(m->func_start);
	free(m->map_flags);
	free(m->loc_info);
	free(m->values);
	free(m->type_type);
	free(m->type_unit);
	free(m->comments);
	free(m->str_map);
	free(m->fn_map);
	free(m->map_map);
	free(m->map_key);
	free(m->loc_map);
	merge_keys_idmap_clear(&m->fn_ids);
	merge_keys_idmap_clear(&m->map_ids);
	merge_keys_idmap_clear(&m->loc_ids);
	free(m->id_scratch);
	free(m->key);
	free(m->labels);
	free(m->perm);
	free(m->type_used);
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
void
merge_expect_types(struct merge *m, size_t n, const char *const *type,
    const char *const *unit)
{
	size_t i;

	free(m->type_type);
	free(m->type_unit);
	m->type_type = xcalloc(n + 1, sizeof *m->type_type);
	m->type_unit = xcalloc(n + 1, sizeof *m->type_unit);
	for (i = 0; i < n; i++) {
		m->type_type[i] = merge_intern(m, type[i]);
		m->type_unit[i] = merge_intern(m, unit[i]);
	}
	m->ntypes = n;
	m->types_fixed = 1;
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
merge_input_types_string(const Perftools__Profiles__Profile *p)
{
	char *s = xstrdup(""), *t;
	const char *ty, *un;
	size_t i;

	for (i = 0; i < p->n_sample_type; i++) {
		const Perftools__Profiles__ValueType *vt = p->sample_type[i];

		ty = un = "?";
		if (vt->type >= 0 && (uint64_t)vt->type < p->n_string_table)
			ty = p->string_table[vt->type];
		if (vt->unit >= 0 && (uint64_t)vt->unit < p->n_string_table)
			un = p->string_table[vt->unit];
		t = xasprintf("%s%s%s/%s", s, i ? "," : "", ty, un);
		free(s);
		s = t;
	}
	return s;
}

/*
 * Maps the input's sample types onto m's: m->perm[i] is the position of
 * input type i. types, units: OUT the input's types as string ids.
 */
static int
merge_align_types(struct merge *m, const Perftools__Profiles__Profile *p,
    uint32_t *types, uint32_t *units, char **cause)
{
	size_t i, j, nt = p->n_sample_type;
	char *a, *b;

	for (i = 0; i < nt; i++) {
		if (merge_str(m, p, p->sample_type[i]->type, &types[i],
		    cause) != 0 || merge_str(m, p, p->sample_type[i]->unit,
		    &units[i], cause) != 0)
			return -1;
	}
	merge_keys_grow(&m->perm, &m->perm_cap, nt + 1, sizeof *m->perm);
	if (m->ninputs == 0 && !m->types_fixed) {
		for (i = 0; i < nt; i++)
			m->perm[i] = i;
		return 0;
	}
	if (nt != m->ntypes)
		goto mismatch;
	merge_keys_grow(&m->type_used, &m->type_used_cap, nt, 1);
	if (nt > 0)	/* no table is allocated for none (memset(NULL) is UB) */
		memset(m->type_used, 0, nt);
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
	b = merge_input_types_string(p);
	xcause(cause, "sample types differ: %s vs %s", a, b);
	free(a);
	free(b);
	return -1;
}

/* Fills m->fn_map with the global id of each input function. */
static int
merge_functions_in(struct merge *m, const Perftools__Profiles__Profile *p,
    char **cause)
{
	size_t i, n = p->n_function;
	uint32_t key[3];
	int added;

	merge_keys_grow(&m->fn_map, &m->fn_cap, n, sizeof *m->fn_map);
	merge_keys_grow(&m->id_scratch, &m->id_scratch_cap, n,
	    sizeof *m->id_scratch);
	for (i = 0; i < n; i++) {
		const Perftools__Profiles__Function *f = p->function[i];

		m->id_scratch[i] = f->id;
		if (merge_str(m, p, f->name, &key[0], cause) != 0 ||
		    merge_str(m, p, f->system_name, &key[1], cause) != 0 ||
		    merge_str(m, p, f->filename, &key[2], cause) != 0)
			return -1;
		m->fn_map[i] = merge_keys_put(&m->funcs, key, sizeof key,
		    &added);
		if (added) {
			merge_keys_grow(&m->func_start, &m->info_cap[0],
			    m->funcs.n, sizeof *m->func_start);
			m->func_start[m->fn_map[i]] = f->start_line;
		}
	}
	return merge_keys_idmap_build(&m->fn_ids, m->id_scratch, n,
	    "function", cause);
}

/* Fills m->map_map (global mapping) and m->map_key (identity string). */
static int
merge_mappings_in(struct merge *m, const Perftools__Profiles__Profile *p,
    char **cause)
{
	size_t i, n = p->n_mapping;
	uint32_t key[8];
	int added;

	merge_keys_grow(&m->map_map, &m->map_cap, n, sizeof *m->map_map);
	merge_keys_grow(&m->map_key, &m->map_key_cap, n, sizeof *m->map_key);
	merge_keys_grow(&m->id_scratch, &m->id_scratch_cap, n,
	    sizeof *m->id_scratch);
	for (i = 0; i < n; i++) {
		const Perftools__Profiles__Mapping *mp = p->mapping[i];

		m->id_scratch[i] = mp->id;
		memcpy(&key[0], &mp->memory_start, 8);
		memcpy(&key[2], &mp->memory_limit, 8);
		memcpy(&key[4], &mp->file_offset, 8);
		if (merge_str(m, p, mp->filename, &key[6], cause) != 0 ||
		    merge_str(m, p, mp->build_id, &key[7], cause) != 0)
			return -1;
		m->map_map[i] = merge_keys_put(&m->maps, key, sizeof key,
		    &added);
		m->map_key[i] = key[7] != 0 ? key[7] : key[6];
		if (added) {
			merge_keys_grow(&m->map_flags, &m->info_cap[1],
			    m->maps.n, sizeof *m->map_flags);
			m->map_flags[m->map_map[i]] =
			    (mp->has_functions ? 1 : 0) |
			    (mp->has_filenames ? 2 : 0) |
			    (mp->has_line_numbers ? 4 : 0) |
			    (mp->has_inline_frames ? 8 : 0);
		}
	}
	return merge_keys_idmap_build(&m->map_ids, m->id_scratch, n,
	    "mapping", cause);
}

/* Fills m->loc_map with the global id of each input location. */
static int
merge_locations_in(struct merge *m, const Perftools__Profiles__Profile *p,
    char **cause)
{
	size_t i, j, n = p->n_location, klen;
	uint32_t mi, fi, *key;
	uint64_t addr;
	int added;

	merge_keys_grow(&m->loc_map, &m->loc_cap, n, sizeof *m->loc_map);
	merge_keys_grow(&m->id_scratch, &m->id_scratch_cap, n,
	    sizeof *m->id_scratch);
	for (i = 0; i < n; i++) {
		const Perftools__Profiles__Location *l = p->location[i];
		const Perftools__Profiles__Mapping *mp = NULL;

		m->id_scratch[i] = l->id;
		mi = NONE;
		if (l->mapping_id != 0) {
			mi = merge_keys_idmap_get(&m->map_ids, l->mapping_id,
			    p->n_mapping);
			if (mi == NONE)
				return xcause(cause, "location %llu references "
				    "unknown mapping %llu",
				    (unsigned long long)l->id,
				    (unsigned long long)l->mapping_id);
			mp = p->mapping[mi];
		}
		klen = l->n_line > 0 ? 1 + 5 * l->n_line : 4;
		merge_keys_grow(&m->key, &m->key_cap, klen, sizeof *m->key);
		key = m->key;
		if (l->n_line > 0) {
			key[0] = 1;
			for (j = 0; j < l->n_line; j++) {
				const Perftools__Profiles__Line *ln = l->line[j];
				uint32_t *k = &key[1 + 5 * j];

				fi = 0;
				if (ln->function_id != 0) {
					fi = merge_keys_idmap_get(&m->fn_ids,
					    ln->function_id, p->n_function);
					if (fi == NONE)
						return xcause(cause, "location "
						    "%llu references unknown "
						    "function %llu",
						    (unsigned long long)l->id,
						    (unsigned long long)
						    ln->function_id);
					fi = m->fn_map[fi] + 1;
				}
				k[0] = fi;
				memcpy(&k[1], &ln->line, 8);
				memcpy(&k[3], &ln->column, 8);
			}
		} else {
			key[0] = 0;
			addr = l->address;
			key[1] = 0;
			if (mp != NULL) {
				key[1] = m->map_key[mi];
				addr = addr - mp->memory_start + mp->file_offset;
			}
			memcpy(&key[2], &addr, 8);
		}
		m->loc_map[i] = merge_keys_put(&m->locs, key, klen * 4, &added);
		if (added) {
			struct merge_loc *li;

			merge_keys_grow(&m->loc_info, &m->info_cap[2],
			    m->locs.n, sizeof *m->loc_info);
			li = &m->loc_info[m->loc_map[i]];
			li->address = l->address;
			li->mapping = mi == NONE ? 0 : m->map_map[mi] + 1;
			li->folded = l->is_folded ? 1 : 0;
		}
	}
	return merge_keys_idmap_build(&m->loc_ids, m->id_scratch, n,
	    "location", cause);
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

/* Checks every sample before any is added, so a bad input adds nothing. */
static int
merge_check_samples(struct merge *m, const Perftools__Profiles__Profile *p,
    char **cause)
{
	size_t i, j;

	for (i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];

		if (merge_cancel_poll(m, 1 + s->n_location_id + s->n_label))
			return xcause(cause, "merge cancelled");
		if (s->n_value != p->n_sample_type)
			return xcause(cause, "sample %zu has %zu values for "
			    "%zu sample types", i, s->n_value,
			    p->n_sample_type);
		for (j = 0; j < s->n_location_id; j++) {
			if (merge_keys_idmap_get(&m->loc_ids, s->location_id[j],
			    p->n_location) == NONE)
				return xcause(cause, "sample %zu references "
				    "unknown location %llu", i,
				    (unsigned long long)s->location_id[j]);
		}
		for (j = 0; j < s->n_label; j++) {
			const Perftools__Profiles__Label *lb = s->label[j];

			if (lb->key < 0 || (uint64_t)lb->key >= p->n_string_table ||
			    lb->str < 0 || (uint64_t)lb->str >= p->n_string_table ||
			    lb->num_unit < 0 ||
			    (uint64_t)lb->num_unit >= p->n_string_table)
				return xcause(cause, "sample %zu has a label "
				    "string index out of range", i);
		}
	}
	return 0;
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
 * Adds the input's samples (already checked). Returns -1 with *cause set if
 * cancelled part way, leaving m with some of the input's samples.
 */
static int
merge_samples_in(struct merge *m, const Perftools__Profiles__Profile *p,
    char **cause)
{
	size_t i, j, nl, klen, nt = m->ntypes;
	uint32_t *key, idx;
	struct merge_label *lb;
	int64_t *v;
	int added, zero;

	for (i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];

		if (merge_cancel_poll(m, 1 + s->n_location_id + s->n_label))
			return xcause(cause, "merge cancelled");
		zero = 1;
		for (j = 0; j < s->n_value; j++)
			if (s->value[j] != 0)
				zero = 0;
		if (zero)
			continue;

		/* Labels, sorted so their order in the input does not count. */
		nl = s->n_label;
		merge_keys_grow(&m->labels, &m->labels_cap, nl,
		    sizeof *m->labels);
		for (j = 0; j < nl; j++) {
			lb = &m->labels[j];
			merge_str(m, p, s->label[j]->key, &lb->key, NULL);
			merge_str(m, p, s->label[j]->str, &lb->str, NULL);
			merge_str(m, p, s->label[j]->num_unit, &lb->unit, NULL);
			lb->num = s->label[j]->num;
		}
		/*
		 * The order is total over every field a label keeps, so labels
		 * that compare equal are identical and qsort's instability
		 * cannot change the key.
		 */
		if (nl > 1)
			qsort(m->labels, nl, sizeof *m->labels,
			    merge_label_qcmp);

		klen = 2 + s->n_location_id + 5 * nl;
		merge_keys_grow(&m->key, &m->key_cap, klen, sizeof *m->key);
		key = m->key;
		key[0] = (uint32_t)s->n_location_id;
		key[1] = (uint32_t)nl;
		for (j = 0; j < s->n_location_id; j++)
			key[2 + j] = m->loc_map[merge_keys_idmap_get(
			    &m->loc_ids, s->location_id[j], p->n_location)];
		for (j = 0; j < nl; j++) {
			uint32_t *kk = &key[2 + s->n_location_id + 5 * j];

			kk[0] = m->labels[j].key;
			kk[1] = m->labels[j].str;
			memcpy(&kk[2], &m->labels[j].num, 8);
			kk[4] = m->labels[j].unit;
		}
		idx = merge_keys_put(&m->samples, key, klen * 4, &added);
		if (added) {
			merge_keys_grow(&m->values, &m->info_cap[3],
			    m->samples.n * (nt ? nt : 1), sizeof *m->values);
			if (nt > 0)
				memset(&m->values[(size_t)idx * nt], 0,
				    nt * sizeof *m->values);
		}
		v = &m->values[(size_t)idx * nt];
		for (j = 0; j < nt; j++)
			v[m->perm[j]] = merge_add64(v[m->perm[j]], s->value[j]);
	}
	return 0;
}

/* True if string index idx is inside p's table. */
static int
merge_str_ok(const Perftools__Profiles__Profile *p, int64_t idx)
{
	return idx >= 0 && (uint64_t)idx < p->n_string_table;
}

/* Checks the string indices of p's header fields. */
static int
merge_check_header(const Perftools__Profiles__Profile *p, char **cause)
{
	size_t i;

	if ((p->period_type != NULL && (!merge_str_ok(p, p->period_type->type) ||
	    !merge_str_ok(p, p->period_type->unit))) ||
	    !merge_str_ok(p, p->default_sample_type) ||
	    !merge_str_ok(p, p->drop_frames) ||
	    !merge_str_ok(p, p->keep_frames) || !merge_str_ok(p, p->doc_url))
		return xcause(cause, "profile header string index out of range");
	for (i = 0; i < p->n_comment; i++)
		if (!merge_str_ok(p, p->comment[i]))
			return xcause(cause, "comment string index out of range");
	return 0;
}

/* Folds the header fields of p (already checked) into m. */
static void
merge_header_in(struct merge *m, const Perftools__Profiles__Profile *p)
{
	uint32_t id;
	size_t i, j;

	if (p->time_nanos != 0 && (m->time_nanos == 0 ||
	    p->time_nanos < m->time_nanos))
		m->time_nanos = p->time_nanos;
	m->duration_nanos = merge_add64(m->duration_nanos, p->duration_nanos);
	if (p->period > m->period)
		m->period = p->period;
	if (!m->have_period_type && p->period_type != NULL) {
		merge_str(m, p, p->period_type->type, &m->period_type, NULL);
		merge_str(m, p, p->period_type->unit, &m->period_unit, NULL);
		m->have_period_type = 1;
	}
	if (m->default_sample_type == 0)
		merge_str(m, p, p->default_sample_type,
		    &m->default_sample_type, NULL);
	if (m->drop_frames == 0)
		merge_str(m, p, p->drop_frames, &m->drop_frames, NULL);
	if (m->keep_frames == 0)
		merge_str(m, p, p->keep_frames, &m->keep_frames, NULL);
	if (m->doc_url == 0)
		merge_str(m, p, p->doc_url, &m->doc_url, NULL);
	for (i = 0; i < p->n_comment; i++) {
		merge_str(m, p, p->comment[i], &id, NULL);
		for (j = 0; j < m->ncomments; j++)
			if (m->comments[j] == id)
				break;
		if (j < m->ncomments || m->ncomments >= 1024)
			continue;
		m->comments = xreallocarray(m->comments, m->ncomments + 1,
		    sizeof *m->comments);
		m->comments[m->ncomments++] = id;
	}
}

/* merge_add counting p as weight inputs (combine passes a whole merge). */
static int
merge_add_weighted(struct merge *m, const Perftools__Profiles__Profile *p,
    size_t weight, char **cause)
{
	uint32_t *types = NULL, *units = NULL;
	size_t nt = p->n_sample_type;
	int rc = -1;

	m->mismatch = 0;
	m->cancelled = 0;
	m->cancel_work = 0;
	merge_keys_grow(&m->str_map, &m->str_map_cap, p->n_string_table,
	    sizeof *m->str_map);
	if (p->n_string_table > 0)
		memset(m->str_map, 0xff,
		    p->n_string_table * sizeof *m->str_map);
	if (p->n_string_table == 0 || p->string_table[0] == NULL ||
	    p->string_table[0][0] != '\0') {
		xcause(cause, "string table does not start with \"\"");
		goto out;
	}
	types = xcalloc(nt + 1, sizeof *types);
	units = xcalloc(nt + 1, sizeof *units);
	if (merge_align_types(m, p, types, units, cause) != 0 ||
	    merge_functions_in(m, p, cause) != 0 ||
	    merge_mappings_in(m, p, cause) != 0 ||
	    merge_locations_in(m, p, cause) != 0 ||
	    merge_check_samples(m, p, cause) != 0 ||
	    merge_check_header(p, cause) != 0)
		goto out;
	if (m->ninputs == 0 && !m->types_fixed) {
		/* The first input fixes the sample types. */
		free(m->type_type);
		free(m->type_unit);
		m->type_type = types;
		m->type_unit = units;
		m->ntypes = nt;
		types = units = NULL;
	}
	if (merge_cancel_poll(m, MERGE_CANCEL_WORK)) {
		xcause(cause, "merge cancelled");
		goto out;
	}
	merge_header_in(m, p);
	if (merge_samples_in(m, p, cause) != 0)
		goto out;
	m->ninputs += weight;
	rc = 0;
out:
	free(types);
	free(units);
	return rc;
}

/* Folds one decoded profile into m. */
int
merge_add(struct merge *m, const Perftools__Profiles__Profile *p, char **cause)
{
	return merge_add_weighted(m, p, 1, cause);
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

/* Folds from's merged result into into. */
int
merge_combine(struct merge *into, struct merge *from, char **cause)
{
	const Perftools__Profiles__Profile *p;

	into->mismatch = 0;
	into->cancelled = 0;
	if (from->ninputs == 0)
		return 0;
	p = merge_result(from);
	if (merge_add_weighted(into, p, from->ninputs, cause) != 0)
		return -1;
	return 0;
}
