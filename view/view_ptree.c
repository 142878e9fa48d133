/*
 * Pyroscope's tree serialization of a call tree (see view_ptree.h).
 * Pyroscope writes a node, then pushes its kept children (sorted by
 * name, "other" among them by its name) on a stack, so the last child is
 * written next; this does the same, so a reader that rebuilds parents
 * from the children counts (Pyroscope's UnmarshalTree) gets the tree
 * back. Self values are written as unsigned: negative ones (a diff's)
 * do not occur in a merge's tree.
 */
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "view/view_ptree.h"

#define VIEW_PTREE_OTHER	"other"

/* The output buffer. */
struct view_ptree_buf {
	uint8_t	*b;
	size_t	 n, cap;
};

/* One node to write: a tree node, or an "other" with its value. */
struct view_ptree_item {
	uint32_t	node;
	int		is_other;
	int64_t		other;
};

/* Appends len bytes. */
static void
view_ptree_put(struct view_ptree_buf *o, const void *p, size_t len)
{
	if (o->n + len > o->cap) {
		o->cap = (o->n + len) * 2 + 64;
		o->b = xreallocarray(o->b, o->cap, 1);
	}
	memcpy(o->b + o->n, p, len);
	o->n += len;
}

/* Appends an unsigned varint. */
static void
view_ptree_uvarint(struct view_ptree_buf *o, uint64_t v)
{
	uint8_t buf[10];
	size_t n = 0;

	while (v >= 0x80) {
		buf[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	buf[n++] = (uint8_t)v;
	view_ptree_put(o, buf, n);
}

/* qsort: int64 descending. */
static int
view_ptree_cmp_desc(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x > y ? -1 : x < y;
}

/* The least total a node needs within max_nodes (0: all). */
static int64_t
view_ptree_min(const struct view_tree *t, size_t max_nodes)
{
	int64_t *w, min;
	size_t i, n = 0;

	if (max_nodes == 0 || t->n - 1 <= max_nodes)
		return 0;
	w = xcalloc(t->n, sizeof *w);
	for (i = 1; i < t->n; i++)
		w[n++] = t->nodes[i].value;
	qsort(w, n, sizeof *w, view_ptree_cmp_desc);
	min = w[max_nodes - 1];
	free(w);
	return min;
}

/* qsort_r: children by name (arg: the tree). */
static int
view_ptree_cmp_child(const void *a, const void *b, void *arg)
{
	const struct view_tree *t = arg;
	const struct view_ptree_item *x = a, *y = b;
	const char *nx = x->is_other ? VIEW_PTREE_OTHER :
	    t->names[t->nodes[x->node].name];
	const char *ny = y->is_other ? VIEW_PTREE_OTHER :
	    t->names[t->nodes[y->node].name];

	return strcmp(nx, ny);
}

/* Writes the tree; see view_ptree.h. */
void
view_ptree_encode(const struct view_tree *t, size_t max_nodes, uint8_t **out,
    size_t *len)
{
	struct view_ptree_buf o = { NULL, 0, 0 };
	struct view_ptree_item *stack = NULL, it, c;
	const struct view_node *n;
	const char *name;
	size_t nstack = 0, cap = 0, first;
	int64_t min = view_ptree_min(t, max_nodes), other;
	uint32_t k;

	*out = NULL;
	*len = 0;
	if (t->nodes[0].child == 0)
		return;		/* Pyroscope writes nothing for no samples */
	stack = xcalloc(1, sizeof *stack);
	cap = 1;
	memset(&it, 0, sizeof it);
	stack[nstack++] = it;	/* the virtual root: node 0, no name */
	while (nstack > 0) {
		it = stack[--nstack];
		name = it.is_other ? VIEW_PTREE_OTHER : it.node == 0 ? "" :
		    t->names[t->nodes[it.node].name];
		view_ptree_uvarint(&o, strlen(name));
		view_ptree_put(&o, name, strlen(name));
		view_ptree_uvarint(&o, (uint64_t)(it.is_other ? it.other :
		    t->nodes[it.node].self));
		if (it.is_other) {
			view_ptree_uvarint(&o, 0);
			continue;
		}
		first = nstack;
		other = 0;
		for (k = t->nodes[it.node].child; k != 0;
		    k = t->nodes[k].next) {
			n = &t->nodes[k];
			if (n->value == 0)
				continue;
			if (n->value < min && strcmp(t->names[n->name], VIEW_PTREE_OTHER) != 0) {
				other += n->value;
				continue;
			}
			if (nstack + 2 > cap) {
				cap = cap * 2 + 16;
				stack = xreallocarray(stack, cap, sizeof *stack);
			}
			memset(&c, 0, sizeof c);
			c.node = k;
			stack[nstack++] = c;
		}
		if (other > 0) {
			if (nstack + 1 > cap) {
				cap = cap * 2 + 16;
				stack = xreallocarray(stack, cap, sizeof *stack);
			}
			memset(&c, 0, sizeof c);
			c.is_other = 1;
			c.other = other;
			stack[nstack++] = c;
		}
		if (nstack - first > 1)
			qsort_r(stack + first, nstack - first,
			    sizeof *stack, view_ptree_cmp_child, (void *)t);
		view_ptree_uvarint(&o, nstack - first);
	}
	free(stack);
	*out = o.b;
	*len = o.n;
}
