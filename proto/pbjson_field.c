/*
 * Field facts shared by the JSON encoder and decoder (see pbjson_field.h):
 * names as protoc's ToJsonName makes them (each '_' dropped and the next
 * letter capitalized, nothing else changed: "profile_typeID" is
 * "profileTypeID"), OTLP's hex ids and element sizes.
 */
#include <string.h>

#include "proto/pbjson.h"
#include "proto/pbjson_field.h"

/* The upper case of an ASCII letter (others unchanged), as ToJsonName. */
static int
pbjson_field_upper(int c)
{
	return c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c;
}

/* Writes f's JSON name; see pbjson_field.h. */
size_t
pbjson_field_json_name(const ProtobufCFieldDescriptor *f, char *buf,
    size_t size)
{
	const char *s;
	size_t n = 0;
	int up = 0;

	for (s = f->name; *s != '\0' && n + 1 < size; s++) {
		if (*s == '_') {
			up = 1;
			continue;
		}
		buf[n++] = (char)(up ? pbjson_field_upper((unsigned char)*s) :
		    *s);
		up = 0;
	}
	buf[n] = '\0';
	return n;
}

/* Whether key (klen bytes) is name's JSON form, compared as it is made. */
static int
pbjson_field_is_json(const char *name, const char *key, size_t klen)
{
	size_t i = 0;
	int up = 0;

	for (; *name != '\0'; name++) {
		if (*name == '_') {
			up = 1;
			continue;
		}
		if (i == klen || key[i++] != (up ?
		    pbjson_field_upper((unsigned char)*name) : *name))
			return 0;
		up = 0;
	}
	return i == klen;
}

/* The field a key names; see pbjson_field.h. */
const ProtobufCFieldDescriptor *
pbjson_field_find(const ProtobufCMessageDescriptor *d, const char *key,
    size_t klen)
{
	const ProtobufCFieldDescriptor *f;
	unsigned i;

	for (i = 0; i < d->n_fields; i++) {
		f = &d->fields[i];
		if ((strncmp(f->name, key, klen) == 0 && f->name[klen] ==
		    '\0') || pbjson_field_is_json(f->name, key, klen))
			return f;
	}
	return NULL;
}

/* Whether f is an OTLP id; see pbjson_field.h. */
int
pbjson_field_is_hex(const ProtobufCFieldDescriptor *f, int opts)
{
	return (opts & PBJSON_OTLP) && f->type == PROTOBUF_C_TYPE_BYTES &&
	    (strcmp(f->name, "trace_id") == 0 || strcmp(f->name, "span_id") ==
	    0 || strcmp(f->name, "profile_id") == 0);
}

/* The size of one element of f; see pbjson_field.h. */
size_t
pbjson_field_size(const ProtobufCFieldDescriptor *f)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		return sizeof (int32_t);
	case PROTOBUF_C_TYPE_FLOAT:
		return sizeof (float);
	case PROTOBUF_C_TYPE_ENUM:
		return sizeof (int);
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		return sizeof (int64_t);
	case PROTOBUF_C_TYPE_DOUBLE:
		return sizeof (double);
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof (protobuf_c_boolean);
	case PROTOBUF_C_TYPE_STRING:
		return sizeof (char *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof (ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof (ProtobufCMessage *);
	}
	return 0;
}
