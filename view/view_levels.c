/*
 * Pyroscope's flame graph levels of a call tree (see view_levels.h), in
 * the order Pyroscope's NewFlameGraph and NewFlamegraphDiff produce them,
 * so that names get the same indexes: a depth-first walk from the root
 * with a stack, each node's children (sorted by name, byte order) pushed
 * in order and the "other" of the folded ones last, so the "other" is
 * visited first, then the children from the last name to the first. A
 * node's values are appended to its level as it is visited; each level
 * is then reversed node by node (left to right: by offset) and its
 * offsets turned into deltas.
 *
 * The node budget is Pyroscope's (view_tree_min_value): a child is drawn
 * if its total (either side's in a diff) reaches the least total, else
 * it joins its parent's "other" (total = self = the sum of the folded).
 * A flame graph also folds children named "other" into it whatever their
 * size; a diff keeps them as any node (and then may show two).
 */
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "view/view_levels.h"

#define VIEW_LEVELS_OTHER	"other"
#define VIEW_LEVELS_NONE	UINT32_MAX	/* an item that is an "other" */
/*
 * What a drawn node costs: its values (levels grow by doubling, so up to
 * twice) and 64 for its level's share or its place on the walk's stack.
 */
#define VIEW_LEVELS_NODE_BYTES(diff) \
	((size_t)((diff) ? 7 : 4) * sizeof (int64_t) * 2 + 64)

/* One node to visit: a tree node, or (node NONE) an "other". */
struct view_levels_item {
	uint32_t	node;
	uint32_t	level;
	int64_t		x, total, self;			/* right: the tree */
	int64_t		bx, base_total, base_self;	/* left: baseline */
};

/* The walk's state. */
struct view_levels_walk {
	const struct view_tree	*t;
	struct view_levels	*lv;
	int			 diff;
	size_t			 stride;	/* 4, or 7 for a diff */
	int64_t			 min;		/* least total drawn */
	uint32_t		*name_of;	/* tree name -> name + 1 */
	int64_t			 other;		/* "other"'s name, or -1 */
	size_t			 names_cap;
	size_t			*cap;		/* of each level's values */
	size_t			 levels_cap;
	struct view_levels_item	*stack;
	size_t			 nstack, stack_cap;
	uint32_t		*kids;
	size_t			 kids_cap;
};

/* Appends a name to the levels' names; returns its index. */
static int64_t
view_levels_add_name(struct view_levels_walk *w, const char *name)
{
	struct view_levels *lv = w->lv;

	if (lv->nnames == w->names_cap) {
		w->names_cap = w->names_cap * 2 + 16;
		lv->names = xreallocarray(lv->names, w->names_cap,
		    sizeof *lv->names);
	}
	lv->names[lv->nnames] = name;
	return (int64_t)lv->nnames++;
}

/*
 * The level name of an item, as Pyroscope numbers names: by string, in
 * the order first seen; the root is "total" (0), which a function named
 * "total" shares in a flame graph and one named "" in a diff.
 */
static int64_t
view_levels_name(struct view_levels_walk *w, const struct view_levels_item *it)
{
	const struct view_tree *t = w->t;
	uint32_t tn;
	const char *s;
	int64_t i;

	if (it->node == 0 && w->lv->nnames == 0)
		return view_levels_add_name(w, t->names[0]);
	if (it->node == VIEW_LEVELS_NONE)
		s = VIEW_LEVELS_OTHER;
	else {
		tn = t->nodes[it->node].name;
		if (w->name_of[tn] != 0)
			return (int64_t)w->name_of[tn] - 1;
		s = t->names[tn];
	}
	if (strcmp(s, VIEW_LEVELS_OTHER) == 0) {
		if (w->other < 0)
			w->other = view_levels_add_name(w, VIEW_LEVELS_OTHER);
		i = w->other;
	} else if (strcmp(s, w->diff ? "" : "total") == 0)
		i = 0;
	else
		i = view_levels_add_name(w, s);
	if (it->node != VIEW_LEVELS_NONE)
		w->name_of[t->nodes[it->node].name] = (uint32_t)i + 1;
	return i;
}

/* Room for one more node's values in level l (levels added as needed). */
static int64_t *
view_levels_slot(struct view_levels_walk *w, size_t l)
{
	struct view_levels *lv = w->lv;
	int64_t *v;

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
	if (lv->nvalues[l] + w->stride > w->cap[l]) {
		w->cap[l] = w->cap[l] * 2 + w->stride * 4;
		lv->levels[l] = xreallocarray(lv->levels[l], w->cap[l],
		    sizeof **lv->levels);
	}
	v = lv->levels[l] + lv->nvalues[l];
	lv->nvalues[l] += w->stride;
	return v;
}

