/*
 * Helpers shared by the merge tests: build small profiles in memory, load
 * corpus files, and print a profile's samples in a canonical, id-free form
 * ("leaf;caller;... {labels} = v1,v2" per line, sorted) so two profiles can
 * be compared by meaning rather than by bytes.
 */
#ifndef PROFD_MERGE_TESTLIB_H
#define PROFD_MERGE_TESTLIB_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "common/xmalloc.h"
#include "profile.pb-c.h"

#define TB_MAX	256

/* A profile under construction; everything is freed by tb_free. */
struct tb {
	Perftools__Profiles__Profile	 p;
	Perftools__Profiles__ValueType	 types[8], period_type;
	Perftools__Profiles__ValueType	*type_ptrs[8];
	char				*strs[TB_MAX];
	Perftools__Profiles__Function	 fns[TB_MAX], *fn_ptrs[TB_MAX];
	Perftools__Profiles__Mapping	 maps[16], *map_ptrs[16];
	Perftools__Profiles__Location	 locs[TB_MAX], *loc_ptrs[TB_MAX];
	Perftools__Profiles__Line	 lines[TB_MAX], *line_ptrs[TB_MAX];
	size_t				 nlines;
	Perftools__Profiles__Sample	 samples[TB_MAX], *sample_ptrs[TB_MAX];
	uint64_t			 sample_locs[TB_MAX][8];
	int64_t				 sample_vals[TB_MAX][8];
	Perftools__Profiles__Label	 labels[TB_MAX], *label_ptrs[TB_MAX];
	size_t				 nlabels;
};

/* Index of s in the string table, added if new. */
static inline int64_t
tb_str(struct tb *b, const char *s)
{
	size_t i;

	for (i = 0; i < b->p.n_string_table; i++)
		if (strcmp(b->strs[i], s) == 0)
			return (int64_t)i;
	b->strs[i] = xstrdup(s);
	b->p.n_string_table++;
	return (int64_t)i;
}

/* New profile with sample types "t/u,t/u". */
static inline struct tb *
tb_new(const char *types)
{
	static const Perftools__Profiles__Profile pinit =
	    PERFTOOLS__PROFILES__PROFILE__INIT;
	static const Perftools__Profiles__ValueType vinit =
	    PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	struct tb *b = xcalloc(1, sizeof *b);
	char *copy = xstrdup(types), *tok, *save = NULL, *slash;

	b->p = pinit;
	b->p.string_table = b->strs;
	tb_str(b, "");
	b->p.sample_type = b->type_ptrs;
	for (tok = strtok_r(copy, ",", &save); tok != NULL;
	    tok = strtok_r(NULL, ",", &save)) {
		Perftools__Profiles__ValueType *vt = &b->types[b->p.n_sample_type];

		slash = strchr(tok, '/');
		*slash = '\0';
		*vt = vinit;
		vt->type = tb_str(b, tok);
		vt->unit = tb_str(b, slash + 1);
		b->type_ptrs[b->p.n_sample_type++] = vt;
	}
	free(copy);
	b->period_type = vinit;
	b->p.function = b->fn_ptrs;
	b->p.mapping = b->map_ptrs;
	b->p.location = b->loc_ptrs;
	b->p.sample = b->sample_ptrs;
	return b;
}

static inline void
tb_free(struct tb *b)
{
	size_t i;

	for (i = 0; i < b->p.n_string_table; i++)
		free(b->strs[i]);
	free(b);
}

/* Adds a function; returns its id (ids start at 101 to be non-dense). */
static inline uint64_t
tb_func(struct tb *b, const char *name, const char *file)
{
	static const Perftools__Profiles__Function init =
	    PERFTOOLS__PROFILES__FUNCTION__INIT;
	Perftools__Profiles__Function *f = &b->fns[b->p.n_function];

	*f = init;
	f->id = 101 + b->p.n_function;
	f->name = tb_str(b, name);
	f->system_name = f->name;
	f->filename = tb_str(b, file);
	b->fn_ptrs[b->p.n_function++] = f;
	return f->id;
}

