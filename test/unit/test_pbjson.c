/*
 * proto/pbjson*.c: the proto3 JSON mapping both ways. Round trips
 * (encode, decode, pack gives the bytes packing the original gives) of
 * every pprof profile of test/corpus that decodes, of Pyroscope's query
 * messages (a request with a nested selector, a flame graph with levels,
 * series with double points) and of OTLP requests (every AnyValue kind,
 * hex ids); the exact text of small messages (64-bit integers as strings,
 * defaults left out, enum names, base64, escapes, NaN, a hand-made
 * message with the types profd's .proto files lack: float, sint32,
 * fixed...); both name forms, numbers as strings and the other lenient
 * inputs; every refusal with its field path and every syntax error with
 * its line and column; the output bound; every prefix of a request read
 * from an exact-size copy (no read past the end); and a budgeted
 * allocator: every budget short of the need fails cleanly with nothing
 * left allocated, and what a decoding holds is the message (no tree).
 */
#include <dirent.h>
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "proto/pbjson.h"
#include "proto/pprof.h"
#include "querier/v1/querier.pb-c.h"
#include "test/lib/tap.h"
#include "types/v1/types.pb-c.h"

#define OTLP_REQ	(&opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__descriptor)
#define SMS_REQ		(&querier__v1__select_merge_stacktraces_request__descriptor)
#define SMS_RESP	(&querier__v1__select_merge_stacktraces_response__descriptor)

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
    otlp_req_t;

/* A message of the scalar types no .proto of profd's has. */
typedef struct {
	ProtobufCMessage	 base;
	float			 f;
	int32_t			 s32;
	int64_t			 sf64;
	uint32_t		 fx32;
	protobuf_c_boolean	 b;
	size_t			 n_rf;
	float			*rf;
	uint64_t		 u64;
	int32_t			 sf32;
	int64_t			 s64;
} all_t;

static void all_init(ProtobufCMessage *);

#define ALL_F(name, id, label, type, q, member, flags) \
	{ name, id, PROTOBUF_C_LABEL_##label, PROTOBUF_C_TYPE_##type, q, \
	  offsetof(all_t, member), NULL, NULL, flags, 0, NULL, NULL }
static const ProtobufCFieldDescriptor all_fields[] = {
	ALL_F("f_float", 1, NONE, FLOAT, 0, f, 0),
	ALL_F("s_32", 2, NONE, SINT32, 0, s32, 0),
	ALL_F("sf_64", 3, NONE, SFIXED64, 0, sf64, 0),
	ALL_F("fx_32", 4, NONE, FIXED32, 0, fx32, 0),
	ALL_F("b", 5, NONE, BOOL, 0, b, 0),
	ALL_F("r_float", 6, REPEATED, FLOAT, offsetof(all_t, n_rf), rf,
	    PROTOBUF_C_FIELD_FLAG_PACKED),
	ALL_F("u_64", 7, NONE, UINT64, 0, u64, 0),
	ALL_F("sf_32", 8, NONE, SFIXED32, 0, sf32, 0),
	ALL_F("s_64", 9, NONE, SINT64, 0, s64, 0),
};
static const unsigned all_by_name[] = { 4, 0, 3, 5, 1, 8, 7, 2, 6 };
static const ProtobufCIntRange all_ranges[] = { { 1, 0 }, { 0, 9 } };
static const ProtobufCMessageDescriptor all_descriptor = {
	PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC, "test.All", "All", "All", "test",
	sizeof (all_t), 9, all_fields, all_by_name, 1, all_ranges, all_init,
	NULL, NULL, NULL
};

/* Initializes an all_t. */
static void
all_init(ProtobufCMessage *m)
{
	memset(m, 0, sizeof (all_t));
	m->descriptor = &all_descriptor;
}

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

/* Whether two messages pack to the same bytes. */
static int
same_bytes(const ProtobufCMessage *x, const ProtobufCMessage *y)
{
	uint8_t *a, *b;
	size_t alen, blen;
	int same;

	a = pack(x, &alen);
	b = pack(y, &blen);
	same = alen == blen && memcmp(a, b, alen) == 0;
	free(a);
	free(b);
	return same;
}

/* Whether m survives encode + decode (same packed bytes); *text kept. */
static int
round_trip(const ProtobufCMessage *m, int opts, char **text)
{
	ProtobufCMessage *back = NULL;
	char *cause = NULL;
	size_t tlen;
	int same;

	*text = NULL;
	if (pbjson_encode(m, opts, (size_t)1 << 30, text, &tlen, &cause) != 0 ||
	    pbjson_decode_text(m->descriptor, *text, tlen, opts, NULL, &back,
	    &cause) != 0) {
		printf("# %s\n", cause);
		free(cause);
		return 0;
	}
	same = same_bytes(m, back);
	protobuf_c_message_free_unpacked(back, NULL);
	return same;
}

/* round_trip without the text. */
static int
round_trips(const ProtobufCMessage *m, int opts)
{
	char *text;
	int same = round_trip(m, opts, &text);

	if (!same && text != NULL)
		printf("# text %.300s\n", text);
	free(text);
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

/* Round-trips the profile in a file if it decodes: 1 if it did, else 0. */
static int
test_corpus_file(const char *path, int *bad)
{
	char *cause = NULL, *text;
	uint8_t *body, *raw = NULL;
	size_t len, rawlen;
	pprof_profile_t *p = NULL;

	if ((body = slurp(path, &len)) == NULL)
		return 0;
	if (pprof_inflate(body, len, (size_t)64 << 20, &raw, &rawlen,
	    &cause) == 0)
		p = pprof_decode(raw, rawlen, NULL, &cause);
	free(cause);
	free(raw);
	free(body);
	if (p == NULL)
		return 0;
	if (!round_trip(&p->base, 0, &text)) {
		printf("# round trip of %s differs\n", path);
		(*bad)++;
	}
	free(text);
	pprof_free(p, NULL);
	return 1;
}

/* Round-trips every profile under a folder; returns how many decoded. */
static int
test_corpus_dir(const char *dir, int *bad)
{
	char path[2048];
	struct dirent *e;
	struct stat st;
	DIR *d = opendir(dir);
	int n = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || strcmp(e->d_name, "src") == 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (stat(path, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode))
			n += test_corpus_dir(path, bad);
		else if (strstr(e->d_name, ".pb") != NULL)
			n += test_corpus_file(path, bad);
	}
	closedir(d);
	return n;
}

