/*
 * Building the merged profile from a merge's tables: only the nonzero
 * samples and the locations, functions, mappings and strings they reach,
 * renumbered densely in first-seen order. Phase 1 marks what is kept and
 * numbers it (merge_result_mark, merge_result_number); then either
 * merge_result builds protobuf-c's Profile from the marks (for tests and
 * tools), or merge_result_raw and merge_result_gzip write the same
 * profile's protobuf bytes straight from the tables, field by field in
 * the order protobuf-c packs them, so that the daemon never holds the
 * result twice (once as objects, once packed): the bytes are exactly
 * what protobuf-c would pack from merge_result's Profile (the unit tests
 * and the merge fuzzer compare the two).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/budget.h"
#include "common/xmalloc.h"
#include "merge/merge.h"
#include "merge/merge_int.h"
#include "merge/merge_keys.h"
#include "proto/pprof.h"
#include "proto/pprof_write.h"

/*
 * merge_result's renumbering of the tables: per entry, 0 if the result
 * does not use it, else (once its phase has run) its id in the result;
 * strings get their index in the result's string table. The counts are
 * of the entries kept.
 */
struct merge_marks {
	uint32_t	*sample, *loc, *fn, *map, *str;
	size_t		 nsamples, nlocs, nfns, nmaps;
	size_t		 main;		/* the first mapping's index + 1 */
};

/* Allocates the zeroed renumberings of m's tables; -1 if refused. */
static int
merge_result_marks_new(struct merge *m, struct merge_marks *mk)
{
	memset(mk, 0, sizeof *mk);
	mk->sample = budget_calloc(m->acct, m->samples.n + 1, sizeof(uint32_t));
	mk->loc = budget_calloc(m->acct, m->locs.n + 1, sizeof(uint32_t));
	mk->fn = budget_calloc(m->acct, m->funcs.n + 1, sizeof(uint32_t));
	mk->map = budget_calloc(m->acct, m->maps.n + 1, sizeof(uint32_t));
	mk->str = budget_calloc(m->acct, m->strs.n + 1, sizeof(uint32_t));
	if (mk->sample == NULL || mk->loc == NULL || mk->fn == NULL ||
	    mk->map == NULL || mk->str == NULL) {
		m->nomem = 1;
		return -1;
	}
	return 0;
}

/* Frees the renumberings. */
static void
merge_result_marks_free(struct merge *m, struct merge_marks *mk)
{
	budget_dealloc(m->acct, mk->sample, (m->samples.n + 1) *
	    sizeof(uint32_t));
	budget_dealloc(m->acct, mk->loc, (m->locs.n + 1) * sizeof(uint32_t));
	budget_dealloc(m->acct, mk->fn, (m->funcs.n + 1) * sizeof(uint32_t));
	budget_dealloc(m->acct, mk->map, (m->maps.n + 1) * sizeof(uint32_t));
	budget_dealloc(m->acct, mk->str, (m->strs.n + 1) * sizeof(uint32_t));
}

/* The result's index of global string id (after merge_result_strings). */
static inline int64_t
merge_result_str(const struct merge_marks *mk, uint32_t id)
{
	return (int64_t)mk->str[id];
}

/*
 * The mapping to write first (index + 1, 0: none): of the identity
 * (build id, else file name) that most inputs had first, the first copy
 * kept samples use, else its first copy (written though no location uses
 * it, as the agents write their executable's: a multi-threaded program's
 * samples may all start in libc's thread entry), so pprof names the merge
 * by the inputs' main executable.
 */
static size_t
merge_result_main(const struct merge *m, const struct merge_marks *mk)
{
	const uint32_t *key;
	uint32_t want;
	size_t i, best = 0, first = 0;

	if (m->nmain == 0)
		return 0;
	for (i = 1; i < m->nmain; i++)
		if (m->main_votes[i] > m->main_votes[best])
			best = i;
	want = m->main_ident[best];
	for (i = 0; i < m->maps.n; i++) {
		key = merge_keys_key(&m->maps, (uint32_t)i, NULL);
		if ((key[7] != 0 ? key[7] : key[6]) != want)
			continue;
		if (mk->map[i])
			return i + 1;
		if (first == 0)
			first = i + 1;
	}
	return first;
}

/* The k-th kept mapping to write (main first); its index, or NONE-like. */
static size_t
merge_result_map_at(const struct merge_marks *mk, size_t k)
{
	if (mk->main == 0)
		return k;
	if (k == 0)
		return mk->main - 1;
	return k <= mk->main - 1 ? k - 1 : k;
}

