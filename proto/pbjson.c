/*
 * The proto3 JSON mapping over protobuf-c's descriptors (see pbjson.h):
 * the encoder, and the decoding entry points (the decoder itself is
 * pbjson_dec.c). Encoding writes text straight into a buffer bounded by
 * the caller (a merged profile can be many megabytes; no tree of JSON
 * values is built): integers formatted by hand, doubles in the fewest
 * digits that read back the same, strings escaped and kept valid UTF-8.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "proto/pbjson.h"
#include "proto/pbjson_dec.h"
#include "proto/pbjson_field.h"
#include "proto/pbjson_lex.h"

/* Messages nested deeper than this are not encoded. */
#define PBJSON_ENC_MAX_DEPTH	100

/* The output of an encoding. */
struct pbjson_out {
	char	*b;
	size_t	 n, cap, max;
	int	 full;		/* past max */
	int	 deep;		/* nested past PBJSON_ENC_MAX_DEPTH */
	int	 opts;
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

/* Appends an integer (its magnitude and sign), quoted or not. */
static void
pbjson_put_int(struct pbjson_out *o, uint64_t mag, int neg, int quote)
{
	char buf[24], *p = buf + sizeof buf;

	if (quote)
		*--p = '"';
	do {
		*--p = (char)('0' + mag % 10);
		mag /= 10;
	} while (mag != 0);
	if (neg)
		*--p = '-';
	if (quote)
		*--p = '"';
	pbjson_put(o, p, (size_t)(buf + sizeof buf - p));
}

/* Appends a signed integer, quoted or not. */
static void
pbjson_put_signed(struct pbjson_out *o, int64_t v, int quote)
{
	pbjson_put_int(o, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v,
	    v < 0, quote);
}

/*
 * Appends s (len bytes) as a JSON string: quotes, backslashes and control
 * characters escaped, valid UTF-8 as it is, each byte of invalid UTF-8
 * as U+FFFD (so the text is always JSON).
 */
static void
pbjson_put_str(struct pbjson_out *o, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t i, start = 0, k;
	char esc[7];

	pbjson_put(o, "\"", 1);
	for (i = 0; i < len; i++) {
		if (u[i] >= 0x20 && u[i] != '"' && u[i] != '\\' && u[i] < 0x80)
			continue;
		if (u[i] >= 0x80 && (k = pbjson_lex_utf8(u + i, u + len)) > 0) {
			i += k - 1;
			continue;
		}
		pbjson_put(o, s + start, i - start);
		start = i + 1;
		if (u[i] >= 0x80)
			pbjson_put(o, "\\ufffd", 6);
		else if (u[i] == '"' || u[i] == '\\') {
			esc[0] = '\\';
			esc[1] = (char)u[i];
			pbjson_put(o, esc, 2);
		} else if (u[i] == '\n')
			pbjson_put(o, "\\n", 2);
		else if (u[i] == '\t')
			pbjson_put(o, "\\t", 2);
		else if (u[i] == '\r')
			pbjson_put(o, "\\r", 2);
		else {
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[u[i] >> 4];
			esc[5] = hex[u[i] & 15];
			pbjson_put(o, esc, 6);
		}
	}
	pbjson_put(o, s + start, len - start);
	pbjson_put(o, "\"", 1);
}

/* Appends bytes in standard base64 with padding (or hex), quoted. */
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

/*
 * Appends a float or double as JSON: the fewest significant digits that
 * read back as the same value (%.15g up to %.17g for a double, %.6g up
 * to %.9g for a float: any value with that few digits is exact), or
 * "NaN", "Infinity", "-Infinity".
 */
static void
pbjson_put_real(struct pbjson_out *o, double d, int is_float)
{
	char buf[40];
	int prec;

	if (isnan(d))
		pbjson_put(o, "\"NaN\"", 5);
	else if (isinf(d))
		pbjson_put(o, d > 0 ? "\"Infinity\"" : "\"-Infinity\"",
		    d > 0 ? 10 : 11);
	else {
		for (prec = is_float ? 6 : 15;; prec++) {
			snprintf(buf, sizeof buf, "%.*g", prec, d);
			if (is_float ? prec == 9 || strtof(buf, NULL) ==
			    (float)d : prec == 17 || strtod(buf, NULL) == d)
				break;
		}
		pbjson_put(o, buf, strlen(buf));
	}
}

static void	pbjson_put_msg(struct pbjson_out *, const ProtobufCMessage *,
		    int);

/* Appends one value of field f at p. */
static void
pbjson_put_value(struct pbjson_out *o, const ProtobufCFieldDescriptor *f,
    const void *p, int depth)
{
	const ProtobufCEnumValue *ev;
	const char *s;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		pbjson_put_signed(o, *(const int32_t *)p, 0);
		break;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		pbjson_put_int(o, *(const uint32_t *)p, 0, 0);
		break;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		pbjson_put_signed(o, *(const int64_t *)p, 1);
		break;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		pbjson_put_int(o, *(const uint64_t *)p, 0, 1);
		break;
	case PROTOBUF_C_TYPE_FLOAT:
		pbjson_put_real(o, *(const float *)p, 1);
		break;
	case PROTOBUF_C_TYPE_DOUBLE:
		pbjson_put_real(o, *(const double *)p, 0);
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
			pbjson_put_signed(o, *(const int *)p, 0);
		break;
	case PROTOBUF_C_TYPE_STRING:
		s = *(char *const *)p;
		pbjson_put_str(o, s != NULL ? s : "", s != NULL ? strlen(s) : 0);
		break;
	case PROTOBUF_C_TYPE_BYTES:
		pbjson_put_bytes(o, p, pbjson_field_is_hex(f, o->opts));
		break;
	case PROTOBUF_C_TYPE_MESSAGE:
		if (*(ProtobufCMessage *const *)p == NULL)
			pbjson_put(o, "{}", 2);	/* (an element left NULL) */
		else
			pbjson_put_msg(o, *(ProtobufCMessage *const *)p,
			    depth + 1);
		break;
	}
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
		return pbjson_field_size(f) == 4 ? *(const uint32_t *)p == 0 :
		    *(const uint64_t *)p == 0;
	}
}

