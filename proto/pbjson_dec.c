/*
 * JSON text into a protobuf-c message (see pbjson_dec.h, pbjson.h for
 * the rules). The text is read token by token (pbjson_lex.c) and each
 * value written into the message as protobuf_c_message_unpack would
 * (every string, array and message through the caller's allocator and
 * owned by the message), keeping counts and pointers consistent at every
 * step so that a failure anywhere frees what was built with
 * protobuf_c_message_free_unpacked. Nothing else is allocated but the
 * error: the memory a decoding holds is the message's, so a budgeted
 * allocator bounds it whatever the text. Arrays grow by doubling and are
 * cut to size when they end.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "proto/pbjson.h"
#include "proto/pbjson_dec.h"
#include "proto/pbjson_field.h"
#include "proto/pbjson_lex.h"

/* Bytes of a number's text, or of a string read as a number or a name. */
#define PBJSON_DEC_NUM_MAX	128

/* A decoding's state. */
struct pbjson_dec {
	struct pbjson_lex	 lx;
	ProtobufCAllocator	*a;
	int			 opts;
	char			 path[512];	/* of the field being read */
	char			**cause;
};

/* Fails the decoding at the current path with a formatted reason. */
static int __attribute__((format(printf, 2, 3)))
pbjson_dec_fail(struct pbjson_dec *in, const char *fmt, ...)
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

/* Fails with the tokenizer's syntax error (which names line, column). */
static int
pbjson_dec_bad(struct pbjson_dec *in)
{
	return xcause(in->cause, "%s", in->lx.err);
}

/* Fails with a syntax error at the current token. */
static int
pbjson_dec_syntax(struct pbjson_dec *in, const char *why)
{
	pbjson_lex_fail(&in->lx, in->lx.tok == PBJSON_LEX_END ?
	    "unexpected end of the text" : why);
	return pbjson_dec_bad(in);
}

/* Reads the next token. */
static int
pbjson_dec_next(struct pbjson_dec *in)
{
	return pbjson_lex_next(&in->lx) == 0 ? 0 : pbjson_dec_bad(in);
}

/* n bytes through the allocator, or NULL having failed the decoding. */
static void *
pbjson_dec_alloc(struct pbjson_dec *in, size_t n)
{
	void *p = in->a->alloc(in->a->allocator_data, n);

	if (p == NULL)
		pbjson_dec_fail(in, "out of memory");
	return p;
}

/*
 * The text of the current token read as a number: a number's, or a
 * string's (escapes decoded), in buf; NULL if neither or too long.
 */
static const char *
pbjson_dec_numtext(struct pbjson_dec *in, char *buf, size_t *len)
{
	struct pbjson_lex *lx = &in->lx;

	if (lx->tok == PBJSON_LEX_NUMBER && lx->tlen < PBJSON_DEC_NUM_MAX) {
		memcpy(buf, lx->tp, lx->tlen);
		buf[lx->tlen] = '\0';
		*len = lx->tlen;
		return buf;
	}
	if (lx->tok == PBJSON_LEX_STRING && lx->slen < PBJSON_DEC_NUM_MAX) {
		pbjson_lex_string(lx, buf);
		*len = lx->slen;
		return buf;
	}
	return NULL;
}

/* *v = *v * 10 + digit, or -1 past UINT64_MAX. */
static int
pbjson_dec_mul10(uint64_t *v, unsigned digit)
{
	if (*v > (UINT64_MAX - digit) / 10)
		return -1;
	*v = *v * 10 + digit;
	return 0;
}

/*
 * Reads JSON number s (len bytes, shorter than PBJSON_DEC_NUM_MAX) as an
 * exact integer, exponent forms included ("1e3", "1.50e1"): 0 with its
 * sign and magnitude, -1 if it is not an integer, 1 if past 64 bits.
 */
static int
pbjson_dec_exact(const char *s, size_t len, int *neg, uint64_t *mag)
{
	const char *p = s, *e = s + len;
	char dig[PBJSON_DEC_NUM_MAX];
	size_t nd = 0, first = 0;
	long exp = 0, x = 0;
	int xneg = 0;

	*mag = 0;
	if (!pbjson_lex_is_number(s, len))
		return -1;
	if ((*neg = *p == '-'))
		p++;
	for (; p < e && *p >= '0' && *p <= '9'; p++)
		dig[nd++] = *p;
	if (p < e && *p == '.')
		for (p++; p < e && *p >= '0' && *p <= '9'; p++, exp--)
			dig[nd++] = *p;
	if (p < e && (*p == 'e' || *p == 'E')) {
		if (*++p == '+' || *p == '-')
			xneg = *p++ == '-';
		for (; p < e; p++)
			if (x < 1000000)
				x = x * 10 + (*p - '0');
		exp += xneg ? -x : x;
	}
	while (first < nd && dig[first] == '0')
		first++;
	while (nd > first && dig[nd - 1] == '0') {
		nd--;
		exp++;
	}
	if (nd == first)
		return 0;
	if (exp < 0)
		return -1;
	if ((long)(nd - first) + exp > 20)
		return 1;
	for (; first < nd; first++)
		if (pbjson_dec_mul10(mag, (unsigned)(dig[first] - '0')) != 0)
			return 1;
	for (; exp > 0; exp--)
		if (pbjson_dec_mul10(mag, 0) != 0)
			return 1;
	return 0;
}

