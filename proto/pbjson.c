/*
 * The proto3 JSON mapping over protobuf-c's descriptors (see pbjson.h).
 * Encoding writes text straight into a buffer bounded by the caller
 * (a merged profile can be many megabytes; no tree of JSON values is
 * built). Decoding walks a jansson value and builds the message as
 * protobuf_c_message_unpack would (every field through the allocator,
 * strings and arrays owned by the message), keeping counts and pointers
 * consistent at every step so that a failure frees what was built with
 * protobuf_c_message_free_unpacked.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "proto/pbjson.h"

#define PBJSON_NAME_MAX	128	/* bytes of a field's JSON name */

/* The output buffer of an encoding. */
struct pbjson_out {
	char	*b;
	size_t	 n, cap, max;
	int	 full;
	int	 opts;
};

/* A decoding's state. */
struct pbjson_in {
	ProtobufCAllocator	*a;
	int			 opts;
	char			 path[512];
	char			**cause;
};

/* malloc for protobuf-c. */
static void *
pbjson_malloc(void *data, size_t size)
{
	(void)data;
	return malloc(size);
}

/* free for protobuf-c. */
static void
pbjson_free(void *data, void *p)
{
	(void)data;
	free(p);
}

static ProtobufCAllocator pbjson_default = { pbjson_malloc, pbjson_free,
    NULL };

/* The JSON name of a field: lowerCamelCase, as protoc's ToJsonName. */
static void
pbjson_name(const char *name, char *buf, size_t size)
{
	size_t n = 0;
	int up = 0;

	for (; *name != '\0' && n + 1 < size; name++) {
		if (*name == '_') {
			up = 1;
			continue;
		}
		buf[n++] = up ? (char)toupper((unsigned char)*name) : *name;
		up = 0;
	}
	buf[n] = '\0';
}

/* Whether field f holds hex on the OTLP wire. */
static int
pbjson_is_hex(const ProtobufCFieldDescriptor *f, int opts)
{
	return (opts & PBJSON_OTLP) && f->type == PROTOBUF_C_TYPE_BYTES &&
	    (strcmp(f->name, "trace_id") == 0 || strcmp(f->name, "span_id") ==
	    0 || strcmp(f->name, "profile_id") == 0);
}

/* Appends len bytes, or marks the output full past its max. */
static void
pbjson_put(struct pbjson_out *o, const char *s, size_t len)
{
	if (o->full || len > o->max - o->n) {
		o->full = 1;
		return;
	}
	if (o->n + len + 1 > o->cap) {
		o->cap = (o->n + len + 1) * 2;
		if (o->cap > o->max + 1)
			o->cap = o->max + 1;
		o->b = xreallocarray(o->b, o->cap, 1);
	}
	memcpy(o->b + o->n, s, len);
	o->n += len;
}

/* Appends a formatted piece. */
static void __attribute__((format(printf, 2, 3)))
pbjson_putf(struct pbjson_out *o, const char *fmt, ...)
{
	char buf[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	pbjson_put(o, buf, (size_t)n);
}

/* Appends s as a JSON string (len bytes). */
static void
pbjson_put_str(struct pbjson_out *o, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, start = 0;
	char esc[7];
	unsigned char c;

	pbjson_put(o, "\"", 1);
	for (i = 0; i < len; i++) {
		c = (unsigned char)s[i];
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		pbjson_put(o, s + start, i - start);
		start = i + 1;
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			pbjson_put(o, esc, 2);
		} else if (c == '\n')
			pbjson_put(o, "\\n", 2);
		else if (c == '\t')
			pbjson_put(o, "\\t", 2);
		else if (c == '\r')
			pbjson_put(o, "\\r", 2);
		else {
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			pbjson_put(o, esc, 6);
		}
	}
	pbjson_put(o, s + start, len - start);
	pbjson_put(o, "\"", 1);
}

