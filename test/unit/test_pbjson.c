/*
 * proto/pbjson.c: the proto3 JSON mapping both ways. Round trips of real
 * profiles (every pprof of the corpus's go/ and node/ folders: encode,
 * decode, pack gives the bytes packing the original gives), the exact
 * text of small messages (64-bit integers as strings, defaults left out,
 * enum names, base64, escapes, NaN), both name forms and numbers as
 * strings on input, oneofs and OTLP's hex ids, every refusal with its
 * field path, the output bound, and an allocator that runs dry.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "proto/pbjson.h"
#include "proto/pprof.h"
#include "querier/v1/querier.pb-c.h"
#include "test/lib/tap.h"
#include "types/v1/types.pb-c.h"

/* Packs m into a new buffer. */
static uint8_t *
pack(const ProtobufCMessage *m, size_t *len)
{
	uint8_t *b;

	*len = protobuf_c_message_get_packed_size(m);
	b = malloc(*len + 1);
	protobuf_c_message_pack(m, b);
	return b;
}

/* Whether m survives encode + decode (same packed bytes). */
static int
round_trip(const ProtobufCMessage *m, int opts, char **text)
{
	ProtobufCMessage *back = NULL;
	uint8_t *a, *b;
	size_t alen, blen, tlen;
	char *cause = NULL;
	int same;

	*text = NULL;
	if (pbjson_encode(m, opts, (size_t)1 << 30, text, &tlen, &cause) != 0 ||
	    pbjson_decode_text(m->descriptor, *text, tlen, opts, NULL, &back,
	    &cause) != 0) {
		printf("# %s\n", cause);
		free(cause);
		return 0;
	}
	a = pack(m, &alen);
	b = pack(back, &blen);
	same = alen == blen && memcmp(a, b, alen) == 0;
	free(a);
	free(b);
	protobuf_c_message_free_unpacked(back, NULL);
	return same;
}

/* Reads a whole file. */
static uint8_t *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b = NULL;
	long n;

	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc((size_t)n + 1);
	*len = fread(b, 1, (size_t)n, f);
	fclose(f);
	return b;
}

/* Round-trips every profile of a corpus folder; returns how many. */
static int
test_corpus_dir(const char *dir, int *bad)
{
	char path[2048], *cause = NULL, *text;
	struct dirent *e;
	uint8_t *body, *raw;
	size_t len, rawlen;
	pprof_profile_t *p;
	DIR *d = opendir(dir);
	int n = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		if (strstr(e->d_name, ".pb") == NULL)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if ((body = slurp(path, &len)) == NULL)
			continue;
		if (pprof_inflate(body, len, (size_t)1 << 28, &raw, &rawlen,
		    &cause) != 0) {
			free(cause);
			cause = NULL;
			free(body);
			continue;
		}
		if ((p = pprof_decode(raw, rawlen, NULL, &cause)) != NULL) {
			if (!round_trip(&p->base, 0, &text)) {
				printf("# round trip of %s differs\n", path);
				(*bad)++;
			}
			free(text);
			pprof_free(p, NULL);
			n++;
		} else {
			free(cause);
			cause = NULL;
		}
		free(raw);
		free(body);
	}
	closedir(d);
	return n;
}

static void
test_corpus(void)
{
	const char *top = getenv("top_srcdir") ? getenv("top_srcdir") : ".";
	const char *dirs[] = { "go/allocheavy", "go/bigstacks",
	    "go/contention", "go/cpuburn", "go/goroutines", "node/datadog",
	    "node/google", "gperftools" };
	char dir[1024];
	int n = 0, bad = 0;
	size_t i;

	for (i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		snprintf(dir, sizeof dir, "%s/test/corpus/%s", top, dirs[i]);
		n += test_corpus_dir(dir, &bad);
	}
	ok(n >= 20, "corpus profiles read (%d)", n);
	ok(bad == 0, "every one survives JSON and back (%d differ)", bad);
}

/* Whether m encodes to exactly want. */
static int
encodes_to(const ProtobufCMessage *m, int opts, const char *want)
{
	char *text = NULL, *cause = NULL;
	size_t len;
	int same;

	if (pbjson_encode(m, opts, 1 << 20, &text, &len, &cause) != 0) {
		printf("# %s\n", cause);
		free(cause);
		return 0;
	}
	same = strcmp(text, want) == 0 && strlen(text) == len;
	if (!same)
		printf("# got  %s\n# want %s\n", text, want);
	free(text);
	return same;
}

