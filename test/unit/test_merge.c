/*
 * Unit tests of the merge engine (merge/merge.c) on profiles built in
 * memory and on real corpus profiles: deduplication, address independence,
 * keys of unsymbolized locations, labels, zero samples, sample type
 * mismatch and alignment, header rules, merge of one, combine.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/arena.h"
#include "merge/merge.h"
#include "test/lib/tap.h"
#include "test/lib/merge_testlib.h"

static const char *corpus;

/* Merges the given profiles; returns the merge (NULL on failure). */
static struct merge *
merge_these(Perftools__Profiles__Profile **ps, size_t n, char **cause)
{
	struct merge *m = merge_new(NULL);
	size_t i;

	for (i = 0; i < n; i++) {
		if (merge_add(m, ps[i], cause) != 0) {
			merge_free(m);
			return NULL;
		}
	}
	return m;
}

/* Results checked by raw_check, and how many differed. */
static size_t raw_checked, raw_differed;

/*
 * merge_result_raw must write exactly what protobuf-c packs from
 * merge_result's Profile: counted for the test at the end of main.
 */
static void
raw_check(struct merge *m)
{
	const Perftools__Profiles__Profile *p = merge_result(m);
	uint8_t *raw = NULL, *packed;
	size_t len = 0, plen;

	raw_checked++;
	if (p == NULL || merge_result_raw(m, &raw, &len, NULL) != 0) {
		raw_differed++;
		return;
	}
	plen = perftools__profiles__profile__get_packed_size(p);
	packed = xmalloc(plen);
	perftools__profiles__profile__pack(p, packed);
	if (plen != len || memcmp(packed, raw, len) != 0) {
		printf("# merge_result_raw: %zu bytes, protobuf-c packs %zu\n",
		    len, plen);
		raw_differed++;
	}
	free(packed);
	free(raw);
}

/* The canonical text of m's result after a gzip round trip. */
static char *
result_canon(struct merge *m, int aggregate, Perftools__Profiles__Profile **out)
{
	uint8_t *gz = NULL;
	size_t len = 0;
	char *cause = NULL, *c;
	Perftools__Profiles__Profile *p;

	raw_check(m);
	if (merge_result_gzip(m, &gz, &len, &cause) != 0) {
		printf("# gzip: %s\n", cause);
		free(cause);
		return xstrdup("(error)");
	}
	p = tl_decode_gz(gz, len);
	free(gz);
	if (p == NULL)
		return xstrdup("(undecodable)");
	c = tl_canon(p, aggregate);
	if (out != NULL)
		*out = p;
	else
		perftools__profiles__profile__free_unpacked(p, NULL);
	return c;
}

/* Compares two canonical texts, printing both on a difference. */
static int
same(const char *got, const char *want)
{
	if (strcmp(got, want) == 0)
		return 1;
	printf("# got:\n%s# want:\n%s", got, want);
	return 0;
}

/* A small CPU profile: main -> work -> leaf, at base address base. */
static struct tb *
cpu_profile(uint64_t base, int64_t n, const char *labels)
{
	struct tb *b = tb_new("samples/count,cpu/nanoseconds");
	uint64_t mp = tb_map(b, base, base + 0x100000, 0, "/app/bin");
	uint64_t fm = tb_func(b, "main", "main.c");
	uint64_t fw = tb_func(b, "work", "work.c");
	uint64_t fl = tb_func(b, "leaf", "leaf.c");
	uint64_t lm = tb_loc(b, mp, base + 0x10, 1, fm, 10, 0, 0);
	uint64_t lw = tb_loc(b, mp, base + 0x20, 1, fw, 20, 0, 0);
	uint64_t ll = tb_loc(b, mp, base + 0x30, 1, fl, 30, 0, 0);
	uint64_t s1[] = { ll, lw, lm, 0 }, s2[] = { lw, lm, 0 };
	int64_t v1[] = { n, n * 10 }, v2[] = { 1, 10 };

	tb_sample(b, s1, v1, labels);
	tb_sample(b, s2, v2, labels);
	b->p.time_nanos = 1000;
	b->p.duration_nanos = 5;
	b->p.period = 10;
	b->period_type.type = tb_str(b, "cpu");
	b->period_type.unit = tb_str(b, "nanoseconds");
	b->p.period_type = &b->period_type;
	return b;
}

static void
test_dedupe(void)
{
	struct tb *a = cpu_profile(0x400000, 3, NULL);
	struct tb *b = cpu_profile(0x400000, 4, NULL);
	Perftools__Profiles__Profile *ps[] = { &a->p, &b->p }, *r;
	struct merge *m = merge_these(ps, 2, NULL);
	char *got = result_canon(m, 0, &r);

	ok(same(got, "types: cpu/nanoseconds samples/count\n"
	    "leaf:leaf.c:30;work:work.c:20;main:main.c:10; {} = 70 7\n"
	    "work:work.c:20;main:main.c:10; {} = 20 2\n"),
	    "dedupe: equal stacks add per sample type");
	ok(r->n_location == 3 && r->n_function == 3 && r->n_mapping == 1 &&
	    r->n_sample == 2, "dedupe: 3 locations, 3 functions, 1 mapping, "
	    "2 samples (got %zu %zu %zu %zu)", r->n_location, r->n_function,
	    r->n_mapping, r->n_sample);
	ok(r->n_string_table == 12, "dedupe: string table holds each string "
	    "once (%zu)", r->n_string_table);
	ok(merge_count(m) == 2, "merge_count counts inputs");
	perftools__profiles__profile__free_unpacked(r, NULL);
	free(got);
	merge_free(m);
	tb_free(a);
	tb_free(b);
}