/*
 * Phase 1: marks what the nonzero samples reach (locations, then their
 * functions and mappings, and every string any of them or the header
 * uses) and numbers the kept locations, functions and mappings.
 */
static void
merge_result_mark(const struct merge *m, struct merge_marks *mk)
{
	uint32_t *strmark = mk->str, len;
	const uint32_t *key;
	size_t i, j, nt = m->ntypes;

#define USE_STR(id) do {						\
	if (strmark[(id)] == 0) strmark[(id)] = 1;			\
} while (0)
	USE_STR(0);
	for (i = 0; i < m->samples.n; i++) {
		const int64_t *v = &m->values[i * nt];

		for (j = 0; j < nt; j++)
			if (v[j] != 0)
				break;
		if (j == nt)
			continue;
		mk->sample[i] = 1;
		mk->nsamples++;
		key = merge_keys_key(&m->samples, (uint32_t)i, NULL);
		for (j = 0; j < key[0]; j++)
			mk->loc[key[2 + j]] = 1;
		for (j = 0; j < key[1]; j++) {
			const uint32_t *kk = &key[2 + key[0] + 5 * j];

			USE_STR(kk[0]);
			USE_STR(kk[1]);
			USE_STR(kk[4]);
		}
	}
	for (i = 0; i < m->locs.n; i++) {
		if (!mk->loc[i])
			continue;
		mk->loc[i] = (uint32_t)++mk->nlocs;
		key = merge_keys_key(&m->locs, (uint32_t)i, &len);
		if (key[0] == 1) {
			for (j = 0; j < (len / 4 - 1) / 5; j++)
				if (key[1 + 5 * j] != 0)
					mk->fn[key[1 + 5 * j] - 1] = 1;
		}
		if (m->loc_info[i].mapping != 0)
			mk->map[m->loc_info[i].mapping - 1] = 1;
	}
	for (i = 0; i < m->funcs.n; i++) {
		if (!mk->fn[i])
			continue;
		mk->fn[i] = (uint32_t)++mk->nfns;
		key = merge_keys_key(&m->funcs, (uint32_t)i, NULL);
		USE_STR(key[0]);
		USE_STR(key[1]);
		USE_STR(key[2]);
	}
	mk->main = merge_result_main(m, mk);
	if (mk->main != 0)
		mk->map[mk->main - 1] = (uint32_t)++mk->nmaps;
	for (i = 0; i < m->maps.n; i++) {
		if (!mk->map[i])
			continue;
		if (i + 1 != mk->main)
			mk->map[i] = (uint32_t)++mk->nmaps;
		key = merge_keys_key(&m->maps, (uint32_t)i, NULL);
		USE_STR(key[6]);
		USE_STR(key[7]);
	}
	for (i = 0; i < nt; i++) {
		USE_STR(m->type_type[i]);
		USE_STR(m->type_unit[i]);
	}
	USE_STR(m->period_type);
	USE_STR(m->period_unit);
	USE_STR(m->default_sample_type);
	USE_STR(m->drop_frames);
	USE_STR(m->keep_frames);
	USE_STR(m->doc_url);
	for (i = 0; i < m->ncomments; i++)
		USE_STR(m->comments[i]);
#undef USE_STR
}

/*
 * Phase 1 ends numbering the kept strings: a string's index in the
 * result is its position among them. Returns how many there are.
 */
static size_t
merge_result_number(const struct merge *m, struct merge_marks *mk)
{
	size_t i, nstrs = 0;

	for (i = 0; i < m->strs.n; i++) {
		if (mk->str[i])
			mk->str[i] = (uint32_t)nstrs++;
	}
	return nstrs;
}

/*
 * Phase 2: the string table (numbered by merge_result_number), then the
 * header fields, which refer to it.
 */
