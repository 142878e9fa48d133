/*
 * protobuf-c messages to and from JSON by the proto3 JSON mapping
 * (protobuf.dev/programming-guides/json), driven by the descriptors
 * protoc-c generates: what Connect's JSON codec and OTLP/JSON use.
 * Output: lowerCamelCase names, fields at their default left out, 64-bit
 * integers as strings, enums by name, bytes in base64. Input: either
 * name form, integers as numbers or strings, enums by name or number,
 * bytes in standard or URL-safe base64, null as the default, unknown
 * fields ignored. Map fields and the well-known types (Any, Timestamp,
 * wrappers...) are not supported: none of profd's messages has them.
 */
#ifndef PROFD_PBJSON_H
#define PROFD_PBJSON_H

#include <stddef.h>

#include <jansson.h>
#include <protobuf-c/protobuf-c.h>

/* OTLP/JSON: bytes fields named trace_id, span_id, profile_id in hex. */
#define PBJSON_OTLP		0x1
/* Messages nested deeper than this are refused on input. */
#define PBJSON_MAX_DEPTH	64

/*
 * Decodes a JSON object into a new message of type d, every allocation
 * through a (NULL: malloc), so a budgeted allocator bounds the memory.
 * Free with protobuf_c_message_free_unpacked(*out, a). 0, or -1 with
 * *cause naming the field's path ("left.start: not an integer").
 */
int	pbjson_decode(const ProtobufCMessageDescriptor *d, const json_t *j,
	    int opts, ProtobufCAllocator *a, ProtobufCMessage **out,
	    char **cause);
/* The same from JSON text of len bytes. */
int	pbjson_decode_text(const ProtobufCMessageDescriptor *d,
	    const char *text, size_t len, int opts, ProtobufCAllocator *a,
	    ProtobufCMessage **out, char **cause);
/*
 * Encodes m as compact JSON text, at most max bytes. 0 with *out
 * (malloc'd, NUL-terminated) and *outlen, or -1 with *cause.
 */
int	pbjson_encode(const ProtobufCMessage *m, int opts, size_t max,
	    char **out, size_t *outlen, char **cause);

#endif