/* Appends bytes in standard base64 (or hex), quoted. */
static void
pbjson_put_bytes(struct pbjson_out *o, const ProtobufCBinaryData *b, int hex)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	static const char hx[] = "0123456789abcdef";
	char q[4];
	size_t i;
	uint32_t v;

	pbjson_put(o, "\"", 1);
	for (i = 0; hex && i < b->len; i++) {
		q[0] = hx[b->data[i] >> 4];
		q[1] = hx[b->data[i] & 15];
		pbjson_put(o, q, 2);
	}
	for (i = 0; !hex && i < b->len; i += 3) {
		v = (uint32_t)b->data[i] << 16;
		if (i + 1 < b->len)
			v |= (uint32_t)b->data[i + 1] << 8;
		if (i + 2 < b->len)
			v |= b->data[i + 2];
		q[0] = b64[v >> 18];
		q[1] = b64[(v >> 12) & 63];
		q[2] = i + 1 < b->len ? b64[(v >> 6) & 63] : '=';
		q[3] = i + 2 < b->len ? b64[v & 63] : '=';
		pbjson_put(o, q, 4);
	}
	pbjson_put(o, "\"", 1);
}

/* Appends a double as JSON: a number, or NaN/Infinity as strings. */
static void
pbjson_put_double(struct pbjson_out *o, double d)
{
	char buf[40];

	if (isnan(d))
		pbjson_put(o, "\"NaN\"", 5);
	else if (isinf(d))
		pbjson_put(o, d > 0 ? "\"Infinity\"" : "\"-Infinity\"",
		    d > 0 ? 10 : 11);
	else {
		/* The shortest of %.15g..%.17g that reads back the same. */
		snprintf(buf, sizeof buf, "%.15g", d);
		if (strtod(buf, NULL) != d)
			snprintf(buf, sizeof buf, "%.17g", d);
		pbjson_put(o, buf, strlen(buf));
	}
}

static void	pbjson_put_msg(struct pbjson_out *, const ProtobufCMessage *);

/* Appends one value of field f at p. */
static void
pbjson_put_value(struct pbjson_out *o, const ProtobufCFieldDescriptor *f,
    const void *p)
{
	const ProtobufCEnumValue *ev;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		pbjson_putf(o, "%" PRId32, *(const int32_t *)p);
		break;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		pbjson_putf(o, "%" PRIu32, *(const uint32_t *)p);
		break;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		pbjson_putf(o, "\"%" PRId64 "\"", *(const int64_t *)p);
		break;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		pbjson_putf(o, "\"%" PRIu64 "\"", *(const uint64_t *)p);
		break;
	case PROTOBUF_C_TYPE_FLOAT:
		pbjson_put_double(o, *(const float *)p);
		break;
	case PROTOBUF_C_TYPE_DOUBLE:
		pbjson_put_double(o, *(const double *)p);
		break;
	case PROTOBUF_C_TYPE_BOOL:
		if (*(const protobuf_c_boolean *)p)
			pbjson_put(o, "true", 4);
		else
			pbjson_put(o, "false", 5);
		break;
	case PROTOBUF_C_TYPE_ENUM:
		ev = protobuf_c_enum_descriptor_get_value(f->descriptor,
		    *(const int *)p);
		if (ev != NULL)
			pbjson_put_str(o, ev->name, strlen(ev->name));
		else
			pbjson_putf(o, "%d", *(const int *)p);
		break;
	case PROTOBUF_C_TYPE_STRING:
		if (*(char *const *)p == NULL)
			pbjson_put(o, "\"\"", 2);
		else
			pbjson_put_str(o, *(char *const *)p,
			    strlen(*(char *const *)p));
		break;
	case PROTOBUF_C_TYPE_BYTES:
		pbjson_put_bytes(o, p, pbjson_is_hex(f, o->opts));
		break;
	case PROTOBUF_C_TYPE_MESSAGE:
		pbjson_put_msg(o, *(ProtobufCMessage *const *)p);
		break;
	}
}

/* The size of one element of field f in a repeated array. */
static size_t
pbjson_elem_size(const ProtobufCFieldDescriptor *f)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_ENUM:
		return 4;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
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

/* Whether a singular value at p is its type's default (left out). */
static int
pbjson_is_default(const ProtobufCFieldDescriptor *f, const void *p)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_FLOAT:
		return *(const float *)p == 0 && !signbit(*(const float *)p);
	case PROTOBUF_C_TYPE_DOUBLE:
		return *(const double *)p == 0 && !signbit(*(const double *)p);
	case PROTOBUF_C_TYPE_BOOL:
		return !*(const protobuf_c_boolean *)p;
	case PROTOBUF_C_TYPE_STRING:
		return *(char *const *)p == NULL || **(char *const *)p == '\0';
	case PROTOBUF_C_TYPE_BYTES:
		return ((const ProtobufCBinaryData *)p)->len == 0;
	case PROTOBUF_C_TYPE_MESSAGE:
		return *(ProtobufCMessage *const *)p == NULL;
	default:
		return pbjson_elem_size(f) == 4 ? *(const uint32_t *)p == 0 :
		    *(const uint64_t *)p == 0;
	}
}

