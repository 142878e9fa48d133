/*
 * view/view_ptree.c, view/view_tree.c's call sites, view/view_pick.c:
 * Pyroscope's tree bytes read back by a decoder written here from the
 * format (preorder; a node is its name's length, the name, its self and
 * its number of children, as uvarints; parents rebuilt from the counts,
 * totals summed up from the selves, siblings of one name merged), exact
 * bytes of small trees, the node budget's "other" (merged into a child
 * named "other" when there is one), the corpus (self per name = pprof's
 * flat); call-site selection in the tree and in a decoded profile
 * (inlined frames expanded from the root); one sample type kept in a
 * decoded profile that encodes and validates again.
 */
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "proto/pprof.h"
#include "test/lib/flat_testlib.h"
#include "test/lib/merge_testlib.h"
#include "test/lib/tap.h"
#include "view/view_pick.h"
#include "view/view_ptree.h"
#include "view/view_tree.h"

/* A decoded node; node 0 is the virtual root's parent. */
struct test_ptree_node {
	char	*name;
	int64_t	 self, total;
	size_t	 parent;
	size_t	 child, next;	/* first child, next sibling; 0: none */
};

struct test_ptree {
	struct test_ptree_node	*v;
	size_t			 n, cap;
};

/* Reads a uvarint at *off; -1 past the end or over 10 bytes. */
static int
test_ptree_uvarint(const uint8_t *b, size_t len, size_t *off, uint64_t *v)
{
	unsigned shift = 0;

	*v = 0;
	while (*off < len && shift < 70) {
		*v |= (uint64_t)(b[*off] & 0x7f) << shift;
		if ((b[(*off)++] & 0x80) == 0)
			return 0;
		shift += 7;
	}
	return -1;
}

/* The child of parent named name (merged as Pyroscope's insert), or new. */
static size_t
test_ptree_insert(struct test_ptree *d, size_t parent, const char *name,
    size_t len)
{
	size_t i;

	for (i = d->v[parent].child; i != 0; i = d->v[i].next)
		if (strlen(d->v[i].name) == len &&
		    memcmp(d->v[i].name, name, len) == 0)
			return i;
	if (d->n == d->cap) {
		d->cap = d->cap * 2 + 16;
		d->v = xreallocarray(d->v, d->cap, sizeof *d->v);
	}
	memset(&d->v[d->n], 0, sizeof *d->v);
	d->v[d->n].name = xcalloc(1, len + 1);
	memcpy(d->v[d->n].name, name, len);
	d->v[d->n].parent = parent;
	d->v[d->n].next = d->v[parent].child;
	d->v[parent].child = d->n;
	return d->n++;
}

/* Decodes tree bytes as Pyroscope's UnmarshalTree does; -1 if malformed. */
static int
test_ptree_decode(const uint8_t *b, size_t len, struct test_ptree *d)
{
	size_t *stack = xcalloc(1, sizeof *stack), ns = 1, off = 0, n, p, k;
	uint64_t nlen, self, kids;

	memset(d, 0, sizeof *d);
	d->cap = 16;
	d->v = xcalloc(d->cap, sizeof *d->v);
	d->v[0].name = xstrdup("");
	d->n = 1;
	if (len < 2) {
		free(stack);
		return 0;
	}
	while (ns > 0) {
		p = stack[--ns];
		if (test_ptree_uvarint(b, len, &off, &nlen) != 0 ||
		    nlen > len - off) {
			free(stack);
			return -1;
		}
		n = test_ptree_insert(d, p, (const char *)b + off, nlen);
		off += nlen;
		if (test_ptree_uvarint(b, len, &off, &self) != 0 ||
		    test_ptree_uvarint(b, len, &off, &kids) != 0 ||
		    kids > len) {
			free(stack);
			return -1;
		}
		d->v[n].self = (int64_t)self;
		for (k = n; k != 0; k = d->v[k].parent)
			d->v[k].total += (int64_t)self;
		stack = xreallocarray(stack, ns + kids + 1, sizeof *stack);
		for (k = 0; k < kids; k++)
			stack[ns++] = n;
	}
	free(stack);
	return off == len ? 0 : -1;
}

static void
test_ptree_free(struct test_ptree *d)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		free(d->v[i].name);
	free(d->v);
}

/* The total of the decoded tree: its real roots' totals. */
static int64_t
test_ptree_total(const struct test_ptree *d)
{
	int64_t sum = 0;
	size_t i;

	for (i = 2; i < d->n; i++)
		if (d->v[i].parent == 1)
			sum += d->v[i].total;
	return sum;
}