/* Adds a mapping; returns its id. */
static inline uint64_t
tb_map(struct tb *b, uint64_t start, uint64_t limit, uint64_t off,
    const char *file)
{
	static const Perftools__Profiles__Mapping init =
	    PERFTOOLS__PROFILES__MAPPING__INIT;
	Perftools__Profiles__Mapping *m = &b->maps[b->p.n_mapping];

	*m = init;
	m->id = b->p.n_mapping + 1;
	m->memory_start = start;
	m->memory_limit = limit;
	m->file_offset = off;
	m->filename = tb_str(b, file);
	b->map_ptrs[b->p.n_mapping++] = m;
	return m->id;
}

/* Adds a location with up to 4 (function id, line) pairs; returns its id. */
static inline uint64_t
tb_loc(struct tb *b, uint64_t mapping, uint64_t addr, int nlines,
    uint64_t f1, int64_t l1, uint64_t f2, int64_t l2)
{
	static const Perftools__Profiles__Location init =
	    PERFTOOLS__PROFILES__LOCATION__INIT;
	static const Perftools__Profiles__Line linit =
	    PERFTOOLS__PROFILES__LINE__INIT;
	Perftools__Profiles__Location *l = &b->locs[b->p.n_location];
	uint64_t fs[2] = { f1, f2 };
	int64_t ls[2] = { l1, l2 };
	int i;

	*l = init;
	l->id = 1 + b->p.n_location;
	l->mapping_id = mapping;
	l->address = addr;
	l->line = &b->line_ptrs[b->nlines];
	for (i = 0; i < nlines; i++) {
		Perftools__Profiles__Line *ln = &b->lines[b->nlines];

		*ln = linit;
		ln->function_id = fs[i];
		ln->line = ls[i];
		b->line_ptrs[b->nlines++] = ln;
	}
	l->n_line = nlines;
	b->loc_ptrs[b->p.n_location++] = l;
	return l->id;
}

/*
 * Adds a sample: locs is a 0-terminated id list, vals has one value per
 * sample type, labels is "k=v,k=#num" or NULL.
 */
static inline void
tb_sample(struct tb *b, const uint64_t *locs, const int64_t *vals,
    const char *labels)
{
	static const Perftools__Profiles__Sample init =
	    PERFTOOLS__PROFILES__SAMPLE__INIT;
	static const Perftools__Profiles__Label linit =
	    PERFTOOLS__PROFILES__LABEL__INIT;
	size_t i = b->p.n_sample, j;
	Perftools__Profiles__Sample *s = &b->samples[i];
	char *copy, *tok, *save = NULL, *eq;

	*s = init;
	for (j = 0; locs[j] != 0; j++)
		b->sample_locs[i][j] = locs[j];
	s->location_id = b->sample_locs[i];
	s->n_location_id = j;
	for (j = 0; j < b->p.n_sample_type; j++)
		b->sample_vals[i][j] = vals[j];
	s->value = b->sample_vals[i];
	s->n_value = b->p.n_sample_type;
	s->label = &b->label_ptrs[b->nlabels];
	if (labels != NULL) {
		copy = xstrdup(labels);
		for (tok = strtok_r(copy, ",", &save); tok != NULL;
		    tok = strtok_r(NULL, ",", &save)) {
			Perftools__Profiles__Label *lb = &b->labels[b->nlabels];

			eq = strchr(tok, '=');
			*eq = '\0';
			*lb = linit;
			lb->key = tb_str(b, tok);
			if (eq[1] == '#')
				lb->num = strtoll(eq + 2, NULL, 10);
			else
				lb->str = tb_str(b, eq + 1);
			b->label_ptrs[b->nlabels++] = lb;
			s->n_label++;
		}
		free(copy);
	}
	b->sample_ptrs[b->p.n_sample++] = s;
}