static void
test_address_independence(void)
{
	/* Same functions, files, lines; build B is PIE at another address. */
	struct tb *a = cpu_profile(0x400000, 3, NULL);
	struct tb *b = cpu_profile(0x5635b0ef6000, 4, NULL);
	Perftools__Profiles__Profile *ps[] = { &a->p, &b->p }, *r;
	struct merge *m = merge_these(ps, 2, NULL);
	char *got = result_canon(m, 0, &r);

	ok(same(got, "types: cpu/nanoseconds samples/count\n"
	    "leaf:leaf.c:30;work:work.c:20;main:main.c:10; {} = 70 7\n"
	    "work:work.c:20;main:main.c:10; {} = 20 2\n"),
	    "address independence: builds merge function for function");
	ok(r->n_location == 3, "address independence: 3 locations, not 6 "
	    "(%zu)", r->n_location);
	perftools__profiles__profile__free_unpacked(r, NULL);
	free(got);
	merge_free(m);
	tb_free(a);
	tb_free(b);
}

/* A profile with one unsymbolized frame in libc mapped at base. */
static struct tb *
unsym_profile(uint64_t base, uint64_t rel, int64_t v)
{
	struct tb *b = tb_new("samples/count");
	uint64_t mp = tb_map(b, base, base + 0x200000, 0x1000, "/lib/libc.so.6");
	uint64_t fm = tb_func(b, "main", "main.c");
	uint64_t lm = tb_loc(b, 0, 0, 1, fm, 10, 0, 0);
	uint64_t lc = tb_loc(b, mp, base + rel - 0x1000, 0, 0, 0, 0, 0);
	uint64_t s[] = { lc, lm, 0 };

	tb_sample(b, s, &v, NULL);
	return b;
}

static void
test_unsymbolized(void)
{
	struct tb *a = unsym_profile(0x7f0000000000, 0x2345, 1);
	struct tb *b = unsym_profile(0x7e0000000000, 0x2345, 2);
	struct tb *c = unsym_profile(0x7e0000000000, 0x2346, 4);
	Perftools__Profiles__Profile *ps[] = { &a->p, &b->p, &c->p }, *r;
	struct merge *m = merge_these(ps, 3, NULL);
	char *got = result_canon(m, 0, &r);

	ok(same(got, "types: samples/count\n"
	    "/lib/libc.so.6+0x2345;main:main.c:10; {} = 3\n"
	    "/lib/libc.so.6+0x2346;main:main.c:10; {} = 4\n"),
	    "unsymbolized: keyed on mapping file + relative address");
	ok(r->n_location == 3, "unsymbolized: 3 locations (%zu)",
	    r->n_location);
	perftools__profiles__profile__free_unpacked(r, NULL);
	free(got);
	merge_free(m);
	tb_free(a);
	tb_free(b);
	tb_free(c);
}

/*
 * A process's profile: its executable (loaded at base, ASLR) and libc,
 * the executable first as the agents write them (or libc first); one
 * sample in libc alone, and, when in_exe, one through the executable.
 */
static struct tb *
exe_profile(uint64_t base, int in_exe, int libc_first)
{
	struct tb *b = tb_new("samples/count");
	uint64_t libc = libc_first ? tb_map(b, 0x7f0000000000,
	    0x7f0000100000, 0, "/lib/libc.so.6") : 0;
	uint64_t exe = tb_map(b, base, base + 0x10000, 0, "/usr/bin/app");

	if (!libc_first)
		libc = tb_map(b, 0x7f0000000000, 0x7f0000100000, 0,
		    "/lib/libc.so.6");
	uint64_t l1 = tb_loc(b, libc, 0x7f0000001000, 0, 0, 0, 0, 0);
	uint64_t l2 = tb_loc(b, exe, base + 0x1000, 0, 0, 0, 0, 0);
	uint64_t s1[] = { l1, 0 }, s2[] = { l1, l2, 0 };
	int64_t one[] = { 1 };

	tb_sample(b, s1, one, NULL);
	if (in_exe)
		tb_sample(b, s2, one, NULL);
	return b;
}

/* The file of the result's first mapping. */
static const char *
first_mapping(const Perftools__Profiles__Profile *r)
{
	return r->n_mapping > 0 ? r->string_table[r->mapping[0]->filename] :
	    "";
}

