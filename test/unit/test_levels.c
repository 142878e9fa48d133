/*
 * view/view_levels.c: Pyroscope's flame graph levels of a call tree, on
 * hand-made trees whose levels are worked out here by the rules of the
 * format (names numbered in Pyroscope's visiting order, children by
 * name, the "other" of the folded ones last, offsets as deltas), with
 * the node budget (the least total; a diff counts its root and the larger
 * side), on the corpus (structure checked level by level: each node's
 * children lie side by side from its offset plus its self, and add up to
 * its total less its self; self per name equals pprof's flat), through
 * the protobuf-c messages and the render JSON.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "test/lib/flat_testlib.h"
#include "test/lib/merge_testlib.h"
#include "test/lib/tap.h"
#include "view/view_levels.h"
#include "view/view_tree.h"

/* A profile of one sample type from stacks "a;b;c" (root first). */
static struct tb *
test_levels_profile(const char *const *stacks, const int64_t *vals, size_t n)
{
	struct tb *b = tb_new("samples/count");
	uint64_t locs[9], fn, loc;
	char *copy, *tok, *save, *names[8];
	size_t i, j, k, depth;

	for (i = 0; i < n; i++) {
		copy = xstrdup(stacks[i]);
		depth = 0;
		save = NULL;
		for (tok = strtok_r(copy, ";", &save); tok != NULL && depth < 8;
		    tok = strtok_r(NULL, ";", &save))
			names[depth++] = tok;
		/* Leaf first; one location per function name. */
		for (j = 0; j < depth; j++) {
			fn = 0;
			for (k = 0; k < b->p.n_function; k++)
				if (strcmp(b->strs[b->fns[k].name],
				    names[depth - 1 - j]) == 0)
					fn = b->fns[k].id;
			if (fn == 0) {
				fn = tb_func(b, names[depth - 1 - j], "f.go");
				loc = tb_loc(b, 0, 0x1000 + fn, 1, fn, 1, 0, 0);
			} else
				loc = fn - 100;	/* see tb_func, tb_loc */
			locs[j] = loc;
		}
		locs[depth] = 0;
		tb_sample(b, locs, &vals[i], NULL);
		free(copy);
	}
	return b;
}

/* The tree of stacks (as the baseline too when base_stacks is set). */
static void
test_levels_tree(struct view_tree *t, const char *const *stacks,
    const int64_t *vals, size_t n, const char *const *base_stacks,
    const int64_t *base_vals, size_t nbase)
{
	struct tb *b;

	view_tree_init(t);
	if (base_stacks != NULL) {
		b = test_levels_profile(base_stacks, base_vals, nbase);
		view_tree_add(t, &b->p, 0, NULL, 1);
		tb_free(b);
	}
	b = test_levels_profile(stacks, vals, n);
	view_tree_add(t, &b->p, 0, NULL, 0);
	tb_free(b);
}

/* Whether the names are exactly want (n of them). */
static int
test_levels_names(const struct view_levels *lv, const char *const *want,
    size_t n)
{
	size_t i;

	if (lv->nnames != n)
		return 0;
	for (i = 0; i < n; i++)
		if (strcmp(lv->names[i], want[i]) != 0)
			return 0;
	return 1;
}

/* Whether level l holds exactly want (n values). */
static int
test_levels_level(const struct view_levels *lv, size_t l, const int64_t *want,
    size_t n)
{
	return l < lv->nlevels && lv->nvalues[l] == n &&
	    memcmp(lv->levels[l], want, n * sizeof *want) == 0;
}

/*
 * Checks the levels' structure (see the top); returns 0 on success or
 * the level where it fails + 1. sides: 1, or 2 for a diff.
 */
