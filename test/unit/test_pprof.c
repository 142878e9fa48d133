/*
 * Unit tests of proto/pprof.c built in memory: bounded gunzip (limits,
 * multi-member, raw passthrough, trailing and truncated data), decode
 * failures, every validation error with its cause text, the summary and an
 * encode+gzip round trip.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "common/arena.h"
#include "proto/pprof.h"
#include "test/lib/tap.h"

/* A small valid profile whose parts the tests break one at a time. */
struct fixture {
	pprof_profile_t			 p;
	char				*strings[10];
	Perftools__Profiles__ValueType	 st[2], period;
	Perftools__Profiles__ValueType	*stp[2];
	Perftools__Profiles__Mapping	 m[1];
	Perftools__Profiles__Mapping	*mp[1];
	Perftools__Profiles__Function	 f[2];
	Perftools__Profiles__Function	*fp[2];
	Perftools__Profiles__Line	 ln[3];
	Perftools__Profiles__Line	*lnp[3];
	Perftools__Profiles__Location	 l[2];
	Perftools__Profiles__Location	*lp[2];
	Perftools__Profiles__Label	 lb[1];
	Perftools__Profiles__Label	*lbp[1];
	uint64_t			 s0loc[2], s1loc[1];
	int64_t				 s0val[2], s1val[2];
	Perftools__Profiles__Sample	 s[2];
	Perftools__Profiles__Sample	*sp[2];
	int64_t				 comment[1];
};

static const char *fixture_strings[10] = {
	"", "samples", "count", "cpu", "nanoseconds", "main.f", "f.go",
	"/bin/x", "endpoint", "/api"
};

/* Fills fx with a valid two-sample CPU profile. */
static void
fixture_init(struct fixture *fx)
{
	pprof_profile_t				 p0 =
	    PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType		 vt0 =
	    PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	Perftools__Profiles__Mapping		 m0 =
	    PERFTOOLS__PROFILES__MAPPING__INIT;
	Perftools__Profiles__Function		 f0 =
	    PERFTOOLS__PROFILES__FUNCTION__INIT;
	Perftools__Profiles__Line		 ln0 =
	    PERFTOOLS__PROFILES__LINE__INIT;
	Perftools__Profiles__Location		 l0 =
	    PERFTOOLS__PROFILES__LOCATION__INIT;
	Perftools__Profiles__Label		 lb0 =
	    PERFTOOLS__PROFILES__LABEL__INIT;
	Perftools__Profiles__Sample		 s0 =
	    PERFTOOLS__PROFILES__SAMPLE__INIT;
	size_t					 i;

	memset(fx, 0, sizeof *fx);
	fx->p = p0;
	for (i = 0; i < 10; i++)
		fx->strings[i] = (char *)fixture_strings[i];
	fx->p.n_string_table = 10;
	fx->p.string_table = fx->strings;

	fx->st[0] = vt0;
	fx->st[0].type = 1;
	fx->st[0].unit = 2;
	fx->st[1] = vt0;
	fx->st[1].type = 3;
	fx->st[1].unit = 4;
	fx->stp[0] = &fx->st[0];
	fx->stp[1] = &fx->st[1];
	fx->p.n_sample_type = 2;
	fx->p.sample_type = fx->stp;
	fx->period = vt0;
	fx->period.type = 3;
	fx->period.unit = 4;
	fx->p.period_type = &fx->period;
	fx->p.period = 10000000;
	fx->p.time_nanos = 1795307233638768938;
	fx->p.duration_nanos = 1140259459;
	fx->comment[0] = 7;

	fx->m[0] = m0;
	fx->m[0].id = 1;
	fx->m[0].memory_start = 0x400000;
	fx->m[0].memory_limit = 0x500000;
	fx->m[0].filename = 7;
	fx->mp[0] = &fx->m[0];
	fx->p.n_mapping = 1;
	fx->p.mapping = fx->mp;

	for (i = 0; i < 2; i++) {
		fx->f[i] = f0;
		fx->f[i].id = i + 1;
		fx->f[i].name = 5;
		fx->f[i].system_name = 5;
		fx->f[i].filename = 6;
		fx->fp[i] = &fx->f[i];
	}
	fx->p.n_function = 2;
	fx->p.function = fx->fp;

	for (i = 0; i < 3; i++) {
		fx->ln[i] = ln0;
		fx->ln[i].function_id = i == 2 ? 2 : 1;
		fx->ln[i].line = 10 + (int64_t)i;
		fx->lnp[i] = &fx->ln[i];
	}
	for (i = 0; i < 2; i++) {
		fx->l[i] = l0;
		fx->l[i].id = i + 1;
		fx->l[i].mapping_id = 1;
		fx->l[i].address = 0x401000 + 0x10 * i;
		fx->lp[i] = &fx->l[i];
	}
	fx->l[0].n_line = 2;		/* an inlined call */
	fx->l[0].line = &fx->lnp[0];
	fx->l[1].n_line = 1;
	fx->l[1].line = &fx->lnp[2];
	fx->p.n_location = 2;
	fx->p.location = fx->lp;

	fx->lb[0] = lb0;
	fx->lb[0].key = 8;
	fx->lb[0].str = 9;
	fx->lbp[0] = &fx->lb[0];
	fx->s0loc[0] = 1;
	fx->s0loc[1] = 2;
	fx->s1loc[0] = 2;
	fx->s0val[0] = 1;
	fx->s0val[1] = 10000000;
	fx->s1val[0] = 2;
	fx->s1val[1] = 20000000;
	for (i = 0; i < 2; i++) {
		fx->s[i] = s0;
		fx->sp[i] = &fx->s[i];
	}
	fx->s[0].n_location_id = 2;
	fx->s[0].location_id = fx->s0loc;
	fx->s[0].n_value = 2;
	fx->s[0].value = fx->s0val;
	fx->s[0].n_label = 1;
	fx->s[0].label = fx->lbp;
	fx->s[1].n_location_id = 1;
	fx->s[1].location_id = fx->s1loc;
	fx->s[1].n_value = 2;
	fx->s[1].value = fx->s1val;
	fx->p.n_sample = 2;
	fx->p.sample = fx->sp;
}

