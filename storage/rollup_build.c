/*
 * Building one compaction over a backend's rows: see rollup_build.h. A
 * group is keyed by (label_id, sample_types), label 0 being every
 * profile's; a hash table finds it. A group holds pieces (profile ids or
 * rollup names) and the sorted label ids all of its profiles carry
 * (common), uniform while they all carry exactly those.
 */
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "storage/rollup_build.h"
#include "storage/rollup_ids.h"
#include "storage/store_bucket.h"

/* A group being built: its pieces and what they share. */
struct rollup_build_group {
	int64_t		 label_id;
	char		*sample_types;
	char		**pieces;
	unsigned char	*is_rollup;
	size_t		 n, cap;
	int64_t		 profiles;
	int64_t		*common;
	size_t		 ncommon;
	int		 uniform;
};

/* A compaction being built: groups (hashed) and profiles to mark. */
struct rollup_build {
	struct rollup_build_group	*g;
	size_t		 ng, capg;
	size_t		*slot;		/* hash: index + 1, 0 empty */
	size_t		 nslot;
	int64_t		*mark;
	size_t		 nmark, capmark;
	const int64_t	*done;		/* rows of these buckets only */
	size_t		 ndone;
};

/* Hash of a group key. */
static size_t
rollup_build_hash(int64_t label_id, const char *st)
{
	uint64_t	h = 1469598103934665603ULL ^ (uint64_t)label_id;

	for (; *st != '\0'; st++)
		h = (h ^ (uint8_t)*st) * 1099511628211ULL;
	return (size_t)(h ^ (h >> 29));
}
/* Re-hashes every group into a table of twice the size. */
static void
rollup_build_rehash(struct rollup_build *b)
{
	size_t	i, h;

	free(b->slot);
	b->nslot = b->nslot ? b->nslot * 2 : 64;
	b->slot = xcalloc(b->nslot, sizeof *b->slot);
	for (i = 0; i < b->ng; i++) {
		h = rollup_build_hash(b->g[i].label_id, b->g[i].sample_types);
		while (b->slot[h & (b->nslot - 1)] != 0)
			h++;
		b->slot[h & (b->nslot - 1)] = i + 1;
	}
}
/* The group (label_id, sample_types), created if new. */
static struct rollup_build_group *
rollup_build_group(struct rollup_build *b, int64_t label_id, const char *st)
{
	struct rollup_build_group	*g;
	size_t		 h, i;

	if (b->ng * 2 >= b->nslot)
		rollup_build_rehash(b);
	for (h = rollup_build_hash(label_id, st);; h++) {
		i = b->slot[h & (b->nslot - 1)];
		if (i == 0)
			break;
		g = &b->g[i - 1];
		if (g->label_id == label_id && strcmp(g->sample_types, st) == 0)
			return g;
	}
	if (b->ng == b->capg) {
		b->capg = b->capg ? b->capg * 2 : 64;
		b->g = xreallocarray(b->g, b->capg, sizeof *b->g);
	}
	g = &b->g[b->ng];
	memset(g, 0, sizeof *g);
	g->label_id = label_id;
	g->sample_types = xstrdup(st);
	b->slot[h & (b->nslot - 1)] = ++b->ng;
	return g;
}
/* Adds a piece holding `profiles` profiles, all carrying common[]. */
static void
rollup_build_add(struct rollup_build_group *g, const char *id, int is_rollup,
    int64_t profiles, const int64_t *common, size_t ncommon, int uniform)
{
	size_t	i, j, k;

	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 4;
		g->pieces = xreallocarray(g->pieces, g->cap, sizeof *g->pieces);
		g->is_rollup = xreallocarray(g->is_rollup, g->cap, 1);
	}
	g->pieces[g->n] = xstrdup(id);
	g->is_rollup[g->n] = (unsigned char)is_rollup;
	if (g->n++ == 0) {
		g->common = xreallocarray(NULL, ncommon + 1, sizeof *g->common);
		if (ncommon > 0)
			memcpy(g->common, common, ncommon * sizeof *common);
		g->ncommon = ncommon;
		g->uniform = uniform;
	} else {
		if (!uniform || ncommon != g->ncommon || (ncommon > 0 &&
		    memcmp(common, g->common, ncommon * sizeof *common) != 0))
			g->uniform = 0;
		/* Intersect the two sorted sets in place. */
		for (i = j = k = 0; i < g->ncommon && j < ncommon;) {
			if (g->common[i] < common[j])
				i++;
			else if (g->common[i] > common[j])
				j++;
			else {
				g->common[k++] = g->common[i];
				i++;
				j++;
			}
		}
		g->ncommon = k;
	}
	g->profiles += profiles;
}
/* Frees one group's memory. */
static void
rollup_build_group_free(struct rollup_build_group *g)
{
	size_t	j;

	for (j = 0; j < g->n; j++)
		free(g->pieces[j]);
	free(g->pieces);
	free(g->is_rollup);
	free(g->common);
	free(g->sample_types);
}
/* Frees a build. */
static void
rollup_build_clear(struct rollup_build *b)
{
	size_t	i;

	for (i = 0; i < b->ng; i++)
		rollup_build_group_free(&b->g[i]);
	free(b->g);
	free(b->slot);
	free(b->mark);
	memset(b, 0, sizeof *b);
}
/* Adds one profile to its groups: every profile's, and each pair's. */
void
rollup_build_profile(struct rollup_build *b, int64_t pk, int rolled,
    const char *id, const char *st, int64_t *labels, size_t nlabels)
{
	size_t	i;

	if (rolled != -1 && rolled != 1)
		return;
	if (nlabels > 0)
		qsort(labels, nlabels, sizeof *labels, rollup_ids_cmp);
	rollup_build_add(rollup_build_group(b, 0, st), id, 0, 1, labels,
	    nlabels, 1);
	for (i = 0; i < nlabels; i++) {
		if (i > 0 && labels[i] == labels[i - 1])
			continue;
		rollup_build_add(rollup_build_group(b, labels[i], st), id, 0, 1,
		    labels, nlabels, 1);
	}
	if (rolled == -1) {
		if (b->nmark == b->capmark) {
			b->capmark = b->capmark ? b->capmark * 2 : 64;
			b->mark = xreallocarray(b->mark, b->capmark,
			    sizeof *b->mark);
		}
		b->mark[b->nmark++] = pk;
	}
}
/*
 * Adds a row to g as pieces: its blob (name), or the profiles it refers
 * to (refs: ids separated by spaces).
 */