static void
test_exact(void)
{
	Querier__V1__SelectMergeStacktracesRequest r =
	    QUERIER__V1__SELECT_MERGE_STACKTRACES_REQUEST__INIT;
	Types__V1__StackTraceSelector sts = TYPES__V1__STACK_TRACE_SELECTOR__INIT;
	Types__V1__Location loc = TYPES__V1__LOCATION__INIT, *locs[1] = { &loc };
	Types__V1__Point pt = TYPES__V1__POINT__INIT;
	Querier__V1__SelectMergeStacktracesResponse resp =
	    QUERIER__V1__SELECT_MERGE_STACKTRACES_RESPONSE__INIT;
	uint8_t bytes[] = { 0xfb, 0xff, 0x00, 'a' };
	char *text;
	int same;

	ok(encodes_to(&r.base, 0, "{}"), "defaults left out");
	r.profile_typeid = "process_cpu:cpu:nanoseconds:cpu:nanoseconds";
	r.label_selector = "{service_name=\"a\\b\"}\n\x01";
	r.start = 1700000000000LL;
	r.end = -5;
	r.format = QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_TREE;
	loc.name = "main";
	sts.call_site = locs;
	sts.n_call_site = 1;
	r.stack_trace_selector = &sts;
	ok(encodes_to(&r.base, 0, "{\"profileTypeID\":\"process_cpu:cpu:"
	    "nanoseconds:cpu:nanoseconds\",\"labelSelector\":\"{service_name="
	    "\\\"a\\\\b\\\"}\\n\\u0001\",\"start\":\"1700000000000\",\"end\":"
	    "\"-5\",\"format\":\"PROFILE_FORMAT_TREE\",\"stackTraceSelector\":"
	    "{\"callSite\":[{\"name\":\"main\"}]}}"),
	    "int64 as strings, camel names, enum names, escapes, nesting");
	ok(round_trip(&r.base, 0, &text), "and back");
	free(text);
	pt.value = 0.1;
	pt.timestamp = 1;
	ok(encodes_to(&pt.base, 0, "{\"value\":0.1,\"timestamp\":\"1\"}"),
	    "double shortest");
	pt.value = 1.0 / 3;
	same = round_trip(&pt.base, 0, &text);
	ok(same, "1/3 round trips: %s", text != NULL ? text : "-");
	free(text);
	pt.value = 0.0 / 0.0;
	ok(encodes_to(&pt.base, 0, "{\"value\":\"NaN\",\"timestamp\":\"1\"}"),
	    "NaN as a string");
	resp.tree.data = bytes;
	resp.tree.len = sizeof bytes;
	ok(encodes_to(&resp.base, 0, "{\"tree\":\"+/8AYQ==\"}"), "bytes base64");
	ok(round_trip(&resp.base, 0, &text), "bytes back");
	free(text);
}

/* Decodes text as d: 0 or -1, *cause kept for the caller. */
static int
decode(const ProtobufCMessageDescriptor *d, const char *text, int opts,
    ProtobufCMessage **m, char **cause)
{
	*cause = NULL;
	return pbjson_decode_text(d, text, strlen(text), opts, NULL, m, cause);
}

/* Whether text is refused with a cause containing want. */
static int
refused(const ProtobufCMessageDescriptor *d, const char *text,
    const char *want)
{
	ProtobufCMessage *m = NULL;
	char *cause = NULL;
	int hit;

	if (decode(d, text, 0, &m, &cause) == 0) {
		protobuf_c_message_free_unpacked(m, NULL);
		printf("# accepted %s\n", text);
		return 0;
	}
	hit = cause != NULL && strstr(cause, want) != NULL;
	if (!hit)
		printf("# %s -> %s\n", text, cause);
	free(cause);
	return hit;
}

