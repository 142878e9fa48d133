/*
 * What proto/pbjson.c (encoding) and proto/pbjson_dec.c (decoding) both
 * need to know of a protobuf-c field: its JSON name (protoc's
 * ToJsonName), whether OTLP/JSON writes it in hex, and the size of one
 * element of it in a repeated array.
 */
#ifndef PROFD_PBJSON_FIELD_H
#define PROFD_PBJSON_FIELD_H

#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

/* Bytes of a field's JSON name, NUL included (longer names: truncated). */
#define PBJSON_FIELD_NAME_MAX	128

/* Writes f's JSON name (lowerCamelCase) into buf; returns its length. */
size_t	pbjson_field_json_name(const ProtobufCFieldDescriptor *f, char *buf,
	    size_t size);
/* The field of d a JSON key (of klen bytes) names, by either name form. */
const ProtobufCFieldDescriptor *pbjson_field_find(
	    const ProtobufCMessageDescriptor *d, const char *key, size_t klen);
/* Whether f is one of OTLP's ids, written in hex with PBJSON_OTLP. */
int	pbjson_field_is_hex(const ProtobufCFieldDescriptor *f, int opts);
/* The size of one element of f in a repeated field's array. */
size_t	pbjson_field_size(const ProtobufCFieldDescriptor *f);

#endif