static void
rollup_build_pieces(struct rollup_build_group *g, const char *name, const char *refs,
    int64_t profiles, const int64_t *common, size_t ncommon, int uniform)
{
	char	*copy, *tok, *save;

	if (refs == NULL) {
		rollup_build_add(g, name, 1, profiles, common, ncommon, uniform);
		return;
	}
	copy = xstrdup(refs);
	for (tok = strtok_r(copy, " ", &save); tok != NULL;
	    tok = strtok_r(NULL, " ", &save))
		rollup_build_add(g, tok, 0, 1, common, ncommon, uniform);
	free(copy);
}
/* Adds a row of a done part to its groups. */
void
rollup_build_row(struct rollup_build *b, int64_t bucket, int64_t rid,
    const char *refs, int64_t label_id, const char *st, int64_t profiles,
    const char *common_text, int uniform)
{
	int64_t	*common;
	size_t	 ncommon, i;
	char	 name[STORE_ID_LEN + 1];

	if (b->ndone == 0 || bsearch(&bucket, b->done, b->ndone,
	    sizeof *b->done, rollup_ids_cmp) == NULL)
		return;
	rollup_ids_name(rid, name);
	ncommon = rollup_ids_parse(common_text, &common);
	/* The row of every profile stands for the pairs all carry. */
	for (i = 0; i <= (label_id == 0 ? ncommon : 0); i++)
		rollup_build_pieces(rollup_build_group(b, i == 0 ? label_id :
		    common[i - 1], st != NULL ? st : ""), name, refs, profiles,
		    common, ncommon, uniform);
	free(common);
}

