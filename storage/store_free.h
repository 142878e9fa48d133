/*
 * Freeing what the store's calls hand out besides metadata (that is
 * store_meta.h's): lists of names, a merge plan's pieces, a compaction.
 * Below store.c and both backends, which all build them.
 */
#ifndef PROFD_STORE_FREE_H
#define PROFD_STORE_FREE_H

#include <stddef.h>

#include "storage/store.h"

/* Frees an array of n strings (store_services, store_labels ...). */
void	store_free_strings(char **, size_t n);
/* Frees a plan's pieces and zeroes it (not the plan itself). */
void	store_free_plan(struct store_plan *);
/* Frees a compaction and what it holds. */
void	store_free_compaction(struct store_compaction *);

#endif