static void
merge_result_strings(const struct merge *m, struct merge_marks *mk,
    size_t nstrs, Perftools__Profiles__Profile *p)
{
	static const Perftools__Profiles__ValueType vt_init =
	    PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	struct arena *a = m->out;
	size_t i, nt = m->ntypes;

	p->string_table = arena_alloc(a, (nstrs + 1) * sizeof(char *));
	for (i = 0; i < m->strs.n; i++) {
		/* Kept strings are those numbered, and "" (0) always is. */
		if (i == 0 || mk->str[i] != 0)
			p->string_table[mk->str[i]] = (char *)merge_keys_key(
			    &m->strs, (uint32_t)i, NULL);
	}
	p->n_string_table = nstrs;

	p->n_sample_type = nt;
	p->sample_type = arena_alloc(a, (nt + 1) * sizeof *p->sample_type);
	for (i = 0; i < nt; i++) {
		Perftools__Profiles__ValueType *vt = arena_alloc(a, sizeof *vt);

		*vt = vt_init;
		vt->type = merge_result_str(mk, m->type_type[i]);
		vt->unit = merge_result_str(mk, m->type_unit[i]);
		p->sample_type[i] = vt;
	}
	if (m->have_period_type) {
		p->period_type = arena_alloc(a, sizeof *p->period_type);
		*p->period_type = vt_init;
		p->period_type->type = merge_result_str(mk, m->period_type);
		p->period_type->unit = merge_result_str(mk, m->period_unit);
	}
	p->period = m->period;
	p->time_nanos = m->time_nanos;
	p->duration_nanos = m->duration_nanos;
	p->default_sample_type = merge_result_str(mk, m->default_sample_type);
	p->drop_frames = merge_result_str(mk, m->drop_frames);
	p->keep_frames = merge_result_str(mk, m->keep_frames);
	p->doc_url = merge_result_str(mk, m->doc_url);
	p->n_comment = m->ncomments;
	p->comment = arena_alloc(a, (m->ncomments + 1) * sizeof *p->comment);
	for (i = 0; i < m->ncomments; i++)
		p->comment[i] = merge_result_str(mk, m->comments[i]);
}

/* Phase 3: the mappings kept. */
static void
merge_result_mappings(const struct merge *m, const struct merge_marks *mk,
    Perftools__Profiles__Profile *p)
{
	static const Perftools__Profiles__Mapping map_init =
	    PERFTOOLS__PROFILES__MAPPING__INIT;
	struct arena *a = m->out;
	const uint32_t *key;
	size_t i, k;
	uint32_t n;

	p->n_mapping = mk->nmaps;
	p->mapping = arena_alloc(a, (mk->nmaps + 1) * sizeof *p->mapping);
	for (k = 0, n = 0; k < m->maps.n; k++) {
		Perftools__Profiles__Mapping *mp;
		uint8_t fl;

		i = merge_result_map_at(mk, k);
		fl = m->map_flags[i];
		if (!mk->map[i])
			continue;
		key = merge_keys_key(&m->maps, (uint32_t)i, NULL);
		mp = arena_alloc(a, sizeof *mp);
		*mp = map_init;
		mp->id = mk->map[i];
		memcpy(&mp->memory_start, &key[0], 8);
		memcpy(&mp->memory_limit, &key[2], 8);
		memcpy(&mp->file_offset, &key[4], 8);
		mp->filename = merge_result_str(mk, key[6]);
		mp->build_id = merge_result_str(mk, key[7]);
		mp->has_functions = (fl & 1) != 0;
		mp->has_filenames = (fl & 2) != 0;
		mp->has_line_numbers = (fl & 4) != 0;
		mp->has_inline_frames = (fl & 8) != 0;
		p->mapping[n++] = mp;
	}
}

/* Phase 4: the functions kept. */
static void
merge_result_functions(const struct merge *m, const struct merge_marks *mk,
    Perftools__Profiles__Profile *p)
{
	static const Perftools__Profiles__Function fn_init =
	    PERFTOOLS__PROFILES__FUNCTION__INIT;
	struct arena *a = m->out;
	const uint32_t *key;
	size_t i;
	uint32_t n;

	p->n_function = mk->nfns;
	p->function = arena_alloc(a, (mk->nfns + 1) * sizeof *p->function);
	for (i = 0, n = 0; i < m->funcs.n; i++) {
		Perftools__Profiles__Function *f;

		if (!mk->fn[i])
			continue;
		key = merge_keys_key(&m->funcs, (uint32_t)i, NULL);
		f = arena_alloc(a, sizeof *f);
		*f = fn_init;
		f->id = mk->fn[i];
		f->name = merge_result_str(mk, key[0]);
		f->system_name = merge_result_str(mk, key[1]);
		f->filename = merge_result_str(mk, key[2]);
		f->start_line = m->func_start[i];
		p->function[n++] = f;
	}
}

