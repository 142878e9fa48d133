/*
 * OTLP profiles to pprof (see otlp.h). The request carries one dictionary
 * shared by all its profiles: tables of mappings, locations, functions,
 * stacks, attributes, links and strings, each with the zero value at
 * index 0. Each profile is written as a pprof of its own holding only
 * what its samples reach: a stack's locations (leaf first, as pprof's),
 * their mappings and lines (callee first, as pprof's), the functions and
 * strings those use; dictionary indices are renumbered as first met.
 * Sample attributes become pprof sample labels (numbers for integers);
 * a sample's value is the sum of its values, or the count of its
 * timestamps when it has none.
 *
 * Bounds: protobuf-c recurses without limit and allocates for every
 * element, so the wire is walked first with the descriptors (nesting at
 * most OTLP_MAX_DEPTH) and decoding allocates through a budget. A small
 * body can still describe a huge expansion (a million samples of one
 * 100,000-frame stack): frames written over all samples of a request are
 * counted against max_refs before any is written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/budget.h"
#include "common/xmalloc.h"
#include "proto/otlp.h"
#include "proto/pprof.h"

typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary
    otlp_dict_t;
typedef Opentelemetry__Proto__Profiles__V1development__Profile otlp_prof_t;
typedef Opentelemetry__Proto__Profiles__V1development__Sample otlp_sample_t;
typedef Opentelemetry__Proto__Common__V1__AnyValue otlp_any_t;
typedef Opentelemetry__Proto__Common__V1__KeyValue otlp_kv_t;

#define OTLP_HEADER	16	/* bytes before each budgeted allocation */

/* Budgeted allocation for protobuf-c: the size kept in a header. */
static void *
otlp_alloc(void *data, size_t n)
{
	uint8_t *p;

	if (n > SIZE_MAX - OTLP_HEADER ||
	    (p = budget_alloc(data, n + OTLP_HEADER)) == NULL)
		return NULL;
	memcpy(p, &n, sizeof n);
	return p + OTLP_HEADER;
}

/* Frees what otlp_alloc gave. */
static void
otlp_dealloc(void *data, void *ptr)
{
	uint8_t *p;
	size_t n;

	if (ptr == NULL)
		return;
	p = (uint8_t *)ptr - OTLP_HEADER;
	memcpy(&n, p, sizeof n);
	budget_dealloc(data, p, n + OTLP_HEADER);
}

/* The allocator over acct. */
void
otlp_allocator(struct budget_acct *acct, ProtobufCAllocator *a)
{
	a->alloc = otlp_alloc;
	a->free = otlp_dealloc;
	a->allocator_data = acct;
}

/* Reads a varint at *i; -1 if cut short or too long. */
static int
otlp_varint(const uint8_t *b, size_t len, size_t *i, uint64_t *v)
{
	unsigned shift = 0;

	*v = 0;
	while (*i < len && shift < 64) {
		*v |= (uint64_t)(b[*i] & 0x7f) << shift;
		if ((b[(*i)++] & 0x80) == 0)
			return 0;
		shift += 7;
	}
	return -1;
}

/* Walks a message's wire: nesting and framing; -1 with *cause. */
static int
otlp_walk(const uint8_t *b, size_t len, const ProtobufCMessageDescriptor *d,
    int depth, char **cause)
{
	const ProtobufCFieldDescriptor *f;
	uint64_t key, v;
	size_t i = 0;

	if (depth > OTLP_MAX_DEPTH)
		return xcause(cause, "messages nested deeper than %d (in %s)",
		    OTLP_MAX_DEPTH, d->name);
	while (i < len) {
		if (otlp_varint(b, len, &i, &key) != 0)
			return xcause(cause, "bad protobuf: a field's key is "
			    "cut short (in %s)", d->name);
		switch (key & 7) {
		case 0:
			if (otlp_varint(b, len, &i, &v) != 0)
				return xcause(cause, "bad protobuf: varint cut "
				    "short (in %s)", d->name);
			break;
		case 1:
		case 5:
			if (len - i < ((key & 7) == 1 ? 8u : 4u))
				return xcause(cause, "bad protobuf: fixed field "
				    "cut short (in %s)", d->name);
			i += (key & 7) == 1 ? 8 : 4;
			break;
		case 2:
			if (otlp_varint(b, len, &i, &v) != 0 || v > len - i)
				return xcause(cause, "bad protobuf: a length "
				    "runs past the body (in %s)", d->name);
			f = key >> 3 <= UINT32_MAX ?
			    protobuf_c_message_descriptor_get_field(d,
			    (unsigned)(key >> 3)) : NULL;
			if (f != NULL && f->type == PROTOBUF_C_TYPE_MESSAGE &&
			    otlp_walk(b + i, (size_t)v, f->descriptor, depth + 1,
			    cause) != 0)
				return -1;
			i += (size_t)v;
			break;
		default:
			return xcause(cause, "bad protobuf: wire type %u (in %s)",
			    (unsigned)(key & 7), d->name);
		}
	}
	return 0;
}

/* Decodes a request within bounds; see otlp.h. */
otlp_request_t *
otlp_decode(const uint8_t *buf, size_t len, struct budget_acct *acct,
    int *nomem, char **cause)
{
	const ProtobufCMessageDescriptor *d = &opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__descriptor;
	ProtobufCAllocator a;
	otlp_request_t *r;

	*nomem = 0;
	if (otlp_walk(buf, len, d, 1, cause) != 0)
		return NULL;
	otlp_allocator(acct, &a);
	r = (otlp_request_t *)protobuf_c_message_unpack(d, &a, len,
	    len > 0 ? buf : (const uint8_t *)"");
	if (r == NULL) {
		if (budget_acct_fail(acct, NULL) != BUDGET_OK) {
			*nomem = 1;
			xcause(cause, "decoding the request needs more memory "
			    "than --merge-memory allows now");
		} else
			xcause(cause, "bad protobuf: not an "
			    "ExportProfilesServiceRequest");
	}
	return r;
}

/* Frees a decoded request. */
void
otlp_request_free(otlp_request_t *r, struct budget_acct *acct)
{
	ProtobufCAllocator a;

	if (r == NULL)
		return;
	otlp_allocator(acct, &a);
	protobuf_c_message_free_unpacked(&r->base, &a);
}