static void
test_corpus(void)
{
	const char *top = getenv("top_srcdir") ? getenv("top_srcdir") : ".";
	char dir[1024];
	int n, bad = 0;

	snprintf(dir, sizeof dir, "%s/test/corpus", top);
	n = test_corpus_dir(dir, &bad);
	/* 426 in MANIFEST.tsv, and bad/'s few that decode. */
	ok(n >= 426, "corpus profiles decoded (%d)", n);
	ok(bad == 0, "every one survives JSON and back (%d differ)", bad);
}

/* The text m encodes to (NULL on failure, printed). */
static char *
enc(const ProtobufCMessage *m, int opts)
{
	char *text = NULL, *cause = NULL;
	size_t len;

	if (pbjson_encode(m, opts, 1 << 20, &text, &len, &cause) != 0) {
		printf("# %s\n", cause);
		free(cause);
		return NULL;
	}
	if (strlen(text) != len) {
		printf("# length %zu, text %zu\n", len, strlen(text));
		free(text);
		return NULL;
	}
	return text;
}

/* Whether m encodes to exactly want. */
static int
encodes_to(const ProtobufCMessage *m, int opts, const char *want)
{
	char *text = enc(m, opts);
	int same = text != NULL && strcmp(text, want) == 0;

	if (!same)
		printf("# got  %s\n# want %s\n", text != NULL ? text : "-",
		    want);
	free(text);
	return same;
}

static void
test_exact_query(void)
{
	Querier__V1__SelectMergeStacktracesRequest r =
	    QUERIER__V1__SELECT_MERGE_STACKTRACES_REQUEST__INIT;
	Types__V1__StackTraceSelector sts = TYPES__V1__STACK_TRACE_SELECTOR__INIT;
	Types__V1__GoPGO pgo = TYPES__V1__GO_PGO__INIT;
	Types__V1__Location loc = TYPES__V1__LOCATION__INIT, *locs[1] = { &loc };
	Querier__V1__FlameGraph fg = QUERIER__V1__FLAME_GRAPH__INIT;
	Querier__V1__Level l0 = QUERIER__V1__LEVEL__INIT;
	Querier__V1__Level l1 = QUERIER__V1__LEVEL__INIT;
	Querier__V1__Level *levels[2] = { &l0, &l1 };
	char *names[2] = { "total", "main.work" };
	int64_t v0[4] = { 0, 10, 0, 0 };

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
	ok(round_trips(&r.base, 0), "and back");
	sts.go_pgo = &pgo;
	r.format = 42;
	r.max_nodes = INT64_MIN;
	r.start = 0;
	r.end = INT64_MAX;
	ok(encodes_to(&r.base, 0, "{\"profileTypeID\":\"process_cpu:cpu:"
	    "nanoseconds:cpu:nanoseconds\",\"labelSelector\":\"{service_name="
	    "\\\"a\\\\b\\\"}\\n\\u0001\",\"end\":\"9223372036854775807\","
	    "\"maxNodes\":\"-9223372036854775808\",\"format\":42,"
	    "\"stackTraceSelector\":{\"callSite\":[{\"name\":\"main\"}],"
	    "\"goPgo\":{}}}"), "an unknown enum number as a number, an empty "
	    "message as {}, int64's extremes");
	ok(round_trips(&r.base, 0), "and back");
	pgo.keep_locations = UINT32_MAX;
	pgo.aggregate_callees = 1;
	ok(encodes_to(&pgo.base, 0, "{\"keepLocations\":4294967295,"
	    "\"aggregateCallees\":true}"), "uint32 as a number, bool");

	l0.values = v0;
	l0.n_values = 4;
	fg.names = names;
	fg.n_names = 2;
	fg.levels = levels;
	fg.n_levels = 2;
	fg.total = 10;
	fg.max_self = 10;
	ok(encodes_to(&fg.base, 0, "{\"names\":[\"total\",\"main.work\"],"
	    "\"levels\":[{\"values\":[\"0\",\"10\",\"0\",\"0\"]},{}],"
	    "\"total\":\"10\",\"maxSelf\":\"10\"}"),
	    "flame graph: repeated int64 as strings, an empty level");
	ok(round_trips(&fg.base, 0), "flame graph round trip");
}

static void
test_exact_series(void)
{
	Types__V1__Series s = TYPES__V1__SERIES__INIT;
	Types__V1__LabelPair lp = TYPES__V1__LABEL_PAIR__INIT, *lps[1] = { &lp };
	Types__V1__Point p[8], *pp[8];
	double vals[8] = { 0.1, 1.0 / 3, NAN, INFINITY, -INFINITY, 1e300,
	    -2.5, 5e-324 };
	double scale[8] = { 1e-300, -1e-150, 1e-20, -1, 1e7, -1e20, 1e150,
	    -1e300 };
	size_t i;

	for (i = 0; i < 8; i++) {
		types__v1__point__init(&p[i]);
		p[i].value = vals[i];
		p[i].timestamp = 1700000000000LL + (int64_t)i;
		pp[i] = &p[i];
	}
	lp.name = "service_name";
	lp.value = "api";
	s.labels = lps;
	s.n_labels = 1;
	s.points = pp;
	s.n_points = 8;
	ok(encodes_to(&s.base, 0, "{\"labels\":[{\"name\":\"service_name\","
	    "\"value\":\"api\"}],\"points\":["
	    "{\"value\":0.1,\"timestamp\":\"1700000000000\"},"
	    "{\"value\":0.3333333333333333,\"timestamp\":\"1700000000001\"},"
	    "{\"value\":\"NaN\",\"timestamp\":\"1700000000002\"},"
	    "{\"value\":\"Infinity\",\"timestamp\":\"1700000000003\"},"
	    "{\"value\":\"-Infinity\",\"timestamp\":\"1700000000004\"},"
	    "{\"value\":1e+300,\"timestamp\":\"1700000000005\"},"
	    "{\"value\":-2.5,\"timestamp\":\"1700000000006\"},"
	    "{\"value\":4.94065645841247e-324,\"timestamp\":"
	    "\"1700000000007\"}]}"),
	    "series: doubles in few digits, NaN and infinities as strings");
	ok(round_trips(&s.base, 0), "series round trip (NaN and all)");
	for (i = 0; i < 8; i++)
		p[i].value = (double)rand() / RAND_MAX * scale[i];
	ok(round_trips(&s.base, 0), "random doubles read back the same");
	p[0].value = 0;
	p[0].timestamp = 0;
	ok(encodes_to(&p[0].base, 0, "{}"), "a zero point is {}");
	p[0].value = -0.0;
	ok(encodes_to(&p[0].base, 0, "{\"value\":-0}"), "-0 is written");
}