/* Appends a message as a JSON object. */
static void
pbjson_put_msg(struct pbjson_out *o, const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const ProtobufCFieldDescriptor *f;
	const char *base = (const char *)m;
	char name[PBJSON_NAME_MAX];
	size_t i, k, n = 0, esz;
	const void *p;
	int first = 1;

	pbjson_put(o, "{", 1);
	for (i = 0; i < d->n_fields && !o->full; i++) {
		f = &d->fields[i];
		p = base + f->offset;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			n = *(const size_t *)(base + f->quantifier_offset);
			if (n == 0)
				continue;
		} else if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
			if (*(const uint32_t *)(base + f->quantifier_offset) !=
			    f->id)
				continue;
		} else if (f->label == PROTOBUF_C_LABEL_OPTIONAL &&
		    f->quantifier_offset != 0 && f->type !=
		    PROTOBUF_C_TYPE_MESSAGE && f->type !=
		    PROTOBUF_C_TYPE_STRING) {
			if (!*(const protobuf_c_boolean *)(base +
			    f->quantifier_offset))
				continue;
		} else if (pbjson_is_default(f, p))
			continue;
		if (!first)
			pbjson_put(o, ",", 1);
		first = 0;
		pbjson_name(f->name, name, sizeof name);
		pbjson_put_str(o, name, strlen(name));
		pbjson_put(o, ":", 1);
		if (f->label != PROTOBUF_C_LABEL_REPEATED) {
			pbjson_put_value(o, f, p);
			continue;
		}
		esz = pbjson_elem_size(f);
		pbjson_put(o, "[", 1);
		for (k = 0; k < n && !o->full; k++) {
			if (k > 0)
				pbjson_put(o, ",", 1);
			pbjson_put_value(o, f, *(char *const *)p + k * esz);
		}
		pbjson_put(o, "]", 1);
	}
	pbjson_put(o, "}", 1);
}

/* Encodes m as JSON text; see pbjson.h. */
int
pbjson_encode(const ProtobufCMessage *m, int opts, size_t max, char **out,
    size_t *outlen, char **cause)
{
	struct pbjson_out o;

	memset(&o, 0, sizeof o);
	o.max = max;
	o.opts = opts;
	pbjson_put_msg(&o, m);
	if (o.full) {
		free(o.b);
		*out = NULL;
		return xcause(cause, "the JSON text would pass %zu bytes", max);
	}
	o.b[o.n] = '\0';	/* pbjson_put keeps a byte for it */
	*out = o.b;
	*outlen = o.n;
	return 0;
}

/* Fails the decoding at the current path with a formatted reason. */
static int __attribute__((format(printf, 2, 3)))
pbjson_fail(struct pbjson_in *in, const char *fmt, ...)
{
	char *msg;
	va_list ap;

	va_start(ap, fmt);
	msg = xvasprintf(fmt, ap);
	va_end(ap);
	xcause(in->cause, "%s%s%s", in->path, *in->path != '\0' ? ": " : "",
	    msg);
	free(msg);
	return -1;
}

/* Reads an integer value (number or string) in [min, max]. */
static int
pbjson_get_int(struct pbjson_in *in, const json_t *j, long double min,
    long double max, int is_unsigned, int64_t *sv, uint64_t *uv)
{
	const char *s;
	char *end;
	double d;

	if (json_is_integer(j)) {
		*sv = json_integer_value(j);
		if (is_unsigned && *sv < 0)
			return pbjson_fail(in, "negative value for an unsigned "
			    "field");
		*uv = (uint64_t)*sv;
		if ((long double)*sv < min || (long double)*sv > max)
			return pbjson_fail(in, "%lld out of range",
			    (long long)*sv);
		return 0;
	}
	if (json_is_real(j)) {
		d = json_real_value(j);
		if (d != floor(d) || (long double)d < min ||
		    (long double)d > max)
			return pbjson_fail(in, "not an integer in range");
		*sv = (int64_t)d;
		*uv = is_unsigned ? (uint64_t)d : (uint64_t)*sv;
		return 0;
	}
	if (!json_is_string(j))
		return pbjson_fail(in, "not an integer");
	s = json_string_value(j);
	errno = 0;
	if (*s == '\0' || isspace((unsigned char)*s))
		return pbjson_fail(in, "not an integer: \"%.32s\"", s);
	if (is_unsigned) {
		if (*s == '-')
			return pbjson_fail(in, "negative value for an unsigned "
			    "field");
		*uv = strtoull(s, &end, 10);
		*sv = (int64_t)*uv;
		if (*end != '\0' || errno != 0 || (long double)*uv > max)
			return pbjson_fail(in, "not an integer in range: "
			    "\"%.32s\"", s);
		return 0;
	}
	*sv = strtoll(s, &end, 10);
	*uv = (uint64_t)*sv;
	if (*end != '\0' || errno != 0 || (long double)*sv < min ||
	    (long double)*sv > max)
		return pbjson_fail(in, "not an integer in range: \"%.32s\"", s);
	return 0;
}