/*
 * Whether field f of the message at base is written: a repeated field
 * with elements (*n of them), a oneof's member that is set (as protobuf-c
 * packs it: not a NULL message or string), a proto2 optional scalar with
 * its has_ flag, a required field, or a proto3 field not at its default.
 */
static int
pbjson_is_written(const ProtobufCFieldDescriptor *f, const char *base,
    size_t *n)
{
	const void *p = base + f->offset;

	if (f->label == PROTOBUF_C_LABEL_REPEATED) {
		*n = *(const size_t *)(base + f->quantifier_offset);
		return *n > 0 && *(void *const *)p != NULL;
	}
	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		return *(const uint32_t *)(base + f->quantifier_offset) ==
		    f->id && ((f->type != PROTOBUF_C_TYPE_MESSAGE &&
		    f->type != PROTOBUF_C_TYPE_STRING) ||
		    *(void *const *)p != NULL);
	if (f->type == PROTOBUF_C_TYPE_MESSAGE ||
	    f->type == PROTOBUF_C_TYPE_STRING)
		return !pbjson_is_default(f, p) || (f->label ==
		    PROTOBUF_C_LABEL_REQUIRED && *(void *const *)p != NULL);
	if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset != 0)
		return *(const protobuf_c_boolean *)(base +
		    f->quantifier_offset);
	return f->label == PROTOBUF_C_LABEL_REQUIRED || !pbjson_is_default(f, p);
}

/* Appends a field's name, quoted, and a colon (first: no comma before). */
static void
pbjson_put_name(struct pbjson_out *o, const ProtobufCFieldDescriptor *f,
    int first)
{
	char name[PBJSON_FIELD_NAME_MAX + 4];
	size_t n = 0;

	if (!first)
		name[n++] = ',';
	name[n++] = '"';
	n += pbjson_field_json_name(f, name + n, PBJSON_FIELD_NAME_MAX);
	name[n++] = '"';
	name[n++] = ':';
	pbjson_put(o, name, n);
}

/* Appends a message as a JSON object. */
static void
pbjson_put_msg(struct pbjson_out *o, const ProtobufCMessage *m, int depth)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const ProtobufCFieldDescriptor *f;
	const char *base = (const char *)m;
	size_t i, k, n = 0, esz;
	int first = 1;

	if (depth > PBJSON_ENC_MAX_DEPTH) {
		o->deep = o->full = 1;
		return;
	}
	pbjson_put(o, "{", 1);
	for (i = 0; i < d->n_fields && !o->full; i++) {
		f = &d->fields[i];
		if (!pbjson_is_written(f, base, &n))
			continue;
		pbjson_put_name(o, f, first);
		first = 0;
		if (f->label != PROTOBUF_C_LABEL_REPEATED) {
			pbjson_put_value(o, f, base + f->offset, depth);
			continue;
		}
		esz = pbjson_field_size(f);
		pbjson_put(o, "[", 1);
		for (k = 0; k < n && !o->full; k++) {
			if (k > 0)
				pbjson_put(o, ",", 1);
			pbjson_put_value(o, f, *(char *const *)(base +
			    f->offset) + k * esz, depth);
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
	*out = NULL;
	*outlen = 0;
	pbjson_put_msg(&o, m, 0);
	if (o.full) {
		free(o.b);
		if (o.deep)
			return xcause(cause, "messages nested deeper than %d",
			    PBJSON_ENC_MAX_DEPTH);
		return xcause(cause, "the JSON text would pass %zu bytes", max);
	}
	o.b[o.n] = '\0';	/* pbjson_put keeps a byte for it */
	*out = o.b;
	*outlen = o.n;
	return 0;
}

/* Decodes a JSON value; see pbjson.h. */
int
pbjson_decode(const ProtobufCMessageDescriptor *d, const json_t *j, int opts,
    ProtobufCAllocator *a, ProtobufCMessage **out, char **cause)
{
	char *text;
	size_t len;
	int rc;

	*out = NULL;
	if (!json_is_object(j))
		return xcause(cause, "not an object (a %s)", d->name);
	/* Written out and read back: one decoder, bounded by the allocator. */
	if ((len = json_dumpb(j, NULL, 0, JSON_COMPACT)) == 0)
		return xcause(cause, "the JSON value cannot be written out");
	text = xmalloc(len);
	if (json_dumpb(j, text, len, JSON_COMPACT) != len)
		rc = xcause(cause, "the JSON value cannot be written out");
	else
		rc = pbjson_dec_text(d, text, len, opts, a != NULL ? a :
		    &pbjson_default, out, cause);
	free(text);
	return rc;
}

/* Decodes JSON text; see pbjson.h. */
int
pbjson_decode_text(const ProtobufCMessageDescriptor *d, const char *text,
    size_t len, int opts, ProtobufCAllocator *a, ProtobufCMessage **out,
    char **cause)
{
	return pbjson_dec_text(d, text, len, opts, a != NULL ? a :
	    &pbjson_default, out, cause);
}