/* The node at path "a;b;c" from the real roots, or 0. */
static size_t
test_ptree_find(const struct test_ptree *d, const char *path)
{
	char *copy = xstrdup(path), *tok, *save = NULL;
	size_t at = 1, i;

	for (tok = strtok_r(copy, ";", &save); tok != NULL && at != 0;
	    tok = strtok_r(NULL, ";", &save)) {
		for (i = 2; i < d->n; i++)
			if (d->v[i].parent == at &&
			    strcmp(d->v[i].name, tok) == 0)
				break;
		at = i < d->n ? i : 0;
	}
	free(copy);
	return at;
}

/* A tree of one sample type from stacks "a;b;c" (root first). */
static void
test_ptree_tree(struct view_tree *t, const char *const *stacks,
    const int64_t *vals, size_t n)
{
	struct tb *b = tb_new("samples/count");
	uint64_t locs[9], fn;
	char *copy, *tok, *save, *names[8];
	size_t i, j, k, depth;

	for (i = 0; i < n; i++) {
		copy = xstrdup(stacks[i]);
		depth = 0;
		save = NULL;
		for (tok = strtok_r(copy, ";", &save); tok != NULL && depth < 8;
		    tok = strtok_r(NULL, ";", &save))
			names[depth++] = tok;
		for (j = 0; j < depth; j++) {
			fn = 0;
			for (k = 0; k < b->p.n_function; k++)
				if (strcmp(b->strs[b->fns[k].name],
				    names[depth - 1 - j]) == 0)
					fn = b->fns[k].id;
			if (fn == 0) {
				fn = tb_func(b, names[depth - 1 - j], "f.go");
				tb_loc(b, 0, 0x1000 + fn, 1, fn, 1, 0, 0);
			}
			locs[j] = fn - 100;	/* the location made with it */
		}
		locs[depth] = 0;
		tb_sample(b, locs, &vals[i], NULL);
		free(copy);
	}
	view_tree_init(t);
	view_tree_add(t, &b->p, 0, NULL, 0);
	tb_free(b);
}

/* Whether stacks encode (max_nodes) to exactly want's n bytes. */
static int
test_ptree_bytes(const char *const *stacks, const int64_t *vals, size_t n,
    size_t max_nodes, const uint8_t *want, size_t wlen)
{
	struct view_tree t;
	uint8_t *out;
	size_t len, i;
	int same;

	test_ptree_tree(&t, stacks, vals, n);
	view_ptree_encode(&t, max_nodes, &out, &len);
	same = len == wlen && memcmp(out, want, len) == 0;
	if (!same) {
		printf("#");
		for (i = 0; i < len; i++)
			printf(" %02x", out[i]);
		printf("\n");
	}
	ok(len <= view_ptree_bytes_max(&t), "bytes within the bound");
	free(out);
	view_tree_clear(&t);
	return same;
}