static void
test_main_mapping(void)
{
	/* The first input lists libc first (its first mapping would be
	 * the result's); the two others, their executable. */
	struct tb *a = exe_profile(0x550000000000, 1, 1);
	struct tb *b = exe_profile(0x560000000000, 1, 0);
	struct tb *c = exe_profile(0x570000000000, 1, 0);
	Perftools__Profiles__Profile *ps[] = { &a->p, &b->p, &c->p }, *r;
	struct merge *m = merge_these(ps, 3, NULL), *m2, *m3;
	uint8_t *raw;
	size_t len;

	r = (Perftools__Profiles__Profile *)merge_result(m);
	ok(r != NULL && strcmp(first_mapping(r), "/usr/bin/app") == 0 &&
	    r->mapping[0]->id == 1 && r->mapping[0]->memory_start ==
	    0x550000000000, "the executable most inputs had first is the "
	    "result's first mapping (%s at %#llx, id %llu), the first of its "
	    "kept copies", r != NULL ? first_mapping(r) : "-",
	    r != NULL ? (unsigned long long)r->mapping[0]->memory_start : 0,
	    r != NULL ? (unsigned long long)r->mapping[0]->id : 0);
	ok(merge_result_raw(m, &raw, &len, NULL) == 0, "raw result");
	r = perftools__profiles__profile__unpack(NULL, len, raw);
	ok(r != NULL && strcmp(first_mapping(r), "/usr/bin/app") == 0 &&
	    r->mapping[0]->id == 1, "...in the raw writer's too");
	if (r != NULL)
		perftools__profiles__profile__free_unpacked(r, NULL);
	free(raw);
	/* Combined (the parallel driver): the votes carry over, weighted. */
	m2 = merge_these(ps, 1, NULL);
	m3 = merge_these(ps + 1, 2, NULL);
	ok(merge_combine(m2, m3, NULL) == 0, "combine");
	r = (Perftools__Profiles__Profile *)merge_result(m2);
	ok(r != NULL && strcmp(first_mapping(r), "/usr/bin/app") == 0,
	    "combined: the executable first (%s)", r != NULL ?
	    first_mapping(r) : "-");
	merge_free(m);
	merge_free(m2);
	merge_free(m3);
	tb_free(a);
	tb_free(b);
	tb_free(c);
}

/*
 * A multi-threaded program's samples may all start in libc (the threads'
 * entry) and never pass through its executable: the executable every
 * input has first is still the result's first mapping (its first copy,
 * used by no location, as the agents write it), not libc.
 */
static void
test_main_mapping_unused(void)
{
	struct tb *a = exe_profile(0x550000000000, 0, 0);
	struct tb *b = exe_profile(0x560000000000, 0, 0);
	Perftools__Profiles__Profile *ps[] = { &a->p, &b->p }, *r;
	struct merge *m = merge_these(ps, 2, NULL);
	size_t i, used = 0;

	r = (Perftools__Profiles__Profile *)merge_result(m);
	ok(r != NULL && r->n_mapping == 2 &&
	    strcmp(first_mapping(r), "/usr/bin/app") == 0 &&
	    r->mapping[0]->memory_start == 0x550000000000 &&
	    r->mapping[0]->id == 1, "no sample in the executable: still "
	    "first (%s, %zu mappings)", r != NULL ? first_mapping(r) : "-",
	    r != NULL ? r->n_mapping : 0);
	for (i = 0; r != NULL && i < r->n_location; i++)
		used += r->location[i]->mapping_id == 1;
	ok(r != NULL && used == 0 && r->n_location == 1 &&
	    r->location[0]->mapping_id == 2, "...no location uses it, the "
	    "libc location's mapping id follows (2)");
	raw_check(m);
	merge_free(m);
	tb_free(a);
	tb_free(b);
}

/*
 * Shares of a parallel merge carry their inputs' votes, not their
 * result's first mapping: a share of two libc-first inputs and one
 * executable-first (its result has libc first) joined with a share of
 * two executable-first inputs is named after the executable (3 to 2),
 * whichever share is folded into which.
 */
static void
test_main_mapping_shares(void)
{
	struct tb *in[5];
	Perftools__Profiles__Profile *ps[5], *r;
	struct merge *x, *y, *x2, *y2;
	size_t i;

	for (i = 0; i < 5; i++) {
		in[i] = exe_profile(0x550000000000 + (i << 32), 1, i < 2);
		ps[i] = &in[i]->p;
	}
	x = merge_these(ps, 3, NULL);
	y = merge_these(ps + 3, 2, NULL);
	r = (Perftools__Profiles__Profile *)merge_result(x);
	ok(r != NULL && strcmp(first_mapping(r), "/lib/libc.so.6") == 0,
	    "a share of mostly libc-first inputs has libc first (%s)",
	    r != NULL ? first_mapping(r) : "-");
	ok(merge_combine(y, x, NULL) == 0, "combine the libc-first share in");
	r = (Perftools__Profiles__Profile *)merge_result(y);
	ok(r != NULL && strcmp(first_mapping(r), "/usr/bin/app") == 0,
	    "joined: the executable most inputs had first (%s)",
	    r != NULL ? first_mapping(r) : "-");
	x2 = merge_these(ps, 3, NULL);
	y2 = merge_these(ps + 3, 2, NULL);
	ok(merge_combine(x2, y2, NULL) == 0, "combine the other way");
	r = (Perftools__Profiles__Profile *)merge_result(x2);
	ok(r != NULL && strcmp(first_mapping(r), "/usr/bin/app") == 0,
	    "...the same (%s)", r != NULL ? first_mapping(r) : "-");
	ok(merge_count(y) == 5 && merge_count(x2) == 5,
	    "both count the five inputs");
	merge_free(x);
	merge_free(y);
	merge_free(x2);
	merge_free(y2);
	for (i = 0; i < 5; i++)
		tb_free(in[i]);
}

