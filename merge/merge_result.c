/*
 * Building the merged profile (merge_result, merge_result_gzip): a fresh
 * Profile in the merge's arena holding only the nonzero samples and the
 * locations, functions, mappings and strings they reach, renumbered
 * densely in first-seen order. It is built in six phases: mark what is
 * kept, then the string table and header, mappings, functions, locations
 * and samples.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/xmalloc.h"
#include "merge/merge.h"
#include "merge/merge_int.h"
#include "merge/merge_keys.h"
#include "proto/pprof.h"

/*
 * merge_result's renumbering of the tables: per entry, 0 if the result
 * does not use it, else (once its phase has run) its id in the result;
 * strings get their index in the result's string table. The counts are
 * of the entries kept.
 */
struct merge_marks {
	uint32_t	*sample, *loc, *fn, *map, *str;
	size_t		 nsamples, nlocs, nfns, nmaps;
};

/* A zeroed renumbering of a table of n entries. */
static uint32_t *
merge_result_marks_new(size_t n)
{
	return xcalloc(n + 1, sizeof(uint32_t));
}

/* The result's index of global string id (after merge_result_strings). */
static inline int64_t
merge_result_str(const struct merge_marks *mk, uint32_t id)
{
	return (int64_t)mk->str[id];
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
	for (i = 0; i < m->maps.n; i++) {
		if (!mk->map[i])
			continue;
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
 * Phase 2: the string table (new index = position among the used
 * strings), then the header fields, which refer to it.
 */
static void
merge_result_strings(const struct merge *m, struct merge_marks *mk,
    Perftools__Profiles__Profile *p)
{
	static const Perftools__Profiles__ValueType vt_init =
	    PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	struct arena *a = m->out;
	size_t i, nt = m->ntypes, nstrs = 0;

	p->string_table = arena_alloc(a, (m->strs.n + 1) * sizeof(char *));
	for (i = 0; i < m->strs.n; i++) {
		if (!mk->str[i])
			continue;
		mk->str[i] = (uint32_t)nstrs;
		p->string_table[nstrs++] = (char *)merge_keys_key(&m->strs,
		    (uint32_t)i, NULL);
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
	size_t i;
	uint32_t n;

	p->n_mapping = mk->nmaps;
	p->mapping = arena_alloc(a, (mk->nmaps + 1) * sizeof *p->mapping);
	for (i = 0, n = 0; i < m->maps.n; i++) {
		Perftools__Profiles__Mapping *mp;
		uint8_t fl = m->map_flags[i];

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

	arena_reset(m->out);
	p = arena_alloc(m->out, sizeof *p);
	*p = profile_init;

	memset(&mk, 0, sizeof mk);
	mk.sample = merge_result_marks_new(m->samples.n);
	mk.loc = merge_result_marks_new(m->locs.n);
	mk.fn = merge_result_marks_new(m->funcs.n);
	mk.map = merge_result_marks_new(m->maps.n);
	mk.str = merge_result_marks_new(m->strs.n);

	merge_result_mark(m, &mk);
	merge_result_strings(m, &mk, p);
	merge_result_mappings(m, &mk, p);
	merge_result_functions(m, &mk, p);
	merge_result_locations(m, &mk, p);
	merge_result_samples(m, &mk, p);

	free(mk.sample);
	free(mk.loc);
	free(mk.fn);
	free(mk.map);
	free(mk.str);
	return p;
}

/* Builds the merged profile, serializes and gzips it. */
int
merge_result_gzip(struct merge *m, uint8_t **out, size_t *len, char **cause)
{
	int rc;

	rc = pprof_encode_gzip(merge_result(m), out, len, cause);
	arena_reset(m->out);
	return rc;
}