/* Gzips buf into a new buffer (one member). */
static uint8_t *
gzip_buf(const uint8_t *buf, size_t len, size_t *outlen)
{
	z_stream	 zs;
	uint8_t		*out;
	size_t		 cap;

	memset(&zs, 0, sizeof zs);
	if (deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8,
	    Z_DEFAULT_STRATEGY) != Z_OK)
		abort();
	cap = deflateBound(&zs, len);
	out = malloc(cap);
	zs.next_in = (Bytef *)(uintptr_t)buf;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	if (deflate(&zs, Z_FINISH) != Z_STREAM_END)
		abort();
	*outlen = cap - zs.avail_out;
	deflateEnd(&zs);
	return out;
}

/* Calls pprof_validate and checks the verdict and that cause has want. */
static void
expect_invalid(const pprof_profile_t *p, const char *want, const char *desc)
{
	char	*cause = NULL;
	int	 ret;

	ret = pprof_validate(p, &cause);
	ok(ret == PPROF_EINVAL && cause != NULL && strstr(cause, want) != NULL,
	    "validate rejects %s: \"%s\"", desc, cause ? cause : "(none)");
	free(cause);
}

/* Calls pprof_validate and expects success. */
static void
expect_valid(const pprof_profile_t *p, const char *desc)
{
	char	*cause = NULL;
	int	 ret;

	ret = pprof_validate(p, &cause);
	ok(ret == 0, "validate accepts %s%s%s", desc, cause ? ": " : "",
	    cause ? cause : "");
	free(cause);
}

