/*
 * Pyroscope's tree serialization of a call tree (see view_ptree.h), as
 * its MarshalTruncate writes it: a node, then its kept children (sorted
 * by name) pushed on a stack, so the last child is written next. A child
 * is kept if its total reaches the node budget's least total
 * (view_tree_min_value) or it is named "other"; the others' totals are
 * summed, and a positive sum is added to the "other" child's self (a
 * new "other" child, in its place by name, if there is none). Self
 * values are written as unsigned 64-bit varints (a negative one as its
 * two's complement, which Pyroscope reads back as the same int64).
 */
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "view/view_ptree.h"

#define VIEW_PTREE_OTHER	"other"
#define VIEW_PTREE_NONE		UINT32_MAX	/* a new "other" node */

/* One node to write: a tree node (plus folded totals), or a new "other". */
struct view_ptree_item {
	uint32_t	node;
	int64_t		extra;		/* folded into this "other"'s self */
};

/* The encoder's state. */
struct view_ptree_enc {
	const struct view_tree	*t;
	int64_t			 min;
	uint8_t			*b;
	size_t			 n, cap;
	struct view_ptree_item	*stack;
	size_t			 nstack, stack_cap;
	uint32_t		*kids;
	size_t			 kids_cap;
};

/* Appends len bytes. */
static void
view_ptree_put(struct view_ptree_enc *e, const void *p, size_t len)
{
	if (e->n + len > e->cap) {
		e->cap = (e->n + len) * 2 + 64;
		e->b = xreallocarray(e->b, e->cap, 1);
	}
	memcpy(e->b + e->n, p, len);
	e->n += len;
}

/* Appends an unsigned varint. */
static void
view_ptree_uvarint(struct view_ptree_enc *e, uint64_t v)
{
	uint8_t buf[10];
	size_t n = 0;

	while (v >= 0x80) {
		buf[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	buf[n++] = (uint8_t)v;
	view_ptree_put(e, buf, n);
}

/* Writes one node's name and self value. */
static void
view_ptree_node(struct view_ptree_enc *e, const char *name, int64_t self)
{
	size_t len = strlen(name);

	view_ptree_uvarint(e, len);
	view_ptree_put(e, name, len);
	view_ptree_uvarint(e, (uint64_t)self);
}

/* Pushes an item on the encoder's stack. */
static void
view_ptree_push(struct view_ptree_enc *e, uint32_t node, int64_t extra)
{
	if (e->nstack == e->stack_cap) {
		e->stack_cap = e->stack_cap * 2 + 16;
		e->stack = xreallocarray(e->stack, e->stack_cap,
		    sizeof *e->stack);
	}
	e->stack[e->nstack].node = node;
	e->stack[e->nstack].extra = extra;
	e->nstack++;
}

/* qsort_r: children by name (arg: the tree). */
static int
view_ptree_cmp_child(const void *a, const void *b, void *arg)
{
	const struct view_tree *t = arg;

	return strcmp(t->names[t->nodes[*(const uint32_t *)a].name],
	    t->names[t->nodes[*(const uint32_t *)b].name]);
}

/* Node n's children of some value, sorted by name, into e->kids. */
static size_t
view_ptree_kids(struct view_ptree_enc *e, uint32_t n)
{
	const struct view_tree *t = e->t;
	size_t nk = 0;
	uint32_t k;

	for (k = t->nodes[n].child; k != 0; k = t->nodes[k].next) {
		if (t->nodes[k].value == 0)
			continue;
		if (nk == e->kids_cap) {
			e->kids_cap = e->kids_cap * 2 + 16;
			e->kids = xreallocarray(e->kids, e->kids_cap,
			    sizeof *e->kids);
		}
		e->kids[nk++] = k;
	}
	if (nk > 1)
		qsort_r(e->kids, nk, sizeof *e->kids, view_ptree_cmp_child,
		    (void *)t);
	return nk;
}

/*
 * Pushes node n's kept children in order of their names, the folded
 * ones' sum added to the "other" child (made if there is none, in its
 * place by name); returns how many were pushed.
 */
static size_t
view_ptree_expand(struct view_ptree_enc *e, uint32_t n)
{
	const struct view_tree *t = e->t;
	size_t nk, k, j, first = e->nstack, o = SIZE_MAX;
	int64_t other = 0;
	const char *name;
	int c;

	nk = view_ptree_kids(e, n);
	for (k = 0; k < nk; k++) {
		name = t->names[t->nodes[e->kids[k]].name];
		if (strcmp(name, VIEW_PTREE_OTHER) == 0)
			o = e->nstack;
		else if (t->nodes[e->kids[k]].value < e->min) {
			other += t->nodes[e->kids[k]].value;
			continue;
		}
		view_ptree_push(e, e->kids[k], 0);
	}
	if (other <= 0)
		return e->nstack - first;
	if (o != SIZE_MAX) {
		e->stack[o].extra = other;
		return e->nstack - first;
	}
	/* A new "other", moved to its place among the names. */
	view_ptree_push(e, VIEW_PTREE_NONE, other);
	for (j = e->nstack - 1; j > first; j--) {
		c = strcmp(t->names[t->nodes[e->stack[j - 1].node].name],
		    VIEW_PTREE_OTHER);
		if (c < 0)
			break;
		e->stack[j] = e->stack[j - 1];
		e->stack[j - 1].node = VIEW_PTREE_NONE;
		e->stack[j - 1].extra = other;
	}
	return e->nstack - first;
}

/* Writes the tree; see view_ptree.h. */
void
view_ptree_encode(const struct view_tree *t, size_t max_nodes, uint8_t **out,
    size_t *len)
{
	struct view_ptree_enc e;
	struct view_ptree_item it;
	const struct view_node *nd;

	*out = NULL;
	*len = 0;
	memset(&e, 0, sizeof e);
	e.t = t;
	if (view_ptree_kids(&e, 0) == 0) {
		free(e.kids);
		return;		/* Pyroscope writes nothing for no nodes */
	}
	e.min = view_tree_min_value(t, max_nodes, 0);
	view_ptree_push(&e, 0, 0);	/* the virtual root: no name, self 0 */
	while (e.nstack > 0) {
		it = e.stack[--e.nstack];
		if (it.node == VIEW_PTREE_NONE) {
			view_ptree_node(&e, VIEW_PTREE_OTHER, it.extra);
			view_ptree_uvarint(&e, 0);
			continue;
		}
		nd = &t->nodes[it.node];
		view_ptree_node(&e, it.node == 0 ? "" : t->names[nd->name],
		    it.node == 0 ? 0 : nd->self + it.extra);
		view_ptree_uvarint(&e, view_ptree_expand(&e, it.node));
	}
	free(e.stack);
	free(e.kids);
	*out = e.b;
	*len = e.n;
}

/* An upper bound of the bytes view_ptree_encode makes and uses. */
size_t
view_ptree_bytes_max(const struct view_tree *t)
{
	size_t i, n = 0;

	/* Per node: its name, three varints, a stack item and a kid slot. */
	for (i = 0; i < t->n; i++)
		n += strlen(t->names[t->nodes[i].name]) * 2 + 30 * 2 +
		    sizeof (struct view_ptree_item) + sizeof (uint32_t);
	return n;
}