/* Phase 5: the locations kept; their lines come straight from the key. */
static void
merge_result_locations(const struct merge *m, const struct merge_marks *mk,
    Perftools__Profiles__Profile *p)
{
	static const Perftools__Profiles__Location loc_init =
	    PERFTOOLS__PROFILES__LOCATION__INIT;
	static const Perftools__Profiles__Line line_init =
	    PERFTOOLS__PROFILES__LINE__INIT;
	struct arena *a = m->out;
	const uint32_t *key;
	size_t i, j, nlines;
	uint32_t len, n;

	p->n_location = mk->nlocs;
	p->location = arena_alloc(a, (mk->nlocs + 1) * sizeof *p->location);
	for (i = 0, n = 0; i < m->locs.n; i++) {
		Perftools__Profiles__Location *l;
		const struct merge_loc *li = &m->loc_info[i];

		if (!mk->loc[i])
			continue;
		key = merge_keys_key(&m->locs, (uint32_t)i, &len);
		l = arena_alloc(a, sizeof *l);
		*l = loc_init;
		l->id = mk->loc[i];
		l->address = li->address;
		l->mapping_id = li->mapping ? mk->map[li->mapping - 1] : 0;
		l->is_folded = li->folded;
		nlines = key[0] == 1 ? (len / 4 - 1) / 5 : 0;
		l->n_line = nlines;
		l->line = arena_alloc(a, (nlines + 1) * sizeof *l->line);
		for (j = 0; j < nlines; j++) {
			Perftools__Profiles__Line *ln = arena_alloc(a,
			    sizeof *ln);
			const uint32_t *k = &key[1 + 5 * j];

			*ln = line_init;
			ln->function_id = k[0] ? mk->fn[k[0] - 1] : 0;
			memcpy(&ln->line, &k[1], 8);
			memcpy(&ln->column, &k[3], 8);
			l->line[j] = ln;
		}
		p->location[n++] = l;
	}
}

/* Phase 6: the nonzero samples, with their labels. */
static void
merge_result_samples(const struct merge *m, const struct merge_marks *mk,
    Perftools__Profiles__Profile *p)
{
	static const Perftools__Profiles__Sample sample_init =
	    PERFTOOLS__PROFILES__SAMPLE__INIT;
	static const Perftools__Profiles__Label label_init =
	    PERFTOOLS__PROFILES__LABEL__INIT;
	struct arena *a = m->out;
	const uint32_t *key;
	size_t j, nt = m->ntypes;
	uint32_t si, n;

	p->n_sample = mk->nsamples;
	p->sample = arena_alloc(a, (mk->nsamples + 1) * sizeof *p->sample);
	for (si = 0, n = 0; si < m->samples.n; si++) {
		Perftools__Profiles__Sample *s;

		if (!mk->sample[si])
			continue;
		key = merge_keys_key(&m->samples, si, NULL);
		s = arena_alloc(a, sizeof *s);
		*s = sample_init;
		s->n_location_id = key[0];
		s->location_id = arena_alloc(a, (key[0] + 1) *
		    sizeof *s->location_id);
		for (j = 0; j < key[0]; j++)
			s->location_id[j] = mk->loc[key[2 + j]];
		s->n_value = nt;
		s->value = arena_alloc(a, (nt + 1) * sizeof *s->value);
		memcpy(s->value, &m->values[(size_t)si * nt],
		    nt * sizeof *s->value);
		s->n_label = key[1];
		s->label = arena_alloc(a, (key[1] + 1) * sizeof *s->label);
		for (j = 0; j < key[1]; j++) {
			const uint32_t *kk = &key[2 + key[0] + 5 * j];
			Perftools__Profiles__Label *lb = arena_alloc(a,
			    sizeof *lb);

			*lb = label_init;
			lb->key = merge_result_str(mk, kk[0]);
			lb->str = merge_result_str(mk, kk[1]);
			memcpy(&lb->num, &kk[2], 8);
			lb->num_unit = merge_result_str(mk, kk[4]);
			s->label[j] = lb;
		}
		p->sample[n++] = s;
	}
}

