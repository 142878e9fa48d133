/*
 * collector/query/qsel.c: Prometheus-style selectors (every operator,
 * quoting and escapes, regex anchoring, errors with their offsets,
 * bounds), the share the store can apply, profile type ids both ways,
 * and windows in milliseconds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/api/params.h"
#include "collector/query/qsel.h"
#include "test/lib/tap.h"

/* A candidate for matching: service, env and region. */
struct cand {
	const char	*service, *env, *region;
};

/* qsel_lookup_fn over a struct cand. */
static const char *
lookup(void *arg, const char *name)
{
	struct cand *c = arg;

	if (strcmp(name, "service_name") == 0)
		return c->service;
	if (strcmp(name, "env") == 0)
		return c->env;
	if (strcmp(name, "region") == 0)
		return c->region;
	return NULL;
}

/* Whether text parses and matches c. */
static int
matches(const char *text, struct cand *c)
{
	struct qsel s;
	char *cause = NULL;
	int m;

	if (qsel_parse(text, &s, &cause) != 0) {
		printf("# parse %s: %s\n", text, cause);
		free(cause);
		return -1;
	}
	m = qsel_matches(&s, lookup, c);
	qsel_clear(&s);
	return m;
}

/* Whether text is refused, with a cause containing want. */
static int
refused(const char *text, const char *want)
{
	struct qsel s;
	char *cause = NULL;
	int rc = qsel_parse(text, &s, &cause), hit;

	if (rc == 0) {
		qsel_clear(&s);
		return 0;
	}
	hit = cause != NULL && strstr(cause, want) != NULL;
	if (!hit)
		printf("# %s: %s\n", text, cause);
	free(cause);
	return hit;
}

static void
test_matching(void)
{
	struct cand api = { "api", "prod", NULL }, db = { "db", "stage", "eu" };

	ok(matches("", &api) == 1, "empty selector matches all");
	ok(matches("{}", &db) == 1, "{} matches all");
	ok(matches(" { service_name = \"api\" } ", &api) == 1, "= with blanks");
	ok(matches("{service_name=\"api\"}", &db) == 0, "= other service");
	ok(matches("{service_name!=\"api\"}", &db) == 1, "!=");
	ok(matches("{env=~\"prod|stage\"}", &db) == 1, "=~ alternation");
	ok(matches("{env=~\"pro\"}", &api) == 0, "=~ is anchored");
	ok(matches("{env!~\"st.*\"}", &api) == 1, "!~");
	ok(matches("{env!~\"st.*\"}", &db) == 0, "!~ refuses");
	ok(matches("{region=\"\"}", &api) == 1, "absent label is empty");
	ok(matches("{region!=\"\"}", &api) == 0, "absent label != \"\"");
	ok(matches("{region=~\".+\"}", &db) == 1, "present label =~ .+");
	ok(matches("{service_name='api',env=`prod`,}", &api) == 1,
	    "single quotes, backquotes, trailing comma");
	ok(matches("{env=\"pr\\x6fd\"}", &api) == 1, "\\x escape");
	ok(matches("{env=\"\\u0070rod\"}", &api) == 1, "\\u escape");
	ok(matches("{service_name=\"api\", env=\"stage\"}", &api) == 0,
	    "all matchers must hold");
}

