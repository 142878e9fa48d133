/*
 * view/: the call tree, the top table and the flame graph's JSON on a
 * hand-made profile with what pprof's numbers depend on: inlined frames
 * (one location, two lines), recursion (cum counted once per sample),
 * a location without lines (named after its mapping), hide and focus
 * (by function name and by file name), zero-value samples, the sample
 * type chosen by name, by the profile's default and by default the last;
 * and the pruning that keeps every parent's value exact.
 */
#include <jansson.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "test/lib/merge_testlib.h"
#include "test/lib/tap.h"
#include "view/view_flame.h"
#include "view/view_top.h"
#include "view/view_tree.h"

/* The flat and cum of name in the top rows ({-1, -1} if absent). */
static void
test_view_row(const struct view_tree *t, const char *name, int64_t *flat,
    int64_t *cum)
{
	struct view_top_row *rows;
	size_t n, i;

	*flat = *cum = -1;
	rows = view_top_rows(t, &n);
	for (i = 0; i < n; i++) {
		if (strcmp(t->names[rows[i].name], name) == 0) {
			*flat = rows[i].flat;
			*cum = rows[i].cum;
		}
	}
	free(rows);
}

/* Sum of value over the children of a JSON node; -1 on a bad parent. */
static int
test_view_exact(json_t *node)
{
	json_t *kids = json_object_get(node, "children"), *c;
	json_int_t sum = json_integer_value(json_object_get(node, "self"));
	size_t i;

	json_array_foreach(kids, i, c) {
		sum += json_integer_value(json_object_get(c, "value"));
		if (!test_view_exact(c))
			return 0;
	}
	return kids == NULL || json_array_size(kids) == 0 ||
	    sum == json_integer_value(json_object_get(node, "value"));
}

/* Number of nodes named other than total and "other". */
static size_t
test_view_named(json_t *node)
{
	json_t *kids = json_object_get(node, "children"), *c;
	const char *name = json_string_value(json_object_get(node, "name"));
	size_t i, n = strcmp(name, "total") != 0 && strcmp(name, "other") != 0;

	json_array_foreach(kids, i, c)
		n += test_view_named(c);
	return n;
}

