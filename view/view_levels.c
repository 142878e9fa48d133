/*
 * Pyroscope's flame graph levels of a call tree (see view_levels.h).
 * The tree's children lists are in insertion order; each node's children
 * are sorted by name here (byte order, as Pyroscope's trees keep them).
 * A preorder walk, left to right, visits each level's nodes in the order
 * of their offsets, so each node's values are appended as it is visited
 * and the offsets turned into deltas at the end. The node budget is
 * Pyroscope's: the max_nodes-th largest total (of either side in a diff)
 * is the least a node needs to be drawn; a parent's smaller children
 * become one "other" node.
 */
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "view/view_levels.h"

#define VIEW_LEVELS_OTHER	"other"

/* The walk's state. */
struct view_levels_walk {
	const struct view_tree	*t;
	struct view_levels	*lv;
	int64_t			 min;		/* least total drawn */
	size_t			 stride;	/* 4, or 7 for a diff */
	uint32_t		*name_of;	/* tree name -> level name + 1 */
	size_t			*cap;		/* of each level's values */
	size_t			 levels_cap;
	size_t			 other;		/* "other"'s name, + 1 */
};

/* One node to visit: a tree node, or (node 0 and totals) an "other". */
struct view_levels_item {
	uint32_t	node;
	int		is_other;
	int64_t		total, self, base_total, base_self;
	int64_t		x, bx;		/* absolute offsets */
	size_t		level;
};

/* A node's total for the budget: the larger side in a diff. */
static int64_t
view_levels_weight(const struct view_node *n, int diff)
{
	return diff && n->base_value > n->value ? n->base_value : n->value;
}

/* qsort: int64 descending. */
static int
view_levels_cmp_desc(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x > y ? -1 : x < y;
}

/* The least total a node needs to be drawn within max_nodes. */
static int64_t
view_levels_min(const struct view_tree *t, size_t max_nodes, int diff)
{
	int64_t *w, min;
	size_t i, n = 0;

	if (max_nodes == 0 || t->n - 1 <= max_nodes)
		return 0;
	w = xcalloc(t->n, sizeof *w);
	for (i = 1; i < t->n; i++)
		w[n++] = view_levels_weight(&t->nodes[i], diff);
	qsort(w, n, sizeof *w, view_levels_cmp_desc);
	min = w[max_nodes - 1];
	free(w);
	return min;
}

/* The level-name index of a name ("other" when name is NULL). */
static int64_t
view_levels_name(struct view_levels_walk *w, uint32_t tree_name, int other)
{
	struct view_levels *lv = w->lv;
	uint32_t *slot = other ? (uint32_t *)&w->other :
	    &w->name_of[tree_name];

	if (other && w->other != 0)
		return (int64_t)w->other - 1;
	if (!other && *slot != 0)
		return (int64_t)*slot - 1;
	lv->names = xreallocarray(lv->names, lv->nnames + 1,
	    sizeof *lv->names);
	lv->names[lv->nnames] = other ? VIEW_LEVELS_OTHER :
	    w->t->names[tree_name];
	if (other)
		w->other = lv->nnames + 1;
	else
		*slot = (uint32_t)lv->nnames + 1;
	return (int64_t)lv->nnames++;
}

/* Appends v to level l's values. */
static void
view_levels_push(struct view_levels_walk *w, size_t l, int64_t v)
{
	struct view_levels *lv = w->lv;

	while (l >= lv->nlevels) {
		if (lv->nlevels == w->levels_cap) {
			w->levels_cap = w->levels_cap * 2 + 8;
			lv->levels = xreallocarray(lv->levels, w->levels_cap,
			    sizeof *lv->levels);
			lv->nvalues = xreallocarray(lv->nvalues, w->levels_cap,
			    sizeof *lv->nvalues);
			w->cap = xreallocarray(w->cap, w->levels_cap,
			    sizeof *w->cap);
		}
		lv->levels[lv->nlevels] = NULL;
		lv->nvalues[lv->nlevels] = 0;
		w->cap[lv->nlevels] = 0;
		lv->nlevels++;
	}
	if (lv->nvalues[l] == w->cap[l]) {
		w->cap[l] = w->cap[l] * 2 + 16;
		lv->levels[l] = xreallocarray(lv->levels[l], w->cap[l],
		    sizeof **lv->levels);
	}
	lv->levels[l][lv->nvalues[l]++] = v;
}