static size_t
test_levels_check(const struct view_levels *lv)
{
	size_t stride = lv->diff ? 7 : 4, sides = lv->diff ? 2 : 1;
	size_t l, i, j, s, np, nc;
	int64_t *xp, *xc, want[2], need[2], got[2], end;
	int more;

	if (lv->nlevels == 0 || lv->nvalues[0] != stride)
		return 1;
	for (l = 0; l < lv->nlevels; l++) {
		if (lv->nvalues[l] % stride != 0 || lv->nvalues[l] == 0)
			return l + 1;
		for (i = 0; i < lv->nvalues[l]; i += stride)
			if (lv->levels[l][i + stride - 1] < 0 ||
			    (size_t)lv->levels[l][i + stride - 1] >= lv->nnames)
				return l + 1;
	}
	/* Absolute offsets of each side, level by level. */
	xp = xcalloc(2 * (lv->nvalues[0] / stride), sizeof *xp);
	for (l = 0; l + 1 <= lv->nlevels; l++) {
		np = lv->nvalues[l] / stride;
		nc = l + 1 < lv->nlevels ? lv->nvalues[l + 1] / stride : 0;
		xc = xcalloc(2 * nc + 1, sizeof *xc);
		for (s = 0; s < sides; s++) {
			end = 0;
			for (j = 0; j < nc; j++) {
				xc[2 * j + s] = end +
				    lv->levels[l + 1][j * stride + 3 * s];
				end = xc[2 * j + s] +
				    lv->levels[l + 1][j * stride + 3 * s + 1];
			}
		}
		if (l == 0)
			xp[0] = xp[1] = 0;
		for (i = 0, j = 0; i < np; i++) {
			for (s = 0; s < sides; s++) {
				want[s] = xp[2 * i + s] +
				    lv->levels[l][i * stride + 3 * s + 2];
				need[s] = lv->levels[l][i * stride + 3 * s +
				    1] - lv->levels[l][i * stride + 3 * s + 2];
				got[s] = 0;
			}
			for (;;) {
				more = 0;
				for (s = 0; s < sides; s++)
					more |= got[s] < need[s];
				if (!more || j >= nc)
					break;
				for (s = 0; s < sides; s++) {
					if (xc[2 * j + s] != want[s]) {
						free(xc);
						free(xp);
						return l + 2;
					}
					want[s] += lv->levels[l + 1][j * stride +
					    3 * s + 1];
					got[s] += lv->levels[l + 1][j * stride +
					    3 * s + 1];
				}
				j++;
			}
			for (s = 0; s < sides; s++)
				if (got[s] != need[s]) {
					free(xc);
					free(xp);
					return l + 1;
				}
		}
		free(xp);
		xp = xc;
		if (j != nc) {
			free(xp);
			return l + 2;
		}
	}
	free(xp);
	return 0;
}

/* The levels of Pyroscope's own examples, worked out by hand. */
static void
test_levels_examples(void)
{
	static const char *const st[] = { "a;b;e", "a;c", "a;c;d" };
	static const int64_t sv[] = { 1, 2, 1 };
	static const char *const dl[] = { "a;b", "a;c", "a;e" };
	static const int64_t dlv[] = { 1, 2, 3 };
	static const char *const dr[] = { "a;b", "a;d", "a;e" };
	static const int64_t drv[] = { 4, 8, 12 };
	struct view_tree t;
	struct view_levels lv;

	test_levels_tree(&t, st, sv, 3, NULL, NULL, 0);
	view_levels_build(&t, 0, 0, &lv);
	ok(test_levels_names(&lv, (const char *[]){ "total", "a", "c", "d",
	    "b", "e" }, 6), "names in visiting order: the last child first");
	ok(test_levels_level(&lv, 0, (int64_t[]){ 0, 4, 0, 0 }, 4) &&
	    test_levels_level(&lv, 1, (int64_t[]){ 0, 4, 0, 1 }, 4) &&
	    test_levels_level(&lv, 2, (int64_t[]){ 0, 1, 0, 4, 0, 3, 2, 2 },
	    8) && test_levels_level(&lv, 3, (int64_t[]){ 0, 1, 1, 5, 2, 1, 1,
	    3 }, 8) && lv.nlevels == 4, "levels: b before c, d's offset a "
	    "delta past c's self");
	ok(lv.total == 4 && lv.max_self == 2 && lv.nodes == 6,
	    "total 4, max self 2, 6 nodes");
	ok(test_levels_check(&lv) == 0, "structure holds");
	view_levels_clear(&lv);
	view_tree_clear(&t);

	/* Diff: the baseline on the left, names e, d, c, b as visited. */
	test_levels_tree(&t, dr, drv, 3, dl, dlv, 3);
	view_levels_build(&t, 1024, 1, &lv);
	ok(test_levels_names(&lv, (const char *[]){ "total", "a", "e", "d",
	    "c", "b" }, 6), "diff names in visiting order");
	ok(test_levels_level(&lv, 0, (int64_t[]){ 0, 6, 0, 0, 24, 0, 0 }, 7) &&
	    test_levels_level(&lv, 1, (int64_t[]){ 0, 6, 0, 0, 24, 0, 1 }, 7) &&
	    test_levels_level(&lv, 2, (int64_t[]){ 0, 1, 1, 0, 4, 4, 5,
	    0, 2, 2, 0, 0, 0, 4, 0, 0, 0, 0, 8, 8, 3, 0, 3, 3, 0, 12, 12, 2 },
	    28), "diff levels: both sides' offsets, a side's missing node 0");
	ok(lv.total == 30 && lv.left_ticks == 6 && lv.right_ticks == 24 &&
	    lv.max_self == 12, "diff total 30 = 6 left + 24 right, max "
	    "self 12");
	ok(test_levels_check(&lv) == 0, "diff structure holds");
	view_levels_clear(&lv);
	view_tree_clear(&t);
}

