/*
 * Freeing what the store's calls hand out besides metadata: lists of
 * names, a merge plan's pieces, a compaction (see store_free.h).
 */
#include <stdlib.h>
#include <string.h>

#include "storage/store_free.h"

/* Frees n strings and the array. */
void
store_free_strings(char **v, size_t n)
{
	size_t	i;

	if (v == NULL)
		return;
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Frees a plan's pieces. */
void
store_free_plan(struct store_plan *p)
{
	size_t	i;

	for (i = 0; i < p->n; i++)
		free(p->p[i].sample_types);
	free(p->p);
	memset(p, 0, sizeof *p);
}

/* Frees a compaction. */
void
store_free_compaction(struct store_compaction *c)
{
	size_t	i, j;

	if (c == NULL)
		return;
	for (i = 0; i < c->n; i++) {
		for (j = 0; j < c->r[i].npieces; j++)
			free(c->r[i].pieces[j]);
		free(c->r[i].pieces);
		free(c->r[i].sample_types);
		free(c->r[i].common);
		free(c->r[i].bytes);
	}
	free(c->r);
	free(c->mark);
	free(c->service);
	free(c->type);
	free(c);
}