/* Builds the merged Profile in m->out (see merge.h), phase by phase. */
const Perftools__Profiles__Profile *
merge_result(struct merge *m)
{
	static const Perftools__Profiles__Profile profile_init =
	    PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__Profile *p;
	struct merge_marks mk;
	size_t nstrs;

	arena_reset(m->out);
	if (merge_result_marks_new(m, &mk) != 0) {
		merge_result_marks_free(m, &mk);
		return NULL;
	}
	p = arena_alloc(m->out, sizeof *p);
	*p = profile_init;
	merge_result_mark(m, &mk);
	nstrs = merge_result_number(m, &mk);
	merge_result_strings(m, &mk, nstrs, p);
	merge_result_mappings(m, &mk, p);
	merge_result_functions(m, &mk, p);
	merge_result_locations(m, &mk, p);
	merge_result_samples(m, &mk, p);
	merge_result_marks_free(m, &mk);
	return p;
}

/*
 * The writer's side. Field numbers are those of proto/profile.proto;
 * protobuf-c packs a message's fields in number order, leaves out a
 * proto3 scalar that is 0 and a repeated field with no entries, packs
 * repeated scalars, and writes a singular message whenever it is set.
 */

/* Writes a ValueType as field field of its parent. */
static void
merge_result_w_value_type(struct pprof_write *w, uint32_t field,
    uint64_t type, uint64_t unit)
{
	pprof_write_len(w, field, pprof_write_field_size(type) +
	    pprof_write_field_size(unit));
	pprof_write_uint(w, 1, type);
	pprof_write_uint(w, 2, unit);
}

/* Bytes of the packed body of n uint32 ids renumbered through ren. */
static size_t
merge_result_w_ids_size(const uint32_t *ids, size_t n, const uint32_t *ren)
{
	size_t j, len = 0;

	for (j = 0; j < n; j++)
		len += pprof_write_varint_size(ren[ids[j]]);
	return len;
}

/* Bytes of the packed body of n int64 values. */
static size_t
merge_result_w_values_size(const int64_t *v, size_t n)
{
	size_t j, len = 0;

	for (j = 0; j < n; j++)
		len += pprof_write_varint_size((uint64_t)v[j]);
	return len;
}

/* Bytes of the Label body of kk (a label of a sample key). */
static size_t
merge_result_w_label_size(const struct merge_marks *mk, const uint32_t *kk)
{
	int64_t num;

	memcpy(&num, &kk[2], 8);
	return pprof_write_field_size(mk->str[kk[0]]) +
	    pprof_write_field_size(mk->str[kk[1]]) +
	    pprof_write_field_size((uint64_t)num) +
	    pprof_write_field_size(mk->str[kk[4]]);
}

/* Field 2: the kept samples. */
static void
merge_result_w_samples(const struct merge *m, const struct merge_marks *mk,
    struct pprof_write *w)
{
	const uint32_t *key, *kk;
	const int64_t *v;
	size_t j, nt = m->ntypes, len, ll, vl, lb;
	uint32_t si;
	int64_t num;

	for (si = 0; si < m->samples.n && !w->failed; si++) {
		if (!mk->sample[si])
			continue;
		key = merge_keys_key(&m->samples, si, NULL);
		v = &m->values[(size_t)si * nt];
		ll = merge_result_w_ids_size(&key[2], key[0], mk->loc);
		vl = merge_result_w_values_size(v, nt);
		len = (key[0] ? 1 + pprof_write_varint_size(ll) + ll : 0) +
		    (nt ? 1 + pprof_write_varint_size(vl) + vl : 0);
		for (j = 0; j < key[1]; j++) {
			lb = merge_result_w_label_size(mk,
			    &key[2 + key[0] + 5 * j]);
			len += 1 + pprof_write_varint_size(lb) + lb;
		}
		pprof_write_len(w, 2, len);
		if (key[0] > 0) {
			pprof_write_len(w, 1, ll);
			for (j = 0; j < key[0]; j++)
				pprof_write_varint(w, mk->loc[key[2 + j]]);
		}
		if (nt > 0) {
			pprof_write_len(w, 2, vl);
			for (j = 0; j < nt; j++)
				pprof_write_varint(w, (uint64_t)v[j]);
		}
		for (j = 0; j < key[1]; j++) {
			kk = &key[2 + key[0] + 5 * j];
			memcpy(&num, &kk[2], 8);
			pprof_write_len(w, 3, merge_result_w_label_size(mk, kk));
			pprof_write_uint(w, 1, mk->str[kk[0]]);
			pprof_write_uint(w, 2, mk->str[kk[1]]);
			pprof_write_uint(w, 3, (uint64_t)num);
			pprof_write_uint(w, 4, mk->str[kk[4]]);
		}
	}
}

