/*
 * Fuzz target for OTLP profiles (proto/otlp.c, otlp_conv.c) and the
 * proto3 JSON mapping (proto/pbjson.c): the input is an
 * ExportProfilesServiceRequest, read as protobuf (otlp_decode, within a
 * 64 MiB budget) and as OTLP's JSON (pbjson_decode_text through the same
 * budgeted allocator). Properties: a refusal has a reason; what decodes
 * converts or is refused with a reason naming the field; every profile
 * converted decodes as pprof and passes pprof_validate; a request read
 * from JSON encodes to JSON that reads back to the same bytes.
 */
#include <string.h>

#include "common/budget.h"
#include "proto/otlp.h"
#include "proto/otlp_conv.h"
#include "proto/pbjson.h"
#include "proto/pprof.h"
#include "test/fuzz/fuzz.h"

#define FUZZ_OTLP_BUDGET	((size_t)64 << 20)

/* Converts a decoded request and checks what comes out. */
static void
fuzz_otlp_convert(const otlp_request_t *r)
{
	struct otlp_limits lim = { 1u << 20, 64 };
	struct otlp_profile *ops = NULL;
	pprof_profile_t *p;
	char *cause = NULL;
	size_t n = 0, i;

	if (otlp_conv_run(r, &lim, &ops, &n, &cause) != 0) {
		FUZZ_ASSERT(cause != NULL && ops == NULL && n == 0);
		free(cause);
		return;
	}
	for (i = 0; i < n; i++) {
		FUZZ_ASSERT(ops[i].service != NULL && ops[i].type != NULL);
		p = pprof_decode(ops[i].pprof, ops[i].len, NULL, &cause);
		FUZZ_ASSERT(p != NULL);
		FUZZ_ASSERT(pprof_validate(p, &cause) == 0);
		pprof_free(p, NULL);
	}
	otlp_conv_free(ops, n);
}

/* The JSON text round trip of a request read from JSON. */
static void
fuzz_otlp_json_again(const ProtobufCMessage *m, ProtobufCAllocator *a)
{
	ProtobufCMessage *back = NULL;
	char *text = NULL, *cause = NULL;
	uint8_t *x, *y;
	size_t len, xl, yl;

	if (pbjson_encode(m, PBJSON_OTLP, (size_t)1 << 26, &text, &len,
	    &cause) != 0) {
		free(cause);
		return;
	}
	if (pbjson_decode_text(m->descriptor, text, len, PBJSON_OTLP, a, &back,
	    &cause) != 0) {
		free(cause);
		free(text);
		return;		/* the budget ran out on the second copy */
	}
	xl = protobuf_c_message_get_packed_size(m);
	yl = protobuf_c_message_get_packed_size(back);
	FUZZ_ASSERT(xl == yl);
	x = malloc(xl + 1);
	y = malloc(yl + 1);
	protobuf_c_message_pack(m, x);
	protobuf_c_message_pack(back, y);
	FUZZ_ASSERT(memcmp(x, y, xl) == 0);
	free(x);
	free(y);
	free(text);
	protobuf_c_message_free_unpacked(back, a);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const ProtobufCMessageDescriptor *d = &opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__descriptor;
	struct budget *b = budget_new(FUZZ_OTLP_BUDGET);
	struct budget_acct acct;
	ProtobufCAllocator a;
	ProtobufCMessage *m = NULL;
	otlp_request_t *r;
	char *cause = NULL;
	int nomem = 0;

	budget_acct_init(&acct, b);
	if ((r = otlp_decode(data, size, &acct, &nomem, &cause)) == NULL) {
		FUZZ_ASSERT(cause != NULL);
		free(cause);
		cause = NULL;
	} else {
		fuzz_otlp_convert(r);
		otlp_request_free(r, &acct);
	}
	otlp_allocator(&acct, &a);
	if (pbjson_decode_text(d, (const char *)data, size, PBJSON_OTLP, &a, &m,
	    &cause) != 0) {
		FUZZ_ASSERT(cause != NULL && m == NULL);
		free(cause);
	} else {
		fuzz_otlp_convert((otlp_request_t *)m);
		fuzz_otlp_json_again(m, &a);
		protobuf_c_message_free_unpacked(m, &a);
	}
	FUZZ_ASSERT(budget_used(b) == 0);
	budget_acct_done(&acct);
	budget_free(b);
	return 0;
}
