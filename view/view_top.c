/*
 * The top table of a call tree, per function name, as `go tool pprof -top`
 * computes it: flat is what a function has on top of the stack (the sum
 * of its nodes' self), cum what passes through it, counted once per
 * sample however often it recurs (a node's value counts unless the same
 * name is already on the path above it). Rows sort by flat, then name.
 * The walk keeps its own stack (no recursion).
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "view/view_top.h"

/* qsort_r: flat descending, then name. */
static int
view_top_cmp(const void *a, const void *b, void *arg)
{
	const struct view_top_row *x = a, *y = b;
	const struct view_tree *t = arg;

	if (x->flat != y->flat)
		return x->flat > y->flat ? -1 : 1;
	return strcmp(t->names[x->name], t->names[y->name]);
}

/* Every function's row, sorted; *n rows (caller frees the array). */
struct view_top_row *
view_top_rows(const struct view_tree *t, size_t *n)
{
	struct view_top_row *rows, *out;
	uint32_t *stack, *onpath, i, ch;
	unsigned char *seen;
	size_t sp = 0, k = 0;
	uint32_t node;

	rows = xcalloc(t->nnames + 1, sizeof *rows);
	seen = xcalloc(t->nnames + 1, 1);
	onpath = xcalloc(t->nnames + 1, sizeof *onpath);
	/* Each node is pushed once, and again (marked) to leave it. */
	stack = xcalloc(2 * t->n + 1, sizeof *stack);
	for (ch = t->nodes[0].child; ch != 0; ch = t->nodes[ch].next)
		stack[sp++] = ch;
	while (sp > 0) {
		node = stack[--sp];
		if (node & 0x80000000u) {
			onpath[t->nodes[node & 0x7fffffffu].name]--;
			continue;
		}
		i = t->nodes[node].name;
		seen[i] = 1;
		rows[i].name = i;
		rows[i].flat += t->nodes[node].self;
		if (onpath[i] == 0)
			rows[i].cum += t->nodes[node].value;
		onpath[i]++;
		stack[sp++] = node | 0x80000000u;
		for (ch = t->nodes[node].child; ch != 0; ch = t->nodes[ch].next)
			stack[sp++] = ch;
	}
	out = xcalloc(t->nnames + 1, sizeof *out);
	for (i = 0; i < t->nnames; i++)
		if (seen[i])
			out[k++] = rows[i];
	qsort_r(out, k, sizeof *out, view_top_cmp, (void *)(uintptr_t)t);
	free(stack);
	free(onpath);
	free(seen);
	free(rows);
	*n = k;
	return out;
}

/* The rows as JSON: [{"name","flat","cum"}, ...], at most limit. */
json_t *
view_top_json(const struct view_tree *t, size_t limit)
{
	struct view_top_row *rows;
	size_t n, i;
	json_t *arr = json_array(), *o;

	rows = view_top_rows(t, &n);
	for (i = 0; i < n && i < limit; i++) {
		o = json_object();
		json_object_set_new(o, "name",
		    json_string(t->names[rows[i].name]));
		json_object_set_new(o, "flat", json_integer(rows[i].flat));
		json_object_set_new(o, "cum", json_integer(rows[i].cum));
		json_array_append_new(arr, o);
	}
	free(rows);
	return arr;
}