/*
 * Reads an integer (a number or a string) of magnitude at most lo if
 * negative, hi if not, into *v (two's complement).
 */
static int
pbjson_dec_int(struct pbjson_dec *in, uint64_t lo, uint64_t hi,
    const char *type, uint64_t *v)
{
	char buf[PBJSON_DEC_NUM_MAX];
	const char *s;
	uint64_t mag;
	size_t len;
	int neg, rc;

	if ((s = pbjson_dec_numtext(in, buf, &len)) == NULL ||
	    (rc = pbjson_dec_exact(s, len, &neg, &mag)) < 0)
		return pbjson_dec_fail(in, "not an integer%s%.32s%s",
		    s != NULL ? " (\"" : "", s != NULL ? s : "",
		    s != NULL ? "\")" : "");
	if (rc > 0 || mag > (neg ? lo : hi))
		return pbjson_dec_fail(in, "%.32s out of range for %s", s,
		    type);
	*v = neg ? (uint64_t)0 - mag : mag;
	return 0;
}

/* Reads a float or double: a number, or "NaN", "Infinity", "-Infinity". */
static int
pbjson_dec_real(struct pbjson_dec *in, int is_float, void *p)
{
	char buf[PBJSON_DEC_NUM_MAX];
	const char *s;
	size_t len;
	double d;
	float f;

	if ((s = pbjson_dec_numtext(in, buf, &len)) == NULL)
		return pbjson_dec_fail(in, "not a number");
	if (in->lx.tok == PBJSON_LEX_STRING && (strcmp(s, "NaN") == 0 ||
	    strcmp(s, "Infinity") == 0 || strcmp(s, "-Infinity") == 0)) {
		d = *s == 'N' ? NAN : *s == 'I' ? INFINITY : -INFINITY;
		if (is_float)
			*(float *)p = (float)d;
		else
			*(double *)p = d;
		return 0;
	}
	if (!pbjson_lex_is_number(s, len))
		return pbjson_dec_fail(in, "not a number (\"%.32s\")", s);
	errno = 0;
	if (is_float) {
		/* strtof, not strtod then a cast: no double rounding. */
		f = strtof(s, NULL);
		if (errno == ERANGE && isinf(f))
			return pbjson_dec_fail(in, "%.32s out of range for a "
			    "float", s);
		*(float *)p = f;
		return 0;
	}
	d = strtod(s, NULL);
	if (errno == ERANGE && isinf(d))
		return pbjson_dec_fail(in, "%.32s out of range for a double", s);
	*(double *)p = d;
	return 0;
}

/* The value of a base64 character (standard or URL-safe), or -1. */
static int
pbjson_dec_b64(int c)
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

/* Decodes base64 (either alphabet, padded or not) in place: 0 or -1. */
static int
pbjson_dec_base64(uint8_t *s, size_t len, size_t *out)
{
	size_t i, n = 0, pad = 0;
	uint32_t acc = 0;
	int v, bits = 0;

	while (len > 0 && s[len - 1] == '=' && pad < 2) {
		len--;
		pad++;
	}
	if ((pad > 0 && (len + pad) % 4 != 0) || len % 4 == 1)
		return -1;
	for (i = 0; i < len; i++) {
		if ((v = pbjson_dec_b64(s[i])) < 0)
			return -1;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			s[n++] = (uint8_t)(acc >> bits);
		}
	}
	*out = n;
	return 0;
}

/* The value of a hex digit, or -1. */
static int
pbjson_dec_hexdigit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if ((c | 32) >= 'a' && (c | 32) <= 'f')
		return (c | 32) - 'a' + 10;
	return -1;
}