/* qsort_r: children by name (arg: the tree). */
static int
view_levels_cmp_child(const void *a, const void *b, void *arg)
{
	const struct view_tree *t = arg;

	return strcmp(t->names[t->nodes[*(const uint32_t *)a].name],
	    t->names[t->nodes[*(const uint32_t *)b].name]);
}

/* Records one item's values in its level. */
static void
view_levels_emit(struct view_levels_walk *w, const struct view_levels_item *it)
{
	int64_t name = view_levels_name(w, it->is_other ? 0 :
	    w->t->nodes[it->node].name, it->is_other);

	if (it->self > w->lv->max_self)
		w->lv->max_self = it->self;
	if (w->lv->diff && it->base_self > w->lv->max_self)
		w->lv->max_self = it->base_self;
	if (w->lv->diff) {
		view_levels_push(w, it->level, it->bx);
		view_levels_push(w, it->level, it->base_total);
		view_levels_push(w, it->level, it->base_self);
	}
	view_levels_push(w, it->level, it->x);
	view_levels_push(w, it->level, it->total);
	view_levels_push(w, it->level, it->self);
	view_levels_push(w, it->level, name);
	w->lv->nodes++;
}

/* Turns the offsets at start of each stride into deltas. */
static void
view_levels_deltas(struct view_levels *lv, size_t start, size_t stride)
{
	size_t l, i;
	int64_t prev;

	for (l = 0; l < lv->nlevels; l++) {
		prev = 0;
		for (i = start; i + 1 < lv->nvalues[l]; i += stride) {
			lv->levels[l][i] -= prev;
			prev += lv->levels[l][i] + lv->levels[l][i + 1];
		}
	}
}

/* Builds the levels; see view_levels.h. */
void
view_levels_build(const struct view_tree *t, size_t max_nodes, int diff,
    struct view_levels *lv)
{
	struct view_levels_walk w;
	struct view_levels_item *stack = NULL, it, c;
	const struct view_node *n;
	uint32_t *kids = NULL, k;
	size_t nstack = 0, capstack = 0, nk, capk = 0, i;
	int64_t ox, obx, other, bother;