/* Small trees, byte for byte, and the budget's "other". */
static void
test_ptree_small(void)
{
	static const char *const one[] = { "a" };
	static const char *const two[] = { "a;b", "a;c", "d" };
	static const char *const oth[] = { "a;other", "a;x", "a;y" };
	static const char *const fold[] = { "a;b", "a;z", "a;p" };
	static const char *const full[] = { "a;b;c", "a;b;c", "a;b;c1",
	    "a;b1;c", "a;b1;c1", "a1;b;c", "a1;b;c1", "a1;b1;c", "a1;b1;c1" };
	static const int64_t ones[] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 };
	struct view_tree t;
	struct test_ptree d;
	uint8_t *out;
	size_t len;

	ok(test_ptree_bytes(one, (int64_t[]){ 1 }, 1, 0, (const uint8_t[]){
	    0, 0, 1, 1, 'a', 1, 0 }, 7), "one node: the virtual root "
	    "(no name, self 0, 1 child), then a");
	ok(test_ptree_bytes(two, (int64_t[]){ 1, 2, 3 }, 3, 0,
	    (const uint8_t[]){ 0, 0, 2, 1, 'd', 3, 0, 1, 'a', 0, 2, 1, 'c',
	    2, 0, 1, 'b', 1, 0 }, 19), "children written last name first");
	ok(test_ptree_bytes(oth, (int64_t[]){ 1, 1, 5 }, 3, 2,
	    (const uint8_t[]){ 0, 0, 1, 1, 'a', 0, 2, 1, 'y', 5, 0, 5, 'o',
	    't', 'h', 'e', 'r', 2, 0 }, 19), "folded x merged into the "
	    "child named other");
	ok(test_ptree_bytes(fold, (int64_t[]){ 1, 5, 1 }, 3, 2,
	    (const uint8_t[]){ 0, 0, 1, 1, 'a', 0, 2, 1, 'z', 5, 0, 5, 'o',
	    't', 'h', 'e', 'r', 2, 0 }, 19), "a new other in its place "
	    "by name");

	view_tree_init(&t);
	view_ptree_encode(&t, 0, &out, &len);
	ok(len == 0, "no samples: no bytes");
	free(out);
	view_tree_clear(&t);

	/* Pyroscope's own truncation case: 9 stacks, max_nodes 3. */
	test_ptree_tree(&t, full, ones, 9);
	view_ptree_encode(&t, 3, &out, &len);
	ok(test_ptree_decode(out, len, &d) == 0 && d.n == 8 &&
	    d.v[test_ptree_find(&d, "a;b;other")].self == 3 &&
	    d.v[test_ptree_find(&d, "a;other")].self == 2 &&
	    d.v[test_ptree_find(&d, "a1;other")].self == 4 &&
	    test_ptree_find(&d, "a;b;other") != 0 &&
	    test_ptree_find(&d, "a;other") != 0 &&
	    test_ptree_find(&d, "a1;other") != 0 &&
	    test_ptree_total(&d) == 9, "max_nodes 3: a;b;other 3, a;other "
	    "2, a1;other 4, total 9");
	test_ptree_free(&d);
	free(out);
	view_ptree_encode(&t, 0, &out, &len);
	ok(test_ptree_decode(out, len, &d) == 0 && d.n == 16 &&
	    test_ptree_total(&d) == 9 &&
	    d.v[test_ptree_find(&d, "a1;b1;c1")].self == 1 &&
	    d.v[test_ptree_find(&d, "a;b;c")].self == 2,
	    "max_nodes 0: every node");
	test_ptree_free(&d);
	free(out);
	view_tree_clear(&t);
}

/* Whether each function's flat equals its self summed over the nodes. */
static int
test_ptree_flat(const struct test_ptree *d,
    const Perftools__Profiles__Profile *p, int idx)
{
	struct ft_sum *self = xcalloc(d->n + 1, sizeof *self), *flat;
	size_t i, n = 0, nf;
	int same;

	for (i = 2; i < d->n; i++) {
		self[n].name = d->v[i].name;
		self[n++].v = d->v[i].self;
	}
	n = ft_merge(self, n);
	flat = ft_flat(p, idx, &nf);
	same = nf > 0 && ft_same(flat, nf, self, n);
	free(self);
	free(flat);
	return same;
}

/* Real profiles: flat per name, totals, the budget's kept nodes. */
static void
test_ptree_corpus(const char *corpus)
{
	static const char *const files[] = { "go/bigstacks/cpu_A_01.pb.gz",
	    "go/allocheavy/allocs_A_01.pb.gz" };
	static const size_t budgets[] = { 0, 500, 50, 5, 1 };
	Perftools__Profiles__Profile *p;
	struct view_tree t;
	struct test_ptree d;
	char path[1024];
	uint8_t *out;
	size_t f, k, i, len, kept, others;
	int64_t min, sum;
	int idx, good;

	for (f = 0; f < sizeof files / sizeof files[0]; f++) {
		snprintf(path, sizeof path, "%s/%s", corpus, files[f]);
		p = tl_load(path);
		if (!ok(p != NULL, "%s loads", files[f]))
			continue;
		idx = (int)p->n_sample_type - 1;
		for (sum = 0, i = 0; i < p->n_sample; i++)
			sum += p->sample[i]->value[idx];
		view_tree_init(&t);
		view_tree_add(&t, p, idx, NULL, 0);
		for (k = 0; k < sizeof budgets / sizeof budgets[0]; k++) {
			view_ptree_encode(&t, budgets[k], &out, &len);
			good = test_ptree_decode(out, len, &d) == 0 &&
			    test_ptree_total(&d) == sum &&
			    len <= view_ptree_bytes_max(&t);
			min = view_tree_min_value(&t, budgets[k], 0);
			for (kept = 0, i = 1; i < t.n; i++)
				kept += t.nodes[i].value != 0 &&
				    t.nodes[i].value >= min;
			for (others = 0, i = 2; i < d.n; i++)
				others += strcmp(d.v[i].name, "other") == 0;
			ok(good && d.n - 2 - others == kept, "%s max_nodes "
			    "%zu: decodes, total %lld, %zu nodes kept as "
			    "the least total %lld says (+%zu other)", files[f],
			    budgets[k], (long long)sum, kept, (long long)min,
			    others);
			if (budgets[k] == 0)
				ok(test_ptree_flat(&d, p, idx),
				    "%s: self per name is pprof's flat",
				    files[f]);
			test_ptree_free(&d);
			free(out);
		}
		view_tree_clear(&t);
		pprof_free(p, NULL);
	}
}

