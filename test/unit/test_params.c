/*
 * Unit tests for collector/params.c: query splitting and decoding, label
 * syntax, every time format, durations, limits, sizes, types, services.
 */
#include <stdlib.h>
#include <string.h>

#include "collector/api/params.h"
#include "common/clock.h"
#include "common/parse.h"
#include "common/utf8.h"
#include "test/lib/tap.h"

#define NS	INT64_C(1000000000)

/* Parses s as a time; returns the value or INT64_MIN on error. */
static int64_t
t(const char *s)
{
	int64_t v;
	char *cause = NULL;

	if (parse_time(s, 1700000000 * NS, &v, &cause) < 0) {
		free(cause);
		return INT64_MIN;
	}
	return v;
}

/* True if params_labels fails with a cause containing want. */
static int
labels_fail(const char *raw, const char *want)
{
	struct label *l;
	size_t n;
	char *cause = NULL;
	int r;

	if (params_labels(raw, 64, &l, &n, &cause) == 0) {
		params_labels_free(l, n);
		return 0;
	}
	r = strstr(cause, want) != NULL;
	if (!r)
		printf("# cause: %s\n", cause);
	free(cause);
	return r;
}

static void
test_query(void)
{
	struct params p;
	char *v = NULL, *cause = NULL;

	ok(params_parse("service=api&type=cpu&labels=a%3Db=c%2Cd,e=f&x",
	    &p, &cause) == 0, "query parses");
	ok(p.n == 4, "four parameters");
	ok(params_get(&p, "service", &v, &cause) == 1 && strcmp(v, "api") == 0,
	    "service decoded");
	free(v);
	ok(strcmp(params_raw(&p, "labels"), "a%3Db=c%2Cd,e=f") == 0,
	    "labels kept raw");
	ok(params_get(&p, "missing", &v, &cause) == 0 && v == NULL,
	    "absent key");
	ok(params_get(&p, "x", &v, &cause) == 1 && strcmp(v, "") == 0,
	    "key without value is empty");
	free(v);
	params_clear(&p);
	ok(params_parse("a=%zz", &p, &cause) == 0 &&
	    params_get(&p, "a", &v, &cause) == -1 && strstr(cause, "a:") != NULL,
	    "bad percent-encoding is an error naming the parameter");
	free(cause);
	cause = NULL;
	params_clear(&p);
	ok(params_parse("a=%2", &p, &cause) == 0 &&
	    params_get(&p, "a", &v, &cause) == -1, "truncated escape rejected");
	free(cause);
	cause = NULL;
	params_clear(&p);
	ok(params_parse("a=x%00y", &p, &cause) == 0 &&
	    params_get(&p, "a", &v, &cause) == -1, "NUL byte rejected");
	free(cause);
	cause = NULL;
	params_clear(&p);
	ok(params_parse("a=b+c", &p, &cause) == 0 &&
	    params_get(&p, "a", &v, &cause) == 1 && strcmp(v, "b c") == 0,
	    "'+' decodes to a space");
	free(v);
	params_clear(&p);
	ok(params_parse(NULL, &p, &cause) == 0 && p.n == 0, "NULL query");
}