/* Bounded inflate: limits, members, raw input, trailing and cut data. */
static void
test_inflate(void)
{
	enum { N = 100000 };
	uint8_t		*plain, *gz, *gz2, *two, *out = NULL;
	size_t		 gzlen, gz2len, outlen, i;
	char		*cause = NULL;
	int		 ret;
	static const uint8_t raw[] = { 0x0a, 0x04, 0x08, 0x01, 0x10, 0x02 };

	plain = malloc(N);
	for (i = 0; i < N; i++)
		plain[i] = (uint8_t)((i * 7919) >> 5);
	gz = gzip_buf(plain, N, &gzlen);
	ok(pprof_is_gzip(gz, gzlen) && !pprof_is_gzip(raw, sizeof raw) &&
	    !pprof_is_gzip(gz, 1), "is_gzip checks the magic");

	ret = pprof_inflate(gz, gzlen, N, &out, &outlen, &cause);
	ok(ret == 0 && outlen == N && memcmp(out, plain, N) == 0,
	    "inflate at exactly the limit succeeds");
	free(out);
	out = NULL;

	ret = pprof_inflate(gz, gzlen, N - 1, &out, &outlen, &cause);
	ok(ret == PPROF_ETOOBIG && out == NULL && cause != NULL &&
	    strcmp(cause, "inflated profile exceeds 99999 bytes") == 0,
	    "inflate one byte past the limit is too big: %s", cause);
	free(cause);
	cause = NULL;

	ret = pprof_inflate(gz, gzlen, 1000, &out, &outlen, &cause);
	ok(ret == PPROF_ETOOBIG, "inflate far past a small limit is too big");
	free(cause);
	cause = NULL;

	ret = pprof_inflate(raw, sizeof raw, 1 << 20, &out, &outlen, &cause);
	ok(ret == 0 && outlen == sizeof raw && memcmp(out, raw, outlen) == 0,
	    "raw protobuf is passed through");
	free(out);
	out = NULL;

	ret = pprof_inflate(raw, sizeof raw, 3, &out, &outlen, &cause);
	ok(ret == PPROF_ETOOBIG, "raw body over the limit is too big");
	free(cause);
	cause = NULL;

	ret = pprof_inflate(raw, 0, 1 << 20, &out, &outlen, &cause);
	ok(ret == PPROF_EINVAL && cause && strcmp(cause, "empty body") == 0,
	    "empty body is rejected");
	free(cause);
	cause = NULL;

	/* Two members, each half of plain, concatenated. */
	gz2 = gzip_buf(plain + N / 2, N - N / 2, &gz2len);
	free(gz);
	gz = gzip_buf(plain, N / 2, &gzlen);
	two = malloc(gzlen + gz2len + 12);
	memcpy(two, gz, gzlen);
	memcpy(two + gzlen, gz2, gz2len);
	ret = pprof_inflate(two, gzlen + gz2len, N, &out, &outlen, &cause);
	ok(ret == 0 && outlen == N && memcmp(out, plain, N) == 0,
	    "two gzip members inflate to their concatenation");
	free(out);
	out = NULL;

	ret = pprof_inflate(two, gzlen + gz2len, N - 1, &out, &outlen, &cause);
	ok(ret == PPROF_ETOOBIG, "the limit covers all members together");
	free(cause);
	cause = NULL;

	memcpy(two + gzlen + gz2len, "JUNKJUNKJUNK", 12);
	ret = pprof_inflate(two, gzlen + gz2len + 12, N, &out, &outlen,
	    &cause);
	ok(ret == PPROF_EINVAL && cause && strcmp(cause,
	    "gzip: 12 bytes of trailing data after the gzip stream") == 0,
	    "trailing junk is rejected: %s", cause);
	free(cause);
	cause = NULL;

	ret = pprof_inflate(two, gzlen / 2, N, &out, &outlen, &cause);
	ok(ret == PPROF_EINVAL && cause &&
	    strcmp(cause, "gzip: unexpected end of stream") == 0,
	    "truncated gzip is rejected: %s", cause);
	free(cause);
	cause = NULL;

	ret = pprof_inflate(two, gzlen - 4, N, &out, &outlen, &cause);
	ok(ret == PPROF_EINVAL && cause &&
	    strcmp(cause, "gzip: unexpected end of stream") == 0,
	    "gzip without its length trailer is rejected");
	free(cause);
	cause = NULL;

	ret = pprof_inflate(two, gzlen + gz2len / 2, N, &out, &outlen, &cause);
	ok(ret == PPROF_EINVAL && cause &&
	    strcmp(cause, "gzip: unexpected end of stream") == 0,
	    "truncated second member is rejected");
	free(cause);
	cause = NULL;

	/* A bad compression method byte in the header. */
	two[2] = 0x07;
	ret = pprof_inflate(two, gzlen, N, &out, &outlen, &cause);
	ok(ret == PPROF_EINVAL && cause && strncmp(cause, "gzip: ", 6) == 0,
	    "bad gzip header is rejected: %s", cause);
	free(cause);
	cause = NULL;

	/* A corrupted CRC. */
	memcpy(two, gz, gzlen);
	two[gzlen - 8] ^= 0xff;
	ret = pprof_inflate(two, gzlen, N, &out, &outlen, &cause);
	ok(ret == PPROF_EINVAL && cause && strncmp(cause, "gzip: ", 6) == 0,
	    "bad gzip checksum is rejected: %s", cause);
	free(cause);
	cause = NULL;

	free(gz);
	gz = gzip_buf(plain, 0, &gzlen);
	ret = pprof_inflate(gz, gzlen, 10, &out, &outlen, &cause);
	ok(ret == 0 && outlen == 0, "gzip of nothing inflates to nothing");
	free(out);
	out = NULL;
	ret = pprof_inflate(gz, gzlen, 0, &out, &outlen, &cause);
	ok(ret == 0 && outlen == 0, "gzip of nothing fits a zero limit");
	free(out);
	out = NULL;

	/* 16 MiB of zeros (a small bomb) against a 1 MiB cap. */
	free(plain);
	plain = calloc(1, 16 << 20);
	free(gz);
	gz = gzip_buf(plain, 16 << 20, &gzlen);
	ret = pprof_inflate(gz, gzlen, 1 << 20, &out, &outlen, &cause);
	ok(ret == PPROF_ETOOBIG && out == NULL,
	    "a %zu-byte gzip bomb stops at the cap", gzlen);
	free(cause);
	cause = NULL;

	free(plain);
	free(gz);
	free(gz2);
	free(two);
}

