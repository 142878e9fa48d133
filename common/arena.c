/*
 * Bump arena: a list of chunks, allocation moves a pointer in the newest
 * chunk, requests that do not fit open a new chunk (at least twice the last
 * one, or the request itself when it is large). Reset frees all chunks but
 * the first; if the cycle overflowed the first chunk, that chunk is replaced
 * by one big enough for the whole cycle (capped at ARENA_KEEP_MAX) so a
 * stream of similar profiles settles into one chunk and no malloc at all.
 */
#include <stdint.h>
#include <stdlib.h>

#include "common/arena.h"
#include "common/xmalloc.h"

#define ARENA_ALIGN		16
#define ARENA_DEFAULT_CHUNK	(64 * 1024)
#define ARENA_KEEP_MAX		(16 * 1024 * 1024)

struct arena_chunk {
	struct arena_chunk	*next;	/* older chunk */
	size_t			 size;	/* usable bytes in data */
	size_t			 used;
	/* data follows, aligned */
};

struct arena {
	struct arena_chunk	*head;	/* newest chunk */
	struct arena_chunk	*first;	/* oldest chunk, kept on reset */
	size_t			 used;	/* bytes handed out this cycle */
	ProtobufCAllocator	 allocator;
};

#define CHUNK_HDR	((sizeof(struct arena_chunk) + ARENA_ALIGN - 1) & \
			    ~(size_t)(ARENA_ALIGN - 1))

/* Allocates a chunk with size usable bytes. */
static struct arena_chunk *
arena_chunk_new(size_t size)
{
	struct arena_chunk *c;

	if (size > SIZE_MAX - CHUNK_HDR)
		size = SIZE_MAX - CHUNK_HDR;	/* xmalloc will abort */
	c = xmalloc(CHUNK_HDR + size);
	c->next = NULL;
	c->size = size;
	c->used = 0;
	return c;
}

/* protobuf-c entry point for allocation. */
static void *
arena_pb_alloc(void *data, size_t size)
{
	return arena_alloc(data, size);
}

/* protobuf-c entry point for free: memory returns on reset. */
static void
arena_pb_free(void *data, void *ptr)
{
	(void)data;
	(void)ptr;
}

/* Creates an arena; chunk_size 0 picks a default. */
struct arena *
arena_new(size_t chunk_size)
{
	struct arena *a = xcalloc(1, sizeof *a);

	if (chunk_size == 0)
		chunk_size = ARENA_DEFAULT_CHUNK;
	a->head = a->first = arena_chunk_new(chunk_size);
	a->allocator.alloc = arena_pb_alloc;
	a->allocator.free = arena_pb_free;
	a->allocator.allocator_data = a;
	return a;
}

/* Bump-allocates size bytes, 16-byte aligned. */
void *
arena_alloc(struct arena *a, size_t size)
{
	struct arena_chunk *c = a->head;
	size_t want, csize;
	void *p;

	if (size > SIZE_MAX - ARENA_ALIGN)
		size = SIZE_MAX - ARENA_ALIGN;
	want = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	if (want == 0)
		want = ARENA_ALIGN;
	if (c->size - c->used < want) {
		csize = c->size * 2;
		if (csize < want)
			csize = want;
		c = arena_chunk_new(csize);
		c->next = a->head;
		a->head = c;
	}
	p = (char *)c + CHUNK_HDR + c->used;
	c->used += want;
	a->used += want;
	return p;
}

/* The arena as a protobuf-c allocator. */
ProtobufCAllocator *
arena_allocator(struct arena *a)
{
	return &a->allocator;
}

/* Bytes allocated since the last reset. */
size_t
arena_used(const struct arena *a)
{
	return a->used;
}

/* Drops all allocations; keeps (and maybe grows) the first chunk. */
void
arena_reset(struct arena *a)
{
	struct arena_chunk *c, *next;
	size_t keep;

	if (a->head != a->first) {
		for (c = a->head; c != a->first; c = next) {
			next = c->next;
			free(c);
		}
		keep = a->used;
		if (keep > a->first->size) {
			if (keep > ARENA_KEEP_MAX)
				keep = ARENA_KEEP_MAX;
			if (keep > a->first->size) {
				free(a->first);
				a->first = arena_chunk_new(keep);
			}
		}
		a->head = a->first;
	}
	a->first->used = 0;
	a->used = 0;
}

/* Frees the arena and every chunk. */
void
arena_free(struct arena *a)
{
	struct arena_chunk *c, *next;

	if (a == NULL)
		return;
	for (c = a->head; c != NULL; c = next) {
		next = c->next;
		free(c);
	}
	free(a);
}
