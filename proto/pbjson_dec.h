/*
 * JSON text to a protobuf-c message by the proto3 JSON mapping, read
 * token by token straight into the message (no JSON tree: every byte the
 * decoding holds comes from the caller's allocator). pbjson.h's decoding
 * calls; see there for the rules.
 */
#ifndef PROFD_PBJSON_DEC_H
#define PROFD_PBJSON_DEC_H

#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

/* Message types with more fields than this are not decoded. */
#define PBJSON_DEC_MAX_FIELDS	512

/*
 * Decodes len bytes of JSON text into a new message of type d, every
 * allocation through a (not NULL). 0, or -1 with *cause.
 */
int	pbjson_dec_text(const ProtobufCMessageDescriptor *d, const char *text,
	    size_t len, int opts, ProtobufCAllocator *a,
	    ProtobufCMessage **out, char **cause);

#endif