/* Decode failures: garbage and the legacy gperftools format. */
static void
test_decode(void)
{
	static const uint8_t	garbage[] = { 0x0a, 0xff, 0xff, 0xff, 0xff,
	    0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x01 };
	uint8_t			legacy[64];
	pprof_profile_t		*p;
	char			*cause = NULL;
	uint64_t		 words[5] = { 0, 3, 0, 4000, 0 };
	size_t			 i, k;

	p = pprof_decode(garbage, sizeof garbage, NULL, &cause);
	ok(p == NULL && cause && strcmp(cause,
	    "not a pprof profile: protobuf decode failed") == 0,
	    "huge declared length fails to decode: %s", cause);
	free(cause);
	cause = NULL;

	memset(legacy, 0, sizeof legacy);
	for (i = 0; i < 5; i++)
		for (k = 0; k < 8; k++)
			legacy[i * 8 + k] = (uint8_t)(words[i] >> (8 * k));
	p = pprof_decode(legacy, sizeof legacy, NULL, &cause);
	ok(p == NULL && cause && strstr(cause, "a legacy gperftools CPU "
	    "profile, not a pprof") != NULL,
	    "legacy gperftools header is recognised: %s", cause);
	free(cause);
	cause = NULL;

	p = pprof_decode(garbage, 0, NULL, &cause);
	ok(p != NULL, "zero bytes decode to an empty message");
	expect_invalid(p, "string table is empty", "an empty message");
	pprof_free(p, NULL);
	pprof_free(NULL, NULL);
}