/* Reads and decodes a (gzipped) profile file; NULL on failure. */
static inline Perftools__Profiles__Profile *
tl_load(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *in = NULL, *raw = NULL;
	size_t len = 0, cap = 0, rcap, rlen = 0;
	Perftools__Profiles__Profile *p = NULL;
	z_stream zs;
	int zr;

	if (f == NULL)
		return NULL;
	for (;;) {
		if (len == cap)
			in = xreallocarray(in, cap = cap ? cap * 2 : 65536, 1);
		size_t n = fread(in + len, 1, cap - len, f);
		if (n == 0)
			break;
		len += n;
	}
	fclose(f);
	memset(&zs, 0, sizeof zs);
	inflateInit2(&zs, 15 + 32);
	rcap = len * 8 + 1024;
	raw = xmalloc(rcap);
	zs.next_in = in;
	zs.avail_in = len;
	for (;;) {
		zs.next_out = raw + rlen;
		zs.avail_out = rcap - rlen;
		zr = inflate(&zs, Z_NO_FLUSH);
		rlen = rcap - zs.avail_out;
		if (zr == Z_STREAM_END)
			break;
		if (zr != Z_OK && zr != Z_BUF_ERROR)
			goto out;
		if (zs.avail_out == 0)
			raw = xreallocarray(raw, rcap *= 2, 1);
		else if (zr == Z_BUF_ERROR)
			goto out;
	}
	p = perftools__profiles__profile__unpack(NULL, rlen, raw);
out:
	inflateEnd(&zs);
	free(in);
	free(raw);
	return p;
}

/* Decodes gzipped bytes (a merge result). */
static inline Perftools__Profiles__Profile *
tl_decode_gz(const uint8_t *gz, size_t len)
{
	char path[] = "/tmp/profd-merge-test.XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "wb");
	Perftools__Profiles__Profile *p;

	fwrite(gz, 1, len, f);
	fclose(f);
	p = tl_load(path);
	unlink(path);
	return p;
}

struct tl_lines {
	char	**v;
	size_t	  n;
};

static inline int
tl_strcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends fmt to the growing string *s. */
static inline void __attribute__((format(printf, 2, 3)))
tl_cat(char **s, const char *fmt, ...)
{
	va_list ap;
	char *add, *t;

	va_start(ap, fmt);
	add = xvasprintf(fmt, ap);
	va_end(ap);
	t = xasprintf("%s%s", *s ? *s : "", add);
	free(add);
	free(*s);
	*s = t;
}

/* The index of the entry with this id in a message array, or -1. */
#define TL_FIND(arr, n, want) ({					\
	long _r = -1;							\
	for (size_t _i = 0; _i < (n); _i++)				\
		if ((arr)[_i]->id == (want)) { _r = (long)_i; break; }	\
	_r; })

/*
 * One line per sample: frames (function:file:line, innermost first, or
 * mapping-file+relative address), sorted labels, values in the order of
 * the sample types sorted by name. With aggregate, equal keys are summed
 * (as pprof would see them) and zero samples are dropped.
 */
