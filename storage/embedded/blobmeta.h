/*
 * The metadata a blob file carries in its header (see blobs.c), so that
 * meta.db can be rebuilt from the blobs alone (meta_rebuild.c): every
 * field of the profile's row (id, service, type, created_at, size,
 * samples, sample types, duration) and its labels in order. The encoding
 * is versioned and tagged; decoding checks everything, since a rebuild
 * reads whatever it finds on disk.
 */
#ifndef PROFD_BLOBMETA_H
#define PROFD_BLOBMETA_H

#include <stddef.h>
#include <stdint.h>

#include "storage/store.h"

#define BLOBMETA_VERSION	1
#define BLOBMETA_MAX_LABELS	1024	/* --max-labels' largest value */

/* Encodes m into a new buffer. *out: OUT (free), *len: OUT its length. */
void	blobmeta_encode(const struct profile_meta *m, uint8_t **out,
	    size_t *len);
/*
 * Decodes what blobmeta_encode wrote into *m (free with store_meta_clear):
 * 0, or -1 with *cause naming the problem (nothing left in *m). Any bytes
 * are safe to pass.
 */
int	blobmeta_decode(const uint8_t *buf, size_t len, struct profile_meta *m,
	    char **cause);

#endif
