/*
 * profd --rebuild-meta: rebuilds DATA_DIR/meta.db from the metadata each
 * blob carries (storage's store_rebuild), prints one summary line and
 * exits. See rebuild.c.
 */
#ifndef PROFD_REBUILD_H
#define PROFD_REBUILD_H

struct config;

/* Runs the rebuild for cfg's data directory; returns the exit status. */
int	rebuild_run(const struct config *cfg);

#endif