static void
test_exact_misc(void)
{
	Querier__V1__SelectMergeStacktracesResponse resp =
	    QUERIER__V1__SELECT_MERGE_STACKTRACES_RESPONSE__INIT;
	Types__V1__Location loc = TYPES__V1__LOCATION__INIT;
	uint8_t bytes[] = { 0xfb, 0xff, 0x00, 'a' };
	float rf[3] = { 1.5f, FLT_MAX, -FLT_MIN };
	all_t a;

	resp.tree.data = bytes;
	resp.tree.len = sizeof bytes;
	ok(encodes_to(&resp.base, 0, "{\"tree\":\"+/8AYQ==\"}"), "bytes base64");
	ok(round_trips(&resp.base, 0), "bytes back");
	resp.tree.len = 1;
	ok(encodes_to(&resp.base, 0, "{\"tree\":\"+w==\"}"), "1 byte");
	resp.tree.len = 2;
	ok(encodes_to(&resp.base, 0, "{\"tree\":\"+/8=\"}"), "2 bytes");
	resp.tree.len = 3;
	ok(encodes_to(&resp.base, 0, "{\"tree\":\"+/8A\"}"), "3 bytes");
	loc.name = "q\"b\\s/\b\f\n\r\t\x1f\x7f é 😀";
	ok(encodes_to(&loc.base, 0, "{\"name\":\"q\\\"b\\\\s/\\u0008\\u000c"
	    "\\n\\r\\t\\u001f\x7f é 😀\"}"), "escapes; UTF-8 as it is");
	ok(round_trips(&loc.base, 0), "and back");
	loc.name = "a\xff" "b\xc3(\xe2\x82" "c\xed\xa0\x80";
	ok(encodes_to(&loc.base, 0, "{\"name\":\"a\\ufffdb\\ufffd(\\ufffd"
	    "\\ufffdc\\ufffd\\ufffd\\ufffd\"}"),
	    "invalid UTF-8 as U+FFFD, byte by byte (the text stays JSON)");

	all_init(&a.base);
	ok(encodes_to(&a.base, 0, "{}"), "hand-made message: defaults out");
	a.f = 0.1f;
	a.s32 = -5;
	a.sf64 = -1;
	a.fx32 = UINT32_MAX;
	a.b = 1;
	a.rf = rf;
	a.n_rf = 3;
	a.u64 = UINT64_MAX;
	a.sf32 = INT32_MIN;
	a.s64 = INT64_MIN;
	ok(encodes_to(&a.base, 0, "{\"fFloat\":0.1,\"s32\":-5,\"sf64\":\"-1\","
	    "\"fx32\":4294967295,\"b\":true,\"rFloat\":[1.5,3.4028235e+38,"
	    "-1.1754944e-38],\"u64\":\"18446744073709551615\",\"sf32\":"
	    "-2147483648,\"s64\":\"-9223372036854775808\"}"),
	    "float in a float's digits, sint32, sfixed64, fixed32, uint64, "
	    "sfixed32, sint64");
	ok(round_trips(&a.base, 0), "and back");
	rf[0] = NAN;
	rf[1] = -INFINITY;
	rf[2] = 16777217.0f;
	a.f = 3.4e38f;
	ok(round_trips(&a.base, 0), "float NaN, -Infinity and extremes back");
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
refused_opts(const ProtobufCMessageDescriptor *d, const char *text,
    int opts, const char *want)
{
	ProtobufCMessage *m = NULL;
	char *cause = NULL;
	int hit;

	if (decode(d, text, opts, &m, &cause) == 0) {
		protobuf_c_message_free_unpacked(m, NULL);
		printf("# accepted %s\n", text);
		return 0;
	}
	hit = m == NULL && cause != NULL && strstr(cause, want) != NULL;
	if (!hit)
		printf("# %s -> %s\n", text, cause);
	free(cause);
	return hit;
}

/* refused_opts without options. */
static int
refused(const ProtobufCMessageDescriptor *d, const char *text,
    const char *want)
{
	return refused_opts(d, text, 0, want);
}

static void
test_decode(void)
{
	Querier__V1__SelectMergeStacktracesRequest *r;
	ProtobufCMessage *m;
	char *cause;

	ok(decode(SMS_REQ, "{\"profile_typeID\":\"x\",\"start\":\"12\","
	    "\"end\":13,\"max_nodes\":1e3,\"format\":2,\"stack_trace_selector\":"
	    "{\"call_site\":[{\"name\":\"a\"},{\"name\":\"b\"}],\"goPgo\":{"
	    "\"keep_locations\":\"7\",\"aggregateCallees\":true}},\"unknown\":"
	    "[1,{\"x\":[\"\\u00e9\",null,true,-1.5e-3]},[]],\"labelSelector\":"
	    "null,\"profileIdSelector\":[\"p\\u00e9\\ud83d\\ude00\"],"
	    "\"span_selector\":[]}", 0, &m, &cause) == 0,
	    "original names, numbers and strings, enum by number");
	r = (Querier__V1__SelectMergeStacktracesRequest *)m;
	ok(r != NULL && strcmp(r->profile_typeid, "x") == 0 && r->start == 12 &&
	    r->end == 13 && r->max_nodes == 1000 && r->format == 2 &&
	    r->stack_trace_selector->n_call_site == 2 &&
	    strcmp(r->stack_trace_selector->call_site[1]->name, "b") == 0 &&
	    r->stack_trace_selector->go_pgo->keep_locations == 7 &&
	    r->stack_trace_selector->go_pgo->aggregate_callees &&
	    *r->label_selector == '\0' && r->n_profile_id_selector == 1 &&
	    strcmp(r->profile_id_selector[0], "p\xc3\xa9\xf0\x9f\x98\x80") ==
	    0 && r->n_span_selector == 0, "values read (\\u escapes, "
	    "surrogate pairs, unknown fields skipped)");
	protobuf_c_message_free_unpacked(m, NULL);
	ok(decode(SMS_REQ, "\t{ \"format\" : \"PROFILE_FORMAT_PPROF\" ,"
	    "\"start\":\"-9223372036854775808\",\"end\":9223372036854775807,"
	    "\"maxNodes\":\"1.5e1\",\"stackTraceSelector\":null}\r\n ", 0, &m,
	    &cause) == 0, "enum by name, int64's extremes, whitespace");
	r = (Querier__V1__SelectMergeStacktracesRequest *)m;
	ok(r != NULL && r->format ==
	    QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_PPROF &&
	    r->start == INT64_MIN && r->end == INT64_MAX && r->max_nodes == 15 &&
	    r->stack_trace_selector == NULL, "values read");
	protobuf_c_message_free_unpacked(m, NULL);
	ok(decode(SMS_REQ, "{\"start\":\"-0\",\"end\":0.0,\"maxNodes\":"
	    "100e-2,\"format\":-7}", 0, &m, &cause) == 0 &&
	    ((Querier__V1__SelectMergeStacktracesRequest *)m)->max_nodes == 1 &&
	    (int)((Querier__V1__SelectMergeStacktracesRequest *)m)->
	    format == -7,
	    "-0, 0.0, 100e-2 as integers; an unknown enum number kept");
	protobuf_c_message_free_unpacked(m, NULL);
	ok(decode(&querier__v1__select_series_request__descriptor,
	    "{\"step\":\"1.5\",\"aggregation\":1}", 0, &m, &cause) == 0 &&
	    ((Querier__V1__SelectSeriesRequest *)m)->step == 1.5 &&
	    ((Querier__V1__SelectSeriesRequest *)m)->aggregation == 1,
	    "a double as a string");
	protobuf_c_message_free_unpacked(m, NULL);
	ok(decode(&querier__v1__select_series_request__descriptor,
	    "{\"step\":\"-Infinity\"}", 0, &m, &cause) == 0 &&
	    isinf(((Querier__V1__SelectSeriesRequest *)m)->step) &&
	    ((Querier__V1__SelectSeriesRequest *)m)->step < 0, "-Infinity");
	protobuf_c_message_free_unpacked(m, NULL);
	ok(decode(SMS_RESP, "{\"tree\":\"QQ\"}", 0, &m, &cause) == 0 &&
	    ((Querier__V1__SelectMergeStacktracesResponse *)m)->tree.len == 1 &&
	    ((Querier__V1__SelectMergeStacktracesResponse *)m)->tree.data[0] ==
	    'A', "unpadded base64");
	protobuf_c_message_free_unpacked(m, NULL);
	ok(decode(SMS_RESP, "{\"tree\":\"-_8\"}", 0, &m, &cause) == 0 &&
	    ((Querier__V1__SelectMergeStacktracesResponse *)m)->tree.len == 2 &&
	    ((Querier__V1__SelectMergeStacktracesResponse *)m)->tree.data[0] ==
	    0xfb && ((Querier__V1__SelectMergeStacktracesResponse *)m)->
	    tree.data[1] == 0xff, "URL-safe base64");
	protobuf_c_message_free_unpacked(m, NULL);
	ok(decode(SMS_RESP, "{\"tree\":\"\\/\\/8=\"}", 0, &m, &cause) == 0 &&
	    ((Querier__V1__SelectMergeStacktracesResponse *)m)->tree.len == 2 &&
	    ((Querier__V1__SelectMergeStacktracesResponse *)m)->tree.data[0] ==
	    0xff, "base64 with escaped slashes");
	protobuf_c_message_free_unpacked(m, NULL);
}

static void
test_decode_all(void)
{
	ProtobufCMessage *m;
	all_t *a;
	char *cause;

	ok(decode(&all_descriptor, "{\"f_float\":\"0.1\",\"s32\":-2147483648,"
	    "\"sf_64\":\"-1\",\"fx32\":4294967295,\"b\":false,\"r_float\":["
	    "\"NaN\",3.4028234663852886e38,1e-50,\"-Infinity\"],\"u64\":"
	    "18446744073709551615,\"sf32\":\"2147483647\",\"s_64\":"
	    "-9223372036854775808}", 0, &m, &cause) == 0,
	    "hand-made message read");
	a = (all_t *)m;
	ok(a != NULL && a->f == 0.1f && a->s32 == INT32_MIN && a->sf64 == -1 &&
	    a->fx32 == UINT32_MAX && !a->b && a->n_rf == 4 &&
	    isnan(a->rf[0]) && a->rf[1] == FLT_MAX && a->rf[2] == 0 &&
	    isinf(a->rf[3]) && a->u64 == UINT64_MAX && a->sf32 == INT32_MAX &&
	    a->s64 == INT64_MIN, "float, uint64 past int64 as a number, "
	    "the other types' extremes");
	protobuf_c_message_free_unpacked(m, NULL);
	ok(refused(&all_descriptor, "{\"f_float\":3.5e38}",
	    "f_float: 3.5e38 out of range for a float"), "float overflow");
	ok(refused(&all_descriptor, "{\"u64\":18446744073709551616}",
	    "u64: 18446744073709551616 out of range for a uint64"),
	    "uint64 overflow");
	ok(refused(&all_descriptor, "{\"u64\":\"-1\"}",
	    "u64: -1 out of range for a uint64"), "negative uint64");
	ok(refused(&all_descriptor, "{\"s32\":2147483648}",
	    "s32: 2147483648 out of range for an int32"), "int32 overflow");
	ok(refused(&all_descriptor, "{\"s32\":\"-2147483649\"}",
	    "s32: -2147483649 out of range for an int32"), "int32 underflow");
	ok(refused(&all_descriptor, "{\"fx32\":4294967296}",
	    "fx32: 4294967296 out of range for a uint32"), "uint32 overflow");
	ok(refused(&all_descriptor, "{\"b\":\"true\"}", "b: not true or false"),
	    "a string for a bool");
	ok(refused(&all_descriptor, "{\"b\":1}", "b: not true or false"),
	    "a number for a bool");
	ok(refused(&all_descriptor, "{\"r_float\":[1,\"x\"]}",
	    "r_float[1]: not a number (\"x\")"), "a word for a float");
	ok(refused(&all_descriptor, "{\"fFloat\":\"nan\"}",
	    "fFloat: not a number"), "only NaN spelled as proto3 spells it");
}

static void
test_refusals(void)
{
	const ProtobufCMessageDescriptor *dd = &querier__v1__diff_request__descriptor;
	const ProtobufCMessageDescriptor *ds = &querier__v1__select_series_request__descriptor;

	ok(refused(SMS_REQ, "{\"stackTraceSelector\":\"x\"}",
	    "stackTraceSelector: not an object"), "a string for a message");
	ok(refused(SMS_REQ, "{\"start\":[1]}", "start: not an integer"),
	    "an array for an int64");
	ok(refused(SMS_REQ, "{\"profileTypeID\":[\"a\"]}",
	    "profileTypeID: not a string"), "an array for a string");
	ok(refused(SMS_REQ, "{\"stackTraceSelector\":{\"goPgo\":"
	    "{\"keepLocations\":[]}}}", "stackTraceSelector.goPgo."
	    "keepLocations: not an integer"), "an array for a uint32, deep");
	ok(refused(SMS_REQ, "{\"start\":\"1.5\"}", "start: not an integer"),
	    "fraction in a string");
	ok(refused(SMS_REQ, "{\"start\":1.5}", "start: not an integer"),
	    "fraction");
	ok(refused(SMS_REQ, "{\"start\":1e-1}", "start: not an integer"),
	    "fraction by exponent");
	ok(refused(SMS_REQ, "{\"start\":{}}", "start: not an integer"),
	    "object");
	ok(refused(SMS_REQ, "{\"start\":\"12a\"}", "start: not an integer"),
	    "a word");
	ok(refused(SMS_REQ, "{\"start\":\" 12\"}", "start: not an integer"),
	    "a space in the string");
	ok(refused(SMS_REQ, "{\"start\":\"\"}", "start: not an integer"),
	    "an empty string");
	ok(refused(SMS_REQ, "{\"start\":\"9223372036854775808\"}",
	    "start: 9223372036854775808 out of range for an int64"),
	    "int64 overflow");
	ok(refused(SMS_REQ, "{\"end\":-9223372036854775809}",
	    "end: -9223372036854775809 out of range for an int64"),
	    "int64 underflow");
	ok(refused(SMS_REQ, "{\"end\":1e19}", "end: 1e19 out of range"),
	    "int64 overflow by exponent");
	ok(refused(SMS_REQ, "{\"end\":1e999999999}", "end: 1e999999999 out of "
	    "range"), "a huge exponent");
	ok(refused(SMS_REQ, "{\"stackTraceSelector\":{\"goPgo\":"
	    "{\"keepLocations\":-1}}}", "keepLocations: -1 out of range for a "
	    "uint32"), "negative uint32");
	ok(refused(SMS_REQ, "{\"format\":\"NOPE\"}",
	    "format: unknown value \"NOPE\""), "unknown enum name");
	ok(refused(SMS_REQ, "{\"format\":2147483648}",
	    "format: 2147483648 out of range for an enum"), "enum overflow");
	ok(refused(SMS_REQ, "{\"format\":{}}",
	    "format: not an enum name or number"), "object for an enum");
	ok(refused(SMS_REQ, "{\"profileTypeID\":5}", "profileTypeID: not a "
	    "string"), "number for a string");
	ok(refused(SMS_REQ, "{\"profileTypeID\":\"a\",\"profile_typeID\":\"b\"}",
	    "profile_typeID: given twice"), "a field by both names");
	ok(refused(SMS_REQ, "{\"profileTypeID\":null,\"profile_typeID\":\"b\"}",
	    "profile_typeID: given twice"), "null, then the other name");
	ok(refused(SMS_REQ, "{\"start\":1,\"start\":2}", "start: given twice"),
	    "a key twice");
	ok(refused(SMS_REQ, "{\"stackTraceSelector\":{\"callSite\":{}}}",
	    "stackTraceSelector.callSite: not an array"), "object for an array");
	ok(refused(SMS_REQ, "{\"profileIdSelector\":\"a\"}",
	    "profileIdSelector: not an array"), "string for an array");
	ok(refused(SMS_REQ, "{\"stackTraceSelector\":{\"callSite\":[{\"name\":"
	    "\"a\"},{\"name\":1}]}}", "stackTraceSelector.callSite[1].name: not "
	    "a string"), "the path through arrays");
	ok(refused(SMS_REQ, "{\"stackTraceSelector\":{\"callSite\":[null]}}",
	    "stackTraceSelector.callSite[0]: null in an array"), "null element");
	ok(refused(SMS_REQ, "{\"profileIdSelector\":[\"a\",7]}",
	    "profileIdSelector[1]: not a string"), "bad string element");
	ok(refused(dd, "{\"left\":{\"maxNodes\":\"-\"}}",
	    "left.maxNodes: not an integer"), "nested path");
	ok(refused(dd, "{\"right\":[]}", "right: not an object"),
	    "an array for a message");
	ok(refused(ds, "{\"step\":\"abc\"}", "step: not a number"),
	    "a word for a double");
	ok(refused(ds, "{\"step\":true}", "step: not a number"),
	    "a bool for a double");
	ok(refused(ds, "{\"step\":1e999}", "step: 1e999 out of range for a "
	    "double"), "double overflow");
	ok(refused(SMS_REQ, "[]", "not an object"), "array for a message");
	ok(refused(SMS_REQ, "\"x\"", "not an object"), "string for a message");
	ok(refused(SMS_RESP, "{\"tree\":\"!!!!\"}", "tree: not base64"),
	    "bad base64");
	ok(refused(SMS_RESP, "{\"tree\":\"QUJDR\"}", "tree: not base64"),
	    "base64 of a bad length");
	ok(refused(SMS_RESP, "{\"tree\":\"Q===\"}", "tree: not base64"),
	    "too much padding");
	ok(refused(SMS_RESP, "{\"tree\":\"QQ=A\"}", "tree: not base64"),
	    "padding inside");
	ok(refused(SMS_RESP, "{\"tree\":\"QQ=\"}", "tree: not base64"),
	    "half padding");
	ok(refused(SMS_RESP, "{\"tree\":5}", "tree: not a string of bytes"),
	    "number for bytes");
}

static void
test_syntax(void)
{
	char deep[1100 * 2 + 64];
	size_t i, at;

	ok(refused(SMS_REQ, "{", "bad JSON at line 1, column 2: unexpected "
	    "end"), "truncated JSON");
	ok(refused(SMS_REQ, "", "bad JSON at line 1, column 1"), "no text");
	ok(refused(SMS_REQ, "{\"start\":1,}", "bad JSON at line 1, column 12: "
	    "expected a key"), "trailing comma");
	ok(refused(SMS_REQ, "{\n  \"start\": 1,\n  \"end\" 2\n}",
	    "bad JSON at line 3, column 9: expected ':'"), "line and column");
	ok(refused(SMS_REQ, "{\"start\":1 \"end\":2}", "bad JSON at line 1, "
	    "column 12: expected ',' or '}'"), "missing comma");
	ok(refused(SMS_REQ, "{\"profileIdSelector\":[\"a\" \"b\"]}",
	    "expected ',' or ']'"), "missing comma in an array");
	ok(refused(SMS_REQ, "{\"profileIdSelector\":[\"a\",]}",
	    "expected a value"), "trailing comma in an array");
	ok(refused(SMS_REQ, "{} {}", "bad JSON at line 1, column 4: text after"),
	    "text after the value");
	ok(refused(SMS_REQ, "{} x", "bad JSON at line 1, column 4: unexpected "
	    "character"), "a stray character");
	ok(refused(SMS_REQ, "{\"start\":01}", "bad number"), "leading zero");
	ok(refused(SMS_REQ, "{\"start\":1.}", "bad number"), "bare point");
	ok(refused(SMS_REQ, "{\"start\":tru}", "bad JSON"), "bad literal");
	ok(refused(SMS_REQ, "{\"start\":}", "expected a value"), "no value");
	ok(refused(SMS_REQ, "{\"profileTypeID\":\"\xff\"}", "not UTF-8"),
	    "invalid UTF-8");
	ok(refused(SMS_REQ, "{\"profileTypeID\":\"\xc0\xaf\"}", "not UTF-8"),
	    "overlong UTF-8");
	ok(refused(SMS_REQ, "{\"profileTypeID\":\"\\ud800\"}",
	    "lone high surrogate"), "lone surrogate");
	ok(refused(SMS_REQ, "{\"profileTypeID\":\"\\udc00x\"}",
	    "lone low surrogate"), "lone low surrogate");
	ok(refused(SMS_REQ, "{\"profileTypeID\":\"a\\u0000\"}",
	    "\\u0000 in a string"), "NUL");
	ok(refused(SMS_REQ, "{\"profileTypeID\":\"a\\x\"}", "bad escape"),
	    "bad escape");
	ok(refused(SMS_REQ, "{\"profileTypeID\":\"a\\u12\"}",
	    "bad \\u escape"), "short \\u escape");
	ok(refused(SMS_REQ, "{\"profileTypeID\":\"a\tb\"}",
	    "control character"), "raw tab in a string");
	ok(refused(SMS_REQ, "{\"profileTypeID\":\"ab", "unterminated string"),
	    "unterminated string");
	ok(refused(SMS_REQ, "{\"x\":[1 2]}", "bad JSON"),
	    "bad JSON in an unknown field");
	ok(refused(SMS_REQ, "{\"x\":{\"a\" 1}}", "expected ':'"),
	    "bad JSON in an unknown object");
	at = (size_t)snprintf(deep, sizeof deep, "{\"x\":");
	for (i = 0; i < 1100; i++)
		deep[at++] = '[';
	for (i = 0; i < 1100; i++)
		deep[at++] = ']';
	snprintf(deep + at, sizeof deep - at, "}");
	ok(refused(SMS_REQ, deep, "nested too deeply"),
	    "an unknown value nested 1,100 deep");
	ok(refused(SMS_REQ, "{\"x\":[[[[[[[[[[]]]]]]]]]],\"start\":\"q\"}",
	    "start: not an integer"), "a nested unknown value skipped");
}

static void
test_otlp(void)
{
	otlp_req_t *r;
	Opentelemetry__Proto__Common__V1__AnyValue *v;
	ProtobufCMessage *m;
	char *cause, *text, deep[64 * 40 + 200];
	size_t i, at;
	const char *req = "{\"resourceProfiles\":[{\"resource\":{\"attributes\""
	    ":[{\"key\":\"service.name\",\"value\":{\"stringValue\":\"api\"}},"
	    "{\"key\":\"n\",\"value\":{\"intValue\":\"7\"}},{\"key\":\"b\","
	    "\"value\":{\"boolValue\":false}},{\"key\":\"d\",\"value\":"
	    "{\"doubleValue\":0}},{\"key\":\"a\",\"value\":{\"arrayValue\":"
	    "{\"values\":[{\"intValue\":1},{\"stringValue\":\"\"}]}}},"
	    "{\"key\":\"kv\",\"value\":{\"kvlistValue\":{\"values\":[{\"key\":"
	    "\"k\",\"value\":{\"bytesValue\":\"AAE=\"}}]}}},{\"key\":\"e\","
	    "\"value\":{}}]},\"scopeProfiles\":[{\"profiles\":[{\"profileId\":"
	    "\"0102FF\",\"timeUnixNano\":\"1700000000000000000\","
	    "\"durationNano\":18446744073709551615,\"attributeIndices\":[1,\"2\""
	    "]}]}]}],\"dictionary\":{\"stringTable\":[\"\",\"cpu\"],"
	    "\"linkTable\":[{},{\"traceId\":\"0af7651916cd43dd8448eb211c80319c\","
	    "\"spanId\":\"b7ad6b7169203331\"}],\"mappingTable\":[{"
	    "\"memory_start\":\"18446744073709551615\"}]}}";

	ok(decode(OTLP_REQ, req, PBJSON_OTLP, &m, &cause) == 0, "OTLP request");
	r = (otlp_req_t *)m;
	v = r != NULL ? r->resource_profiles[0]->resource->attributes[1]->value :
	    NULL;
	ok(v != NULL && r->n_resource_profiles == 1 && v->value_case ==
	    OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE &&
	    v->int_value == 7 && r->resource_profiles[0]->scope_profiles[0]->
	    profiles[0]->profile_id.len == 3 && r->resource_profiles[0]->
	    scope_profiles[0]->profiles[0]->profile_id.data[2] == 0xff &&
	    r->resource_profiles[0]->scope_profiles[0]->profiles[0]->
	    duration_nano == UINT64_MAX && r->dictionary->link_table[1]->
	    trace_id.len == 16 && r->dictionary->link_table[1]->span_id.data[7] ==
	    0x31 && r->dictionary->mapping_table[0]->memory_start == UINT64_MAX,
	    "oneof, hex ids (either case), uint64 read");
	ok(round_trip(m, PBJSON_OTLP, &text), "OTLP round trip");
	ok(text != NULL && strstr(text, "\"profileId\":\"0102ff\"") != NULL &&
	    strstr(text, "{\"traceId\":\"0af7651916cd43dd8448eb211c80319c\","
	    "\"spanId\":\"b7ad6b7169203331\"}") != NULL &&
	    strstr(text, "\"intValue\":\"7\"") != NULL &&
	    strstr(text, "{\"boolValue\":false}") != NULL &&
	    strstr(text, "{\"doubleValue\":0}") != NULL &&
	    strstr(text, "{\"stringValue\":\"\"}") != NULL &&
	    strstr(text, "{\"bytesValue\":\"AAE=\"}") != NULL &&
	    strstr(text, "\"value\":{}}") != NULL &&
	    strstr(text, "\"timeUnixNano\":\"1700000000000000000\"") != NULL &&
	    strstr(text, "\"attributeIndices\":[1,2]") != NULL,
	    "hex ids, int64 as a string, set oneof members at their default "
	    "written, bytes in base64: %.80s...", text != NULL ? text : "-");
	free(text);
	text = enc(&r->dictionary->link_table[1]->base, 0);
	ok(text != NULL && strcmp(text, "{\"traceId\":\"CvdlGRbNQ92ESOshHIAxnA==\","
	    "\"spanId\":\"t61rcWkgMzE=\"}") == 0, "ids in base64 without "
	    "PBJSON_OTLP: %s", text != NULL ? text : "-");
	free(text);
	protobuf_c_message_free_unpacked(m, NULL);
	ok(refused_opts(OTLP_REQ, "{\"resourceProfiles\":[{\"resource\":"
	    "{\"attributes\":[{\"value\":{\"stringValue\":\"a\",\"intValue\":1}}"
	    "]}}]}", PBJSON_OTLP, "resourceProfiles[0].resource.attributes[0]."
	    "value.intValue: two members of one oneof"),
	    "two oneof members refused");
	ok(refused_opts(OTLP_REQ, "{\"dictionary\":{\"linkTable\":[{\"traceId\":"
	    "\"abc\"}]}}", PBJSON_OTLP, "dictionary.linkTable[0].traceId: odd "
	    "number of hex digits"), "odd hex");
	ok(refused_opts(OTLP_REQ, "{\"dictionary\":{\"linkTable\":[{\"spanId\":"
	    "\"zz\"}]}}", PBJSON_OTLP, "dictionary.linkTable[0].spanId: not "
	    "hex"), "not hex");
	at = (size_t)snprintf(deep, sizeof deep, "{\"resourceProfiles\":[{"
	    "\"resource\":{\"attributes\":[{\"value\":");
	for (i = 0; i < 70; i++)
		at += (size_t)snprintf(deep + at, sizeof deep - at,
		    "{\"arrayValue\":{\"values\":[");
	at += (size_t)snprintf(deep + at, sizeof deep - at, "{}");
	for (i = 0; i < 70; i++)
		at += (size_t)snprintf(deep + at, sizeof deep - at, "]}}");
	snprintf(deep + at, sizeof deep - at, "}]}}]}");
	ok(refused(OTLP_REQ, deep, "nested deeper than 64 messages"),
	    "nesting past 64 messages refused");
	ok(refused(OTLP_REQ, deep, "resourceProfiles[0].resource.attributes[0]"
	    ".value.arrayValue.values[0].arrayValue"), "and its path named");
}

/* An allocator holding at most budget_left bytes; budget_live in use. */
static size_t budget_left, budget_live, budget_peak;

/* Allocates through the budget (the size kept in a header). */
static void *
tight_alloc(void *data, size_t n)
{
	size_t *h;

	(void)data;
	if (n > budget_left || (h = malloc(n + 16)) == NULL)
		return NULL;
	budget_left -= n;
	budget_live += n;
	if (budget_live > budget_peak)
		budget_peak = budget_live;
	h[0] = n;
	return (char *)h + 16;
}

/* Frees what tight_alloc gave. */
static void
tight_free(void *data, void *p)
{
	size_t *h;

	(void)data;
	if (p == NULL)
		return;
	h = (size_t *)(void *)((char *)p - 16);
	budget_left += h[0];
	budget_live -= h[0];
	free(h);
}

/* Decodes text within a budget: 0, 1 (refused: out of memory), -1. */
static int
tight_decode(const ProtobufCMessageDescriptor *d, const char *text,
    size_t budget, ProtobufCMessage **m)
{
	ProtobufCAllocator a = { tight_alloc, tight_free, NULL };
	char *cause = NULL;
	int rc;

	budget_left = budget;
	budget_live = budget_peak = 0;
	if (pbjson_decode_text(d, text, strlen(text), PBJSON_OTLP, &a, m,
	    &cause) == 0)
		return 0;
	rc = strstr(cause, "out of memory") != NULL && *m == NULL ? 1 : -1;
	free(cause);
	return rc;
}

/* "{"key":[{},{},...]}" with n objects (malloc'd). */
static char *
objects(const char *key, size_t n)
{
	char *big = malloc(strlen(key) + n * 3 + 16), *p;
	size_t i;

	p = big + sprintf(big, "{\"%s\":[", key);
	for (i = 0; i < n; i++)
		p += sprintf(p, i > 0 ? ",{}" : "{}");
	sprintf(p, "]}");
	return big;
}

static void
test_budget(const char *req)
{
	ProtobufCAllocator a = { tight_alloc, tight_free, NULL };
	ProtobufCMessage *m = NULL;
	size_t peak, b, leaked = 0, n = 200000, msz;
	char *big;
	int rc = 1;

	ok(tight_decode(OTLP_REQ, req, SIZE_MAX / 2, &m) == 0,
	    "request decoded through the allocator");
	peak = budget_peak;
	protobuf_c_message_free_unpacked(m, &a);
	ok(budget_live == 0, "all given back (%zu of %zu)", budget_live, peak);
	for (b = 0; b <= peak && (rc = tight_decode(OTLP_REQ, req, b, &m)) ==
	    1; b++)
		leaked += budget_live;
	if (rc == 0)
		protobuf_c_message_free_unpacked(m, &a);
	ok(rc == 0 && b > 0 && leaked == 0 && budget_live == 0, "each of %zu "
	    "budgets short of the need (peak %zu) refused as out of memory, "
	    "nothing left allocated (%zu bytes)", b, peak, leaked);

	big = objects("unknown", n);
	rc = tight_decode(OTLP_REQ, big, SIZE_MAX / 2, &m);
	ok(rc == 0 && budget_peak == OTLP_REQ->sizeof_message,
	    "an unknown array of %zu objects holds nothing (peak %zu bytes)",
	    n, budget_peak);
	protobuf_c_message_free_unpacked(m, &a);
	free(big);
	big = objects("resourceProfiles", n);
	msz = opentelemetry__proto__profiles__v1development__resource_profiles__descriptor.sizeof_message;
	rc = tight_decode(OTLP_REQ, big, SIZE_MAX / 2, &m);
	ok(rc == 0 && ((otlp_req_t *)m)->n_resource_profiles == n &&
	    budget_live == OTLP_REQ->sizeof_message + n * (sizeof (void *) +
	    msz) && budget_peak <= budget_live + n * sizeof (void *) * 2,
	    "%zu messages in an array hold what they are (peak %zu, kept %zu)",
	    n, budget_peak, budget_live);
	protobuf_c_message_free_unpacked(m, &a);
	ok(budget_live == 0, "all given back");
	free(big);
}

static void
test_prefixes(const char *req)
{
	ProtobufCMessage *m = NULL;
	char *cause, *copy;
	size_t len = strlen(req), i, refused_n = 0;

	for (i = 0; i < len; i++) {
		/* An exact-size copy: ASan sees any read past its end. */
		copy = malloc(i > 0 ? i : 1);
		memcpy(copy, req, i);
		cause = NULL;
		if (pbjson_decode_text(OTLP_REQ, copy, i, PBJSON_OTLP, NULL, &m,
		    &cause) != 0 && m == NULL && cause != NULL &&
		    strstr(cause, "bad JSON at line 1, column ") != NULL)
			refused_n++;
		else if (m != NULL)
			protobuf_c_message_free_unpacked(m, NULL);
		free(cause);
		free(copy);
	}
	ok(refused_n == len, "every one of %zu prefixes of a request is bad "
	    "JSON (%zu)", len, refused_n);
}

static void
test_api(void)
{
	Querier__V1__FlameGraph fg = QUERIER__V1__FLAME_GRAPH__INIT;
	char *names[3] = { "a", "b", "c" }, *text = NULL, *cause = NULL;
	ProtobufCMessage *m = NULL;
	json_t *j;
	size_t len;
	int rc;

	fg.names = names;
	fg.n_names = 3;
	ok(pbjson_encode(&fg.base, 0, 10, &text, &len, &cause) == -1 &&
	    text == NULL && strstr(cause, "10 bytes") != NULL,
	    "output past its bound refused");
	free(cause);
	cause = NULL;
	ok(pbjson_encode(&fg.base, 0, 23, &text, &len, &cause) == 0 &&
	    len == 23 && strcmp(text, "{\"names\":[\"a\",\"b\",\"c\"]}") == 0,
	    "output of exactly its bound written");
	free(text);
	ok(pbjson_encode(&fg.base, 0, 22, &text, &len, &cause) == -1,
	    "one byte less refused");
	free(cause);
	j = json_pack("{s:s, s:s, s:{s:[{s:s}]}, s:I}", "profileTypeID", "x",
	    "label_selector", "{}", "stackTraceSelector", "callSite", "name",
	    "f", "maxNodes", (json_int_t)5);
	ok(pbjson_decode(SMS_REQ, j, 0, NULL, &m, &cause) == 0 &&
	    strcmp(((Querier__V1__SelectMergeStacktracesRequest *)m)->
	    label_selector, "{}") == 0 &&
	    ((Querier__V1__SelectMergeStacktracesRequest *)m)->max_nodes == 5,
	    "pbjson_decode reads a jansson tree");
	protobuf_c_message_free_unpacked(m, NULL);
	json_decref(j);
	j = json_pack("{s:{s:s}}", "left", "start", "x");
	cause = NULL;
	rc = pbjson_decode(&querier__v1__diff_request__descriptor, j, 0, NULL,
	    &m, &cause);
	ok(rc == -1 && m == NULL && cause != NULL && strcmp(cause, "left.start: "
	    "not an integer (\"x\")") == 0, "and names the path: %s",
	    cause != NULL ? cause : "-");
	free(cause);
	json_decref(j);
	j = json_pack("[i]", 1);
	ok(pbjson_decode(SMS_REQ, j, 0, NULL, &m, &cause) == -1 && m == NULL &&
	    strstr(cause, "not an object") != NULL, "a tree not an object");
	free(cause);
	json_decref(j);
}

int
main(void)
{
	const char *req = "{\"resourceProfiles\":[{\"resource\":{\"attributes\""
	    ":[{\"key\":\"service.name\",\"value\":{\"stringValue\":\"api\"}},"
	    "{\"key\":\"a\",\"value\":{\"arrayValue\":{\"values\":[{\"intValue\""
	    ":1},{\"bytesValue\":\"AAEC\"}]}}}]},\"scopeProfiles\":[{"
	    "\"profiles\":[{\"profileId\":\"0102ff\",\"attributeIndices\":[1,2,"
	    "3,4,5],\"samples\":[{\"stackIndex\":1,\"values\":[\"10\"],"
	    "\"timestampsUnixNano\":[\"1\",\"2\"]}]}]}]}],\"dictionary\":{"
	    "\"stringTable\":[\"\",\"cpu\",\"nanoseconds\"],\"linkTable\":[{}]}}";

	test_corpus();
	test_exact_query();
	test_exact_series();
	test_exact_misc();
	test_decode();
	test_decode_all();
	test_refusals();
	test_syntax();
	test_otlp();
	test_budget(req);
	test_prefixes(req);
	test_api();
	return tap_done();
}