static inline char *
tl_canon(const Perftools__Profiles__Profile *p, int aggregate)
{
	struct tl_lines keys = { NULL, 0 };
	size_t i, j, k, nt = p->n_sample_type, *order;
	char *out = NULL, **labs;
	size_t outlen = 0;
	FILE *o = open_memstream(&out, &outlen);
	int64_t **vals;
	char **const st = p->string_table;

	order = xcalloc(nt + 1, sizeof *order);
	for (i = 0; i < nt; i++)
		order[i] = i;
	for (i = 0; i < nt; i++)	/* sort type positions by name */
		for (j = i + 1; j < nt; j++)
			if (strcmp(st[p->sample_type[order[j]]->type],
			    st[p->sample_type[order[i]]->type]) < 0) {
				size_t t = order[i];
				order[i] = order[j];
				order[j] = t;
			}
	keys.v = xcalloc(p->n_sample + 1, sizeof *keys.v);
	vals = xcalloc(p->n_sample + 1, sizeof *vals);
	for (i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];
		char *key = xstrdup("");

		for (j = 0; j < s->n_location_id; j++) {
			long li = TL_FIND(p->location, p->n_location,
			    s->location_id[j]);
			const Perftools__Profiles__Location *l = p->location[li];

			if (l->n_line == 0) {
				long mi = TL_FIND(p->mapping, p->n_mapping,
				    l->mapping_id);
				uint64_t a = l->address;
				const char *mf = "";

				if (mi >= 0) {
					const Perftools__Profiles__Mapping *mp =
					    p->mapping[mi];

					a = a - mp->memory_start + mp->file_offset;
					mf = st[mp->build_id ? mp->build_id :
					    mp->filename];
				}
				tl_cat(&key, "%s+%#llx;", mf,
				    (unsigned long long)a);
				continue;
			}
			for (k = 0; k < l->n_line; k++) {
				long fi = TL_FIND(p->function, p->n_function,
				    l->line[k]->function_id);
				const Perftools__Profiles__Function *f =
				    p->function[fi];

				tl_cat(&key, "%s:%s:%lld%s", st[f->name],
				    st[f->filename],
				    (long long)l->line[k]->line,
				    k + 1 < l->n_line ? "|" : ";");
			}
		}
		labs = xcalloc(s->n_label + 1, sizeof *labs);
		for (j = 0; j < s->n_label; j++) {
			const Perftools__Profiles__Label *lb = s->label[j];

			if (lb->str)
				labs[j] = xasprintf("%s=%s", st[lb->key],
				    st[lb->str]);
			else
				labs[j] = xasprintf("%s=#%lld%s", st[lb->key],
				    (long long)lb->num, st[lb->num_unit]);
		}
		qsort(labs, s->n_label, sizeof *labs, tl_strcmp);
		tl_cat(&key, " {");
		for (j = 0; j < s->n_label; j++) {
			tl_cat(&key, "%s%s", j ? "," : "", labs[j]);
			free(labs[j]);
		}
		free(labs);
		tl_cat(&key, "}");
		/* Values appended with a tab so sorting groups equal keys. */
		vals[i] = xcalloc(nt + 1, sizeof **vals);
		for (j = 0; j < nt; j++)
			vals[i][j] = s->value[order[j]];
		tl_cat(&key, "\t%zu", i);
		keys.v[i] = key;
	}
	keys.n = p->n_sample;
	qsort(keys.v, keys.n, sizeof *keys.v, tl_strcmp);
	fprintf(o, "types:");
	for (j = 0; j < nt; j++)
		fprintf(o, " %s/%s", st[p->sample_type[order[j]]->type],
		    st[p->sample_type[order[j]]->unit]);
	fprintf(o, "\n");
	for (i = 0; i < keys.n; ) {
		char *tab = strrchr(keys.v[i], '\t');
		size_t klen = (size_t)(tab - keys.v[i]), idx;
		int64_t sum[8] = { 0 };
		int nonzero = 0;

		for (k = i; k < keys.n; k++) {
			char *t2 = strrchr(keys.v[k], '\t');

			if ((size_t)(t2 - keys.v[k]) != klen ||
			    strncmp(keys.v[k], keys.v[i], klen) != 0)
				break;
			if (!aggregate && k > i)
				break;
			idx = strtoul(t2 + 1, NULL, 10);
			for (j = 0; j < nt && j < 8; j++)
				sum[j] += vals[idx][j];
		}
		for (j = 0; j < nt && j < 8; j++)
			if (sum[j] != 0)
				nonzero = 1;
		if (nonzero || !aggregate) {
			fprintf(o, "%.*s =", (int)klen, keys.v[i]);
			for (j = 0; j < nt && j < 8; j++)
				fprintf(o, " %lld", (long long)sum[j]);
			fprintf(o, "\n");
		}
		i = k;
	}
	for (i = 0; i < keys.n; i++) {
		free(keys.v[i]);
		free(vals[i]);
	}
	free(keys.v);
	free(vals);
	free(order);
	fclose(o);
	return out;
}

#endif