/* Reads a float or double (number, or "NaN", "Infinity", "-Infinity"). */
static int
pbjson_get_double(struct pbjson_in *in, const json_t *j, double *d)
{
	const char *s;
	char *end;

	if (json_is_number(j)) {
		*d = json_number_value(j);
		return 0;
	}
	if (!json_is_string(j))
		return pbjson_fail(in, "not a number");
	s = json_string_value(j);
	if (strcmp(s, "NaN") == 0)
		*d = NAN;
	else if (strcmp(s, "Infinity") == 0)
		*d = INFINITY;
	else if (strcmp(s, "-Infinity") == 0)
		*d = -INFINITY;
	else {
		*d = strtod(s, &end);
		if (*s == '\0' || *end != '\0')
			return pbjson_fail(in, "not a number: \"%.32s\"", s);
	}
	return 0;
}

/* The value of a base64 character (standard or URL-safe), or -1. */
static int
pbjson_b64(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

/* Reads bytes (base64, or hex) into b, allocated through the allocator. */
static int
pbjson_get_bytes(struct pbjson_in *in, const json_t *j, int hex,
    ProtobufCBinaryData *b)
{
	const char *s;
	size_t len, i, n = 0;
	uint32_t acc = 0;
	int v, bits = 0, hi, lo;

	if (!json_is_string(j))
		return pbjson_fail(in, "not a string of bytes");
	s = json_string_value(j);
	len = json_string_length(j);
	b->data = in->a->alloc(in->a->allocator_data, len + 1);
	if (b->data == NULL)
		return pbjson_fail(in, "out of memory");
	b->len = 0;
	if (hex) {
		if (len % 2 != 0)
			return pbjson_fail(in, "odd number of hex digits");
		for (i = 0; i < len; i += 2) {
			hi = isxdigit((unsigned char)s[i]) ? s[i] : -1;
			lo = isxdigit((unsigned char)s[i + 1]) ? s[i + 1] : -1;
			if (hi < 0 || lo < 0)
				return pbjson_fail(in, "not hex");
			hi = hi <= '9' ? hi - '0' : (hi | 32) - 'a' + 10;
			lo = lo <= '9' ? lo - '0' : (lo | 32) - 'a' + 10;
			b->data[n++] = (uint8_t)(hi << 4 | lo);
		}
		b->len = n;
		return 0;
	}
	while (len > 0 && s[len - 1] == '=')
		len--;
	for (i = 0; i < len; i++) {
		if ((v = pbjson_b64((unsigned char)s[i])) < 0)
			return pbjson_fail(in, "not base64");
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			b->data[n++] = (uint8_t)(acc >> bits);
		}
	}
	if (bits >= 6)
		return pbjson_fail(in, "base64 of a bad length");
	b->len = n;
	return 0;
}

/* Copies a string through the allocator. */
static char *
pbjson_strdup(struct pbjson_in *in, const json_t *j)
{
	size_t len = json_string_length(j);
	char *s = in->a->alloc(in->a->allocator_data, len + 1);

	if (s == NULL)
		return NULL;
	memcpy(s, json_string_value(j), len);
	s[len] = '\0';
	return s;
}

static int	pbjson_get_msg(struct pbjson_in *,
		    const ProtobufCMessageDescriptor *, const json_t *, int,
		    ProtobufCMessage **);