/* Field 3: the kept mappings. */
static void
merge_result_w_mappings(const struct merge *m, const struct merge_marks *mk,
    struct pprof_write *w)
{
	const uint32_t *key;
	uint64_t start, limit, offset;
	size_t i, k;
	uint8_t fl;

	for (k = 0; k < m->maps.n && !w->failed; k++) {
		i = merge_result_map_at(mk, k);
		if (!mk->map[i])
			continue;
		key = merge_keys_key(&m->maps, (uint32_t)i, NULL);
		fl = m->map_flags[i];
		memcpy(&start, &key[0], 8);
		memcpy(&limit, &key[2], 8);
		memcpy(&offset, &key[4], 8);
		pprof_write_len(w, 3, pprof_write_field_size(mk->map[i]) +
		    pprof_write_field_size(start) +
		    pprof_write_field_size(limit) +
		    pprof_write_field_size(offset) +
		    pprof_write_field_size(mk->str[key[6]]) +
		    pprof_write_field_size(mk->str[key[7]]) +
		    2 * (((fl & 1) != 0) + ((fl & 2) != 0) + ((fl & 4) != 0) +
		    ((fl & 8) != 0)));
		pprof_write_uint(w, 1, mk->map[i]);
		pprof_write_uint(w, 2, start);
		pprof_write_uint(w, 3, limit);
		pprof_write_uint(w, 4, offset);
		pprof_write_uint(w, 5, mk->str[key[6]]);
		pprof_write_uint(w, 6, mk->str[key[7]]);
		pprof_write_uint(w, 7, (fl & 1) != 0);
		pprof_write_uint(w, 8, (fl & 2) != 0);
		pprof_write_uint(w, 9, (fl & 4) != 0);
		pprof_write_uint(w, 10, (fl & 8) != 0);
	}
}

/* Bytes of the Line body of k (a line of a location key). */
static size_t
merge_result_w_line_size(const struct merge_marks *mk, const uint32_t *k)
{
	int64_t line, column;

	memcpy(&line, &k[1], 8);
	memcpy(&column, &k[3], 8);
	return pprof_write_field_size(k[0] ? mk->fn[k[0] - 1] : 0) +
	    pprof_write_field_size((uint64_t)line) +
	    pprof_write_field_size((uint64_t)column);
}

/* Field 4: the kept locations, with their lines. */
static void
merge_result_w_locations(const struct merge *m,
    const struct merge_marks *mk, struct pprof_write *w)
{
	const struct merge_loc *li;
	const uint32_t *key, *k;
	size_t i, j, nlines, len, ln;
	uint64_t mapping;
	int64_t line, column;
	uint32_t klen;

	for (i = 0; i < m->locs.n && !w->failed; i++) {
		if (!mk->loc[i])
			continue;
		li = &m->loc_info[i];
		key = merge_keys_key(&m->locs, (uint32_t)i, &klen);
		nlines = key[0] == 1 ? (klen / 4 - 1) / 5 : 0;
		mapping = li->mapping ? mk->map[li->mapping - 1] : 0;
		len = pprof_write_field_size(mk->loc[i]) +
		    pprof_write_field_size(mapping) +
		    pprof_write_field_size(li->address) +
		    pprof_write_field_size(li->folded);
		for (j = 0; j < nlines; j++) {
			ln = merge_result_w_line_size(mk, &key[1 + 5 * j]);
			len += 1 + pprof_write_varint_size(ln) + ln;
		}
		pprof_write_len(w, 4, len);
		pprof_write_uint(w, 1, mk->loc[i]);
		pprof_write_uint(w, 2, mapping);
		pprof_write_uint(w, 3, li->address);
		for (j = 0; j < nlines; j++) {
			k = &key[1 + 5 * j];
			memcpy(&line, &k[1], 8);
			memcpy(&column, &k[3], 8);
			pprof_write_len(w, 4, merge_result_w_line_size(mk, k));
			pprof_write_uint(w, 1, k[0] ? mk->fn[k[0] - 1] : 0);
			pprof_write_uint(w, 2, (uint64_t)line);
			pprof_write_uint(w, 3, (uint64_t)column);
		}
		pprof_write_uint(w, 5, li->folded);
	}
}

