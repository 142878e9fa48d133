/*
 * Rebuilding meta.db from the metadata in the blob headers: the embedded
 * backend's store_rebuild (see storage/store.h and meta_rebuild.c).
 */
#ifndef PROFD_META_REBUILD_H
#define PROFD_META_REBUILD_H

#include "storage/store.h"

/* Rebuilds DATA_DIR/meta.db; the store must not be open. */
int	meta_rebuild_run(const char *data_dir, store_legacy_cb legacy,
	    void *arg, struct store_rebuild *rep, char **cause);

#endif