/* The fixture is valid; the string table and every string index. */
static void
test_validate_strings(void)
{
	struct fixture	 fx;
	pprof_profile_t	*p = &fx.p;

	fixture_init(&fx);
	expect_valid(p, "the fixture");

	fx.p.n_string_table = 0;
	expect_invalid(p, "string table is empty", "no strings");
	fixture_init(&fx);
	fx.strings[0] = (char *)"x";
	expect_invalid(p, "string table entry 0 is not empty", "strings[0]");

	fixture_init(&fx);
	fx.st[1].unit = 99;
	expect_invalid(p, "sample type 1: unit string index 99 out of range "
	    "(10 strings)", "sample type unit");
	fixture_init(&fx);
	fx.st[0].type = -1;
	expect_invalid(p, "sample type 0: type string index -1 out of range",
	    "negative sample type");
	fixture_init(&fx);
	fx.period.type = 10;
	expect_invalid(p, "period type: type string index 10 out of range",
	    "period type");
	fixture_init(&fx);
	fx.p.drop_frames = 11;
	expect_invalid(p, "drop_frames: string index 11", "drop_frames");
	fixture_init(&fx);
	fx.p.keep_frames = -3;
	expect_invalid(p, "keep_frames: string index -3", "keep_frames");
	fixture_init(&fx);
	fx.p.default_sample_type = 12;
	expect_invalid(p, "default_sample_type: string index 12",
	    "default_sample_type");
	fixture_init(&fx);
	fx.p.doc_url = 13;
	expect_invalid(p, "doc_url: string index 13", "doc_url");
	fixture_init(&fx);
	fx.p.n_comment = 1;
	fx.p.comment = fx.comment;
	expect_valid(p, "a comment");
	fx.comment[0] = 10;
	expect_invalid(p, "comment 0: string index 10", "comment");

	fixture_init(&fx);
	fx.m[0].filename = 10;
	expect_invalid(p, "mapping 1: filename string index 10", "filename");
	fixture_init(&fx);
	fx.m[0].build_id = 10;
	expect_invalid(p, "mapping 1: build_id string index 10", "build_id");
	fixture_init(&fx);
	fx.f[1].name = 9999;
	expect_invalid(p, "function 2: name string index 9999 out of range "
	    "(10 strings)", "function name");
	fixture_init(&fx);
	fx.f[0].system_name = 10;
	expect_invalid(p, "function 1: system_name string index 10",
	    "function system_name");
	fixture_init(&fx);
	fx.f[0].filename = -1;
	expect_invalid(p, "function 1: filename string index -1",
	    "function filename");
}

/* Ids: 0, duplicates, sparse ids through the sorted table. */
static void
test_validate_ids(void)
{
	struct fixture	 fx;
	pprof_profile_t	*p = &fx.p;

	fixture_init(&fx);
	fx.m[0].id = 0;
	expect_invalid(p, "mapping at index 0 has id 0", "mapping id 0");
	fixture_init(&fx);
	fx.f[1].id = 0;
	expect_invalid(p, "function at index 1 has id 0", "function id 0");
	fixture_init(&fx);
	fx.l[0].id = 0;
	expect_invalid(p, "location at index 0 has id 0", "location id 0");
	fixture_init(&fx);
	fx.f[1].id = 1;
	expect_invalid(p, "function 1: duplicate id", "duplicate function");
	fixture_init(&fx);
	fx.l[0].id = 1000000;
	fx.l[1].id = 1000000;
	expect_invalid(p, "location 1000000: duplicate id",
	    "duplicate sparse location ids");

	/* Sparse ids go through the sorted table. */
	fixture_init(&fx);
	fx.l[1].id = 1000000;
	fx.s0loc[1] = 1000000;
	fx.s1loc[0] = 1000000;
	fx.f[0].id = UINT64_MAX;
	fx.ln[0].function_id = UINT64_MAX;
	fx.ln[1].function_id = UINT64_MAX;
	expect_valid(p, "sparse location and function ids");
	fx.s1loc[0] = 999999;
	expect_invalid(p, "sample 1: location id 999999 not found",
	    "a missing sparse location id");
}

/* References: mapping, function, location ids; values; label strings. */
static void
test_validate_refs(void)
{
	struct fixture	 fx;
	pprof_profile_t	*p = &fx.p;

	fixture_init(&fx);
	fx.l[1].mapping_id = 5;
	expect_invalid(p, "location 2: mapping id 5 not found",
	    "unknown mapping id");
	fx.l[1].mapping_id = 0;
	expect_valid(p, "a location without mapping");
	fixture_init(&fx);
	fx.ln[2].function_id = 7;
	expect_invalid(p, "location 2: line 0: function id 7 not found",
	    "unknown function id");
	fx.ln[2].function_id = 0;
	expect_valid(p, "a line without function");

	fixture_init(&fx);
	fx.s0loc[0] = 42;
	expect_invalid(p, "sample 0: location id 42 not found",
	    "unknown location id");
	fixture_init(&fx);
	fx.s[0].n_value = 1;
	expect_invalid(p, "sample 0: 1 values for 2 sample types",
	    "too few values");
	fixture_init(&fx);
	fx.p.n_sample_type = 1;
	expect_invalid(p, "sample 0: 2 values for 1 sample types",
	    "too many values");
	fixture_init(&fx);
	fx.p.n_sample_type = 0;
	fx.s[0].n_value = fx.s[1].n_value = 0;
	expect_invalid(p, "2 samples but no sample types", "no sample types");
	fixture_init(&fx);
	fx.lb[0].key = 10;
	expect_invalid(p, "sample 0: label 0: key string index 10",
	    "label key");
	fixture_init(&fx);
	fx.lb[0].str = -2;
	expect_invalid(p, "sample 0: label 0: str string index -2",
	    "label str");
	fixture_init(&fx);
	fx.lb[0].str = 0;
	fx.lb[0].num = 4096;
	fx.lb[0].num_unit = 10;
	expect_invalid(p, "sample 0: label 0: num_unit string index 10",
	    "label num_unit");
}