/* Reads bytes (base64, or hex for OTLP's ids) into b. */
static int
pbjson_dec_bytes(struct pbjson_dec *in, int hex, ProtobufCBinaryData *b)
{
	size_t i, len = in->lx.slen;
	int hi, lo;

	if (in->lx.tok != PBJSON_LEX_STRING)
		return pbjson_dec_fail(in, "not a string of bytes");
	if ((b->data = pbjson_dec_alloc(in, len + 1)) == NULL)
		return -1;
	pbjson_lex_string(&in->lx, (char *)b->data);
	if (!hex) {
		if (pbjson_dec_base64(b->data, len, &b->len) != 0) {
			b->len = 0;
			return pbjson_dec_fail(in, "not base64");
		}
		return 0;
	}
	if (len % 2 != 0)
		return pbjson_dec_fail(in, "odd number of hex digits");
	for (i = 0; i < len; i += 2) {
		hi = pbjson_dec_hexdigit(b->data[i]);
		lo = pbjson_dec_hexdigit(b->data[i + 1]);
		if (hi < 0 || lo < 0)
			return pbjson_dec_fail(in, "not hex");
		b->data[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	b->len = len / 2;
	return 0;
}

/* Reads an enum value: its name, or a number. */
static int
pbjson_dec_enum(struct pbjson_dec *in, const ProtobufCFieldDescriptor *f,
    int *p)
{
	const ProtobufCEnumValue *ev = NULL;
	char buf[PBJSON_DEC_NUM_MAX];
	uint64_t v;

	if (in->lx.tok == PBJSON_LEX_NUMBER) {
		if (pbjson_dec_int(in, (uint64_t)1 << 31, INT32_MAX, "an enum",
		    &v) != 0)
			return -1;
		*p = (int)(int64_t)v;
		return 0;
	}
	if (in->lx.tok != PBJSON_LEX_STRING)
		return pbjson_dec_fail(in, "not an enum name or number");
	*buf = '\0';
	if (in->lx.slen < sizeof buf) {
		pbjson_lex_string(&in->lx, buf);
		ev = protobuf_c_enum_descriptor_get_value_by_name(f->descriptor,
		    buf);
	}
	if (ev == NULL)
		return pbjson_dec_fail(in, "unknown value \"%.64s\"", buf);
	*p = ev->value;
	return 0;
}

static int	pbjson_dec_msg(struct pbjson_dec *,
		    const ProtobufCMessageDescriptor *, int,
		    ProtobufCMessage **);

/* Reads one value of field f into p (an element, or the field itself). */
static int
pbjson_dec_value(struct pbjson_dec *in, const ProtobufCFieldDescriptor *f,
    int depth, void *p)
{
	uint64_t v;
	char *s;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		if (pbjson_dec_int(in, (uint64_t)1 << 31, INT32_MAX,
		    "an int32", &v) != 0)
			return -1;
		*(int32_t *)p = (int32_t)(int64_t)v;
		return 0;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		if (pbjson_dec_int(in, 0, UINT32_MAX, "a uint32", &v) != 0)
			return -1;
		*(uint32_t *)p = (uint32_t)v;
		return 0;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		if (pbjson_dec_int(in, (uint64_t)1 << 63, INT64_MAX,
		    "an int64", &v) != 0)
			return -1;
		*(int64_t *)p = (int64_t)v;
		return 0;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		return pbjson_dec_int(in, 0, UINT64_MAX, "a uint64", p);
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_DOUBLE:
		return pbjson_dec_real(in, f->type == PROTOBUF_C_TYPE_FLOAT, p);
	case PROTOBUF_C_TYPE_BOOL:
		if (in->lx.tok != PBJSON_LEX_TRUE &&
		    in->lx.tok != PBJSON_LEX_FALSE)
			return pbjson_dec_fail(in, "not true or false");
		*(protobuf_c_boolean *)p = in->lx.tok == PBJSON_LEX_TRUE;
		return 0;
	case PROTOBUF_C_TYPE_ENUM:
		return pbjson_dec_enum(in, f, p);
	case PROTOBUF_C_TYPE_STRING:
		if (in->lx.tok != PBJSON_LEX_STRING)
			return pbjson_dec_fail(in, "not a string");
		if ((s = pbjson_dec_alloc(in, in->lx.slen + 1)) == NULL)
			return -1;
		pbjson_lex_string(&in->lx, s);
		*(char **)p = s;
		return 0;
	case PROTOBUF_C_TYPE_BYTES:
		return pbjson_dec_bytes(in, pbjson_field_is_hex(f, in->opts), p);
	case PROTOBUF_C_TYPE_MESSAGE:
		return pbjson_dec_msg(in, f->descriptor, depth + 1, p);
	}
	return pbjson_dec_fail(in, "unsupported field type");
}

/* Whether the current token cannot start a value. */
static int
pbjson_dec_no_value(const struct pbjson_dec *in)
{
	return in->lx.tok < PBJSON_LEX_STRING && in->lx.tok != PBJSON_LEX_OBJ &&
	    in->lx.tok != PBJSON_LEX_ARR;
}

/* Makes the array of a repeated field hold cap elements (n in use). */
static int
pbjson_dec_resize(struct pbjson_dec *in, char **arr, size_t n, size_t cap,
    size_t esz)
{
	char *b;

	if (cap > SIZE_MAX / esz)
		return pbjson_dec_fail(in, "out of memory");
	if ((b = pbjson_dec_alloc(in, cap * esz)) == NULL)
		return -1;
	if (n > 0)
		memcpy(b, *arr, n * esz);
	if (*arr != NULL)
		in->a->free(in->a->allocator_data, *arr);
	*arr = b;
	return 0;
}

/* Reads a repeated field's array into the message at base. */
static int
pbjson_dec_repeated(struct pbjson_dec *in, const ProtobufCFieldDescriptor *f,
    int depth, char *base)
{
	size_t *count = (size_t *)(base + f->quantifier_offset);
	char **arr = (char **)(base + f->offset), *el;
	size_t esz = pbjson_field_size(f), cap = 0, plen = strlen(in->path);

	if (in->lx.tok != PBJSON_LEX_ARR)
		return pbjson_dec_fail(in, "not an array");
	if (pbjson_dec_next(in) != 0)
		return -1;
	while (in->lx.tok != PBJSON_LEX_ARR_END) {
		snprintf(in->path + plen, sizeof in->path - plen, "[%zu]",
		    *count);
		if (pbjson_dec_no_value(in))
			return pbjson_dec_syntax(in, "expected a value");
		if (in->lx.tok == PBJSON_LEX_NULL)
			return pbjson_dec_fail(in, "null in an array");
		if (*count == cap && pbjson_dec_resize(in, arr, *count,
		    cap = cap == 0 ? 4 : cap * 2, esz) != 0)
			return -1;
		el = *arr + *count * esz;
		memset(el, 0, esz);
		/* Counted first: a half-built element is freed with it. */
		if (pbjson_dec_value(in, f, depth, el) != 0) {
			if ((f->type == PROTOBUF_C_TYPE_MESSAGE ||
			    f->type == PROTOBUF_C_TYPE_STRING) &&
			    *(void **)el == NULL)
				return -1;
			(*count)++;
			return -1;
		}
		(*count)++;
		if (pbjson_dec_next(in) != 0)
			return -1;
		if (in->lx.tok == PBJSON_LEX_COMMA) {
			if (pbjson_dec_next(in) != 0)
				return -1;
			if (in->lx.tok == PBJSON_LEX_ARR_END)
				return pbjson_dec_syntax(in, "expected a value");
		} else if (in->lx.tok != PBJSON_LEX_ARR_END)
			return pbjson_dec_syntax(in, "expected ',' or ']'");
	}
	in->path[plen] = '\0';
	/* Cut to size (if memory allows: the longer array is as good). */
	if (*count < cap && (el = in->a->alloc(in->a->allocator_data,
	    *count * esz)) != NULL) {
		memcpy(el, *arr, *count * esz);
		in->a->free(in->a->allocator_data, *arr);
		*arr = el;
	}
	return 0;
}

/* Reads field f of the message at base (the current token: its value). */
static int
pbjson_dec_field(struct pbjson_dec *in, const ProtobufCFieldDescriptor *f,
    int depth, char *base)
{
	if (f->label == PROTOBUF_C_LABEL_REPEATED)
		return pbjson_dec_repeated(in, f, depth, base);
	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
		if (*(uint32_t *)(base + f->quantifier_offset) != 0)
			return pbjson_dec_fail(in, "two members of one oneof");
		*(uint32_t *)(base + f->quantifier_offset) = f->id;
	} else if (f->label == PROTOBUF_C_LABEL_OPTIONAL &&
	    f->quantifier_offset != 0 && f->type != PROTOBUF_C_TYPE_MESSAGE &&
	    f->type != PROTOBUF_C_TYPE_STRING)
		*(protobuf_c_boolean *)(base + f->quantifier_offset) = 1;
	return pbjson_dec_value(in, f, depth, base + f->offset);
}