/* Records one visited item's values in its level. */
static void
view_levels_emit(struct view_levels_walk *w, const struct view_levels_item *it)
{
	struct view_levels *lv = w->lv;
	int64_t name = view_levels_name(w, it), *v;

	v = view_levels_slot(w, it->level);
	if (it->self > lv->max_self)
		lv->max_self = it->self;
	if (w->diff) {
		if (it->base_self > lv->max_self)
			lv->max_self = it->base_self;
		v[0] = it->bx;
		v[1] = it->base_total;
		v[2] = it->base_self;
		v[3] = it->x;
		v[4] = it->total;
		v[5] = it->self;
		v[6] = name;
	} else {
		v[0] = it->x;
		v[1] = it->total;
		v[2] = it->self;
		v[3] = name;
	}
	lv->nodes++;
}

/* Pushes an item on the walk's stack. */
static void
view_levels_push(struct view_levels_walk *w, const struct view_levels_item *it)
{
	if (w->nstack == w->stack_cap) {
		w->stack_cap = w->stack_cap * 2 + 16;
		w->stack = xreallocarray(w->stack, w->stack_cap,
		    sizeof *w->stack);
	}
	w->stack[w->nstack++] = *it;
}

/* qsort_r: children by name (arg: the tree). */
static int
view_levels_cmp_child(const void *a, const void *b, void *arg)
{
	const struct view_tree *t = arg;

	return strcmp(t->names[t->nodes[*(const uint32_t *)a].name],
	    t->names[t->nodes[*(const uint32_t *)b].name]);
}

/* Node n's children of some value, sorted by name, into w->kids. */
static size_t
view_levels_kids(struct view_levels_walk *w, uint32_t n)
{
	const struct view_tree *t = w->t;
	size_t nk = 0;
	uint32_t k;

	for (k = t->nodes[n].child; k != 0; k = t->nodes[k].next) {
		if (t->nodes[k].value == 0 &&
		    (!w->diff || t->nodes[k].base_value == 0))
			continue;
		if (nk == w->kids_cap) {
			w->kids_cap = w->kids_cap * 2 + 16;
			w->kids = xreallocarray(w->kids, w->kids_cap,
			    sizeof *w->kids);
		}
		w->kids[nk++] = k;
	}
	if (nk > 1)
		qsort_r(w->kids, nk, sizeof *w->kids, view_levels_cmp_child,
		    (void *)t);
	return nk;
}

/* Whether a child is drawn, or joins its parent's "other". */
static int
view_levels_kept(const struct view_levels_walk *w, const struct view_node *n)
{
	if (w->diff)
		return n->value >= w->min || n->base_value >= w->min;
	return n->value >= w->min &&
	    strcmp(w->t->names[n->name], VIEW_LEVELS_OTHER) != 0;
}

/* Pushes the drawn children of a visited item and their "other". */
static void
view_levels_expand(struct view_levels_walk *w,
    const struct view_levels_item *it)
{
	const struct view_tree *t = w->t;
	const struct view_node *n;
	struct view_levels_item c;
	size_t nk, k;
	int64_t x = it->x + it->self, bx = it->bx + it->base_self;
	int64_t other = 0, bother = 0;

	nk = view_levels_kids(w, it->node);
	for (k = 0; k < nk; k++) {
		n = &t->nodes[w->kids[k]];
		if (!view_levels_kept(w, n)) {
			other += n->value;
			bother += n->base_value;
			continue;
		}
		memset(&c, 0, sizeof c);
		c.node = w->kids[k];
		c.level = it->level + 1;
		c.x = x;
		c.total = n->value;
		c.self = n->self;
		x += n->value;
		if (w->diff) {
			c.bx = bx;
			c.base_total = n->base_value;
			c.base_self = n->base_self;
			bx += n->base_value;
		}
		view_levels_push(w, &c);
	}
	if (other == 0 && (!w->diff || bother == 0))
		return;
	memset(&c, 0, sizeof c);
	c.node = VIEW_LEVELS_NONE;
	c.level = it->level + 1;
	c.x = x;
	c.total = c.self = other;
	if (w->diff) {
		c.bx = bx;
		c.base_total = c.base_self = bother;
	}
	view_levels_push(w, &c);
}

/* Reverses level l node by node (stride values each). */
static void
view_levels_reverse(int64_t *v, size_t n, size_t stride)
{
	size_t i, j, k;
	int64_t x;

	if (n < stride)
		return;
	for (i = 0, j = n - stride; i < j; i += stride, j -= stride)
		for (k = 0; k < stride; k++) {
			x = v[i + k];
			v[i + k] = v[j + k];
			v[j + k] = x;
		}
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
	struct view_levels_item it;
	size_t l;

	memset(lv, 0, sizeof *lv);
	memset(&w, 0, sizeof w);
	lv->diff = diff;
	w.t = t;
	w.lv = lv;
	w.diff = diff;
	w.stride = diff ? 7 : 4;
	w.other = -1;
	w.min = view_tree_min_value(t, max_nodes, diff);
	w.name_of = xcalloc(t->nnames + 1, sizeof *w.name_of);
	lv->left_ticks = diff ? t->nodes[0].base_value : 0;
	lv->right_ticks = diff ? t->nodes[0].value : 0;
	lv->total = t->nodes[0].value + (diff ? t->nodes[0].base_value : 0);
	memset(&it, 0, sizeof it);
	it.total = t->nodes[0].value;
	it.base_total = diff ? t->nodes[0].base_value : 0;
	view_levels_push(&w, &it);
	while (w.nstack > 0) {
		it = w.stack[--w.nstack];
		view_levels_emit(&w, &it);
		if (it.node != VIEW_LEVELS_NONE)
			view_levels_expand(&w, &it);
	}
	for (l = 0; l < lv->nlevels; l++)
		view_levels_reverse(lv->levels[l], lv->nvalues[l], w.stride);
	view_levels_deltas(lv, 0, w.stride);
	if (diff)
		view_levels_deltas(lv, 3, w.stride);
	free(w.stack);
	free(w.kids);
	free(w.name_of);
	free(w.cap);
}