static void
test_errors(void)
{
	char big[QSEL_MAX_TEXT + 10];
	char many[64 * 12 + 10];
	size_t i, at = 0;

	ok(refused("service_name=\"x\"", "expected '{'"), "no brace");
	ok(refused("{service_name=\"x\"", "expected ',' or '}'"),
	    "unterminated selector");
	ok(refused("{service_name=\"x}", "unterminated string"),
	    "unterminated string");
	ok(refused("{service_name==\"x\"}", "quoted value"), "== refused");
	ok(refused("{9x=\"x\"}", "label name"), "name starting with a digit");
	ok(refused("{a=\"x\"} junk", "text after"), "trailing junk");
	ok(refused("{a=~\"(\"}", "bad regex"), "bad regex");
	ok(refused("{a=~\"(a)\\\\1\"}", "back-references"), "back-reference");
	ok(refused("{a=\"\\q\"}", "bad escape"), "unknown escape");
	ok(refused("{a=\"\\xff\"}", "UTF-8"), "not UTF-8");
	ok(refused("{a=\"x\\u0000y\"}", "UTF-8"), "NUL inside");
	ok(refused("{a=\"x\" b=\"y\"}", "expected ','"), "missing comma");
	memset(big, ' ', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	ok(refused(big, "longer than"), "too long");
	many[at++] = '{';
	for (i = 0; i < QSEL_MAX_MATCHERS + 1; i++)
		at += (size_t)snprintf(many + at, sizeof many - at, "a%zu=\"\",",
		    i);
	many[at++] = '}';
	many[at] = '\0';
	ok(refused(many, "more than"), "too many matchers");
	ok(refused("{a=\"x\",,}", "label name"), "double comma");
}

static void
test_store_share(void)
{
	struct qsel s;
	struct label *l = NULL;
	size_t n = 0, rest = 0;
	char *cause = NULL;

	ok(qsel_parse("{service_name=\"a\", env=\"prod\", region=~\"e.*\", "
	    "zone=\"\", __profile_type__=\"x\", az=\"1\"}", &s, &cause) == 0,
	    "parse for the store's share");
	ok(qsel_store_labels(&s, &l, &n, &rest, &cause) == 0, "share");
	ok(n == 2 && strcmp(l[0].key, "az") == 0 &&
	    strcmp(l[1].key, "env") == 0 && strcmp(l[1].value, "prod") == 0,
	    "name=value labels go to the store, sorted");
	ok(rest == 2, "=~ and =\"\" stay for rows (%zu)", rest);
	ok(qsel_holds_for(&s, "service_name", "a") &&
	    !qsel_holds_for(&s, "service_name", "b") &&
	    qsel_holds_for(&s, "other", "z"), "matchers on one name");
	params_labels_free(l, n);
	qsel_clear(&s);
}

static void
test_ptype(void)
{
	struct qsel_ptype p;
	char *cause = NULL, *id;
	const char *pt, *pu;

	ok(qsel_ptype_parse("process_cpu:cpu:nanoseconds:cpu:nanoseconds", &p,
	    &cause) == 0 && strcmp(p.type, "cpu") == 0 &&
	    strcmp(p.sample_type, "cpu") == 0 &&
	    strcmp(p.sample_unit, "nanoseconds") == 0, "process_cpu id");
	qsel_ptype_clear(&p);
	ok(qsel_ptype_parse("memory:inuse_space:bytes:space:bytes", &p,
	    &cause) == 0 && strcmp(p.type, "heap") == 0, "memory is heap");
	qsel_ptype_clear(&p);
	ok(qsel_ptype_parse("goroutine:goroutine:count:goroutine:count", &p,
	    &cause) == 0 && strcmp(p.type, "goroutine") == 0 &&
	    strcmp(p.name, "goroutine") == 0, "profd's type names too");
	qsel_ptype_clear(&p);
	ok(qsel_ptype_parse("process_cpu:cpu:nanoseconds:cpu", &p, &cause) ==
	    -1 && strstr(cause, "five") != NULL, "four parts refused");
	free(cause);
	cause = NULL;
	ok(qsel_ptype_parse("process_cpu:cpu::cpu:nanoseconds", &p, &cause) ==
	    -1, "empty part refused");
	free(cause);
	cause = NULL;
	ok(qsel_ptype_parse("a:b:c:d:e:f", &p, &cause) == -1, "six parts");
	free(cause);
	cause = NULL;
	ok(qsel_ptype_parse("wall:samples:count:wall:nanoseconds", &p,
	    &cause) == -1 && strstr(cause, "unknown profile name") != NULL,
	    "unknown name refused");
	free(cause);
	cause = NULL;
	ok(qsel_ptype_parse("", &p, &cause) == -1, "empty id refused");
	free(cause);
	id = qsel_ptype_id("heap", "alloc_space", "bytes");
	ok(strcmp(id, "memory:alloc_space:bytes:space:bytes") == 0,
	    "heap id: %s", id);
	free(id);
	id = qsel_ptype_id("other", "wall", "nanoseconds");
	ok(strcmp(id, "other:wall:nanoseconds:wall:nanoseconds") == 0,
	    "other's period is its sample type: %s", id);
	free(id);
	qsel_ptype_period("cpu", "samples", "count", &pt, &pu);
	ok(strcmp(pt, "cpu") == 0 && strcmp(pu, "nanoseconds") == 0,
	    "cpu's period");
}

static void
test_window(void)
{
	int64_t from, to;
	char *cause = NULL;

	ok(qsel_window(1000, 2000, 0, &from, &to, &cause) == 0 &&
	    from == 1000000000LL && to == 2000999999LL, "ms to ns, inclusive");
	ok(qsel_window(0, 0, 7200000000000LL, &from, &to, &cause) == 0 &&
	    from == 3600000000000LL && to == 7200000999999LL,
	    "defaults: the last hour");
	ok(qsel_window(3000, 2000, 0, &from, &to, &cause) == -1, "start > end");
	free(cause);
	cause = NULL;
	ok(qsel_window(-5, 2000, 0, &from, &to, &cause) == -1, "negative");
	free(cause);
	cause = NULL;
	ok(qsel_window(1, INT64_MAX, 0, &from, &to, &cause) == -1,
	    "past year 2262");
	free(cause);
}

int
main(void)
{
	test_matching();
	test_errors();
	test_store_share();
	test_ptype();
	test_window();
	return tap_done();
}
