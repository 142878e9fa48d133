/*
 * The startup consistency check between metadata rows and blob files.
 */
#ifndef PROFD_RECOVER_H
#define PROFD_RECOVER_H

#include "storage/embedded/blobs.h"
#include "storage/embedded/meta_sqlite.h"
#include "storage/store.h"

/*
 * Removes temp files; removes blobs with no row when there are at most
 * orphan_limit, else moves them to DATA_DIR/orphans (see recover.c);
 * counts rows with no blob (left in place: reported, not deleted). Fills
 * *rec. Fails, changing nothing, when meta.db has no rows and more than
 * orphan_limit blobs exist.
 */
int	recover_run(struct meta_sqlite *, struct blobs *, const char *data_dir,
	    size_t orphan_limit, struct store_recovery *rec, char **cause);
/* Before meta.db is created: fails (*cause says what to do) if blobs exist. */
int	recover_check_new(struct blobs *, const char *data_dir, char **cause);

#endif