/* The node budget: single (root not counted) and diff (counted). */
static void
test_levels_budget(void)
{
	static const char *const st[] = { "a;b;c", "a;b;c", "a;b;c1",
	    "a;b1;c" };
	static const int64_t sv[] = { 1, 1, 1, 1 };
	static const char *const dl[] = { "a;b", "a;c" };
	static const int64_t dlv[] = { 1, 2 };
	static const int64_t drv[] = { 4, 8 };
	static const char *const ot[] = { "a;other;z", "a;x" };
	static const int64_t ov[] = { 5, 1 };
	struct view_tree t;
	struct view_levels lv;

	test_levels_tree(&t, st, sv, 4, NULL, NULL, 0);
	ok(view_tree_min_value(&t, 2, 0) == 3 &&
	    view_tree_min_value(&t, 0, 0) == 0 &&
	    view_tree_min_value(&t, 6, 0) == 0 &&
	    view_tree_min_value(&t, 5, 0) == 1,
	    "least total: the max_nodes-th largest, 0 if all fit");
	view_levels_build(&t, 2, 0, &lv);
	ok(test_levels_names(&lv, (const char *[]){ "total", "a", "other",
	    "b" }, 4), "max_nodes 2: a, b drawn; the others folded");
	ok(test_levels_level(&lv, 2, (int64_t[]){ 0, 3, 0, 3, 0, 1, 1, 2 },
	    8) && test_levels_level(&lv, 3, (int64_t[]){ 0, 3, 3, 2 }, 4) &&
	    lv.nlevels == 4 && lv.max_self == 3 && lv.total == 4,
	    "b1 is a's other, c and c1 b's other");
	ok(test_levels_check(&lv) == 0, "structure holds");
	ok(view_levels_bytes(&lv) <= view_levels_bytes_max(&t, 2, 0),
	    "bytes within the bound known before building");
	view_levels_clear(&lv);
	view_tree_clear(&t);

	/* Diff: the root counts, each node weighs its larger side. */
	test_levels_tree(&t, dl, drv, 2, dl, dlv, 2);
	ok(view_tree_min_value(&t, 2, 1) == 12 &&
	    view_tree_min_value(&t, 3, 1) == 8 &&
	    view_tree_min_value(&t, 4, 1) == 0,
	    "diff least total: root and a 12, c 8; 4 nodes fit in 4");
	view_levels_build(&t, 2, 1, &lv);
	ok(test_levels_names(&lv, (const char *[]){ "total", "a", "other" },
	    3) && test_levels_level(&lv, 2, (int64_t[]){ 0, 3, 3, 0, 12, 12,
	    2 }, 7) && lv.max_self == 12 && lv.total == 15,
	    "diff max_nodes 2: b and c folded on both sides");
	ok(test_levels_check(&lv) == 0, "diff structure holds");
	ok(view_levels_bytes(&lv) <= view_levels_bytes_max(&t, 2, 1),
	    "diff bytes within the bound");
	view_levels_clear(&lv);
	view_tree_clear(&t);

	/* A function named "other": folded by a flame graph, not a diff. */
	test_levels_tree(&t, ot, ov, 2, NULL, NULL, 0);
	view_levels_build(&t, 0, 0, &lv);
	ok(test_levels_names(&lv, (const char *[]){ "total", "a", "other",
	    "x" }, 4) && test_levels_level(&lv, 2, (int64_t[]){ 0, 1, 1, 3,
	    0, 5, 5, 2 }, 8) && lv.nlevels == 3,
	    "a function named other joins the folded other, callees and all");
	view_levels_clear(&lv);
	view_tree_clear(&t);
	test_levels_tree(&t, ot, ov, 2, ot, ov, 2);
	view_levels_build(&t, 0, 1, &lv);
	ok(test_levels_names(&lv, (const char *[]){ "total", "a", "x",
	    "other", "z" }, 5) && lv.nlevels == 4 &&
	    test_levels_level(&lv, 3, (int64_t[]){ 0, 5, 5, 0, 5, 5, 4 }, 7),
	    "a diff keeps it as any node");
	ok(test_levels_check(&lv) == 0, "structure holds");
	view_levels_clear(&lv);
	view_tree_clear(&t);
}