/* An upper bound of view_levels_bytes before building; see .h. */
size_t
view_levels_bytes_max(const struct view_tree *t, size_t max_nodes, int diff)
{
	int64_t min = view_tree_min_value(t, max_nodes, diff);
	const struct view_node *n;
	size_t i, kept = 1;

	for (i = 1; i < t->n; i++) {
		n = &t->nodes[i];
		if ((n->value != 0 && n->value >= min) || (diff &&
		    n->base_value != 0 && n->base_value >= min))
			kept++;
	}
	/* Each drawn node may add an "other" below it. */
	return VIEW_LEVELS_NODE_BYTES(diff) * (2 * kept + 1) +
	    (t->nnames + 1) * (2 * sizeof (char *) + sizeof (uint32_t));
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
	return VIEW_LEVELS_NODE_BYTES(lv->diff) * lv->nodes +
	    lv->nnames * 2 * sizeof (char *);
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

/* The flamebearer object of lv: names, levels, numTicks, maxSelf. */
json_t *
view_levels_flamebearer(const struct view_levels *lv)
{
	json_t *names = json_array(), *levels = json_array(), *l;
	size_t i, j;

	for (i = 0; i < lv->nnames; i++)
		json_array_append_new(names, json_string(lv->names[i]));
	for (i = 0; i < lv->nlevels; i++) {
		l = json_array();
		for (j = 0; j < lv->nvalues[i]; j++)
			json_array_append_new(l,
			    json_integer(lv->levels[i][j]));
		json_array_append_new(levels, l);
	}
	return json_pack("{s:o, s:o, s:I, s:I}", "names", names, "levels",
	    levels, "numTicks", (json_int_t)lv->total, "maxSelf",
	    (json_int_t)lv->max_self);
}

/*
 * A render answer as Pyroscope's FlamebearerProfile encodes it: version,
 * flamebearer, metadata (units and sample rate by sample type, as its
 * ExportToFlamebearer), timeline (may be NULL: null), no groups, no
 * heatmap, and leftTicks, rightTicks when not 0 (omitempty).
 */
static json_t *
view_levels_body(const struct view_levels *lv, const char *name,
    const char *unit, json_t *timeline)
{
	const char *units = unit;
	json_int_t rate = 100;
	json_t *body;

	if (strcmp(name, "cpu") == 0) {
		units = "samples";
		rate = 1000000000;
	} else if (strcmp(name, "inuse_objects") == 0 ||
	    strcmp(name, "alloc_objects") == 0 ||
	    strcmp(name, "goroutine") == 0 || strcmp(name, "samples") == 0)
		units = "objects";
	body = json_pack("{s:i, s:o, s:{s:s, s:s, s:I, s:s, s:s}, s:o, s:n, "
	    "s:n}", "version", 1, "flamebearer", view_levels_flamebearer(lv),
	    "metadata", "format", lv->diff ? "double" : "single", "spyName",
	    "", "sampleRate", rate, "units", units, "name", name,
	    "timeline", timeline != NULL ? timeline : json_null(), "groups",
	    "heatmap");
	if (body == NULL)
		return NULL;
	if (lv->diff && lv->left_ticks != 0)
		json_object_set_new(body, "leftTicks",
		    json_integer(lv->left_ticks));
	if (lv->diff && lv->right_ticks != 0)
		json_object_set_new(body, "rightTicks",
		    json_integer(lv->right_ticks));
	return body;
}

/* The render JSON of a single flame graph; see view_levels.h. */
json_t *
view_levels_render(const struct view_levels *lv, const char *name,
    const char *unit, int64_t start, int64_t step, const int64_t *samples,
    size_t n)
{
	json_t *s = json_array();
	size_t i;

	for (i = 0; i < n; i++)
		json_array_append_new(s, json_integer(samples[i]));
	return view_levels_body(lv, name, unit, json_pack("{s:I, s:o, s:I, "
	    "s:n}", "startTime", (json_int_t)start, "samples", s,
	    "durationDelta", (json_int_t)step, "watermarks"));
}

/* The render JSON of a diff; see view_levels.h. */
json_t *
view_levels_render_diff(const struct view_levels *lv, const char *name,
    const char *unit)
{
	return view_levels_body(lv, name, unit, NULL);
}