/* Empty stacks, zero samples, dense ids at the direct table's limit. */
static void
test_validate_edges(void)
{
	struct fixture	 fx;
	pprof_profile_t	*p = &fx.p;

	fixture_init(&fx);
	fx.s[1].n_location_id = 0;
	expect_valid(p, "a sample with an empty stack");
	fx.p.n_sample = 0;
	expect_valid(p, "zero samples");
	fx.p.n_sample_type = 0;
	expect_valid(p, "zero samples and zero sample types");

	/* Many dense ids: the direct table, at its sparse threshold too. */
	fixture_init(&fx);
	fx.l[1].id = 8;
	fx.s0loc[1] = fx.s1loc[0] = 8;
	expect_valid(p, "location ids at the direct-table threshold");
	fx.s1loc[0] = 7;
	expect_invalid(p, "sample 1: location id 7 not found",
	    "a hole in dense ids");
	fx.s1loc[0] = 9;
	expect_invalid(p, "sample 1: location id 9 not found",
	    "an id past the largest");
}

/* Summary fields and the sample_types string. */
static void
test_summary(void)
{
	struct fixture		fx;
	struct pprof_summary	sum;

	fixture_init(&fx);
	pprof_summarize(&fx.p, &sum);
	ok(sum.samples == 2 && sum.sample_types != NULL &&
	    strcmp(sum.sample_types, "samples/count,cpu/nanoseconds") == 0 &&
	    sum.time_nanos == 1795307233638768938 &&
	    sum.duration_nanos == 1140259459,
	    "summary: %" PRId64 " samples, \"%s\"", sum.samples,
	    sum.sample_types);
	pprof_summary_free(&sum);
	ok(sum.sample_types == NULL, "summary_free clears sample_types");

	fx.p.n_sample_type = 0;
	fx.p.n_sample = 0;
	pprof_summarize(&fx.p, &sum);
	ok(sum.samples == 0 && strcmp(sum.sample_types, "") == 0,
	    "summary of no sample types is an empty string");
	pprof_summary_free(&sum);
	pprof_summary_free(NULL);
}