/* No samples: names ["total"], one level [0, 0, 0, 0], total 0. */
static void
test_levels_empty(void)
{
	struct view_tree t;
	struct view_levels lv;

	view_tree_init(&t);
	view_levels_build(&t, 0, 0, &lv);
	ok(test_levels_names(&lv, (const char *[]){ "total" }, 1) &&
	    lv.nlevels == 1 && test_levels_level(&lv, 0,
	    (int64_t[]){ 0, 0, 0, 0 }, 4) && lv.total == 0 &&
	    lv.max_self == 0, "empty: total alone, all 0");
	view_levels_clear(&lv);
	view_levels_build(&t, 5, 1, &lv);
	ok(test_levels_names(&lv, (const char *[]){ "total" }, 1) &&
	    lv.nlevels == 1 && test_levels_level(&lv, 0,
	    (int64_t[]){ 0, 0, 0, 0, 0, 0, 0 }, 7) && lv.total == 0,
	    "empty diff: total alone, all 0");
	view_levels_clear(&lv);
	view_tree_clear(&t);
}

/*
 * Whether each function's flat (its samples as the leaf) equals its self
 * summed over the levels' nodes of one side (0, or 1: a diff's right).
 */
static int
test_levels_flat(const struct view_levels *lv,
    const Perftools__Profiles__Profile *p, int idx, int side)
{
	size_t stride = lv->diff ? 7 : 4, l, i, n = 0, nf;
	struct ft_sum *self = xcalloc(lv->nodes + 1, sizeof *self), *flat;
	int same;

	for (l = 0; l < lv->nlevels; l++)
		for (i = 0; i < lv->nvalues[l]; i += stride) {
			self[n].name = lv->names[lv->levels[l][i + stride - 1]];
			self[n++].v = lv->levels[l][i + 3 * side + 2];
		}
	n = ft_merge(self, n);
	flat = ft_flat(p, idx, &nf);
	same = nf > 0 && ft_same(flat, nf, self, n);
	free(self);
	free(flat);
	return same;
}

/* Whether every drawn node but the root and "other"s reaches min. */
static int
test_levels_min_kept(const struct view_levels *lv, int64_t min)
{
	size_t stride = lv->diff ? 7 : 4, l, i;
	const int64_t *v;

	for (l = 1; l < lv->nlevels; l++)
		for (i = 0; i < lv->nvalues[l]; i += stride) {
			v = &lv->levels[l][i];
			if (strcmp(lv->names[v[stride - 1]], "other") == 0)
				continue;
			if (v[1] < min && (!lv->diff || v[4] < min))
				return 0;
		}
	return 1;
}

/* The drawn nodes but the root and "other"s. */
static size_t
test_levels_named(const struct view_levels *lv)
{
	size_t stride = lv->diff ? 7 : 4, l, i, n = 0;

	for (l = 1; l < lv->nlevels; l++)
		for (i = 0; i < lv->nvalues[l]; i += stride)
			n += strcmp(lv->names[lv->levels[l][i + stride - 1]],
			    "other") != 0;
	return n;
}