int
main(void)
{
	struct tb *b = tb_new("samples/count,cpu/nanoseconds");
	uint64_t fmain, fa, fb, finl, frec, m, mz, lmain, la, lb, linl, lrec,
	    lbare;
	struct view_tree t;
	struct view_filter f;
	regex_t re;
	int64_t flat, cum;
	char *cause = NULL;
	json_t *j;
	int idx;

	fmain = tb_func(b, "main", "/src/main.c");
	fa = tb_func(b, "a", "/src/a.c");
	fb = tb_func(b, "b", "/src/b.c");
	finl = tb_func(b, "inl", "/src/inline.h");
	frec = tb_func(b, "rec", "/src/rec.c");
	m = tb_map(b, 0x1000, 0x9000, 0, "/usr/bin/prog");
	mz = tb_map(b, 0x10000, 0x19000, 0, "/usr/lib/libz.so.1");
	lmain = tb_loc(b, m, 0x1100, 1, fmain, 10, 0, 0);
	la = tb_loc(b, m, 0x1200, 1, fa, 20, 0, 0);
	lb = tb_loc(b, m, 0x1300, 1, fb, 30, 0, 0);
	/* inl inlined into b: line[0] is the innermost. */
	linl = tb_loc(b, m, 0x1400, 2, finl, 40, fb, 31);
	lrec = tb_loc(b, m, 0x1500, 1, frec, 50, 0, 0);
	lbare = tb_loc(b, mz, 0x10600, 0, 0, 0, 0, 0);
	/* main > a: 10; main > b > inl: 20; main > rec > rec > rec: 5;
	 * main > a > [libz]: 7; a zero-value sample. */
	tb_sample(b, (uint64_t[]){ la, lmain, 0 }, (int64_t[]){ 1, 10 }, NULL);
	tb_sample(b, (uint64_t[]){ linl, lmain, 0 }, (int64_t[]){ 2, 20 },
	    NULL);
	tb_sample(b, (uint64_t[]){ lrec, lrec, lrec, lmain, 0 },
	    (int64_t[]){ 1, 5 }, NULL);
	tb_sample(b, (uint64_t[]){ lbare, la, lmain, 0 }, (int64_t[]){ 1, 7 },
	    NULL);
	tb_sample(b, (uint64_t[]){ lb, lmain, 0 }, (int64_t[]){ 0, 0 }, NULL);

	/* Sample types: by name, else the last; the default when named. */
	ok(view_tree_sample_index(&b->p, "cpu", &cause) == 1, "cpu is index 1");
	ok(view_tree_sample_index(&b->p, NULL, &cause) == 1,
	    "no name, no default: the last");
	idx = view_tree_sample_index(&b->p, "nope", &cause);
	ok(idx == -1 && cause != NULL && strstr(cause, "nope") != NULL,
	    "an unknown name is refused: %s", cause);
	free(cause);
	cause = NULL;
	b->p.default_sample_type = tb_str(b, "samples");
	idx = view_tree_sample_index(&b->p, "", &cause);
	ok(idx == 0, "the profile's default sample type: samples (%d)", idx);
	b->p.default_sample_type = 0;

	view_tree_init(&t);
	view_tree_add(&t, &b->p, 1, NULL, 0);
	ok(t.total == 42, "total 42 (%lld)", (long long)t.total);
	test_view_row(&t, "main", &flat, &cum);
	ok(flat == 0 && cum == 42, "main: flat 0, cum 42");
	test_view_row(&t, "a", &flat, &cum);
	ok(flat == 10 && cum == 17, "a: flat 10, cum 17 (%lld %lld)",
	    (long long)flat, (long long)cum);
	test_view_row(&t, "inl", &flat, &cum);
	ok(flat == 20 && cum == 20, "inl (inlined): a frame of its own");
	test_view_row(&t, "b", &flat, &cum);
	ok(flat == 0 && cum == 20, "b: the caller inl was inlined into");
	test_view_row(&t, "rec", &flat, &cum);
	ok(flat == 5 && cum == 5, "rec x3: cum counted once per sample");
	test_view_row(&t, "[libz.so.1]", &flat, &cum);
	ok(flat == 7 && cum == 7, "a location without lines: its mapping");
	j = view_flame_json(&t, 4096, 0);
	ok(test_view_exact(j), "every parent's value is self + children");
	ok(json_integer_value(json_object_get(j, "value")) == 42,
	    "the root holds the total");
	json_decref(j);
	j = view_flame_json(&t, 3, 0);
	ok(test_view_named(j) <= 3 && test_view_exact(j),
	    "max_nodes 3: %zu named nodes, parents exact", test_view_named(j));
	json_decref(j);
	view_tree_clear(&t);

	/* hide by file name: inline.h; its sample goes to b. */
	regcomp(&re, "inline\\.h", REG_EXTENDED | REG_NOSUB);
	memset(&f, 0, sizeof f);	/* no call site */
	f.focus = NULL;
	f.hide = &re;
	view_tree_init(&t);
	view_tree_add(&t, &b->p, 1, &f, 0);
	test_view_row(&t, "b", &flat, &cum);
	ok(flat == 20 && cum == 20 && t.total == 42,
	    "hide by file: inl's samples are b's own");
	view_tree_clear(&t);
	regfree(&re);

	/* focus on a: only the samples through a. */
	regcomp(&re, "^a$", REG_EXTENDED | REG_NOSUB);
	f.focus = &re;
	f.hide = NULL;
	view_tree_init(&t);
	view_tree_add(&t, &b->p, 1, &f, 0);
	ok(t.total == 17, "focus=^a$: total 17 (%lld)", (long long)t.total);
	view_tree_clear(&t);
	regfree(&re);

	/* hide by mapping file: the bare location goes, a keeps its 7. */
	regcomp(&re, "libz", REG_EXTENDED | REG_NOSUB);
	f.focus = NULL;
	f.hide = &re;
	view_tree_init(&t);
	view_tree_add(&t, &b->p, 1, &f, 0);
	test_view_row(&t, "a", &flat, &cum);
	ok(flat == 17, "hide by mapping: a's flat 17 (%lld)", (long long)flat);
	view_tree_clear(&t);
	regfree(&re);

	/* A diff: the same profile as both sides. */
	view_tree_init(&t);
	view_tree_add(&t, &b->p, 1, NULL, 0);
	view_tree_add(&t, &b->p, 0, NULL, 1);
	ok(t.total == 42 && t.base_total == 5, "diff: total 42, base 5");
	j = view_flame_json(&t, 4096, 1);
	ok(json_integer_value(json_object_get(j, "base_value")) == 5,
	    "diff: the root's base_value");
	json_decref(j);
	view_tree_clear(&t);
	tb_free(b);
	return tap_done();
}
