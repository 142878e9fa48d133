/*
 * The startup consistency check between metadata rows and blob files.
 */
#ifndef PROFD_RECOVER_H
#define PROFD_RECOVER_H

#include "storage/blobs.h"
#include "storage/meta_sqlite.h"
#include "storage/store.h"

/*
 * Removes temp files and blobs with no row, and counts rows with no blob
 * (left in place: reported, not deleted). Fills *rec.
 */
int	recover_run(struct meta_sqlite *, struct blobs *,
	    struct store_recovery *rec, char **cause);

#endif