static void
test_labels(void)
{
	struct tb *a = cpu_profile(0x400000, 1, "endpoint=/a,worker=1");
	struct tb *b = cpu_profile(0x400000, 2, "worker=1,endpoint=/a");
	struct tb *c = cpu_profile(0x400000, 4, "endpoint=/b,worker=1");
	struct tb *d = cpu_profile(0x400000, 8, "bytes=#512");
	struct tb *e = cpu_profile(0x400000, 16, "bytes=#1024");
	Perftools__Profiles__Profile *ps[] = { &a->p, &b->p, &c->p, &d->p,
	    &e->p }, *r;
	struct merge *m = merge_these(ps, 5, NULL);
	char *got = result_canon(m, 0, &r);

	ok(same(got, "types: cpu/nanoseconds samples/count\n"
	    "leaf:leaf.c:30;work:work.c:20;main:main.c:10; {bytes=#1024} = 160 16\n"
	    "leaf:leaf.c:30;work:work.c:20;main:main.c:10; {bytes=#512} = 80 8\n"
	    "leaf:leaf.c:30;work:work.c:20;main:main.c:10; {endpoint=/a,worker=1} = 30 3\n"
	    "leaf:leaf.c:30;work:work.c:20;main:main.c:10; {endpoint=/b,worker=1} = 40 4\n"
	    "work:work.c:20;main:main.c:10; {bytes=#1024} = 10 1\n"
	    "work:work.c:20;main:main.c:10; {bytes=#512} = 10 1\n"
	    "work:work.c:20;main:main.c:10; {endpoint=/a,worker=1} = 20 2\n"
	    "work:work.c:20;main:main.c:10; {endpoint=/b,worker=1} = 10 1\n"),
	    "labels keep samples apart; label order does not");
	perftools__profiles__profile__free_unpacked(r, NULL);
	free(got);
	merge_free(m);
	tb_free(a);
	tb_free(b);
	tb_free(c);
	tb_free(d);
	tb_free(e);
}

static void
test_zero_samples(void)
{
	struct tb *a = cpu_profile(0x400000, 0, NULL);	/* leaf sample zero */
	struct tb *b = cpu_profile(0x400000, 5, NULL);
	struct tb *c = cpu_profile(0x400000, -5, NULL);	/* cancels b */
	Perftools__Profiles__Profile *ps[] = { &a->p, &b->p, &c->p }, *r;
	struct merge *m;
	char *got;

	m = merge_these(ps, 1, NULL);
	got = result_canon(m, 0, &r);
	ok(same(got, "types: cpu/nanoseconds samples/count\n"
	    "work:work.c:20;main:main.c:10; {} = 10 1\n"),
	    "zero samples: an all-zero sample is dropped");
	ok(r->n_location == 2 && r->n_function == 2, "zero samples: "
	    "locations and functions only it used are dropped too");
	perftools__profiles__profile__free_unpacked(r, NULL);
	free(got);
	merge_free(m);

	m = merge_these(ps + 1, 2, NULL);
	got = result_canon(m, 0, &r);
	ok(same(got, "types: cpu/nanoseconds samples/count\n"
	    "work:work.c:20;main:main.c:10; {} = 20 2\n"),
	    "zero samples: values that sum to zero are dropped");
	perftools__profiles__profile__free_unpacked(r, NULL);
	free(got);
	merge_free(m);
	tb_free(a);
	tb_free(b);
	tb_free(c);
}

/*
 * A profile with no sample types (valid pprof when it has no samples:
 * nothing to add up) merges without undefined behaviour (memset of a NULL
 * table of 0 bytes, found by the UBSan build) and gives a profile with no
 * samples. With samples but no types it is refused, as an upload is.
 */