static void
test_labels(void)
{
	struct label *l;
	size_t n;
	const char *dup;
	char *cause = NULL;

	ok(params_labels("zone=b,host=a%20b,k=v%3Dw%2Cx", 64, &l, &n,
	    &cause) == 0 && n == 3, "three labels");
	ok(strcmp(l[0].key, "host") == 0 && strcmp(l[0].value, "a b") == 0,
	    "sorted by key, value decoded");
	ok(strcmp(l[1].key, "k") == 0 && strcmp(l[1].value, "v=w,x") == 0,
	    "encoded '=' and ',' stay in the value");
	params_labels_free(l, n);
	ok(params_labels("", 64, &l, &n, &cause) == 0 && n == 0,
	    "empty labels");
	ok(params_labels("a=1,,b=2,", 64, &l, &n, &cause) == 0 && n == 2,
	    "empty items skipped");
	params_labels_free(l, n);
	ok(params_labels("k=%E2%9C%93", 64, &l, &n, &cause) == 0 &&
	    strcmp(l[0].value, "\xe2\x9c\x93") == 0, "UTF-8 value");
	params_labels_free(l, n);
	ok(labels_fail("novalue", "no '='"), "missing '=' rejected");
	ok(params_labels("a%3D1%2Cb%3Dx%20y", 64, &l, &n, &cause) == 0 &&
	    n == 2 && strcmp(l[0].value, "1") == 0 &&
	    strcmp(l[1].value, "x y") == 0,
	    "a wholly encoded value (go tool pprof) is decoded once first");
	params_labels_free(l, n);
	ok(labels_fail("1abc=x", "not valid"), "key starting with digit");
	ok(labels_fail("a%20b=x", "not valid"), "key with a space");
	ok(labels_fail("a=1,b=2,c=3", "more than") == 0, "three under limit");
	ok(params_labels("a=1,b=2,c=3", 2, &l, &n, &cause) == -1 &&
	    strstr(cause, "more than 2 labels") != NULL, "count limit");
	free(cause);
	cause = NULL;
	{
		char big[700];
		memset(big, 'x', sizeof big);
		memcpy(big, "k=", 2);
		big[sizeof big - 1] = '\0';
		ok(labels_fail(big, "longer than 512"), "value length limit");
	}
	{
		char key[80];
		memset(key, 'k', 70);
		strcpy(key + 70, "=v");
		ok(labels_fail(key, "not valid"), "key longer than 64 rejected");
		key[64] = '\0';
		strcat(key, "=v");
		ok(labels_fail(key, "x") == 0, "key of 64 accepted");
	}
	ok(params_label_key_valid("_a.b-c9"), "key with _ . - digits");
	ok(params_labels("h=a,h=b", 64, &l, &n, &cause) == 0 &&
	    params_labels_dup_key(l, n, &dup) && strcmp(dup, "h") == 0,
	    "duplicate key detected");
	params_labels_free(l, n);
	ok(labels_fail("k=%FF", "UTF-8"), "non-UTF-8 value rejected");
	ok(labels_fail("k=caf%E9", "UTF-8"), "Latin-1 value rejected");
	ok(labels_fail("k=%C3", "UTF-8"), "truncated UTF-8 value rejected");
	ok(labels_fail("k%C3%A9=v", "not valid"), "non-ASCII key rejected");
}

/* utf8_valid on a literal, NUL bytes included. */
#define U8(lit)	utf8_valid(lit, sizeof lit - 1)

static void
test_utf8(void)
{
	ok(U8(""), "empty string");
	ok(U8("plain ascii ~\x7f"), "ASCII");
	ok(U8("caf\xc3\xa9") && U8("\xc2\x80") && U8("\xdf\xbf"),
	    "2-byte sequences");
	ok(U8("\xe2\x9c\x93") && U8("\xe0\xa0\x80") && U8("\xef\xbf\xbf") &&
	    U8("\xed\x9f\xbf") && U8("\xee\x80\x80"), "3-byte sequences");
	ok(U8("\xf0\x9f\x98\x80") && U8("\xf0\x90\x80\x80") &&
	    U8("\xf4\x8f\xbf\xbf"), "4-byte sequences");
	ok(!U8("caf\xe9") && !U8("\xff") && !U8("\xfe") && !U8("\x80") &&
	    !U8("a\xbf" "b"), "Latin-1, 0xFF, 0xFE and lone continuations");
	ok(!U8("\xc3") && !U8("\xe2\x9c") && !U8("\xf0\x9f\x98") &&
	    !U8("\xc3x") && !U8("\xe2\x9cx"), "truncated sequences");
	ok(!U8("\xc0\xaf") && !U8("\xc1\xbf") && !U8("\xe0\x80\xaf") &&
	    !U8("\xe0\x9f\xbf") && !U8("\xf0\x80\x80\xaf") &&
	    !U8("\xf0\x8f\xbf\xbf"), "overlong encodings");
	ok(!U8("\xed\xa0\x80") && !U8("\xed\xbf\xbf") &&
	    !U8("\xed\xa0\xbd\xed\xb8\x80"), "surrogates U+D800..DFFF");
	ok(!U8("\xf4\x90\x80\x80") && !U8("\xf5\x80\x80\x80") &&
	    !U8("\xf7\xbf\xbf\xbf") && !U8("\xf8\x88\x80\x80\x80"),
	    "code points above U+10FFFF");
	ok(!U8("a\0b") && !U8("\0"), "NUL byte");
	ok(utf8_valid("ab\xff", 2), "only len bytes are checked");
	ok(params_service_valid("caf\xc3\xa9") &&
	    !params_service_valid("caf\xe9") && !params_service_valid("\xc3"),
	    "service names must be UTF-8");
}

