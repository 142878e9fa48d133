/*
 * The call tree behind the flame graph, the top table and the diff: one
 * node per call path of function names, root first, built from decoded
 * (merged) profiles for one sample type. Inlined frames are nodes of
 * their own: a location's lines run from the innermost function to the
 * one it was inlined into, as pprof reads them. A location without lines
 * is named after its mapping's file ("[libz.so.1]") or, without one, its
 * address, as `go tool pprof` shows unsymbolized code.
 *
 * Filters work as pprof's -focus and -hide: a function matches by its
 * name or its file name, a location without lines by its mapping's file;
 * focus keeps only the samples through a matching location, hide removes
 * the matching frames (their samples are charged to the caller). Each
 * function and mapping is matched once per profile, not once per frame.
 *
 * Names and (parent, name) pairs are interned in open-addressing tables,
 * so adding a sample costs one probe per frame.
 */
#include <inttypes.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "view/view_tree.h"

/* FNV-1a of a string. */
static uint64_t
view_tree_hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

/* A mix of a (parent, name) pair. */
static uint64_t
view_tree_hash_pair(uint32_t parent, uint32_t name)
{
	uint64_t h = ((uint64_t)parent << 32 | name) * 0x9e3779b97f4a7c15ULL;

	return h ^ (h >> 29);
}

/* Starts an empty tree: the root alone. */
void
view_tree_init(struct view_tree *t)
{
	memset(t, 0, sizeof *t);
	t->cap = 64;
	t->nodes = xcalloc(t->cap, sizeof *t->nodes);
	t->n = 1;
	t->names_cap = 64;
	t->names = xcalloc(t->names_cap, sizeof *t->names);
	t->names[0] = xstrdup("total");
	t->nnames = 1;
	t->name_slots_n = 128;
	t->name_slots = xcalloc(t->name_slots_n, sizeof *t->name_slots);
	t->child_slots_n = 128;
	t->child_slots = xcalloc(t->child_slots_n, sizeof *t->child_slots);
}

/* Frees everything the tree holds. */
void
view_tree_clear(struct view_tree *t)
{
	size_t i;

	for (i = 0; i < t->nnames; i++)
		free(t->names[i]);
	free(t->names);
	free(t->nodes);
	free(t->name_slots);
	free(t->child_slots);
	memset(t, 0, sizeof *t);
}

/* The bytes the tree holds (nodes, names, hash tables), about. */
size_t
view_tree_bytes(const struct view_tree *t)
{
	size_t i, n = t->cap * sizeof *t->nodes +
	    t->names_cap * sizeof *t->names +
	    (t->name_slots_n + t->child_slots_n) * sizeof(uint32_t);

	for (i = 0; i < t->nnames; i++)
		n += strlen(t->names[i]) + 1 + 16;	/* malloc's overhead */
	return n;
}

/* The name of node i. */
const char *
view_tree_name(const struct view_tree *t, uint32_t i)
{
	return t->names[t->nodes[i].name];
}

/*
 * A node's weight against the node budget: its total, or in a diff the
 * larger side compared as unsigned (as Pyroscope's combineMinValues).
 */
static int64_t
view_tree_weight(const struct view_node *nd, int diff)
{
	if (!diff)
		return nd->value;
	return (uint64_t)nd->base_value > (uint64_t)nd->value ?
	    nd->base_value : nd->value;
}

/* Restores the min-heap h[0..n) from its root down. */
static void
view_tree_heap_down(int64_t *h, size_t n)
{
	size_t i = 0, c;
	int64_t v;

	for (;;) {
		c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && h[c + 1] < h[c])
			c++;
		if (h[i] <= h[c])
			break;
		v = h[i];
		h[i] = h[c];
		h[c] = v;
		i = c;
	}
}

/* Adds v to the min-heap h[0..*n). */
static void
view_tree_heap_push(int64_t *h, size_t *n, int64_t v)
{
	size_t i = (*n)++, p;

	h[i] = v;
	while (i > 0 && h[p = (i - 1) / 2] > h[i]) {
		h[i] = h[p];
		h[p] = v;
		i = p;
	}
}

/* The node budget's least total; see view_tree.h. */
int64_t
view_tree_min_value(const struct view_tree *t, size_t max_nodes, int diff)
{
	const struct view_node *nd;
	size_t i, count = diff ? 1 : 0, nh = 0;
	int64_t *h, w, min;

	if (max_nodes == 0)
		return 0;
	for (i = 1; i < t->n; i++) {
		nd = &t->nodes[i];
		if (nd->value != 0 || (diff && nd->base_value != 0))
			count++;
	}
	if (count <= max_nodes)
		return 0;
	h = xcalloc(max_nodes, sizeof *h);
	for (i = diff ? 0 : 1; i < t->n; i++) {
		nd = &t->nodes[i];
		if (i != 0 && nd->value == 0 && (!diff || nd->base_value == 0))
			continue;
		w = view_tree_weight(nd, diff);
		if (nh < max_nodes)
			view_tree_heap_push(h, &nh, w);
		else if (w > h[0]) {
			h[0] = w;
			view_tree_heap_down(h, nh);
		}
	}
	min = h[0];
	free(h);
	return min;
}