/* encode_gzip, then inflate+decode+validate gives the same profile. */
static void
test_roundtrip(void)
{
	struct fixture		 fx;
	struct pprof_summary	 sum;
	pprof_profile_t		*q, *r;
	struct arena		*arena;
	ProtobufCAllocator	*al;
	uint8_t			*gz = NULL, *raw = NULL;
	char			*big;
	size_t			 gzlen = 0, rawlen = 0, i;
	char			*cause = NULL;
	int			 ret, same;

	fixture_init(&fx);
	ret = pprof_encode_gzip(&fx.p, &gz, &gzlen, &cause);
	ok(ret == 0 && gz != NULL && pprof_is_gzip(gz, gzlen),
	    "encode_gzip gives gzip (%zu bytes)", gzlen);
	ret = pprof_inflate(gz, gzlen, 1 << 20, &raw, &rawlen, &cause);
	ok(ret == 0 && rawlen ==
	    perftools__profiles__profile__get_packed_size(&fx.p),
	    "it inflates to the packed size (%zu bytes)", rawlen);
	q = pprof_decode(raw, rawlen, NULL, &cause);
	ok(q != NULL, "it decodes");
	if (q == NULL)
		goto out;
	expect_valid(q, "the round-tripped profile");
	ok(q->n_sample == 2 && q->n_location == 2 && q->n_function == 2 &&
	    q->n_mapping == 1 && q->n_sample_type == 2 &&
	    q->n_string_table == 10, "counts survive the round trip");
	same = q->sample[0]->n_value == 2 &&
	    q->sample[0]->value[1] == 10000000 &&
	    q->sample[1]->value[1] == 20000000 &&
	    q->sample[0]->n_location_id == 2 &&
	    q->sample[0]->location_id[1] == 2 &&
	    q->sample[0]->n_label == 1 && q->sample[0]->label[0]->str == 9 &&
	    q->location[0]->n_line == 2 &&
	    q->location[0]->line[1]->line == 11 &&
	    q->location[1]->address == 0x401010 &&
	    q->time_nanos == fx.p.time_nanos &&
	    q->period == 10000000 && q->period_type != NULL &&
	    q->period_type->type == 3;
	for (i = 0; i < 10; i++)
		same = same && strcmp(q->string_table[i],
		    fixture_strings[i]) == 0;
	ok(same, "values, ids and strings survive the round trip");
	pprof_free(q, NULL);

	ret = pprof_check(gz, gzlen, 1 << 20, &sum, &cause);
	ok(ret == 0 && sum.samples == 2 &&
	    strcmp(sum.sample_types, "samples/count,cpu/nanoseconds") == 0,
	    "pprof_check accepts and summarizes the encoding");
	pprof_summary_free(&sum);
	ret = pprof_check(gz, gzlen, 1 << 20, NULL, &cause);
	ok(ret == 0, "pprof_check works without a summary");

	ret = pprof_check(gz, gzlen, rawlen - 1, &sum, &cause);
	ok(ret == PPROF_ETOOBIG && sum.sample_types == NULL,
	    "pprof_check passes on too big: %s", cause);
	free(cause);
	cause = NULL;

	q = pprof_load(gz, gzlen, 1 << 20, NULL, &cause);
	ok(q != NULL && q->n_sample == 2, "pprof_load returns the profile");
	pprof_free(q, NULL);

	/* Decoding into an arena, with one string too big for a chunk. */
	arena = arena_new(64 * 1024);
	al = arena_allocator(arena);
	big = malloc(300000);
	memset(big, 'x', 299999);
	big[299999] = '\0';
	fx.strings[7] = big;
	free(gz);
	pprof_encode_gzip(&fx.p, &gz, &gzlen, &cause);
	q = pprof_load(gz, gzlen, 1 << 20, al, &cause);
	r = pprof_load(gz, gzlen, 1 << 20, al, &cause);
	ok(q != NULL && r != NULL && q != r && q->n_sample == 2 &&
	    strcmp(q->string_table[7], big) == 0 &&
	    strcmp(r->string_table[7], big) == 0 &&
	    strcmp(r->string_table[9], "/api") == 0 &&
	    r->sample[1]->value[1] == 20000000,
	    "two profiles load into one arena, big string included");
	pprof_free(q, al);
	pprof_free(r, al);
	arena_free(arena);
	arena_free(NULL);
	fx.strings[7] = (char *)fixture_strings[7];
	free(big);

	/* The raw encoding is accepted too. */
	q = pprof_load(raw, rawlen, 1 << 20, NULL, &cause);
	ok(q != NULL && q->n_location == 2, "pprof_load takes raw protobuf");
	pprof_free(q, NULL);

	/* A profile that encodes fine but does not validate. */
	free(gz);
	fx.s0loc[0] = 42;
	pprof_encode_gzip(&fx.p, &gz, &gzlen, &cause);
	ret = pprof_check(gz, gzlen, 1 << 20, &sum, &cause);
	ok(ret == PPROF_EINVAL && cause &&
	    strcmp(cause, "sample 0: location id 42 not found") == 0 &&
	    sum.sample_types == NULL, "pprof_check names the broken id");
	free(cause);
	cause = NULL;
	q = pprof_load(gz, gzlen, 1 << 20, NULL, &cause);
	ok(q == NULL && cause != NULL, "pprof_load refuses it too");
	free(cause);
	cause = NULL;

	ret = pprof_check((const uint8_t *)"hello, world\n", 13, 1 << 20, &sum,
	    &cause);
	ok(ret == PPROF_EINVAL, "plain text is not a profile: %s", cause);
	free(cause);
	cause = NULL;
out:
	free(gz);
	free(raw);
}

int
main(void)
{
	test_inflate();
	test_decode();
	test_validate_strings();
	test_validate_ids();
	test_validate_refs();
	test_validate_edges();
	test_summary();
	test_roundtrip();
	return tap_done();
}