static void
test_no_sample_types(void)
{
	struct tb *a = tb_new(""), *b = tb_new(""), *c = tb_new("");
	Perftools__Profiles__Profile *ps[] = { &a->p, &b->p }, *r;
	uint64_t mp = tb_map(a, 0x400000, 0x500000, 0, "/app/bin");
	uint64_t fm = tb_func(a, "main", "main.c");
	uint64_t lm = tb_loc(a, mp, 0x400010, 1, fm, 10, 0, 0);
	uint64_t none[] = { 0 };
	struct merge *m;
	char *cause = NULL;

	(void)lm;
	tb_sample(c, none, NULL, NULL);
	m = merge_new(NULL);
	ok(merge_add(m, &c->p, &cause) != 0 && cause != NULL &&
	    strstr(cause, "1 samples but no sample types") != NULL,
	    "no sample types: samples without types are refused (%s)",
	    cause != NULL ? cause : "accepted");
	merge_free(m);
	free(cause);
	cause = NULL;
	tb_free(c);
	m = merge_these(ps, 2, &cause);
	ok(m != NULL, "no sample types: two such profiles merge (%s)",
	    cause != NULL ? cause : "ok");
	if (m != NULL) {
		r = (Perftools__Profiles__Profile *)merge_result(m);
		ok(r != NULL && r->n_sample_type == 0 && r->n_sample == 0,
		    "no sample types: the result has no types and no samples");
		ok(merge_count(m) == 2, "no sample types: both inputs counted");
		merge_free(m);
	}
	free(cause);
	tb_free(a);
	tb_free(b);
}

static void
test_mismatch_and_align(void)
{
	struct tb *a = cpu_profile(0x400000, 3, NULL);
	struct tb *h = tb_new("alloc_objects/count,alloc_space/bytes");
	struct tb *r2 = tb_new("cpu/nanoseconds,samples/count");
	struct tb *u = tb_new("samples/count,cpu/microseconds");
	struct merge *m = merge_new(NULL);
	char *cause = NULL, *got;
	uint64_t f, l, s[2];
	int64_t v[] = { 700, 7 };
	size_t before;

	f = tb_func(r2, "leaf", "leaf.c");
	l = tb_loc(r2, 0, 0x99, 1, f, 30, 0, 0);
	s[0] = l;
	s[1] = 0;
	tb_sample(r2, s, v, NULL);

	ok(merge_add(m, &a->p, NULL) == 0, "mismatch: first input added");
	before = merge_samples(m);
	ok(merge_add(m, &h->p, &cause) == -1 && merge_mismatch(m),
	    "mismatch: other sample types refused");
	ok(cause != NULL && strcmp(cause, "sample types differ: "
	    "samples/count,cpu/nanoseconds vs alloc_objects/count,"
	    "alloc_space/bytes") == 0, "mismatch: cause names both");
	free(cause);
	cause = NULL;
	ok(merge_add(m, &u->p, &cause) == -1 && merge_mismatch(m) &&
	    cause != NULL && strstr(cause, "cpu/microseconds") != NULL,
	    "mismatch: same types, other unit refused");
	free(cause);
	ok(merge_count(m) == 1 && merge_samples(m) == before,
	    "mismatch: merge unchanged");

	ok(merge_add(m, &r2->p, NULL) == 0 && !merge_mismatch(m),
	    "align: same types in another order accepted");
	got = result_canon(m, 0, NULL);
	ok(same(got, "types: cpu/nanoseconds samples/count\n"
	    "leaf:leaf.c:30; {} = 700 7\n"
	    "leaf:leaf.c:30;work:work.c:20;main:main.c:10; {} = 30 3\n"
	    "work:work.c:20;main:main.c:10; {} = 10 1\n"),
	    "align: values follow their types");
	free(got);
	{
		const Perftools__Profiles__Profile *p = merge_result(m);

		ok(strcmp(p->string_table[p->sample_type[0]->type],
		    "samples") == 0, "align: result keeps the first input's "
		    "order");
	}
	merge_free(m);
	tb_free(a);
	tb_free(h);
	tb_free(r2);
	tb_free(u);
}

static void
test_header(void)
{
	struct tb *a = cpu_profile(0x400000, 1, NULL);
	struct tb *b = cpu_profile(0x400000, 1, NULL);
	struct tb *c = cpu_profile(0x400000, 1, NULL);
	Perftools__Profiles__Profile *ps[] = { &a->p, &b->p, &c->p };
	const Perftools__Profiles__Profile *r;
	struct merge *m;

	a->p.time_nanos = 0;
	a->p.duration_nanos = 100;
	b->p.time_nanos = 3000;
	b->p.duration_nanos = 20;
	b->p.default_sample_type = tb_str(b, "cpu");
	c->p.time_nanos = 2000;
	c->p.duration_nanos = 3;
	c->p.period = 40;
	c->p.default_sample_type = tb_str(c, "samples");
	c->p.comment = xcalloc(2, sizeof *c->p.comment);
	c->p.comment[0] = tb_str(c, "a comment");
	c->p.comment[1] = tb_str(c, "another");
	c->p.n_comment = 2;
	c->p.doc_url = tb_str(c, "https://example.com/doc");
	c->p.drop_frames = tb_str(c, "runtime\\..*");
	m = merge_these(ps, 3, NULL);
	raw_check(m);
	r = merge_result(m);
	ok(r->n_comment == 2 && strcmp(r->string_table[r->comment[1]],
	    "another") == 0, "header: comments kept in order");
	ok(r->time_nanos == 2000, "header: earliest nonzero time_nanos (%lld)",
	    (long long)r->time_nanos);
	ok(r->duration_nanos == 123, "header: durations summed (%lld)",
	    (long long)r->duration_nanos);
	ok(r->period == 40, "header: largest period (%lld)",
	    (long long)r->period);
	ok(r->period_type != NULL &&
	    strcmp(r->string_table[r->period_type->type], "cpu") == 0 &&
	    strcmp(r->string_table[r->period_type->unit], "nanoseconds") == 0,
	    "header: period_type kept");
	ok(strcmp(r->string_table[r->default_sample_type], "cpu") == 0,
	    "header: first nonempty default_sample_type");
	ok(strcmp(r->string_table[0], "") == 0, "header: string 0 is \"\"");
	merge_free(m);
	free(c->p.comment);
	c->p.comment = NULL;
	c->p.n_comment = 0;
	tb_free(a);
	tb_free(b);
	tb_free(c);
}