	memset(lv, 0, sizeof *lv);
	memset(&w, 0, sizeof w);
	lv->diff = diff;
	w.t = t;
	w.lv = lv;
	w.stride = diff ? 7 : 4;
	w.min = view_levels_min(t, max_nodes, diff);
	w.name_of = xcalloc(t->nnames + 1, sizeof *w.name_of);
	lv->left_ticks = diff ? t->nodes[0].base_value : 0;
	lv->right_ticks = diff ? t->nodes[0].value : 0;
	lv->total = t->nodes[0].value + (diff ? t->nodes[0].base_value : 0);
	memset(&it, 0, sizeof it);
	it.total = t->nodes[0].value;
	it.base_total = t->nodes[0].base_value;
	stack = xreallocarray(NULL, 1, sizeof *stack);
	capstack = 1;
	stack[nstack++] = it;
	while (nstack > 0) {
		it = stack[--nstack];
		view_levels_emit(&w, &it);
		if (it.is_other)
			continue;
		n = &t->nodes[it.node];
		for (nk = 0, k = n->child; k != 0; k = t->nodes[k].next) {
			if (nk == capk) {
				capk = capk * 2 + 16;
				kids = xreallocarray(kids, capk, sizeof *kids);
			}
			kids[nk++] = k;
		}
		if (nk > 1)
			qsort_r(kids, nk, sizeof *kids, view_levels_cmp_child,
			    (void *)t);
		/* Children in order; pushed last first so the first pops. */
		ox = it.x + it.self;
		obx = it.bx + it.base_self;
		other = bother = 0;
		if (nstack + nk + 1 > capstack) {
			capstack = (nstack + nk + 1) * 2;
			stack = xreallocarray(stack, capstack, sizeof *stack);
		}
		i = nstack;
		for (k = 0; k < nk; k++) {
			n = &t->nodes[kids[k]];
			if ((n->value == 0 && (!diff || n->base_value == 0)) ||
			    view_levels_weight(n, diff) < w.min ||
			    strcmp(t->names[n->name],
			    VIEW_LEVELS_OTHER) == 0) {
				other += n->value;
				bother += n->base_value;
				continue;
			}
			memset(&c, 0, sizeof c);
			c.node = kids[k];
			c.total = n->value;
			c.self = n->self;
			c.base_total = n->base_value;
			c.base_self = n->base_self;
			c.x = ox;
			c.bx = obx;
			c.level = it.level + 1;
			ox += c.total;
			obx += c.base_total;
			stack[nstack++] = c;
		}
		if (other != 0 || bother != 0) {
			memset(&c, 0, sizeof c);
			c.is_other = 1;
			c.total = c.self = other;
			c.base_total = c.base_self = bother;
			c.x = ox;
			c.bx = obx;
			c.level = it.level + 1;
			stack[nstack++] = c;
		}
		/* Reverse what was pushed so the leftmost child pops first. */
		for (k = 0; nstack > i && i + k < nstack - 1 - k; k++) {
			c = stack[i + k];
			stack[i + k] = stack[nstack - 1 - k];
			stack[nstack - 1 - k] = c;
		}
	}
	if (diff) {
		view_levels_deltas(lv, 0, 7);
		view_levels_deltas(lv, 3, 7);
	} else
		view_levels_deltas(lv, 0, 4);
	free(stack);
	free(kids);
	free(w.name_of);
	free(w.cap);
}

/* Frees the levels (not the names: the tree's). */
void
view_levels_clear(struct view_levels *lv)
{
	size_t l;

	for (l = 0; l < lv->nlevels; l++)
		free(lv->levels[l]);
	free(lv->levels);
	free(lv->nvalues);
	free(lv->names);
	memset(lv, 0, sizeof *lv);
}

/* The bytes the levels hold, about. */
size_t
view_levels_bytes(const struct view_levels *lv)
{
	return lv->nodes * (lv->diff ? 7 : 4) * sizeof (int64_t) * 2 +
	    lv->nnames * sizeof (char *) + lv->nlevels * 64;
}

/* The Level messages of lv (their values point into lv). */
static Querier__V1__Level **
view_levels_msgs(const struct view_levels *lv)
{
	Querier__V1__Level **v = xcalloc(lv->nlevels + 1, sizeof *v);
	size_t l;

	for (l = 0; l < lv->nlevels; l++) {
		v[l] = xcalloc(1, sizeof **v);
		querier__v1__level__init(v[l]);
		v[l]->values = lv->levels[l];
		v[l]->n_values = lv->nvalues[l];
	}
	return v;
}

/* Frees Level messages. */
static void
view_levels_msgs_free(Querier__V1__Level **v, size_t n)
{
	size_t l;

	for (l = 0; l < n; l++)
		free(v[l]);
	free(v);
}

/* The FlameGraph message of lv. */
Querier__V1__FlameGraph *
view_levels_flamegraph(const struct view_levels *lv)
{
	Querier__V1__FlameGraph *fg = xcalloc(1, sizeof *fg);

	querier__v1__flame_graph__init(fg);
	fg->names = (char **)lv->names;
	fg->n_names = lv->nnames;
	fg->levels = view_levels_msgs(lv);
	fg->n_levels = lv->nlevels;
	fg->total = lv->total;
	fg->max_self = lv->max_self;
	return fg;
}