static void
test_times(void)
{
	int64_t d;
	char *cause = NULL, buf[64];

	ok(t("2023-11-14T22:13:20") == 1700000000 * NS,
	    "profefe format is UTC");
	ok(t("2023-11-14T22:13:20Z") == 1700000000 * NS, "RFC 3339 Z");
	ok(t("2023-11-14T23:13:20+01:00") == 1700000000 * NS,
	    "RFC 3339 with offset");
	ok(t("2023-11-14T21:13:20.5-01:00") == 1700000000 * NS + NS / 2,
	    "RFC 3339 with fraction and negative offset");
	ok(t("2023-11-14T22:13:20.123456789Z") == 1700000000 * NS + 123456789,
	    "nanosecond fraction");
	ok(t("1700000000") == 1700000000 * NS, "Unix seconds");
	ok(t("now") == 1700000000 * NS, "now");
	ok(t("now-1h") == (1700000000 - 3600) * NS, "now-1h");
	ok(t("now-15m") == (1700000000 - 900) * NS, "now-15m");
	ok(t("now-1h30m") == (1700000000 - 5400) * NS, "now-1h30m");
	ok(t("now-7d") == (1700000000 - 7 * 86400) * NS, "now-7d");
	ok(t("2024-02-29T00:00:00") != INT64_MIN, "leap day");
	ok(t("2023-02-29T00:00:00") == INT64_MIN, "no leap day in 2023");
	ok(t("2023-13-01T00:00:00") == INT64_MIN, "month 13");
	ok(t("2023-11-14T24:00:00") == INT64_MIN, "hour 24");
	ok(t("yesterday") == INT64_MIN, "words rejected");
	ok(t("now-") == INT64_MIN, "now- without duration");
	ok(t("now-5x") == INT64_MIN, "unknown unit");
	ok(t("") == INT64_MIN, "empty time");
	ok(t("2023-11-14T22:13:20Zjunk") == INT64_MIN, "trailing junk");
	ok(parse_time("junk", 0, &d, &cause) == -1 &&
	    strstr(cause, "junk") != NULL, "cause quotes the input");
	free(cause);
	cause = NULL;
	ok(parse_duration("1.5s", &d, &cause) == 0 && d == NS + NS / 2,
	    "fractional duration");
	ok(parse_duration("250ms", &d, &cause) == 0 && d == 250000000,
	    "milliseconds");
	ok(parse_duration("0", &d, &cause) == 0 && d == 0, "zero duration");
	clock_format(1700000000 * NS, buf, sizeof buf);
	ok(strcmp(buf, "2023-11-14T22:13:20Z") == 0, "format whole seconds");
	clock_format(1700000000 * NS + 120000000, buf, sizeof buf);
	ok(strcmp(buf, "2023-11-14T22:13:20.12Z") == 0,
	    "format trims trailing zeros");
}

static void
test_numbers(void)
{
	int64_t v;
	uint64_t u;
	char *cause = NULL;

	ok(parse_int("10", 1, 100, &v, &cause) == 0 && v == 10, "int");
	ok(parse_int("0", 1, 100, &v, &cause) == -1, "int below range");
	free(cause);
	cause = NULL;
	ok(parse_int("1x", 1, 100, &v, &cause) == -1, "int with junk");
	free(cause);
	cause = NULL;
	ok(parse_int("", 1, 100, &v, &cause) == -1, "empty int");
	free(cause);
	cause = NULL;
	ok(parse_size("32M", &u, &cause) == 0 && u == 32 << 20, "32M");
	ok(parse_size("1GiB", &u, &cause) == 0 && u == 1 << 30, "1GiB");
	ok(parse_size("100", &u, &cause) == 0 && u == 100, "plain bytes");
	ok(parse_size("-1", &u, &cause) == -1, "negative size");
	free(cause);
	cause = NULL;
	ok(params_type_valid("cpu") && params_type_valid("trace") &&
	    params_type_valid("threadcreate") && !params_type_valid("wall") &&
	    !params_type_valid(""), "types");
	ok(params_type_index("cpu") == 0 && params_type_index("trace") ==
	    PARAMS_NTYPES - 1 && params_type_index("wall") == -1 &&
	    strcmp(params_type_name(params_type_index("mutex")), "mutex") == 0
	    && params_type_name(PARAMS_NTYPES) == NULL &&
	    params_type_name(-1) == NULL, "types by index");
	ok(params_service_valid("api-gw.v2") && !params_service_valid("") &&
	    !params_service_valid("a\nb"), "services");
}