/*
 * 1 if group g holds the same profiles as the group of every profile with
 * its sample types (every one of them carries g's pair): it is not stored
 * again, merges use that group's rollup.
 */
static int
rollup_build_same_as_all(struct rollup_build *b, const struct rollup_build_group *g)
{
	const struct rollup_build_group	*all;
	size_t			 h, i;

	if (g->label_id == 0)
		return 0;
	for (h = rollup_build_hash(0, g->sample_types);; h++) {
		if ((i = b->slot[h & (b->nslot - 1)]) == 0)
			return 0;
		all = &b->g[i - 1];
		if (all->label_id == 0 &&
		    strcmp(all->sample_types, g->sample_types) == 0)
			break;
	}
	return rollup_ids_has(all->common, all->ncommon, g->label_id);
}
/* Turns a build into a compaction (taking its memory). */
struct store_compaction *
rollup_build_finish(struct rollup_build *b, const char *service,
    const char *type, int level, int64_t bucket)
{
	struct store_compaction	*c = xcalloc(1, sizeof *c);
	struct store_rollup	*r;
	struct rollup_build_group		*g;
	size_t			 i, j;

	c->service = xstrdup(service);
	c->type = xstrdup(type);
	c->level = level;
	c->bucket = bucket;
	c->r = xcalloc(b->ng ? b->ng : 1, sizeof *c->r);
	for (i = 0; i < b->ng; i++) {
		g = &b->g[i];
		if (rollup_build_same_as_all(b, g))
			continue;
		r = &c->r[c->n++];
		r->pieces = g->pieces;
		r->npieces = g->n;
		r->profiles = g->profiles;
		r->sample_types = xstrdup(g->sample_types);
		r->label_id = g->label_id;
		r->common = rollup_ids_format(g->common, g->ncommon);
		r->uniform = g->uniform;
		r->refs = g->n <= STORE_ROLLUP_REFS;
		for (j = 0; j < g->n && r->refs; j++)
			r->refs = !g->is_rollup[j];
		g->pieces = NULL;
		g->n = 0;
	}
	for (i = 0; i < b->ng; i++)
		rollup_build_group_free(&b->g[i]);
	c->mark = b->mark;
	c->nmark = b->nmark;
	free(b->g);
	free(b->slot);
	free(b);
	return c;
}

/* A new, empty build. */
struct rollup_build *
rollup_build_new(void)
{
	return xcalloc(1, sizeof(struct rollup_build));
}

/* Frees a build not finished. */
void
rollup_build_free(struct rollup_build *b)
{
	if (b == NULL)
		return;
	rollup_build_clear(b);
	free(b);
}

/*
 * Collects what the rollups of bucket [b0, b1) at level merge: the rows
 * of its done parts, and the parts not done taken apart in turn, down to
 * the profiles of minutes.
 */
int
rollup_build_collect(struct rollup_build *b, const struct rollup_build_src *src,
    int level, int64_t b0, int64_t b1, char **cause)
{
	int64_t	*done = NULL, step, t;
	size_t	 ndone = 0, i = 0;
	int	 ret = -1;

	if (level == 0)
		return src->raw(src->arg, b, b0, b1, cause);
	step = store_bucket_step[level - 1];
	if (src->done(src->arg, level - 1, b0, b1, &done, &ndone, cause) == -1)
		return -1;
	if (ndone > 0) {
		b->done = done;
		b->ndone = ndone;
		ret = src->rows(src->arg, b, level - 1, b0, b1, cause);
		b->done = NULL;
		b->ndone = 0;
		if (ret == -1)
			goto out;
		ret = -1;
	}
	for (t = b0; t < b1; t += step) {
		if (i < ndone && done[i] == t) {
			i++;
			continue;
		}
		if (rollup_build_collect(b, src, level - 1, t, t + step,
		    cause) == -1)
			goto out;
	}
	ret = 0;
out:
	free(done);
	return ret;
}