static void
test_bad_refs(void)
{
	struct tb *a = cpu_profile(0x400000, 1, NULL);
	struct tb *b = cpu_profile(0x400000, 1, NULL);
	struct merge *m = merge_new(NULL);
	char *cause = NULL;

	int rc;

	merge_add(m, &a->p, NULL);
	b->sample_locs[0][1] = 42;
	rc = merge_add(m, &b->p, &cause);
	ok(rc == -1 && !merge_mismatch(m) && cause != NULL &&
	    strstr(cause, "location id 42 not found") != NULL,
	    "bad input: unknown location refused (%s)", cause ? cause : "");
	free(cause);
	cause = NULL;
	b->sample_locs[0][1] = 2;
	b->fns[0].name = 9999;
	rc = merge_add(m, &b->p, &cause);
	ok(rc == -1 && cause != NULL &&
	    strstr(cause, "string index 9999") != NULL,
	    "bad input: string index out of range refused (%s)",
	    cause ? cause : "");
	free(cause);
	ok(merge_count(m) == 1 && merge_samples(m) == 2,
	    "bad input: merge unchanged");
	merge_free(m);
	tb_free(a);
	tb_free(b);
}

/* Loads corpus file rel; NULL (and a failed test) if missing. */
static Perftools__Profiles__Profile *
load(const char *rel)
{
	char *path = xasprintf("%s/%s", corpus, rel);
	Perftools__Profiles__Profile *p = tl_load(path);

	if (p == NULL)
		ok(0, "load %s", path);
	free(path);
	return p;
}

static void
test_corpus(void)
{
	const char *files[] = {
		"go/cpuburn/cpu_A_01.pb.gz", "go/cpuburn/cpu_B_01.pb.gz",
		"go/cpuburn/cpu_A_02.pb.gz", "go/cpuburn/cpu_B_02.pb.gz",
		"go/cpuburn/cpu_A_03.pb.gz", "go/cpuburn/cpu_B_03.pb.gz",
		"go/cpuburn/cpu_A_04.pb.gz",
	};
	enum { N = sizeof files / sizeof files[0] };
	Perftools__Profiles__Profile *ps[N];
	struct merge *m, *parts[3];
	char *want, *got, *cause = NULL;
	size_t i;
	int good = 1;

	for (i = 0; i < N; i++)
		if ((ps[i] = load(files[i])) == NULL)
			return;

	/* Merge of one is the input. */
	m = merge_these(ps, 1, NULL);
	want = tl_canon(ps[0], 1);
	got = result_canon(m, 0, NULL);
	ok(same(got, want), "merge of 1 == input (cpu_A_01)");
	free(got);
	free(want);
	merge_free(m);

	/* A+B: fewer locations than pprof's 949. */
	m = merge_these(ps, 2, NULL);
	ok(m != NULL && merge_locations(m) < 949, "A+B: %zu locations < "
	    "pprof's 949", m ? merge_locations(m) : 0);
	merge_free(m);

	/* Combine of three parts == sequential; both == all inputs summed. */
	m = merge_these(ps, N, NULL);
	want = result_canon(m, 0, NULL);
	parts[0] = merge_these(ps, 2, NULL);
	parts[1] = merge_these(ps + 2, 3, NULL);
	parts[2] = merge_these(ps + 5, N - 5, NULL);
	for (i = 1; i < 3; i++)
		if (merge_combine(parts[0], parts[i], &cause) != 0)
			good = 0;
	ok(good && merge_count(parts[0]) == N, "combine: %d inputs", (int)N);
	ok(merge_samples(parts[0]) == merge_samples(m) &&
	    merge_locations(parts[0]) == merge_locations(m),
	    "combine: same sample and location counts (%zu/%zu, %zu/%zu)",
	    merge_samples(parts[0]), merge_samples(m),
	    merge_locations(parts[0]), merge_locations(m));
	got = result_canon(parts[0], 0, NULL);
	ok(same(got, want), "combine == sequential");
	free(got);
	got = tl_canon(merge_result(m), 0);
	{
		/* No two samples of the result share a key. */
		char *agg = tl_canon(merge_result(m), 1);

		ok(strcmp(agg, got) == 0, "sequential result has no duplicate "
		    "sample keys");
		free(agg);
	}
	free(got);
	free(want);
	{
		/* The aggregate of all inputs equals the result's. */
		struct merge *empty = merge_new(NULL);

		ok(merge_combine(empty, m, NULL) == 0 &&
		    merge_count(empty) == N, "combine into an empty merge");
		want = tl_canon(merge_result(m), 1);
		got = tl_canon(merge_result(empty), 1);
		ok(same(got, want), "combine into empty == source");
		free(got);
		free(want);
		merge_free(empty);
	}
	for (i = 0; i < 3; i++)
		merge_free(parts[i]);
	merge_free(m);
	for (i = 0; i < N; i++)
		perftools__profiles__profile__free_unpacked(ps[i], NULL);
}

