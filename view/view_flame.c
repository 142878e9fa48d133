/*
 * The flame graph's JSON: the call tree (view_tree.c) pruned to at most
 * max_nodes nodes, the smallest subtrees of each parent folded into one
 * "other" child so that every parent's value stays exact. The nodes kept
 * are the max_nodes largest by value (the baseline's too, in a diff),
 * ties going to the older node: a child is never larger than its parent
 * and always younger, so the kept set is closed under parents. Children
 * come largest first. Built without recursion (stacks can be deep).
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "view/view_flame.h"

/* The weight a node is ranked by. */
static int64_t
view_flame_weight(const struct view_node *nd, int diff)
{
	return diff && nd->base_value > nd->value ? nd->base_value : nd->value;
}

/* What the comparisons need. */
struct view_flame_ctx {
	const struct view_tree	*t;
	int			 diff;
};

/* Heavier first: -1, 1, or 0 for equal weights. */
static int
view_flame_cmp_weight(const struct view_flame_ctx *cx, uint32_t x, uint32_t y)
{
	int64_t wx = view_flame_weight(&cx->t->nodes[x], cx->diff);
	int64_t wy = view_flame_weight(&cx->t->nodes[y], cx->diff);

	return wx == wy ? 0 : wx > wy ? -1 : 1;
}

/* qsort_r: heaviest first, then oldest (the parent before its children). */
static int
view_flame_cmp_rank(const void *a, const void *b, void *arg)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = view_flame_cmp_weight(arg, x, y);

	return c != 0 ? c : x < y ? -1 : x > y;
}

/* qsort_r: heaviest first, then by name. */
static int
view_flame_cmp_children(const void *a, const void *b, void *arg)
{
	const struct view_flame_ctx *cx = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = view_flame_cmp_weight(cx, x, y);

	return c != 0 ? c : strcmp(view_tree_name(cx->t, x),
	    view_tree_name(cx->t, y));
}

/* One node's object: name, value, self (and base_value, base_self). */
static json_t *
view_flame_obj(const char *name, int64_t value, int64_t self,
    int64_t base_value, int64_t base_self, int diff)
{
	json_t *o = json_object();

	json_object_set_new(o, "name", json_string(name));
	json_object_set_new(o, "value", json_integer(value));
	json_object_set_new(o, "self", json_integer(self));
	if (diff) {
		json_object_set_new(o, "base_value", json_integer(base_value));
		json_object_set_new(o, "base_self", json_integer(base_self));
	}
	return o;
}

/* Marks the nodes kept: the root and the max_nodes heaviest others. */
static unsigned char *
view_flame_keep(const struct view_tree *t, size_t max_nodes, int diff)
{
	struct view_flame_ctx cx = { t, diff };
	unsigned char *keep = xcalloc(t->n, 1);
	uint32_t *order;
	size_t i, n = t->n - 1;

	keep[0] = 1;
	if (n <= max_nodes) {
		memset(keep, 1, t->n);
		return keep;
	}
	order = xcalloc(n, sizeof *order);
	for (i = 0; i < n; i++)
		order[i] = (uint32_t)(i + 1);
	qsort_r(order, n, sizeof *order, view_flame_cmp_rank, &cx);
	for (i = 0; i < max_nodes; i++)
		keep[order[i]] = 1;
	free(order);
	return keep;
}

struct view_flame_item {
	uint32_t	 node;		/* UINT32_MAX: an "other" marker */
	json_t		*into;		/* the parent's children array */
	int64_t		 ov, os, obv, obs;	/* the "other" sums */
};

/* The flame graph's root object; see view_flame.h. */
json_t *
view_flame_json(const struct view_tree *t, size_t max_nodes, int diff)
{
	struct view_flame_ctx cx = { t, diff };
	struct view_flame_item *stack, it;
	const struct view_node *nd, *c;
	unsigned char *keep;
	uint32_t *kids = NULL, ch;
	size_t sp = 0, cap, nk, kcap = 0, i;
	json_t *root = NULL, *o, *arr;
	int64_t ov, os, obv, obs;
	int others;

	keep = view_flame_keep(t, max_nodes, diff);
	cap = 64;
	stack = xcalloc(cap, sizeof *stack);
	stack[sp].node = 0;
	stack[sp++].into = NULL;
	while (sp > 0) {
		it = stack[--sp];
		if (it.node == UINT32_MAX) {
			json_array_append_new(it.into, view_flame_obj("other",
			    it.ov, it.os, it.obv, it.obs, diff));
			continue;
		}
		nd = &t->nodes[it.node];
		o = view_flame_obj(it.node == 0 ? "total" :
		    view_tree_name(t, it.node), nd->value,
		    it.node == 0 ? 0 : nd->self, nd->base_value,
		    it.node == 0 ? 0 : nd->base_self, diff);
		arr = json_array();
		json_object_set_new(o, "children", arr);
		if (it.into == NULL)
			root = o;
		else
			json_array_append_new(it.into, o);
		nk = 0;
		ov = os = obv = obs = 0;
		others = 0;
		for (ch = nd->child; ch != 0; ch = c->next) {
			c = &t->nodes[ch];
			if (!keep[ch]) {
				ov += c->value;
				os += c->value;
				obv += c->base_value;
				obs += c->base_value;
				others = 1;
				continue;
			}
			if (nk == kcap) {
				kcap = kcap ? kcap * 2 : 16;
				kids = xreallocarray(kids, kcap, sizeof *kids);
			}
			kids[nk++] = ch;
		}
		if (nk > 1)
			qsort_r(kids, nk, sizeof *kids, view_flame_cmp_children,
			    &cx);
		if (sp + nk + 1 >= cap) {
			cap = (sp + nk + 1) * 2;
			stack = xreallocarray(stack, cap, sizeof *stack);
		}
		if (others) {
			memset(&stack[sp], 0, sizeof stack[sp]);
			stack[sp].node = UINT32_MAX;
			stack[sp].into = arr;
			stack[sp].ov = ov;
			stack[sp].os = os;
			stack[sp].obv = obv;
			stack[sp++].obs = obs;
		}
		for (i = nk; i-- > 0; ) {
			memset(&stack[sp], 0, sizeof stack[sp]);
			stack[sp].node = kids[i];
			stack[sp++].into = arr;
		}
	}
	free(kids);
	free(stack);
	free(keep);
	return root;
}