/* A decoded copy of a built profile (protobuf-c's allocator). */
static Perftools__Profiles__Profile *
test_ptree_copy(const struct tb *b)
{
	size_t len = perftools__profiles__profile__get_packed_size(&b->p);
	uint8_t *raw = xmalloc(len + 1);
	Perftools__Profiles__Profile *p;
	char *cause = NULL;

	perftools__profiles__profile__pack(&b->p, raw);
	p = pprof_decode(raw, len, NULL, &cause);
	free(raw);
	free(cause);
	return p;
}

/* The sum of sample type idx over p's samples. */
static int64_t
test_ptree_sum(const Perftools__Profiles__Profile *p, size_t idx)
{
	int64_t sum = 0;
	size_t i;

	for (i = 0; i < p->n_sample; i++)
		sum += idx < p->sample[i]->n_value ? p->sample[i]->value[idx] :
		    0;
	return sum;
}

/* A profile with inlined frames and a location without lines. */
static struct tb *
test_ptree_inlined(void)
{
	struct tb *b = tb_new("samples/count,cpu/nanoseconds");
	uint64_t fmain, fa, fb, finl, m, mz, lmain, la, lb, linl, lbare;

	fmain = tb_func(b, "main", "main.c");
	fa = tb_func(b, "a", "a.c");
	fb = tb_func(b, "b", "b.c");
	finl = tb_func(b, "inl", "inl.h");
	m = tb_map(b, 0x1000, 0x9000, 0, "/usr/bin/prog");
	mz = tb_map(b, 0x10000, 0x19000, 0, "/usr/lib/libz.so.1");
	lmain = tb_loc(b, m, 0x1100, 1, fmain, 10, 0, 0);
	la = tb_loc(b, m, 0x1200, 1, fa, 20, 0, 0);
	lb = tb_loc(b, m, 0x1300, 1, fb, 30, 0, 0);
	/* inl inlined into b: the callee's line first. */
	linl = tb_loc(b, m, 0x1400, 2, finl, 40, fb, 31);
	lbare = tb_loc(b, mz, 0x10600, 0, 0, 0, 0, 0);
	/* main;a 10, main;b;inl 20, main;b 5, main 1, main;b;inl;a 7,
	 * main;[libz.so.1] 3; cpu is ten times samples, one sample 0. */
	tb_sample(b, (uint64_t[]){ la, lmain, 0 }, (int64_t[]){ 1, 10 }, NULL);
	tb_sample(b, (uint64_t[]){ linl, lmain, 0 }, (int64_t[]){ 2, 20 },
	    NULL);
	tb_sample(b, (uint64_t[]){ lb, lmain, 0 }, (int64_t[]){ 0, 5 }, NULL);
	tb_sample(b, (uint64_t[]){ lmain, 0 }, (int64_t[]){ 1, 1 }, NULL);
	tb_sample(b, (uint64_t[]){ la, linl, lmain, 0 },
	    (int64_t[]){ 1, 7 }, NULL);
	tb_sample(b, (uint64_t[]){ lbare, lmain, 0 }, (int64_t[]){ 1, 0 },
	    NULL);
	return b;
}

/* The cpu total of the samples under a call site, in the tree. */
static int64_t
test_ptree_site_tree(const struct tb *b, const char *const *site, size_t n)
{
	struct view_filter f;
	struct view_tree t;
	int64_t total;

	memset(&f, 0, sizeof f);
	f.call_site = site;
	f.ncall_site = n;
	view_tree_init(&t);
	view_tree_add(&t, &b->p, 1, &f, 0);
	total = t.total;
	view_tree_clear(&t);
	return total;
}

/* The cpu total and count of a decoded copy's samples under a site. */
static int64_t
test_ptree_site_pprof(const struct tb *b, const char *const *site, size_t n,
    size_t *nsamples)
{
	Perftools__Profiles__Profile *p = test_ptree_copy(b);
	int64_t total;

	view_tree_keep_call_site(p, site, n);
	total = test_ptree_sum(p, 1);
	*nsamples = p->n_sample;
	pprof_free(p, NULL);
	return total;
}