static void
test_arena(void)
{
	struct arena *a = arena_new(1024);
	ProtobufCAllocator *al = arena_allocator(a);
	char *p, *q;
	int i, aligned = 1;

	for (i = 0; i < 1000; i++) {
		p = al->alloc(al->allocator_data, (size_t)i % 37 + 1);
		if (((uintptr_t)p & 15) != 0)
			aligned = 0;
		memset(p, 0xab, (size_t)i % 37 + 1);
	}
	ok(aligned, "arena: allocations are 16-byte aligned");
	q = arena_alloc(a, 1 << 20);
	memset(q, 1, 1 << 20);
	ok(arena_used(a) > (1 << 20), "arena: large allocation served");
	arena_reset(a);
	ok(arena_used(a) == 0, "arena: reset forgets everything");
	p = arena_alloc(a, 100);
	ok(p != NULL, "arena: usable after reset");
	arena_free(a);
}

/*
 * The label-sort bomb: nsamples samples of nlabels labels each, every
 * sample's labels in descending order (the worst case for an insertion
 * sort), samples kept apart by their 3 of 200 unsymbolized locations. All
 * samples share one label array, so a big bomb stays small in memory. Up
 * to 64 labels have distinct string keys and values; more are numeric
 * labels of one key.
 * Free with bomb_free.
 */
struct bomb {
	struct tb			*b;
	Perftools__Profiles__Sample	*samples, **sample_ptrs;
	Perftools__Profiles__Label	*labels, **label_ptrs;
	uint64_t			*locs;
	int64_t				*vals;
};

static struct bomb *
bomb_new(size_t nsamples, size_t nlabels)
{
	static const Perftools__Profiles__Sample sinit =
	    PERFTOOLS__PROFILES__SAMPLE__INIT;
	static const Perftools__Profiles__Label linit =
	    PERFTOOLS__PROFILES__LABEL__INIT;
	struct bomb *bm = xcalloc(1, sizeof *bm);
	uint64_t map, loc[200];
	char name[32];
	size_t i, j;

	bm->b = tb_new("cpu/nanoseconds,samples/count");
	map = tb_map(bm->b, 0x400000, 0x800000, 0, "/bin/bomb");
	for (i = 0; i < 200; i++)
		loc[i] = tb_loc(bm->b, map, 0x400000 + 16 * i, 0, 0, 0, 0, 0);
	bm->labels = xcalloc(nlabels, sizeof *bm->labels);
	bm->label_ptrs = xcalloc(nlabels, sizeof *bm->label_ptrs);
	for (j = 0; j < nlabels; j++) {
		Perftools__Profiles__Label *lb = &bm->labels[j];

		*lb = linit;
		if (nlabels <= 64) {
			snprintf(name, sizeof name, "key%02zu", nlabels - j);
			lb->key = tb_str(bm->b, name);
			snprintf(name, sizeof name, "value%02zu", nlabels - j);
			lb->str = tb_str(bm->b, name);
		} else {
			/* one key: the numbers alone order the labels */
			lb->key = tb_str(bm->b, "bomb");
			lb->num = (int64_t)(nlabels - j);
		}
		bm->label_ptrs[j] = lb;
	}
	bm->samples = xcalloc(nsamples, sizeof *bm->samples);
	bm->sample_ptrs = xcalloc(nsamples, sizeof *bm->sample_ptrs);
	bm->locs = xcalloc(nsamples * 3, sizeof *bm->locs);
	bm->vals = xcalloc(nsamples * 2, sizeof *bm->vals);
	for (i = 0; i < nsamples; i++) {
		Perftools__Profiles__Sample *s = &bm->samples[i];

		*s = sinit;
		bm->locs[3 * i] = loc[i % 200];
		bm->locs[3 * i + 1] = loc[i / 200 % 200];
		bm->locs[3 * i + 2] = loc[i / 40000 % 200];
		s->location_id = &bm->locs[3 * i];
		s->n_location_id = 3;
		bm->vals[2 * i] = 10000000;
		bm->vals[2 * i + 1] = 1;
		s->value = &bm->vals[2 * i];
		s->n_value = 2;
		s->label = bm->label_ptrs;
		s->n_label = j;
		bm->sample_ptrs[i] = s;
	}
	bm->b->p.sample = bm->sample_ptrs;
	bm->b->p.n_sample = nsamples;
	return bm;
}

