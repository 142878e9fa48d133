/*
 * What every backend's rollups share, whatever holds them: the blob name
 * of a rollup, and label-id sets as text ("3,17,40", sorted), the form in
 * which a rollup row records the labels all of its profiles carry. The
 * design is in docs/DESIGN.md, "Rollups".
 */
#ifndef PROFD_ROLLUP_IDS_H
#define PROFD_ROLLUP_IDS_H

#include <stddef.h>
#include <stdint.h>

#include "storage/store.h"

/* The blob name of rollup rid (two capitals and 18 digits). */
void	rollup_ids_name(int64_t rid, char out[STORE_ID_LEN + 1]);
/* rid of a rollup blob name; 0 if name is not one. */
int64_t	rollup_ids_rid(const char *name);

/*
 * Label-id sets as text: parses s into *v (free; returns the count),
 * tests whether every id of want[0..nwant) is in s, formats a sorted set,
 * finds id in a sorted set.
 */
size_t	rollup_ids_parse(const char *s, int64_t **v);
int	rollup_ids_cover(const char *s, const int64_t *want, size_t nwant);
char	*rollup_ids_format(const int64_t *v, size_t n);
int	rollup_ids_has(const int64_t *v, size_t n, int64_t id);
/* qsort/bsearch comparison of int64_t. */
int	rollup_ids_cmp(const void *, const void *);

#endif