/* Puts name index i into the name table (which has room). */
static void
view_tree_name_slot(struct view_tree *t, uint32_t i)
{
	size_t mask = t->name_slots_n - 1, s;

	s = view_tree_hash_str(t->names[i]) & mask;
	while (t->name_slots[s] != 0)
		s = (s + 1) & mask;
	t->name_slots[s] = i + 1;
}

/* The index of name, added if new. */
static uint32_t
view_tree_intern(struct view_tree *t, const char *name)
{
	size_t mask = t->name_slots_n - 1, s, i;
	uint32_t e;

	s = view_tree_hash_str(name) & mask;
	while ((e = t->name_slots[s]) != 0) {
		if (strcmp(t->names[e - 1], name) == 0)
			return e - 1;
		s = (s + 1) & mask;
	}
	if (t->nnames == t->names_cap) {
		t->names_cap *= 2;
		t->names = xreallocarray(t->names, t->names_cap,
		    sizeof *t->names);
	}
	t->names[t->nnames] = xstrdup(name);
	t->nnames++;
	if (t->nnames * 2 > t->name_slots_n) {
		free(t->name_slots);
		t->name_slots_n *= 2;
		t->name_slots = xcalloc(t->name_slots_n,
		    sizeof *t->name_slots);
		for (i = 0; i < t->nnames; i++)
			view_tree_name_slot(t, (uint32_t)i);
	} else
		view_tree_name_slot(t, (uint32_t)(t->nnames - 1));
	return (uint32_t)(t->nnames - 1);
}

/* Puts node i into the (parent, name) table (which has room). */
static void
view_tree_child_slot(struct view_tree *t, uint32_t i)
{
	size_t mask = t->child_slots_n - 1, s;

	s = view_tree_hash_pair(t->nodes[i].parent, t->nodes[i].name) & mask;
	while (t->child_slots[s] != 0)
		s = (s + 1) & mask;
	t->child_slots[s] = i;
}

/* The child of parent named name, added if new. */
static uint32_t
view_tree_child(struct view_tree *t, uint32_t parent, uint32_t name)
{
	size_t mask = t->child_slots_n - 1, s, i;
	struct view_node *nd;
	uint32_t e;

	s = view_tree_hash_pair(parent, name) & mask;
	while ((e = t->child_slots[s]) != 0) {
		if (t->nodes[e].parent == parent && t->nodes[e].name == name)
			return e;
		s = (s + 1) & mask;
	}
	if (t->n == t->cap) {
		t->cap *= 2;
		t->nodes = xreallocarray(t->nodes, t->cap, sizeof *t->nodes);
	}
	e = (uint32_t)t->n++;
	nd = &t->nodes[e];
	memset(nd, 0, sizeof *nd);
	nd->name = name;
	nd->parent = parent;
	nd->next = t->nodes[parent].child;
	t->nodes[parent].child = e;
	if (t->n * 2 > t->child_slots_n) {
		free(t->child_slots);
		t->child_slots_n *= 2;
		t->child_slots = xcalloc(t->child_slots_n,
		    sizeof *t->child_slots);
		for (i = 1; i < t->n; i++)
			view_tree_child_slot(t, (uint32_t)i);
	} else
		view_tree_child_slot(t, e);
	return e;
}

/* String i of p's table, or "". */
static const char *
view_tree_str(const pprof_profile_t *p, int64_t i)
{
	return i >= 0 && (size_t)i < p->n_string_table ?
	    p->string_table[i] : "";
}

/* The sample type named name, the default one, or the last; see .h. */
int
view_tree_sample_index(const pprof_profile_t *p, const char *name, char **cause)
{
	const char *want = name;
	size_t i;

	if (p->n_sample_type == 0)
		return xcause(cause, "the profile has no sample types");
	if (want == NULL || *want == '\0') {
		if (p->default_sample_type == 0)
			return (int)p->n_sample_type - 1;
		want = view_tree_str(p, p->default_sample_type);
	}
	for (i = 0; i < p->n_sample_type; i++) {
		if (strcmp(view_tree_str(p, p->sample_type[i]->type),
		    want) == 0)
			return (int)i;
	}
	if (name == NULL || *name == '\0')
		return (int)p->n_sample_type - 1;
	xcause(cause, "no sample type \"%s\" in the selection", name);
	return -1;
}

/* One location's frames, leaf first: name indexes, hidden ones dropped. */
struct view_loc {
	uint64_t	 id;
	uint32_t	*frames;
	size_t		 n;
	int		 focused;	/* a frame matches focus */
};

