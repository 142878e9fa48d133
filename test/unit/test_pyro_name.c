/*
 * Unit tests of Pyroscope's ingest vocabulary (collector/api/pyro_name.c):
 * names with and without a type and labels, the Node SDK's own names,
 * the refusals, types from sample types, units, and from/until in every
 * unit their digits give.
 */
#include <stdlib.h>
#include <string.h>

#include "collector/api/pyro_name.h"
#include "storage/store.h"
#include "test/lib/tap.h"

#define NS	INT64_C(1000000000)

/* Parses name; "app|type|k=v,k=v" or "!cause". */
static char *
parse(const char *name)
{
	struct pyro_name n;
	char *cause = NULL, buf[2048];
	size_t i, at;

	if (pyro_name_parse(name, 8, &n, &cause) < 0) {
		snprintf(buf, sizeof buf, "!%s", cause);
		free(cause);
		return strdup(buf);
	}
	at = (size_t)snprintf(buf, sizeof buf, "%s|%s|", n.app,
	    n.type ? n.type->type : "-");
	for (i = 0; i < n.nlabels; i++)
		at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%s=%s",
		    i ? "," : "", n.labels[i].key, n.labels[i].value);
	pyro_name_clear(&n);
	return strdup(buf);
}

/* ok() that parse(name) is want (or starts with it, for a "!"). */
static void
name_is(const char *name, const char *want)
{
	char *got = parse(name);

	ok(want[0] == '!' ? strncmp(got, want, strlen(want)) == 0 :
	    strcmp(got, want) == 0, "%s -> %s", name, got);
	free(got);
}

/* The time of s in ns, or -1 on error. */
static int64_t
tm(const char *s)
{
	int64_t v;
	char *cause = NULL;

	if (pyro_name_time(s, &v, &cause) < 0) {
		free(cause);
		return -1;
	}
	return v;
}

int
main(void)
{
	name_is("shop", "shop|-|");
	name_is("shop.cpu", "shop|cpu|");
	name_is("my.shop.alloc_space{env=prod}", "my.shop|heap|env=prod");
	name_is("my.shop", "my.shop|-|");
	name_is("shop.wall{}", "shop|other|");
	name_is("shop.lock_duration{b=2, a = 1 ,}", "shop|mutex|a=1,b=2");
	name_is("nodeapp{otel.scope.name=com.grafana.pyroscope/nodejs,"
	    "process.runtime.version=20.20.2,env=a%b}", "nodeapp|-|env=a%b,"
	    "otel.scope.name=com.grafana.pyroscope/nodejs,"
	    "process.runtime.version=20.20.2");
	name_is("svc/api-v2.goroutines{x=}", "svc/api-v2|goroutine|x=");
	name_is(".cpu", "!name: no application");
	name_is("{a=1}", "!name: no application");
	name_is("a b", "!name: application names");
	name_is("app{a=1", "!name: the labels' '{'");
	name_is("app{a}", "!label \"a\" has no '='");
	name_is("app{a=1,a=2}", "!label key \"a\" given twice");
	name_is("app{1a=1}", "!label key \"1a\"");
	name_is("app{a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9}", "!more than 8");
	name_is("app{a=\xff}", "!label a: value is not valid UTF-8");

	ok(strcmp(pyro_name_type_of_samples("samples/count,cpu/nanoseconds"),
	    "cpu") == 0, "samples and cpu: cpu");
	ok(strcmp(pyro_name_type_of_samples("sample/count,wall/nanoseconds,"
	    "cpu/nanoseconds"), "other") == 0, "wall (with cpu): other");
	ok(strcmp(pyro_name_type_of_samples("objects/count,space/bytes"),
	    "heap") == 0, "Node's objects and space: heap");
	ok(strcmp(pyro_name_type_of_samples("alloc_objects/count,alloc_space/"
	    "bytes,inuse_objects/count,inuse_space/bytes"), "heap") == 0,
	    "Go's heap: heap");
	ok(strcmp(pyro_name_type_of_samples("contentions/count,delay/"
	    "nanoseconds"), "mutex") == 0, "contentions and delay: mutex");
	ok(strcmp(pyro_name_type_of_samples("goroutine/count"), "goroutine") ==
	    0, "goroutine");
	ok(strcmp(pyro_name_type_of_samples("cpuwork/count"), "other") == 0,
	    "a type that only starts like cpu: other");
	ok(strcmp(pyro_name_unit("bytes"), "bytes") == 0 &&
	    strcmp(pyro_name_unit("objects"), "count") == 0 &&
	    strcmp(pyro_name_unit("lock_nanoseconds"), "nanoseconds") == 0 &&
	    pyro_name_unit("furlongs") == NULL, "units");

	ok(tm("1764000000") == 1764000000 * NS, "10 digits: seconds");
	ok(tm("1764000000123") == 1764000000123 * INT64_C(1000000),
	    "13 digits: ms");
	ok(tm("1764000000123456") == 1764000000123456 * INT64_C(1000),
	    "16 digits: us");
	ok(tm("1764000000123456789") == INT64_C(1764000000123456789),
	    "19 digits: ns");
	ok(tm("20251124") == 1763942400 * NS, "8 digits of a date: YYYYMMDD");
	ok(tm("99999999") == 99999999 * NS, "8 digits not a date: seconds");
	ok(tm("54171216") == 54171216 * NS, "a date past 2261 (no int64 ns): "
	    "seconds");
	ok(tm("0") == 0, "0");
	ok(tm("99999999999") == -1, "11 digits of seconds past 2262: refused");
	ok(tm("9999999999999999999") == -1, "19 digits past int64: refused");
	ok(tm("12345678901234567890") == -1, "20 digits: refused");
	ok(tm("-1") == -1 && tm("") == -1 && tm("1e9") == -1, "not digits");
	return tap_done();
}
