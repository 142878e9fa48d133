/*
 * protobuf-c messages to and from JSON by the proto3 JSON mapping
 * (protobuf.dev/programming-guides/json), driven by the descriptors
 * protoc-c generates: what Connect's JSON codec and OTLP/JSON use.
 * Output: lowerCamelCase names (protoc's ToJsonName), fields at their
 * default left out (a set oneof member always written), 64-bit integers
 * as strings and 32-bit ones as numbers, floats and doubles in the fewest
 * digits that read back the same ("NaN", "Infinity", "-Infinity" as
 * strings), enums by name (unknown numbers as numbers), bytes in standard
 * base64 with padding, strings escaped (invalid UTF-8 as U+FFFD).
 * Input: either name form (a field given under both is refused),
 * integers as numbers or strings (exact integers only, "1e3" included,
 * range-checked per type), floats as numbers or the three strings, enums
 * by name or number, bytes in standard or URL-safe base64 with or without
 * padding, null as the default, unknown fields ignored; a wrong shape is
 * refused naming the field's path. Map fields and the well-known types
 * (Any, Timestamp, Duration, the wrappers, Struct...) are not supported:
 * none of profd's messages has them (a map would read as a repeated
 * entry message, a well-known type as a plain message).
 */
#ifndef PROFD_PBJSON_H
#define PROFD_PBJSON_H

#include <stddef.h>

#include <jansson.h>
#include <protobuf-c/protobuf-c.h>

/*
 * OTLP/JSON: bytes fields named trace_id, span_id, profile_id in hex
 * (either case on input). OTLP/JSON's enums as integers need no option.
 */
#define PBJSON_OTLP		0x1
/* Messages nested deeper than this are refused on input. */
#define PBJSON_MAX_DEPTH	64

/*
 * Decodes a JSON object into a new message of type d, every allocation
 * through a (NULL: malloc), so a budgeted allocator bounds the memory.
 * Free with protobuf_c_message_free_unpacked(*out, a). 0, or -1 with
 * *cause (malloc'd) naming the field's path ("left.start: not an
 * integer"); *out is NULL then. (j is written out as text and read back
 * by pbjson_decode_text.)
 */
int	pbjson_decode(const ProtobufCMessageDescriptor *d, const json_t *j,
	    int opts, ProtobufCAllocator *a, ProtobufCMessage **out,
	    char **cause);
/*
 * The same from JSON text of len bytes (need not be NUL-terminated),
 * read straight into the message: no JSON tree is built, so everything
 * the decoding holds comes from a. Bad JSON is refused naming the line
 * and column ("bad JSON at line 1, column 9: ...").
 */
int	pbjson_decode_text(const ProtobufCMessageDescriptor *d,
	    const char *text, size_t len, int opts, ProtobufCAllocator *a,
	    ProtobufCMessage **out, char **cause);
/*
 * Encodes m as compact JSON text written straight into a growing buffer,
 * at most max bytes (the NUL not counted). 0 with *out (malloc'd,
 * NUL-terminated) and *outlen, or -1 with *cause (too large).
 */
int	pbjson_encode(const ProtobufCMessage *m, int opts, size_t max,
	    char **out, size_t *outlen, char **cause);

#endif