static void
bomb_free(struct bomb *bm)
{
	free(bm->samples);
	free(bm->sample_ptrs);
	free(bm->locs);
	free(bm->vals);
	free(bm->labels);
	free(bm->label_ptrs);
	tb_free(bm->b);
	free(bm);
}

static double
cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double
wall_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Label sorting must not be quadratic in the labels of a sample. */
static void
test_label_bomb(size_t nsamples, size_t nlabels)
{
	struct bomb *bm = bomb_new(nsamples, nlabels);
	struct merge *m = merge_new(NULL);
	char *cause = NULL;
	double t0, t;

	t0 = cpu_seconds();
	ok(merge_add(m, &bm->b->p, &cause) == 0, "label bomb merges (%s)",
	    cause ? cause : "ok");
	t = cpu_seconds() - t0;
	ok(t < 2.0, "label bomb: %zu samples x %zu labels in %.3f s CPU",
	    nsamples, nlabels, t);
	ok(merge_samples(m) == nsamples, "label bomb: %zu samples",
	    merge_samples(m));
	free(cause);
	merge_free(m);
	bomb_free(bm);
}

struct canceller {
	volatile int	 flag;
	double		 at;	/* wall time the flag was set */
};

static void *
canceller_run(void *arg)
{
	struct canceller *c = arg;
	struct timespec ts = { 0, 50 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	c->at = wall_seconds();
	__atomic_store_n(&c->flag, 1, __ATOMIC_RELAXED);
	return NULL;
}

/*
 * A cancel flag set from another thread stops merge_add_raw inside one
 * input (the daemon's path: the input's bytes, read in place).
 */
static void
test_cancel_inside_input(void)
{
	struct bomb *bm = bomb_new(1000000, 50);
	struct merge *m = merge_new(NULL);
	struct canceller c = { 0, 0 };
	size_t rawlen = perftools__profiles__profile__get_packed_size(&bm->b->p);
	uint8_t *raw = xmalloc(rawlen);
	pthread_t th;
	char *cause = NULL;
	double t0, done;
	int rc;

	perftools__profiles__profile__pack(&bm->b->p, raw);
	/* Set before the call: nothing is added. */
	c.flag = 1;
	merge_set_cancel(m, &c.flag);
	rc = merge_add_raw(m, raw, rawlen, &cause);
	ok(rc == -1 && merge_cancelled(m) && cause != NULL &&
	    strcmp(cause, "merge cancelled") == 0 && merge_samples(m) == 0,
	    "cancel already set: merge_add fails at once (%s)",
	    cause ? cause : "no cause");
	free(cause);
	cause = NULL;

	c.flag = 0;
	t0 = wall_seconds();
	pthread_create(&th, NULL, canceller_run, &c);
	rc = merge_add_raw(m, raw, rawlen, &cause);
	done = wall_seconds();
	pthread_join(th, NULL);
	ok(rc == -1 && merge_cancelled(m) && !merge_mismatch(m),
	    "cancel set after 50 ms stops merge_add inside the input (%s)",
	    cause ? cause : "finished");
	ok(c.at > 0 && done - c.at < 0.5,
	    "merge_add returned %.3f s after the cancel (%.3f s in all, "
	    "%zu of 1000000 samples in)", done - c.at, done - t0,
	    merge_samples(m));
	free(cause);
	free(raw);
	merge_free(m);

	/* Without a flag the same merge goes on (and a NULL flag is fine). */
	m = merge_new(NULL);
	merge_set_cancel(m, NULL);
	bomb_free(bm);
	bm = bomb_new(1000, 50);
	ok(merge_add(m, &bm->b->p, NULL) == 0 && !merge_cancelled(m),
	    "no cancel flag: merge_add completes");
	merge_free(m);
	bomb_free(bm);
}

int
main(void)
{
	corpus = getenv("PROFD_CORPUS");
	if (corpus == NULL)
		corpus = "test/corpus";
	test_arena();
	test_dedupe();
	test_address_independence();
	test_unsymbolized();
	test_main_mapping();
	test_main_mapping_shares();
	test_main_mapping_unused();
	test_labels();
	test_zero_samples();
	test_no_sample_types();
	test_mismatch_and_align();
	test_header();
	test_bad_refs();
	test_corpus();
	test_label_bomb(20000, 50);
	test_label_bomb(40, 20000);
	test_cancel_inside_input();
	ok(raw_checked > 10 && raw_differed == 0, "merge_result_raw writes "
	    "what protobuf-c packs from merge_result, in all %zu results "
	    "checked (%zu differ)", raw_checked, raw_differed);
	return tap_done();
}