/* Reads one value of field f into p (an element or the field itself). */
static int
pbjson_get_value(struct pbjson_in *in, const ProtobufCFieldDescriptor *f,
    const json_t *j, int depth, void *p)
{
	const ProtobufCEnumValue *ev;
	int64_t sv = 0;
	uint64_t uv = 0;
	double d = 0;
	int rc = 0;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		if ((rc = pbjson_get_int(in, j, INT32_MIN, INT32_MAX, 0, &sv,
		    &uv)) == 0)
			*(int32_t *)p = (int32_t)sv;
		return rc;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		if ((rc = pbjson_get_int(in, j, 0, UINT32_MAX, 1, &sv,
		    &uv)) == 0)
			*(uint32_t *)p = (uint32_t)uv;
		return rc;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		if ((rc = pbjson_get_int(in, j, INT64_MIN, INT64_MAX, 0, &sv,
		    &uv)) == 0)
			*(int64_t *)p = sv;
		return rc;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		if ((rc = pbjson_get_int(in, j, 0, UINT64_MAX, 1, &sv,
		    &uv)) == 0)
			*(uint64_t *)p = uv;
		return rc;
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_DOUBLE:
		if ((rc = pbjson_get_double(in, j, &d)) != 0)
			return rc;
		if (f->type == PROTOBUF_C_TYPE_FLOAT)
			*(float *)p = (float)d;
		else
			*(double *)p = d;
		return 0;
	case PROTOBUF_C_TYPE_BOOL:
		if (!json_is_boolean(j))
			return pbjson_fail(in, "not true or false");
		*(protobuf_c_boolean *)p = json_is_true(j);
		return 0;
	case PROTOBUF_C_TYPE_ENUM:
		if (json_is_string(j)) {
			ev = protobuf_c_enum_descriptor_get_value_by_name(
			    f->descriptor, json_string_value(j));
			if (ev == NULL)
				return pbjson_fail(in, "unknown value \"%.64s\"",
				    json_string_value(j));
			*(int *)p = ev->value;
			return 0;
		}
		if ((rc = pbjson_get_int(in, j, INT32_MIN, INT32_MAX, 0, &sv,
		    &uv)) == 0)
			*(int *)p = (int)sv;
		return rc;
	case PROTOBUF_C_TYPE_STRING:
		if (!json_is_string(j))
			return pbjson_fail(in, "not a string");
		if ((*(char **)p = pbjson_strdup(in, j)) == NULL)
			return pbjson_fail(in, "out of memory");
		return 0;
	case PROTOBUF_C_TYPE_BYTES:
		return pbjson_get_bytes(in, j, pbjson_is_hex(f, in->opts), p);
	case PROTOBUF_C_TYPE_MESSAGE:
		return pbjson_get_msg(in, f->descriptor, j, depth + 1, p);
	}
	return pbjson_fail(in, "unsupported field type");
}

/* Reads a repeated field's array into the message at base. */
static int
pbjson_get_repeated(struct pbjson_in *in, const ProtobufCFieldDescriptor *f,
    const json_t *j, int depth, char *base)
{
	size_t n = json_array_size(j), i, esz = pbjson_elem_size(f), plen;
	size_t *count = (size_t *)(base + f->quantifier_offset);
	char **arr = (char **)(base + f->offset);

	if (!json_is_array(j))
		return pbjson_fail(in, "not an array");
	if (n == 0)
		return 0;
	if (n > SIZE_MAX / esz ||
	    (*arr = in->a->alloc(in->a->allocator_data, n * esz)) == NULL)
		return pbjson_fail(in, "out of memory");
	memset(*arr, 0, n * esz);
	plen = strlen(in->path);
	for (i = 0; i < n; i++) {
		if (json_is_null(json_array_get(j, i))) {
			snprintf(in->path + plen, sizeof in->path - plen,
			    "[%zu]", i);
			return pbjson_fail(in, "null in an array");
		}
		snprintf(in->path + plen, sizeof in->path - plen, "[%zu]", i);
		/* Counted first: a half-built element is freed with it. */
		*count = i + 1;
		if (pbjson_get_value(in, f, json_array_get(j, i), depth,
		    *arr + i * esz) != 0) {
			/* A NULL element (not allocated) is not counted. */
			if ((f->type == PROTOBUF_C_TYPE_MESSAGE ||
			    f->type == PROTOBUF_C_TYPE_STRING) &&
			    ((void **)*arr)[i] == NULL)
				*count = i;
			return -1;
		}
	}
	in->path[plen] = '\0';
	return 0;
}