/* Field 5: the kept functions. */
static void
merge_result_w_functions(const struct merge *m,
    const struct merge_marks *mk, struct pprof_write *w)
{
	const uint32_t *key;
	size_t i;

	for (i = 0; i < m->funcs.n && !w->failed; i++) {
		if (!mk->fn[i])
			continue;
		key = merge_keys_key(&m->funcs, (uint32_t)i, NULL);
		pprof_write_len(w, 5, pprof_write_field_size(mk->fn[i]) +
		    pprof_write_field_size(mk->str[key[0]]) +
		    pprof_write_field_size(mk->str[key[1]]) +
		    pprof_write_field_size(mk->str[key[2]]) +
		    pprof_write_field_size((uint64_t)m->func_start[i]));
		pprof_write_uint(w, 1, mk->fn[i]);
		pprof_write_uint(w, 2, mk->str[key[0]]);
		pprof_write_uint(w, 3, mk->str[key[1]]);
		pprof_write_uint(w, 4, mk->str[key[2]]);
		pprof_write_uint(w, 5, (uint64_t)m->func_start[i]);
	}
}

/* Fields 6 to 15: the string table and the header. */
static void
merge_result_w_header(const struct merge *m, const struct merge_marks *mk,
    struct pprof_write *w)
{
	const char *str;
	uint32_t len;
	size_t i, n;

	for (i = 0; i < m->strs.n && !w->failed; i++) {
		if (i != 0 && mk->str[i] == 0)
			continue;
		str = merge_keys_key(&m->strs, (uint32_t)i, &len);
		pprof_write_bytes(w, 6, str, len);
	}
	pprof_write_uint(w, 7, mk->str[m->drop_frames]);
	pprof_write_uint(w, 8, mk->str[m->keep_frames]);
	pprof_write_uint(w, 9, (uint64_t)m->time_nanos);
	pprof_write_uint(w, 10, (uint64_t)m->duration_nanos);
	if (m->have_period_type)
		merge_result_w_value_type(w, 11, mk->str[m->period_type],
		    mk->str[m->period_unit]);
	pprof_write_uint(w, 12, (uint64_t)m->period);
	if (m->ncomments > 0) {
		for (i = 0, n = 0; i < m->ncomments; i++)
			n += pprof_write_varint_size(mk->str[m->comments[i]]);
		pprof_write_len(w, 13, n);
		for (i = 0; i < m->ncomments; i++)
			pprof_write_varint(w, mk->str[m->comments[i]]);
	}
	pprof_write_uint(w, 14, mk->str[m->default_sample_type]);
	pprof_write_uint(w, 15, mk->str[m->doc_url]);
}

/* Writes the merged profile's bytes, raw or gzipped, from m's tables. */
static int
merge_result_write(struct merge *m, int gzip, uint8_t **out, size_t *len,
    char **cause)
{
	struct pprof_write w;
	struct merge_marks mk;
	size_t i;

	*out = NULL;
	*len = 0;
	m->nomem = 0;
	if (merge_result_marks_new(m, &mk) != 0) {
		merge_result_marks_free(m, &mk);
		return merge_nomem(m, cause);
	}
	if (pprof_write_init(&w, m->acct, gzip, cause) != 0) {
		/* zlib starts only if it gets its memory. */
		merge_result_marks_free(m, &mk);
		m->nomem = 1;
		return -1;
	}
	merge_result_mark(m, &mk);
	(void)merge_result_number(m, &mk);
	for (i = 0; i < m->ntypes; i++)
		merge_result_w_value_type(&w, 1, mk.str[m->type_type[i]],
		    mk.str[m->type_unit[i]]);
	merge_result_w_samples(m, &mk, &w);
	merge_result_w_mappings(m, &mk, &w);
	merge_result_w_locations(m, &mk, &w);
	merge_result_w_functions(m, &mk, &w);
	merge_result_w_header(m, &mk, &w);
	merge_result_marks_free(m, &mk);
	if (pprof_write_finish(&w, out, len, cause) != 0) {
		m->nomem = 1;	/* the writer only fails for memory */
		return -1;
	}
	return 0;
}

/* The merged profile's protobuf bytes. */
int
merge_result_raw(struct merge *m, uint8_t **out, size_t *len, char **cause)
{
	return merge_result_write(m, 0, out, len, cause);
}

/* The merged profile, serialized and gzipped as it is written. */
int
merge_result_gzip(struct merge *m, uint8_t **out, size_t *len, char **cause)
{
	return merge_result_write(m, 1, out, len, cause);
}