static void
test_decode(void)
{
	const ProtobufCMessageDescriptor *d =
	    &querier__v1__select_merge_stacktraces_request__descriptor;
	const ProtobufCMessageDescriptor *dd = &querier__v1__diff_request__descriptor;
	Querier__V1__SelectMergeStacktracesRequest *r;
	ProtobufCMessage *m;
	char *cause;

	ok(decode(d, "{\"profile_typeID\":\"x\",\"start\":\"12\",\"end\":13,"
	    "\"max_nodes\":1e3,\"format\":2,\"stack_trace_selector\":{"
	    "\"call_site\":[{\"name\":\"a\"},{\"name\":\"b\"}]},\"unknown\":"
	    "[1,2],\"labelSelector\":null}", 0, &m, &cause) == 0,
	    "original names, numbers and strings, enum by number");
	r = (Querier__V1__SelectMergeStacktracesRequest *)m;
	ok(r != NULL && strcmp(r->profile_typeid, "x") == 0 && r->start == 12 &&
	    r->end == 13 && r->max_nodes == 1000 && r->format == 2 &&
	    r->stack_trace_selector->n_call_site == 2 &&
	    strcmp(r->stack_trace_selector->call_site[1]->name, "b") == 0 &&
	    *r->label_selector == '\0', "values read");
	protobuf_c_message_free_unpacked(m, NULL);
	ok(decode(d, "{\"format\":\"PROFILE_FORMAT_PPROF\"}", 0, &m,
	    &cause) == 0 && ((Querier__V1__SelectMergeStacktracesRequest *)m)->
	    format == QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_PPROF,
	    "enum by name");
	protobuf_c_message_free_unpacked(m, NULL);
	ok(refused(d, "{\"start\":\"1.5\"}", "start: not an integer"),
	    "fraction in a string");
	ok(refused(d, "{\"start\":1.5}", "start: not an integer"), "fraction");
	ok(refused(d, "{\"start\":{}}", "start: not an integer"), "object");
	ok(refused(d, "{\"start\":\"99999999999999999999\"}", "start"),
	    "int64 overflow");
	ok(refused(d, "{\"format\":\"NOPE\"}", "format: unknown value"),
	    "unknown enum name");
	ok(refused(d, "{\"profileTypeID\":5}", "profileTypeID: not a string"),
	    "number for a string");
	ok(refused(d, "{\"profileTypeID\":\"a\",\"profile_typeID\":\"b\"}",
	    "given twice"), "a field by both names");
	ok(refused(d, "{\"stackTraceSelector\":{\"callSite\":{}}}",
	    "stackTraceSelector.callSite: not an array"), "object for an array");
	ok(refused(d, "{\"stackTraceSelector\":{\"callSite\":[{\"name\":1}]}}",
	    "stackTraceSelector.callSite[0].name: not a string"),
	    "the path through arrays");
	ok(refused(d, "{\"stackTraceSelector\":{\"callSite\":[null]}}",
	    "null in an array"), "null element");
	ok(refused(dd, "{\"left\":{\"maxNodes\":\"-\"}}", "left.maxNodes"),
	    "nested path");
	ok(refused(d, "[]", "not an object"), "array for a message");
	ok(refused(d, "{\"a\":1,\"a\":2}", "bad JSON"), "duplicate key");
	ok(refused(d, "{", "bad JSON at line 1"), "truncated JSON");
	ok(refused(&querier__v1__select_merge_stacktraces_response__descriptor,
	    "{\"tree\":\"!!!\"}", "tree: not base64"), "bad base64");
	ok(decode(&querier__v1__select_merge_stacktraces_response__descriptor,
	    "{\"tree\":\"QQ\"}", 0, &m, &cause) == 0 &&
	    ((Querier__V1__SelectMergeStacktracesResponse *)m)->tree.len == 1 &&
	    ((Querier__V1__SelectMergeStacktracesResponse *)m)->tree.data[0] ==
	    'A', "unpadded base64 accepted");
	protobuf_c_message_free_unpacked(m, NULL);
}