/* The tree's nodes of a value reaching min (all positive here). */
static size_t
test_levels_reach(const struct view_tree *t, int64_t min)
{
	size_t i, n = 0;

	for (i = 1; i < t->n; i++)
		n += t->nodes[i].value != 0 && t->nodes[i].value >= min;
	return n;
}

/* The sum of sample type idx over p's samples. */
static int64_t
test_levels_sum(const Perftools__Profiles__Profile *p, int idx)
{
	int64_t sum = 0;
	size_t i;

	for (i = 0; i < p->n_sample; i++)
		sum += p->sample[i]->value[idx];
	return sum;
}

/* Real profiles: structure, totals, flat, the budget, single and diff. */
static void
test_levels_corpus(const char *corpus)
{
	static const size_t budgets[] = { 0, 1000, 100, 10, 1 };
	static const char *const files[][2] = {
		{ "go/bigstacks/cpu_A_01.pb.gz", "cpu" },
		{ "go/allocheavy/allocs_A_01.pb.gz", "alloc_space" },
		{ "go/bigstacks/heap_A_01.pb.gz", "inuse_objects" },
	};
	Perftools__Profiles__Profile *p, *q;
	struct view_tree t;
	struct view_levels lv;
	char path[1024];
	size_t f, k;
	int idx, qidx;

	for (f = 0; f < sizeof files / sizeof files[0]; f++) {
		snprintf(path, sizeof path, "%s/%s", corpus, files[f][0]);
		p = tl_load(path);
		if (!ok(p != NULL, "%s loads", files[f][0]))
			continue;
		idx = view_tree_sample_index(p, files[f][1], NULL);
		view_tree_init(&t);
		view_tree_add(&t, p, idx, NULL, 0);
		for (k = 0; k < sizeof budgets / sizeof budgets[0]; k++) {
			view_levels_build(&t, budgets[k], 0, &lv);
			ok(test_levels_check(&lv) == 0 &&
			    lv.total == test_levels_sum(p, idx) &&
			    lv.levels[0][1] == lv.total &&
			    test_levels_min_kept(&lv,
			    view_tree_min_value(&t, budgets[k], 0)) &&
			    view_levels_bytes(&lv) <= view_levels_bytes_max(&t,
			    budgets[k], 0), "%s %s max_nodes %zu: %zu nodes, "
			    "structure, total, budget", files[f][0],
			    files[f][1], budgets[k], lv.nodes);
			if (budgets[k] == 0)
				ok(test_levels_flat(&lv, p, idx, 0),
				    "%s: self per name is pprof's flat",
				    files[f][0]);
			ok(test_levels_named(&lv) == test_levels_reach(&t,
			    view_tree_min_value(&t, budgets[k], 0)),
			    "%s: the nodes drawn are those of the least "
			    "total (%zu), the rest in \"other\"s",
			    files[f][0], test_levels_named(&lv));
			view_levels_clear(&lv);
		}
		view_tree_clear(&t);
		pprof_free(p, NULL);
	}

	/* A diff of two real profiles: the baseline on the left. */
	snprintf(path, sizeof path, "%s/go/bigstacks/cpu_A_01.pb.gz", corpus);
	p = tl_load(path);
	snprintf(path, sizeof path, "%s/go/bigstacks/cpu_B_01.pb.gz", corpus);
	q = tl_load(path);
	if (!ok(p != NULL && q != NULL, "diff profiles load"))
		return;
	idx = view_tree_sample_index(p, "cpu", NULL);
	qidx = view_tree_sample_index(q, "cpu", NULL);
	view_tree_init(&t);
	view_tree_add(&t, p, idx, NULL, 1);
	view_tree_add(&t, q, qidx, NULL, 0);
	for (k = 0; k < sizeof budgets / sizeof budgets[0]; k++) {
		view_levels_build(&t, budgets[k], 1, &lv);
		ok(test_levels_check(&lv) == 0 &&
		    lv.left_ticks == test_levels_sum(p, idx) &&
		    lv.right_ticks == test_levels_sum(q, qidx) &&
		    lv.total == lv.left_ticks + lv.right_ticks &&
		    test_levels_min_kept(&lv, view_tree_min_value(&t,
		    budgets[k], 1)) && view_levels_bytes(&lv) <=
		    view_levels_bytes_max(&t, budgets[k], 1),
		    "diff max_nodes %zu: %zu nodes, structure, ticks, budget",
		    budgets[k], lv.nodes);
		if (budgets[k] == 0)
			ok(test_levels_flat(&lv, p, idx, 0) &&
			    test_levels_flat(&lv, q, qidx, 1),
			    "diff: self per name is each side's flat");
		view_levels_clear(&lv);
	}
	view_tree_clear(&t);
	pprof_free(p, NULL);
	pprof_free(q, NULL);
}