/* The field of d a JSON key names (JSON name or original), or NULL. */
static const ProtobufCFieldDescriptor *
pbjson_field(const ProtobufCMessageDescriptor *d, const char *key)
{
	char name[PBJSON_NAME_MAX];
	unsigned i;

	for (i = 0; i < d->n_fields; i++) {
		if (strcmp(d->fields[i].name, key) == 0)
			return &d->fields[i];
		pbjson_name(d->fields[i].name, name, sizeof name);
		if (strcmp(name, key) == 0)
			return &d->fields[i];
	}
	return NULL;
}

/* Reads one field of the message at base from value v. */
static int
pbjson_get_field(struct pbjson_in *in, const ProtobufCFieldDescriptor *f,
    const json_t *v, int depth, char *base)
{
	if (f->label == PROTOBUF_C_LABEL_REPEATED)
		return pbjson_get_repeated(in, f, v, depth, base);
	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
		if (*(uint32_t *)(base + f->quantifier_offset) != 0)
			return pbjson_fail(in, "two members of one oneof");
		*(uint32_t *)(base + f->quantifier_offset) = f->id;
	} else if (f->label == PROTOBUF_C_LABEL_OPTIONAL &&
	    f->quantifier_offset != 0 && f->type != PROTOBUF_C_TYPE_MESSAGE &&
	    f->type != PROTOBUF_C_TYPE_STRING)
		*(protobuf_c_boolean *)(base + f->quantifier_offset) = 1;
	return pbjson_get_value(in, f, v, depth, base + f->offset);
}

/* Reads a message of type d from object j into *out. */
static int
pbjson_get_msg(struct pbjson_in *in, const ProtobufCMessageDescriptor *d,
    const json_t *j, int depth, ProtobufCMessage **out)
{
	const ProtobufCFieldDescriptor *f;
	unsigned char *seen;
	const char *key;
	json_t *v;
	char *base;
	size_t plen = strlen(in->path);
	int rc = 0;

	*out = NULL;
	if (depth > PBJSON_MAX_DEPTH)
		return pbjson_fail(in, "nested deeper than %d messages",
		    PBJSON_MAX_DEPTH);
	if (!json_is_object(j))
		return pbjson_fail(in, "not an object (a %s)", d->name);
	if ((base = in->a->alloc(in->a->allocator_data,
	    d->sizeof_message)) == NULL)
		return pbjson_fail(in, "out of memory");
	protobuf_c_message_init(d, base);
	*out = (ProtobufCMessage *)base;
	seen = xcalloc(d->n_fields + 1, 1);
	json_object_foreach((json_t *)j, key, v) {
		if ((f = pbjson_field(d, key)) == NULL || json_is_null(v))
			continue;	/* unknown fields are ignored */
		snprintf(in->path + plen, sizeof in->path - plen, "%s%s",
		    plen > 0 ? "." : "", key);
		if (seen[f - d->fields]++) {
			rc = pbjson_fail(in, "given twice");
			break;
		}
		if ((rc = pbjson_get_field(in, f, v, depth, base)) != 0)
			break;
		in->path[plen] = '\0';
	}
	free(seen);
	return rc;
}

/* Decodes a JSON value; see pbjson.h. */
int
pbjson_decode(const ProtobufCMessageDescriptor *d, const json_t *j, int opts,
    ProtobufCAllocator *a, ProtobufCMessage **out, char **cause)
{
	struct pbjson_in in;

	memset(&in, 0, sizeof in);
	in.a = a != NULL ? a : &pbjson_default;
	in.opts = opts;
	in.cause = cause;
	if (pbjson_get_msg(&in, d, j, 0, out) == 0)
		return 0;
	if (*out != NULL)
		protobuf_c_message_free_unpacked(*out, in.a);
	*out = NULL;
	return -1;
}

/* Decodes JSON text; see pbjson.h. */
int
pbjson_decode_text(const ProtobufCMessageDescriptor *d, const char *text,
    size_t len, int opts, ProtobufCAllocator *a, ProtobufCMessage **out,
    char **cause)
{
	json_error_t err;
	json_t *j;
	int rc;

	*out = NULL;
	j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
	if (j == NULL)
		return xcause(cause, "bad JSON at line %d, column %d: %s",
		    err.line, err.column, err.text);
	rc = pbjson_decode(d, j, opts, a, out, cause);
	json_decref(j);
	return rc;
}