/* qsort/bsearch: by id. */
static int
view_tree_cmp_loc(const void *a, const void *b)
{
	const struct view_loc *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * A function or mapping of the profile: its id, its name (or mapping
 * file) and file, and whether the filters match it (0 not yet known,
 * 1 yes, -1 no): pprof matches a function by its name or its file name,
 * a mapping by its file.
 */
struct view_id {
	uint64_t	 id;
	int64_t		 name;
	int64_t		 file;
	signed char	 focus, hide;
};

/* qsort/bsearch: by id. */
static int
view_tree_cmp_id(const void *a, const void *b)
{
	const struct view_id *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* The entry of id in a table sorted by id, or NULL. */
static struct view_id *
view_tree_lookup(struct view_id *tab, size_t n, uint64_t id)
{
	struct view_id key;

	memset(&key, 0, sizeof key);
	key.id = id;
	return bsearch(&key, tab, n, sizeof *tab, view_tree_cmp_id);
}

/* Whether re matches the entry's name or file (cached in *flag). */
static int
view_tree_match(const pprof_profile_t *p, const regex_t *re,
    const struct view_id *e, signed char *flag)
{
	if (re == NULL || e == NULL)
		return 0;
	if (*flag == 0)
		*flag = regexec(re, view_tree_str(p, e->name), 0, NULL, 0) == 0 ||
		    (e->file != 0 && regexec(re, view_tree_str(p, e->file), 0,
		    NULL, 0) == 0) ? 1 : -1;
	return *flag == 1;
}

/* A sorted table of the profile's functions (mappings: maps set). */
static struct view_id *
view_tree_ids(const pprof_profile_t *p, int maps)
{
	size_t i, n = maps ? p->n_mapping : p->n_function;
	struct view_id *tab = xcalloc(n + 1, sizeof *tab);

	for (i = 0; i < n; i++) {
		if (maps) {
			tab[i].id = p->mapping[i]->id;
			tab[i].name = p->mapping[i]->filename;
		} else {
			tab[i].id = p->function[i]->id;
			tab[i].name = p->function[i]->name;
			tab[i].file = p->function[i]->filename;
		}
	}
	qsort(tab, n, sizeof *tab, view_tree_cmp_id);
	return tab;
}

/* The name of a location without lines: its mapping's file, or address. */
static char *
view_tree_bare_name(const pprof_profile_t *p,
    const Perftools__Profiles__Location *loc, const struct view_id *map)
{
	const char *file = map != NULL ? view_tree_str(p, map->name) : "";
	const char *slash = strrchr(file, '/');

	if (*file != '\0')
		return xasprintf("[%s]", slash != NULL ? slash + 1 : file);
	return xasprintf("0x%016" PRIx64, loc->address);
}

/*
 * Each location's frames, sorted by location id, with pprof's filters:
 * a location is focused if a line's function or its mapping matches
 * focus; a mapping matching hide hides the whole location, a function
 * matching it hides its line.
 */
static struct view_loc *
view_tree_locations(struct view_tree *t, const pprof_profile_t *p,
    const struct view_filter *f)
{
	struct view_loc *locs = xcalloc(p->n_location + 1, sizeof *locs);
	const regex_t *focus = f != NULL ? f->focus : NULL;
	const regex_t *hide = f != NULL ? f->hide : NULL;
	struct view_id *funcs, *maps, *fn, *map;
	const Perftools__Profiles__Location *loc;
	size_t i, l;
	char *s;

	funcs = view_tree_ids(p, 0);
	maps = view_tree_ids(p, 1);
	for (i = 0; i < p->n_location; i++) {
		loc = p->location[i];
		locs[i].id = loc->id;
		locs[i].frames = xcalloc(loc->n_line + 1,
		    sizeof *locs[i].frames);
		map = view_tree_lookup(maps, p->n_mapping, loc->mapping_id);
		if (focus != NULL && map != NULL &&
		    view_tree_match(p, focus, map, &map->focus))
			locs[i].focused = 1;
		if (loc->n_line == 0) {
			if (hide != NULL && map != NULL &&
			    view_tree_match(p, hide, map, &map->hide))
				continue;
			s = view_tree_bare_name(p, loc, map);
			locs[i].frames[locs[i].n++] = view_tree_intern(t, s);
			free(s);
			continue;
		}
		for (l = 0; l < loc->n_line; l++) {
			fn = view_tree_lookup(funcs, p->n_function,
			    loc->line[l]->function_id);
			if (focus != NULL && fn != NULL &&
			    view_tree_match(p, focus, fn, &fn->focus))
				locs[i].focused = 1;
		}
		if (hide != NULL && map != NULL &&
		    view_tree_match(p, hide, map, &map->hide))
			continue;
		for (l = 0; l < loc->n_line; l++) {
			fn = view_tree_lookup(funcs, p->n_function,
			    loc->line[l]->function_id);
			if (hide != NULL && fn != NULL &&
			    view_tree_match(p, hide, fn, &fn->hide))
				continue;
			if (fn != NULL)
				locs[i].frames[locs[i].n++] = view_tree_intern(t,
				    view_tree_str(p, fn->name));
			else {
				s = view_tree_bare_name(p, loc, map);
				locs[i].frames[locs[i].n++] =
				    view_tree_intern(t, s);
				free(s);
			}
		}
	}
	free(funcs);
	free(maps);
	qsort(locs, p->n_location, sizeof *locs, view_tree_cmp_loc);
	return locs;
}

/*
 * A sample's frames, root first, into *path (grown to *cap); returns how
 * many, and sets *focused when a location matched focus.
 */
static size_t
view_tree_path(const Perftools__Profiles__Sample *s, const struct view_loc *locs,
    size_t nlocs, uint32_t **path, size_t *cap, int *focused)
{
	const struct view_loc *lc;
	struct view_loc key;
	size_t j, k, n = 0;

	/* Root first: the last location, its outermost line first. */
	for (j = s->n_location_id; j-- > 0; ) {
		key.id = s->location_id[j];
		lc = bsearch(&key, locs, nlocs, sizeof *locs, view_tree_cmp_loc);
		if (lc == NULL)
			continue;
		*focused |= lc->focused;
		if (n + lc->n > *cap) {
			*cap = (n + lc->n) * 2;
			*path = xreallocarray(*path, *cap, sizeof **path);
		}
		for (k = lc->n; k-- > 0; )
			(*path)[n++] = lc->frames[k];
	}
	return n;
}

/* Whether a path, root first, begins with the call site's names. */
static int
view_tree_under(const struct view_tree *t, const uint32_t *path, size_t n,
    const char *const *call_site, size_t ncs)
{
	size_t k;

	if (n < ncs)
		return 0;
	for (k = 0; k < ncs; k++)
		if (strcmp(t->names[path[k]], call_site[k]) != 0)
			return 0;
	return 1;
}

/* Keeps the samples under a call site; see .h. */
void
view_tree_keep_call_site(pprof_profile_t *p, const char *const *call_site,
    size_t ncs)
{
	struct view_tree t;
	struct view_loc *locs;
	uint32_t *path = NULL;
	size_t i, k = 0, n, cap = 0;
	int focused = 0;

	view_tree_init(&t);
	locs = view_tree_locations(&t, p, NULL);
	for (i = 0; i < p->n_sample; i++) {
		n = view_tree_path(p->sample[i], locs, p->n_location, &path,
		    &cap, &focused);
		if (view_tree_under(&t, path, n, call_site, ncs))
			p->sample[k++] = p->sample[i];
		else
			protobuf_c_message_free_unpacked(&p->sample[i]->base,
			    NULL);
	}
	p->n_sample = k;
	for (i = 0; i < p->n_location; i++)
		free(locs[i].frames);
	free(locs);
	free(path);
	view_tree_clear(&t);
}

/* Adds the samples of p's sample type idx; see .h. */
void
view_tree_add(struct view_tree *t, const pprof_profile_t *p, int idx,
    const struct view_filter *f, int base)
{
	const Perftools__Profiles__Sample *s;
	struct view_loc *locs;
	uint32_t node, *path = NULL;
	size_t i, k, n, cap = 0;
	int64_t v;
	int focused;

	if (base)
		t->base_profiles++;
	else
		t->profiles++;
	if (idx < 0 || (size_t)idx >= p->n_sample_type)
		return;
	locs = view_tree_locations(t, p, f);
	for (i = 0; i < p->n_sample; i++) {
		s = p->sample[i];
		if ((size_t)idx >= s->n_value || (v = s->value[idx]) == 0)
			continue;
		focused = f == NULL || f->focus == NULL;
		n = view_tree_path(s, locs, p->n_location, &path, &cap,
		    &focused);
		if (f != NULL && f->ncall_site > 0 && !view_tree_under(t, path,
		    n, f->call_site, f->ncall_site))
			continue;
		if (!focused)
			continue;
		node = 0;
		for (k = 0; k < n; k++) {
			node = view_tree_child(t, node, path[k]);
			if (base)
				t->nodes[node].base_value += v;
			else
				t->nodes[node].value += v;
		}
		if (base) {
			t->nodes[node].base_self += node != 0 ? v : 0;
			t->nodes[0].base_value += v;
			t->base_total += v;
		} else {
			t->nodes[node].self += node != 0 ? v : 0;
			t->nodes[0].value += v;
			t->total += v;
		}
	}
	for (i = 0; i < p->n_location; i++)
		free(locs[i].frames);
	free(locs);
	free(path);
}
