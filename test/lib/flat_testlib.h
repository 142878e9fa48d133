/*
 * Helpers of the view tests: sums per function name, as pprof's flat
 * (the values of the samples whose leaf frame is the function: the
 * first location's first line), and the comparison of two such lists,
 * in O(n log n) so real profiles of thousands of samples stay quick.
 */
#ifndef PROFD_FLAT_TESTLIB_H
#define PROFD_FLAT_TESTLIB_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "profile.pb-c.h"

/* A name and its sum. */
struct ft_sum {
	const char	*name;
	int64_t		 v;
};

/* qsort: by name. */
static inline int
ft_cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct ft_sum *)a)->name,
	    ((const struct ft_sum *)b)->name);
}

/* Sorts by name and adds up each name's sums; returns how many names. */
static inline size_t
ft_merge(struct ft_sum *v, size_t n)
{
	size_t i, k = 0;

	qsort(v, n, sizeof *v, ft_cmp_name);
	for (i = 0; i < n; i++) {
		if (k > 0 && strcmp(v[k - 1].name, v[i].name) == 0)
			v[k - 1].v += v[i].v;
		else
			v[k++] = v[i];
	}
	return k;
}

/* qsort/bsearch: locations (pointers to) by id. */
static inline int
ft_cmp_loc(const void *a, const void *b)
{
	uint64_t x = (*(Perftools__Profiles__Location *const *)a)->id;
	uint64_t y = (*(Perftools__Profiles__Location *const *)b)->id;

	return x < y ? -1 : x > y;
}

/* qsort/bsearch: functions (pointers to) by id. */
static inline int
ft_cmp_fn(const void *a, const void *b)
{
	uint64_t x = (*(Perftools__Profiles__Function *const *)a)->id;
	uint64_t y = (*(Perftools__Profiles__Function *const *)b)->id;

	return x < y ? -1 : x > y;
}

/* pprof's flat of sample type idx per function name, merged (ft_merge). */
static inline struct ft_sum *
ft_flat(const Perftools__Profiles__Profile *p, int idx, size_t *n)
{
	Perftools__Profiles__Location **locs, lk, *lkp = &lk, **l;
	Perftools__Profiles__Function **fns, fk, *fkp = &fk, **f;
	struct ft_sum *v = xcalloc(p->n_sample + 1, sizeof *v);
	const Perftools__Profiles__Sample *s;
	size_t i, k = 0;

	locs = xcalloc(p->n_location + 1, sizeof *locs);
	memcpy(locs, p->location, p->n_location * sizeof *locs);
	qsort(locs, p->n_location, sizeof *locs, ft_cmp_loc);
	fns = xcalloc(p->n_function + 1, sizeof *fns);
	memcpy(fns, p->function, p->n_function * sizeof *fns);
	qsort(fns, p->n_function, sizeof *fns, ft_cmp_fn);
	for (i = 0; i < p->n_sample; i++) {
		s = p->sample[i];
		if (s->n_location_id == 0 || (size_t)idx >= s->n_value)
			continue;
		lk.id = s->location_id[0];
		l = bsearch(&lkp, locs, p->n_location, sizeof *locs,
		    ft_cmp_loc);
		if (l == NULL || (*l)->n_line == 0)
			continue;
		fk.id = (*l)->line[0]->function_id;
		f = bsearch(&fkp, fns, p->n_function, sizeof *fns, ft_cmp_fn);
		if (f == NULL)
			continue;
		v[k].name = p->string_table[(*f)->name];
		v[k++].v = s->value[idx];
	}
	free(locs);
	free(fns);
	*n = ft_merge(v, k);
	return v;
}

/* Whether two merged lists agree, names of sum 0 left out. */
static inline int
ft_same(const struct ft_sum *a, size_t na, const struct ft_sum *b, size_t nb)
{
	size_t i = 0, j = 0;
	int c;

	for (;;) {
		while (i < na && a[i].v == 0)
			i++;
		while (j < nb && b[j].v == 0)
			j++;
		if (i == na || j == nb)
			break;
		c = strcmp(a[i].name, b[j].name);
		if (c != 0 || a[i].v != b[j].v) {
			printf("# %s %lld vs %s %lld\n", a[i].name,
			    (long long)a[i].v, b[j].name, (long long)b[j].v);
			return 0;
		}
		i++;
		j++;
	}
	return i == na && j == nb;
}

#endif