static void
test_query_args(void)
{
	struct params p;
	struct params_query qa;
	char *cause = NULL, *v = NULL;
	int64_t now = 1700000000 * NS;

	params_parse("service=api&type=cpu&from=now-2h&labels=b=2,a=1&limit=5",
	    &p, &cause);
	ok(params_query_parse(&p, now, 1, 100, 1000, &qa, &cause) == 0,
	    "list query parses");
	ok(qa.q.from == now - 7200 * NS && qa.q.to == now, "from/to");
	ok(qa.q.limit == 5 && qa.q.nlabels == 2 &&
	    strcmp(qa.q.labels[0].key, "a") == 0, "limit and labels");
	params_query_clear(&qa);
	params_clear(&p);

	params_parse("service=api", &p, &cause);
	ok(params_query_parse(&p, now, 0, 100, 1000, &qa, &cause) == 0 &&
	    qa.q.to == now && qa.q.from == now - 3600 * NS &&
	    qa.q.limit == 100 && qa.q.type == NULL,
	    "defaults: last hour, default limit, any type");
	params_query_clear(&qa);
	ok(params_query_parse(&p, now, 1, 100, 1000, &qa, &cause) == -1 &&
	    strstr(cause, "type") != NULL, "merge needs a type");
	free(cause);
	cause = NULL;
	params_clear(&p);

	params_parse("type=cpu", &p, &cause);
	ok(params_query_parse(&p, now, 0, 100, 1000, &qa, &cause) == -1 &&
	    strstr(cause, "service") != NULL, "service is required");
	free(cause);
	cause = NULL;
	params_clear(&p);

	params_parse("service=a&from=now&to=now-1h", &p, &cause);
	ok(params_query_parse(&p, now, 0, 100, 1000, &qa, &cause) == -1 &&
	    strstr(cause, "after") != NULL, "from after to");
	free(cause);
	cause = NULL;
	params_clear(&p);

	params_parse("service=a&limit=0", &p, &cause);
	ok(params_query_parse(&p, now, 0, 100, 1000, &qa, &cause) == -1 &&
	    strstr(cause, "limit") != NULL, "limit 0 rejected");
	free(cause);
	cause = NULL;
	params_clear(&p);

	params_parse("service=caf%E9", &p, &cause);
	ok(params_query_parse(&p, now, 0, 100, 1000, &qa, &cause) == -1 &&
	    strstr(cause, "service") != NULL && strstr(cause, "UTF-8") != NULL,
	    "non-UTF-8 service rejected, naming service");
	free(cause);
	cause = NULL;
	params_clear(&p);

	params_parse("service=a&labels=k=%FF", &p, &cause);
	ok(params_query_parse(&p, now, 0, 100, 1000, &qa, &cause) == -1 &&
	    strstr(cause, "labels") != NULL, "non-UTF-8 label value rejected");
	free(cause);
	cause = NULL;
	params_clear(&p);

	params_parse("service=a&type=cpu%FF", &p, &cause);
	ok(params_get(&p, "type", &v, &cause) == -1 &&
	    strstr(cause, "type") != NULL && strstr(cause, "UTF-8") != NULL,
	    "params_get refuses non-UTF-8, naming the parameter");
	free(cause);
	cause = NULL;
	params_clear(&p);

	params_parse("service=a&type=wall", &p, &cause);
	ok(params_query_parse(&p, now, 0, 100, 1000, &qa, &cause) == -1 &&
	    strstr(cause, "bad type") != NULL, "unknown type");
	free(cause);
	params_clear(&p);
}

int
main(void)
{
	test_query();
	test_labels();
	test_utf8();
	test_times();
	test_numbers();
	test_query_args();
	return tap_done();
}