/* Call-site selection: from the root, inlined frames expanded. */
static void
test_ptree_call_site(void)
{
	static const struct {
		const char	*site[5];
		size_t		 n;
		int64_t		 cpu;
		size_t		 samples;
		const char	*what;
	} cases[] = {
		{ { "main" }, 1, 43, 6, "main: every sample" },
		{ { "main", "b" }, 2, 32, 3, "main;b: through b, inlined "
		    "frames' outer function" },
		{ { "main", "b", "inl" }, 3, 27, 2, "main;b;inl: the inlined "
		    "frame after its caller" },
		{ { "main", "inl" }, 2, 0, 0, "main;inl: b comes between" },
		{ { "b" }, 1, 0, 0, "b: not the root" },
		{ { "main", "b", "inl", "a", "x" }, 5, 0, 0, "longer than "
		    "every stack" },
		{ { "main", "[libz.so.1]" }, 2, 0, 1, "a location without "
		    "lines by its tree name" },
		{ { "main", "a" }, 2, 10, 1, "main;a" },
	};
	struct tb *b = test_ptree_inlined();
	size_t i, ns;
	int64_t tree, pp;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tree = test_ptree_site_tree(b, cases[i].site, cases[i].n);
		pp = test_ptree_site_pprof(b, cases[i].site, cases[i].n, &ns);
		ok(tree == cases[i].cpu && pp == cases[i].cpu &&
		    ns == cases[i].samples, "call site %s: tree %lld, pprof "
		    "%lld in %zu samples", cases[i].what, (long long)tree,
		    (long long)pp, ns);
	}
	tb_free(b);
}

/* One sample type kept in place; the result encodes and validates. */
static void
test_ptree_pick(void)
{
	struct tb *b = test_ptree_inlined();
	Perftools__Profiles__Profile *p, *back = NULL;
	uint8_t *gz;
	size_t len, i;
	char *cause = NULL;
	int good;

	p = test_ptree_copy(b);
	view_pick_type(p, 1);
	good = p->n_sample_type == 1 &&
	    strcmp(p->string_table[p->sample_type[0]->type], "cpu") == 0 &&
	    strcmp(p->string_table[p->sample_type[0]->unit],
	    "nanoseconds") == 0 && p->n_sample == 5 &&
	    test_ptree_sum(p, 0) == 43 && p->default_sample_type ==
	    p->sample_type[0]->type;
	for (i = 0; i < p->n_sample; i++)
		good = good && p->sample[i]->n_value == 1 &&
		    p->sample[i]->value[0] != 0;
	ok(good, "cpu kept: one sample type, one value a sample, the "
	    "sample of cpu 0 dropped");
	ok(pprof_validate(p, &cause) == 0, "it validates: %s",
	    cause != NULL ? cause : "ok");
	free(cause);
	cause = NULL;
	ok(pprof_encode_gzip(p, &gz, &len, &cause) == 0 &&
	    (back = pprof_load(gz, len, 1 << 20, NULL, &cause)) != NULL &&
	    back->n_sample == 5 && test_ptree_sum(back, 0) == 43,
	    "it encodes (pprof_encode_gzip) and loads back");
	if (back != NULL)
		pprof_free(back, NULL);
	free(gz);
	free(cause);
	cause = NULL;
	pprof_free(p, NULL);

	p = test_ptree_copy(b);
	view_pick_type(p, 0);
	ok(p->n_sample_type == 1 && p->n_sample == 5 &&
	    test_ptree_sum(p, 0) == 6 &&
	    strcmp(p->string_table[p->sample_type[0]->type], "samples") == 0,
	    "samples kept: the sample of samples 0 dropped");
	view_tree_keep_call_site(p, (const char *[]){ "main", "b" }, 2);
	ok(p->n_sample == 2 && test_ptree_sum(p, 0) == 3 &&
	    pprof_validate(p, &cause) == 0, "then main;b: 2 samples, 3");
	free(cause);
	cause = NULL;
	pprof_free(p, NULL);

	p = view_pick_empty("alloc_space", "bytes");
	ok(p->n_sample == 0 && p->n_sample_type == 1 &&
	    pprof_validate(p, &cause) == 0 &&
	    strcmp(p->string_table[p->sample_type[0]->unit], "bytes") == 0,
	    "an empty profile of one sample type validates");
	free(cause);
	pprof_free(p, NULL);
	tb_free(b);
}

int
main(void)
{
	const char *corpus = getenv("PROFD_CORPUS");

	test_ptree_small();
	test_ptree_call_site();
	test_ptree_pick();
	if (corpus != NULL && *corpus != '\0')
		test_ptree_corpus(corpus);
	else
		ok(1, "# SKIP PROFD_CORPUS is not set");
	return tap_done();
}