/* The protobuf-c messages carry the levels as they are. */
static void
test_levels_messages(void)
{
	static const char *const st[] = { "a;b;e", "a;c", "a;c;d" };
	static const int64_t sv[] = { 1, 2, 1 };
	static const int64_t bv[] = { 3, 0, 1 };
	Querier__V1__FlameGraph *fg, *back;
	Querier__V1__FlameGraphDiff *dg, *dback;
	struct view_tree t;
	struct view_levels lv;
	uint8_t *buf;
	size_t len, l, good;

	test_levels_tree(&t, st, sv, 3, NULL, NULL, 0);
	view_levels_build(&t, 0, 0, &lv);
	fg = view_levels_flamegraph(&lv);
	len = querier__v1__flame_graph__get_packed_size(fg);
	buf = xmalloc(len + 1);
	querier__v1__flame_graph__pack(fg, buf);
	back = querier__v1__flame_graph__unpack(NULL, len, buf);
	good = back != NULL && back->n_names == lv.nnames &&
	    back->n_levels == lv.nlevels && back->total == 4 &&
	    back->max_self == 2 && strcmp(back->names[0], "total") == 0;
	for (l = 0; good && l < lv.nlevels; l++)
		good = back->levels[l]->n_values == lv.nvalues[l] &&
		    memcmp(back->levels[l]->values, lv.levels[l],
		    lv.nvalues[l] * sizeof (int64_t)) == 0;
	ok(good, "FlameGraph packs and unpacks to the same levels");
	querier__v1__flame_graph__free_unpacked(back, NULL);
	view_levels_flamegraph_free(fg);
	free(buf);
	view_levels_clear(&lv);
	view_tree_clear(&t);

	test_levels_tree(&t, st, sv, 3, st, bv, 3);
	view_levels_build(&t, 0, 1, &lv);
	dg = view_levels_flamegraph_diff(&lv);
	len = querier__v1__flame_graph_diff__get_packed_size(dg);
	buf = xmalloc(len + 1);
	querier__v1__flame_graph_diff__pack(dg, buf);
	dback = querier__v1__flame_graph_diff__unpack(NULL, len, buf);
	good = dback != NULL && dback->leftticks == 4 &&
	    dback->rightticks == 4 && dback->total == 8 &&
	    dback->max_self == 3 && dback->n_levels == lv.nlevels;
	for (l = 0; good && l < lv.nlevels; l++)
		good = dback->levels[l]->n_values == lv.nvalues[l] &&
		    memcmp(dback->levels[l]->values, lv.levels[l],
		    lv.nvalues[l] * sizeof (int64_t)) == 0;
	ok(good, "FlameGraphDiff packs and unpacks: ticks, total, levels");
	querier__v1__flame_graph_diff__free_unpacked(dback, NULL);
	view_levels_flamegraph_diff_free(dg);
	free(buf);
	view_levels_clear(&lv);
	view_tree_clear(&t);
}

