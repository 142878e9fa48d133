/*
 * A per-job bump arena. Decoding a profile with protobuf-c allocates once
 * per field; pointing the decoder at an arena turns those thousands of
 * malloc calls into pointer bumps, and freeing the profile into one reset.
 */
#ifndef PROFD_ARENA_H
#define PROFD_ARENA_H

#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

struct arena;

/* Creates an arena whose first chunk holds chunk_size bytes (0: default). */
struct arena		*arena_new(size_t chunk_size);
/* Returns size bytes aligned to 16, valid until the next reset or free. */
void			*arena_alloc(struct arena *, size_t size);
/* A protobuf-c allocator drawing from the arena (its free is a no-op). */
ProtobufCAllocator	*arena_allocator(struct arena *);
/*
 * Forgets every allocation but keeps the first chunk, grown to what the
 * last cycle used (up to a cap) so the next, similar cycle needs no malloc.
 */
void			 arena_reset(struct arena *);
/* Bytes handed out since the last reset. */
size_t			 arena_used(const struct arena *);
void			 arena_free(struct arena *);

#endif