/* Frees a FlameGraph of view_levels_flamegraph. */
void
view_levels_flamegraph_free(Querier__V1__FlameGraph *fg)
{
	if (fg == NULL)
		return;
	view_levels_msgs_free(fg->levels, fg->n_levels);
	free(fg);
}

/* The FlameGraphDiff message of lv. */
Querier__V1__FlameGraphDiff *
view_levels_flamegraph_diff(const struct view_levels *lv)
{
	Querier__V1__FlameGraphDiff *fg = xcalloc(1, sizeof *fg);

	querier__v1__flame_graph_diff__init(fg);
	fg->names = (char **)lv->names;
	fg->n_names = lv->nnames;
	fg->levels = view_levels_msgs(lv);
	fg->n_levels = lv->nlevels;
	fg->total = lv->total;
	fg->max_self = lv->max_self;
	fg->leftticks = lv->left_ticks;
	fg->rightticks = lv->right_ticks;
	return fg;
}

/* Frees a FlameGraphDiff of view_levels_flamegraph_diff. */
void
view_levels_flamegraph_diff_free(Querier__V1__FlameGraphDiff *fg)
{
	if (fg == NULL)
		return;
	view_levels_msgs_free(fg->levels, fg->n_levels);
	free(fg);
}

/* The flamebearer object and metadata of a render answer. */
static json_t *
view_levels_bearer(const struct view_levels *lv, const char *name,
    const char *unit, const char *format)
{
	json_t *names = json_array(), *levels = json_array(), *l, *meta;
	const char *units = unit;
	json_int_t rate = 100;
	size_t i, j;

	for (i = 0; i < lv->nnames; i++)
		json_array_append_new(names, json_string(lv->names[i]));
	for (i = 0; i < lv->nlevels; i++) {
		l = json_array();
		for (j = 0; j < lv->nvalues[i]; j++)
			json_array_append_new(l, json_integer(lv->levels[i][j]));
		json_array_append_new(levels, l);
	}
	/* Pyroscope's units by sample type (ExportToFlamebearer). */
	if (strcmp(name, "cpu") == 0) {
		units = "samples";
		rate = 1000000000;
	} else if (strcmp(name, "inuse_objects") == 0 ||
	    strcmp(name, "alloc_objects") == 0 ||
	    strcmp(name, "goroutine") == 0 || strcmp(name, "samples") == 0)
		units = "objects";
	meta = json_pack("{s:s, s:s, s:I, s:s, s:s}", "format", format,
	    "spyName", "", "sampleRate", rate, "units", units, "name", name);
	return json_pack("{s:i, s:{s:o, s:o, s:I, s:I}, s:o}", "version", 1,
	    "flamebearer", "names", names, "levels", levels, "numTicks",
	    (json_int_t)lv->total, "maxSelf", (json_int_t)lv->max_self,
	    "metadata", meta);
}

/* The render JSON of a single flame graph; see view_levels.h. */
json_t *
view_levels_render(const struct view_levels *lv, const char *name,
    const char *unit, int64_t start, int64_t step, const int64_t *samples,
    size_t n)
{
	json_t *body = view_levels_bearer(lv, name, unit, "single");
	json_t *s = json_array();
	size_t i;

	for (i = 0; i < n; i++)
		json_array_append_new(s, json_integer(samples[i]));
	json_object_set_new(body, "timeline", json_pack("{s:I, s:o, s:I}",
	    "startTime", (json_int_t)start, "samples", s, "durationDelta",
	    (json_int_t)step));
	return body;
}

/* The render JSON of a diff; see view_levels.h. */
json_t *
view_levels_render_diff(const struct view_levels *lv, const char *name,
    const char *unit)
{
	json_t *body = view_levels_bearer(lv, name, unit, "double");

	json_object_set_new(body, "leftTicks", json_integer(lv->left_ticks));
	json_object_set_new(body, "rightTicks", json_integer(lv->right_ticks));
	return body;
}
