/*
 * A profile's metadata as the store hands it out (struct profile_meta,
 * store.h): freeing it, and reading one sample type's value from its
 * totals. Below store.c and both backends, which all hand metadata out.
 */
#ifndef PROFD_STORE_META_H
#define PROFD_STORE_META_H

#include <stddef.h>
#include <stdint.h>

#include "storage/store.h"

/*
 * The value of sample type st ("name/unit") in a row's totals (see
 * profile_meta): 1 found (*v set), 0 not there or totals unknown.
 */
int	store_meta_totals_value(const char *sample_types, const char *totals,
	    const char *st, int64_t *v);

/* Frees the members of *m (not m itself). */
void	store_meta_clear(struct profile_meta *m);
/* Frees an array of n metas and the array. */
void	store_meta_free_array(struct profile_meta *m, size_t n);

#endif