/* A member's integer, or -1. */
static json_int_t
test_levels_int(json_t *o, const char *path1, const char *path2)
{
	json_t *v = json_object_get(o, path1);

	if (path2 != NULL)
		v = json_object_get(v, path2);
	return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* A member's string, or "". */
static const char *
test_levels_str(json_t *o, const char *path1, const char *path2)
{
	json_t *v = json_object_get(json_object_get(o, path1), path2);

	return json_is_string(v) ? json_string_value(v) : "";
}

/* The render JSON: keys and values as Pyroscope's FlamebearerProfile. */
static void
test_levels_render(void)
{
	static const char *const st[] = { "a;b;e", "a;c", "a;c;d" };
	static const int64_t sv[] = { 1, 2, 1 };
	static const int64_t bv[] = { 3, 0, 1 };
	static const int64_t tl[] = { 1, 0, 3 };
	struct view_tree t;
	struct view_levels lv;
	json_t *j, *fb, *tm;

	test_levels_tree(&t, st, sv, 3, NULL, NULL, 0);
	view_levels_build(&t, 0, 0, &lv);
	j = view_levels_render(&lv, "cpu", "nanoseconds", 1000, 10, tl, 3);
	fb = json_object_get(j, "flamebearer");
	tm = json_object_get(j, "timeline");
	ok(test_levels_int(j, "version", NULL) == 1 &&
	    json_array_size(json_object_get(fb, "names")) == 6 &&
	    json_array_size(json_object_get(fb, "levels")) == 4 &&
	    json_integer_value(json_array_get(json_array_get(
	    json_object_get(fb, "levels"), 3), 4)) == 2 &&
	    test_levels_int(fb, "numTicks", NULL) == 4 &&
	    test_levels_int(fb, "maxSelf", NULL) == 2 &&
	    json_object_size(fb) == 4, "render: flamebearer {names, levels, "
	    "numTicks, maxSelf}");
	ok(strcmp(test_levels_str(j, "metadata", "format"), "single") == 0 &&
	    strcmp(test_levels_str(j, "metadata", "units"), "samples") == 0 &&
	    strcmp(test_levels_str(j, "metadata", "name"), "cpu") == 0 &&
	    strcmp(test_levels_str(j, "metadata", "spyName"), "") == 0 &&
	    test_levels_int(j, "metadata", "sampleRate") == 1000000000,
	    "render: cpu in samples at a rate of 1e9");
	ok(test_levels_int(tm, "startTime", NULL) == 1000 &&
	    test_levels_int(tm, "durationDelta", NULL) == 10 &&
	    json_array_size(json_object_get(tm, "samples")) == 3 &&
	    json_integer_value(json_array_get(json_object_get(tm, "samples"),
	    2)) == 3 && json_is_null(json_object_get(tm, "watermarks")) &&
	    json_is_null(json_object_get(j, "groups")) &&
	    json_is_null(json_object_get(j, "heatmap")) &&
	    json_object_get(j, "leftTicks") == NULL,
	    "render: timeline, null groups and heatmap, no ticks");
	json_decref(j);
	j = view_levels_render(&lv, "alloc_space", "bytes", 0, 10, NULL, 0);
	ok(strcmp(test_levels_str(j, "metadata", "units"), "bytes") == 0 &&
	    test_levels_int(j, "metadata", "sampleRate") == 100 &&
	    json_array_size(json_object_get(json_object_get(j, "timeline"),
	    "samples")) == 0, "render: alloc_space in bytes at 100");
	json_decref(j);
	j = view_levels_render(&lv, "inuse_objects", "count", 0, 10, NULL, 0);
	ok(strcmp(test_levels_str(j, "metadata", "units"), "objects") == 0,
	    "render: inuse_objects in objects");
	json_decref(j);
	view_levels_clear(&lv);
	view_tree_clear(&t);

	test_levels_tree(&t, st, sv, 3, st, bv, 3);
	view_levels_build(&t, 0, 1, &lv);
	j = view_levels_render_diff(&lv, "cpu", "nanoseconds");
	ok(strcmp(test_levels_str(j, "metadata", "format"), "double") == 0 &&
	    test_levels_int(j, "leftTicks", NULL) == 4 &&
	    test_levels_int(j, "rightTicks", NULL) == 4 &&
	    test_levels_int(j, "flamebearer", "numTicks") == 8 &&
	    json_array_size(json_array_get(json_object_get(json_object_get(j,
	    "flamebearer"), "levels"), 0)) == 7 &&
	    json_is_null(json_object_get(j, "timeline")),
	    "render-diff: double, 7 values a node, ticks, null timeline");
	json_decref(j);
	view_levels_clear(&lv);
	view_tree_clear(&t);
}

int
main(void)
{
	const char *corpus = getenv("PROFD_CORPUS");

	test_levels_examples();
	test_levels_budget();
	test_levels_empty();
	test_levels_messages();
	test_levels_render();
	if (corpus != NULL && *corpus != '\0')
		test_levels_corpus(corpus);
	else
		ok(1, "# SKIP PROFD_CORPUS is not set");
	return tap_done();
}