/*
 * Reads a key and its colon (the current token: the key), leaving the
 * value's first token current; *f is the field it names, or NULL.
 */
static int
pbjson_dec_key(struct pbjson_dec *in, const ProtobufCMessageDescriptor *d,
    size_t plen, const ProtobufCFieldDescriptor **f)
{
	char key[PBJSON_FIELD_NAME_MAX];

	*f = NULL;
	if (in->lx.tok != PBJSON_LEX_STRING)
		return pbjson_dec_syntax(in, "expected a key");
	if (in->lx.slen < sizeof key) {
		pbjson_lex_string(&in->lx, key);
		if ((*f = pbjson_field_find(d, key, in->lx.slen)) != NULL)
			snprintf(in->path + plen, sizeof in->path - plen,
			    "%s%s", plen > 0 ? "." : "", key);
	}
	if (pbjson_lex_expect(&in->lx, PBJSON_LEX_COLON, "':'") != 0 ||
	    pbjson_lex_next(&in->lx) != 0)
		return pbjson_dec_bad(in);
	if (pbjson_dec_no_value(in))
		return pbjson_dec_syntax(in, "expected a value");
	return 0;
}

/* Reads a message of type d (the current token: its '{') into *out. */
static int
pbjson_dec_msg(struct pbjson_dec *in, const ProtobufCMessageDescriptor *d,
    int depth, ProtobufCMessage **out)
{
	uint64_t seen[PBJSON_DEC_MAX_FIELDS / 64];
	const ProtobufCFieldDescriptor *f;
	size_t plen = strlen(in->path), i;
	char *base;

	*out = NULL;
	if (in->lx.tok != PBJSON_LEX_OBJ)
		return pbjson_dec_fail(in, "not an object (a %s)", d->name);
	if (depth > PBJSON_MAX_DEPTH)
		return pbjson_dec_fail(in, "nested deeper than %d messages",
		    PBJSON_MAX_DEPTH);
	if (d->n_fields > PBJSON_DEC_MAX_FIELDS)
		return pbjson_dec_fail(in, "%s has too many fields", d->name);
	if ((base = pbjson_dec_alloc(in, d->sizeof_message)) == NULL)
		return -1;
	protobuf_c_message_init(d, base);
	*out = (ProtobufCMessage *)base;
	memset(seen, 0, sizeof seen);
	if (pbjson_dec_next(in) != 0)
		return -1;
	while (in->lx.tok != PBJSON_LEX_OBJ_END) {
		if (pbjson_dec_key(in, d, plen, &f) != 0)
			return -1;
		if (f == NULL) {	/* unknown fields are ignored */
			if (pbjson_lex_skip(&in->lx) != 0)
				return pbjson_dec_bad(in);
		} else {
			i = (size_t)(f - d->fields);
			if (seen[i / 64] & (uint64_t)1 << (i % 64))
				return pbjson_dec_fail(in, "given twice");
			seen[i / 64] |= (uint64_t)1 << (i % 64);
			/* null is the default (and still counts as given) */
			if (in->lx.tok != PBJSON_LEX_NULL &&
			    pbjson_dec_field(in, f, depth, base) != 0)
				return -1;
			in->path[plen] = '\0';
		}
		if (pbjson_dec_next(in) != 0)
			return -1;
		if (in->lx.tok == PBJSON_LEX_COMMA) {
			if (pbjson_dec_next(in) != 0)
				return -1;
			if (in->lx.tok == PBJSON_LEX_OBJ_END)
				return pbjson_dec_syntax(in, "expected a key");
		} else if (in->lx.tok != PBJSON_LEX_OBJ_END)
			return pbjson_dec_syntax(in, "expected ',' or '}'");
	}
	return 0;
}

/* Decodes JSON text; see pbjson_dec.h. */
int
pbjson_dec_text(const ProtobufCMessageDescriptor *d, const char *text,
    size_t len, int opts, ProtobufCAllocator *a, ProtobufCMessage **out,
    char **cause)
{
	struct pbjson_dec in;
	int rc;

	memset(&in, 0, sizeof in);
	in.a = a;
	in.opts = opts;
	in.cause = cause;
	*out = NULL;
	pbjson_lex_init(&in.lx, text, len);
	if ((rc = pbjson_dec_next(&in)) == 0) {
		if (in.lx.tok == PBJSON_LEX_END)
			rc = pbjson_dec_syntax(&in, "no JSON value");
		else if (pbjson_dec_no_value(&in))
			rc = pbjson_dec_syntax(&in, "expected a value");
		else
			rc = pbjson_dec_msg(&in, d, 0, out);
	}
	if (rc == 0 && (rc = pbjson_dec_next(&in)) == 0 &&
	    in.lx.tok != PBJSON_LEX_END)
		rc = pbjson_dec_syntax(&in, "text after the JSON value");
	if (rc != 0 && *out != NULL) {
		protobuf_c_message_free_unpacked(*out, a);
		*out = NULL;
	}
	return rc;
}