static void
test_otlp(void)
{
	const ProtobufCMessageDescriptor *d = &opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__descriptor;
	Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest *r;
	ProtobufCMessage *m;
	char *cause, *text, deep[64 * 40 + 200];
	size_t i, at;

	ok(decode(d, "{\"resourceProfiles\":[{\"resource\":{\"attributes\":[{"
	    "\"key\":\"service.name\",\"value\":{\"stringValue\":\"api\"}},{"
	    "\"key\":\"n\",\"value\":{\"intValue\":\"7\"}}]},\"scopeProfiles\":"
	    "[{\"profiles\":[{\"profileId\":\"0102ff\",\"timeUnixNano\":"
	    "\"1700000000000000000\"}]}]}],\"dictionary\":{\"stringTable\":[\"\","
	    "\"cpu\"]}}", PBJSON_OTLP, &m, &cause) == 0, "OTLP request");
	r = (void *)m;
	ok(r != NULL && r->n_resource_profiles == 1 &&
	    r->resource_profiles[0]->resource->attributes[1]->value->value_case ==
	    OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE &&
	    r->resource_profiles[0]->resource->attributes[1]->value->int_value ==
	    7 && r->resource_profiles[0]->scope_profiles[0]->profiles[0]->
	    profile_id.len == 3 && r->resource_profiles[0]->scope_profiles[0]->
	    profiles[0]->profile_id.data[2] == 0xff, "oneof and hex id read");
	ok(round_trip(m, PBJSON_OTLP, &text), "OTLP round trip");
	ok(text != NULL && strstr(text, "\"profileId\":\"0102ff\"") != NULL &&
	    strstr(text, "\"intValue\":\"7\"") != NULL, "hex id and int64 out");
	free(text);
	protobuf_c_message_free_unpacked(m, NULL);
	ok(decode(d, "{\"resourceProfiles\":[{\"resource\":{\"attributes\":[{"
	    "\"value\":{\"stringValue\":\"a\",\"intValue\":1}}]}}]}", 0, &m,
	    &cause) == -1 && strstr(cause, "two members of one oneof") != NULL,
	    "two oneof members refused");
	free(cause);
	at = (size_t)snprintf(deep, sizeof deep, "{\"resourceProfiles\":[{"
	    "\"resource\":{\"attributes\":[{\"value\":");
	for (i = 0; i < 70; i++)
		at += (size_t)snprintf(deep + at, sizeof deep - at,
		    "{\"arrayValue\":{\"values\":[");
	at += (size_t)snprintf(deep + at, sizeof deep - at, "{}");
	for (i = 0; i < 70; i++)
		at += (size_t)snprintf(deep + at, sizeof deep - at, "]}}");
	snprintf(deep + at, sizeof deep - at, "}]}}]}");
	ok(refused(d, deep, "nested deeper than"), "nesting bomb refused");
}

/* An allocator that refuses past a budget. */
static size_t budget_left;
static void *
tight_alloc(void *data, size_t n)
{
	(void)data;
	if (n > budget_left)
		return NULL;
	budget_left -= n;
	return malloc(n);
}
static void
tight_free(void *data, void *p)
{
	(void)data;
	free(p);
}

static void
test_bounds(void)
{
	ProtobufCAllocator a = { tight_alloc, tight_free, NULL };
	Querier__V1__FlameGraph fg = QUERIER__V1__FLAME_GRAPH__INIT;
	char *names[3] = { "a", "b", "c" }, *text = NULL, *cause = NULL;
	ProtobufCMessage *m = NULL;
	size_t len, tries, fails = 0;
	const char *in = "{\"names\":[\"aaaaaaaaaaaaaaaa\",\"b\",\"c\"],"
	    "\"levels\":[{\"values\":[1,2,3,4]},{\"values\":[\"5\"]}],"
	    "\"total\":9}";

	fg.names = names;
	fg.n_names = 3;
	ok(pbjson_encode(&fg.base, 0, 10, &text, &len, &cause) == -1 &&
	    text == NULL && strstr(cause, "10 bytes") != NULL,
	    "output past its bound refused");
	free(cause);
	for (tries = 0; tries < 400; tries += 8) {
		budget_left = tries;
		cause = NULL;
		if (pbjson_decode_text(&querier__v1__flame_graph__descriptor, in,
		    strlen(in), 0, &a, &m, &cause) != 0) {
			fails++;
			free(cause);
		} else
			protobuf_c_message_free_unpacked(m, &a);
	}
	ok(fails > 5 && fails < 50, "a dry allocator fails cleanly (%zu "
	    "budgets refused, no leak under ASan)", fails);
}

int
main(void)
{
	test_corpus();
	test_exact();
	test_decode();
	test_otlp();
	test_bounds();
	return tap_done();
}
