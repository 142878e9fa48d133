/*
 * A profile's metadata as the store hands it out: freeing it, and
 * reading one sample type's value from its totals (see store_meta.h).
 */
#include <stdlib.h>
#include <string.h>

#include "storage/store_meta.h"

/* The value of sample type st in a row's totals: 1 found, 0 not. */
int
store_meta_totals_value(const char *sample_types, const char *totals,
    const char *st, int64_t *v)
{
	const char	*t = sample_types, *tv = totals;
	size_t		 len = strlen(st), tl;

	if (t == NULL || tv == NULL || *tv == '\0' || *tv == ';')
		return 0;
	for (;;) {
		tl = strcspn(t, ",");
		if (tl == len && memcmp(t, st, len) == 0) {
			*v = strtoll(tv, NULL, 10);
			return 1;
		}
		t += tl;
		tv += strcspn(tv, ",;");
		if (*t != ',' || *tv != ',')
			return 0;
		t++;
		tv++;
	}
}

/* Frees the members of *m. */
void
store_meta_clear(struct profile_meta *m)
{
	size_t	i;

	if (m == NULL)
		return;
	free(m->service);
	free(m->type);
	free(m->sample_types);
	free(m->totals);
	for (i = 0; i < m->nlabels; i++) {
		free(m->labels[i].key);
		free(m->labels[i].value);
	}
	free(m->labels);
	m->service = m->type = m->sample_types = m->totals = NULL;
	m->labels = NULL;
	m->nlabels = 0;
}

/* Frees n metas and the array. */
void
store_meta_free_array(struct profile_meta *m, size_t n)
{
	size_t	i;

	if (m == NULL)
		return;
	for (i = 0; i < n; i++)
		store_meta_clear(&m[i]);
	free(m);
}
