/*
 * Compaction's side of the SQLite metadata: which bucket to roll up next,
 * what each of its rollups merges, and the transaction that records them.
 *
 * The rule every rollup keeps: the rollup of a bucket and group holds
 * exactly the profiles of that group in the bucket that are marked
 * (rolled = 1). A compaction of bucket B takes, for each group, the rows
 * of B's parts that are done (every group present in a done part has a
 * row there, small ones as references to their profiles) and, for parts
 * not done, the profiles themselves (fresh ones, rolled = -1, then
 * marked). Nothing inside B is compacted again once B is done, and a
 * profile arriving later in a done bucket is flagged late (rolled = 0):
 * it stays loose, read as itself by every merge. So a merge may use the
 * rollup of a done bucket plus the loose profiles in it, and count each
 * profile once.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "storage/meta_rollup.h"
#include "storage/meta_sqlite_int.h"

#define META_COMPACT_NS		INT64_C(1000000000)
#define META_COMPACT_LATE_BATCH	512	/* late profiles flagged at once */







/* A group being built: its pieces and what they share. */
struct meta_compact_group {
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
struct meta_compact_build {
	struct meta_compact_group	*g;
	size_t		 ng, capg;
	size_t		*slot;		/* hash: index + 1, 0 empty */
	size_t		 nslot;
	int64_t		*mark;
	size_t		 nmark, capmark;
};

/* Hash of a group key. */
static size_t
meta_compact_hash(int64_t label_id, const char *st)
{
	uint64_t	h = 1469598103934665603ULL ^ (uint64_t)label_id;

	for (; *st != '\0'; st++)
		h = (h ^ (uint8_t)*st) * 1099511628211ULL;
	return (size_t)(h ^ (h >> 29));
}

/* Re-hashes every group into a table of twice the size. */
static void
meta_compact_rehash(struct meta_compact_build *b)
{
	size_t	i, h;

	free(b->slot);
	b->nslot = b->nslot ? b->nslot * 2 : 64;
	b->slot = xcalloc(b->nslot, sizeof *b->slot);
	for (i = 0; i < b->ng; i++) {
		h = meta_compact_hash(b->g[i].label_id, b->g[i].sample_types);
		while (b->slot[h & (b->nslot - 1)] != 0)
			h++;
		b->slot[h & (b->nslot - 1)] = i + 1;
	}
}

/* The group (label_id, sample_types), created if new. */
static struct meta_compact_group *
meta_compact_group(struct meta_compact_build *b, int64_t label_id, const char *st)
{
	struct meta_compact_group	*g;
	size_t		 h, i;

	if (b->ng * 2 >= b->nslot)
		meta_compact_rehash(b);
	for (h = meta_compact_hash(label_id, st);; h++) {
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
meta_compact_add(struct meta_compact_group *g, const char *id, int is_rollup,
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

/* Frees a build. */
static void meta_compact_group_free(struct meta_compact_group *);
static void
meta_compact_build_free(struct meta_compact_build *b)
{
	size_t	i;

	for (i = 0; i < b->ng; i++)
		meta_compact_group_free(&b->g[i]);
	free(b->g);
	free(b->slot);
	free(b->mark);
	memset(b, 0, sizeof *b);
}

/* Adds one profile to its groups: every profile's, and each pair's. */
static void
meta_compact_add_profile(struct meta_compact_build *b, const char *id,
    const char *st, int64_t *labels, size_t nlabels)
{
	size_t	i;

	if (nlabels > 0)
		qsort(labels, nlabels, sizeof *labels, meta_rollup_cmp_i64);
	meta_compact_add(meta_compact_group(b, 0, st), id, 0, 1, labels,
	    nlabels, 1);
	for (i = 0; i < nlabels; i++) {
		if (i > 0 && labels[i] == labels[i - 1])
			continue;
		meta_compact_add(meta_compact_group(b, labels[i], st), id, 0, 1,
		    labels, nlabels, 1);
	}
}



/*
 * Takes the profiles of [b0, b1) seconds that belong in a rollup: fresh
 * ones (marked when the compaction commits) and marked ones; late ones
 * stay out.
 */
static int
meta_compact_take_raw(struct meta_conn *c, struct meta_compact_build *b,
    const char *service, const char *type, int64_t b0, int64_t b1,
    char **cause)
{
	sqlite3_stmt	*s;
	int64_t		 pk = -1, *labels = NULL, rolled = 0;
	size_t		 nl = 0, capl = 0;
	char		*id = NULL, *st = NULL;
	int		 rc;

	s = meta_rollup_prepare(c, "SELECT p.pk, p.id, p.rolled, "
	    "p.sample_types, pl.label_id FROM profiles AS p INDEXED BY "
	    "profiles_service_type_time LEFT JOIN profile_labels AS pl "
	    "ON pl.profile_pk = p.pk WHERE p.service = ?1 AND p.type = ?2 "
	    "AND p.created_at >= ?3 AND p.created_at < ?4 "
	    "ORDER BY p.created_at, p.id", cause);
	if (s == NULL)
		return -1;
	sqlite3_bind_text(s, 1, service, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, type, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, b0 * META_COMPACT_NS);
	sqlite3_bind_int64(s, 4, b1 * META_COMPACT_NS);
	for (;;) {
		rc = sqlite3_step(s);
		if (rc == SQLITE_ROW && sqlite3_column_int64(s, 0) == pk) {
			if (nl == capl) {
				capl = capl ? capl * 2 : 8;
				labels = xreallocarray(labels, capl,
				    sizeof *labels);
			}
			labels[nl++] = sqlite3_column_int64(s, 4);
			continue;
		}
		/* The previous profile is complete. */
		if (id != NULL && (rolled == -1 || rolled == 1)) {
			meta_compact_add_profile(b, id, st, labels, nl);
			if (rolled == -1) {
				if (b->nmark == b->capmark) {
					b->capmark = b->capmark ?
					    b->capmark * 2 : 64;
					b->mark = xreallocarray(b->mark,
					    b->capmark, sizeof *b->mark);
				}
				b->mark[b->nmark++] = pk;
			}
		}
		free(id);
		free(st);
		id = st = NULL;
		nl = 0;
		if (rc != SQLITE_ROW)
			break;
		pk = sqlite3_column_int64(s, 0);
		id = xstrdup((const char *)sqlite3_column_text(s, 1));
		rolled = sqlite3_column_int64(s, 2);
		st = xstrdup(sqlite3_column_text(s, 3) ?
		    (const char *)sqlite3_column_text(s, 3) : "");
		if (sqlite3_column_type(s, 4) != SQLITE_NULL) {
			if (capl == 0) {
				capl = 8;
				labels = xreallocarray(labels, capl,
				    sizeof *labels);
			}
			labels[nl++] = sqlite3_column_int64(s, 4);
		}
	}
	free(labels);
	if (rc != SQLITE_DONE) {
		meta_conn_error(c->db, cause, "read profiles to roll up");
		sqlite3_finalize(s);
		return -1;
	}
	sqlite3_finalize(s);
	return 0;
}

/* The done buckets of a level in [b0, b1): a new sorted array. */
static int
meta_compact_done_in(struct meta_conn *c, const char *service,
    const char *type, int level, int64_t b0, int64_t b1, int64_t **out,
    size_t *n, char **cause)
{
	sqlite3_stmt	*s;
	int		 rc;

	*out = NULL;
	*n = 0;
	s = meta_rollup_prepare(c, "SELECT bucket FROM rollup_buckets "
	    "WHERE service = ?1 AND type = ?2 AND level = ?3 AND bucket >= ?4 "
	    "AND bucket < ?5 AND done = 1 ORDER BY bucket", cause);
	if (s == NULL)
		return -1;
	meta_rollup_bind_key(s, service, type, level);
	sqlite3_bind_int64(s, 4, b0);
	sqlite3_bind_int64(s, 5, b1);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		*out = xreallocarray(*out, *n + 1, sizeof **out);
		(*out)[(*n)++] = sqlite3_column_int64(s, 0);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return meta_conn_error(c->db, cause, "read rollup buckets");
	return 0;
}

/*
 * Adds a row as pieces: its blob (name), or the profiles it refers to
 * (refs: ids separated by spaces).
 */
static void
meta_compact_add_row(struct meta_compact_group *g, const char *name, const char *refs,
    int64_t profiles, const int64_t *common, size_t ncommon, int uniform)
{
	char	*copy, *tok, *save;

	if (refs == NULL) {
		meta_compact_add(g, name, 1, profiles, common, ncommon, uniform);
		return;
	}
	copy = xstrdup(refs);
	for (tok = strtok_r(copy, " ", &save); tok != NULL;
	    tok = strtok_r(NULL, " ", &save))
		meta_compact_add(g, tok, 0, 1, common, ncommon, uniform);
	free(copy);
}

/* Adds the rows of the done buckets of a level in [b0, b1). */
static int
meta_compact_take_rows(struct meta_conn *c, struct meta_compact_build *b,
    const char *service, const char *type, int level, int64_t b0,
    int64_t b1, const int64_t *done, size_t ndone, char **cause)
{
	sqlite3_stmt	*s;
	int64_t		 bucket, *common, label_id;
	size_t		 ncommon, i;
	char		 name[STORE_ID_LEN + 1];
	const char	*refs, *st;
	int		 rc;

	s = meta_rollup_prepare(c, "SELECT rid, bucket, label_id, "
	    "sample_types, profiles, profile, common, uniform FROM rollups "
	    "INDEXED BY rollups_bucket WHERE service = ?1 AND type = ?2 "
	    "AND level = ?3 AND bucket >= ?4 AND bucket < ?5", cause);
	if (s == NULL)
		return -1;
	meta_rollup_bind_key(s, service, type, level);
	sqlite3_bind_int64(s, 4, b0);
	sqlite3_bind_int64(s, 5, b1);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		bucket = sqlite3_column_int64(s, 1);
		if (ndone == 0 || bsearch(&bucket, done, ndone, sizeof *done,
		    meta_rollup_cmp_i64) == NULL)
			continue;
		st = (const char *)sqlite3_column_text(s, 3);
		refs = (const char *)sqlite3_column_text(s, 5);
		meta_rollup_name(sqlite3_column_int64(s, 0), name);
		ncommon = meta_rollup_ids_parse((const char *)
		    sqlite3_column_text(s, 6), &common);
		label_id = sqlite3_column_int64(s, 2);
		/* The row of every profile stands for the pairs all carry. */
		for (i = 0; i <= (label_id == 0 ? ncommon : 0); i++)
			meta_compact_add_row(meta_compact_group(b, i == 0 ?
			    label_id : common[i - 1], st ? st : ""), name, refs,
			    sqlite3_column_int64(s, 4), common, ncommon,
			    sqlite3_column_int(s, 7));
		free(common);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return meta_conn_error(c->db, cause, "read rollups");
	return 0;
}

/*
 * Collects what the rollups of bucket [b0, b1) at level merge: the rows
 * of its done parts, and the parts not done taken apart in turn, down to
 * the profiles of minutes.
 */
static int
meta_compact_collect(struct meta_conn *c, struct meta_compact_build *b,
    const char *service, const char *type, int level, int64_t b0,
    int64_t b1, char **cause)
{
	int64_t	*done = NULL, step, t;
	size_t	 ndone = 0, i = 0;
	int	 ret = -1;

	if (level == 0)
		return meta_compact_take_raw(c, b, service, type, b0, b1, cause);
	step = store_rollup_step[level - 1];
	if (meta_compact_done_in(c, service, type, level - 1, b0, b1, &done,
	    &ndone, cause) == -1)
		return -1;
	if (ndone > 0 && meta_compact_take_rows(c, b, service, type,
	    level - 1, b0, b1, done, ndone, cause) == -1)
		goto out;
	for (t = b0; t < b1; t += step) {
		if (i < ndone && done[i] == t) {
			i++;
			continue;
		}
		if (meta_compact_collect(c, b, service, type, level - 1, t,
		    t + step, cause) == -1)
			goto out;
	}
	ret = 0;
out:
	free(done);
	return ret;
}


/*
 * 1 if group g holds the same profiles as the group of every profile with
 * its sample types (every one of them carries g's pair): it is not stored
 * again, merges use that group's rollup.
 */
static int
meta_compact_same_as_all(struct meta_compact_build *b, const struct meta_compact_group *g)
{
	const struct meta_compact_group	*all;
	size_t			 h, i;

	if (g->label_id == 0)
		return 0;
	for (h = meta_compact_hash(0, g->sample_types);; h++) {
		if ((i = b->slot[h & (b->nslot - 1)]) == 0)
			return 0;
		all = &b->g[i - 1];
		if (all->label_id == 0 &&
		    strcmp(all->sample_types, g->sample_types) == 0)
			break;
	}
	return meta_rollup_has(all->common, all->ncommon, g->label_id);
}

/* Frees one group's memory. */
static void
meta_compact_group_free(struct meta_compact_group *g)
{
	size_t	j;

	for (j = 0; j < g->n; j++)
		free(g->pieces[j]);
	free(g->pieces);
	free(g->is_rollup);
	free(g->common);
	free(g->sample_types);
}

/* Turns a build into a compaction (taking its memory). */
static struct store_compaction *
meta_compact_finish(struct meta_compact_build *b, const char *service, const char *type,
    int level, int64_t bucket)
{
	struct store_compaction	*c = xcalloc(1, sizeof *c);
	struct store_rollup	*r;
	struct meta_compact_group		*g;
	size_t			 i, j;

	c->service = xstrdup(service);
	c->type = xstrdup(type);
	c->level = level;
	c->bucket = bucket;
	c->r = xcalloc(b->ng ? b->ng : 1, sizeof *c->r);
	for (i = 0; i < b->ng; i++) {
		g = &b->g[i];
		if (meta_compact_same_as_all(b, g))
			continue;
		r = &c->r[c->n++];
		r->pieces = g->pieces;
		r->npieces = g->n;
		r->profiles = g->profiles;
		r->sample_types = xstrdup(g->sample_types);
		r->label_id = g->label_id;
		r->common = meta_rollup_ids_format(g->common, g->ncommon);
		r->uniform = g->uniform;
		r->refs = g->n <= STORE_ROLLUP_REFS;
		for (j = 0; j < g->n && r->refs; j++)
			r->refs = !g->is_rollup[j];
		g->pieces = NULL;
		g->n = 0;
	}
	for (i = 0; i < b->ng; i++)
		meta_compact_group_free(&b->g[i]);
	c->mark = b->mark;
	c->nmark = b->nmark;
	free(b->g);
	free(b->slot);
	memset(b, 0, sizeof *b);
	return c;
}


/* 1 if bucket (level, b) or a bucket around it is done. */
static int
meta_compact_covered(struct meta_conn *c, const char *service,
    const char *type, int level, int64_t b, char **cause)
{
	int	l, rc;

	for (l = level; l < STORE_ROLLUP_LEVELS; l++) {
		rc = meta_rollup_is_done(c, service, type, l,
		    b - b % store_rollup_step[l], cause);
		if (rc != 0)
			return rc;
	}
	return 0;
}


/*
 * The oldest fresh profile older than before (ns) whose minute may be
 * compacted: 1 with *service, *type, *minute set; late ones met on the
 * way are flagged (and traces set never to be rolled up); 0 none.
 */
static int
meta_compact_next_minute(struct meta_sqlite *ms, struct meta_conn *c,
    int64_t before, int64_t after, char **service, char **type,
    int64_t *minute, char **cause)
{
	sqlite3_stmt	*s;
	int64_t		 late[META_COMPACT_LATE_BATCH], never[META_COMPACT_LATE_BATCH];
	int64_t		 at = after - 1, pk = INT64_MAX, m;
	size_t		 nlate = 0, nnever = 0;
	const char	*sv, *ty;
	int		 rc, found = 0, ret = -1;

	s = meta_rollup_prepare(c, "SELECT pk, service, type, created_at "
	    "FROM profiles INDEXED BY profiles_loose WHERE rolled <= 0 "
	    "AND rolled = -1 AND created_at < ?1 AND (created_at, pk) > "
	    "(?2, ?3) ORDER BY created_at, pk LIMIT 1", cause);
	if (s == NULL)
		return -1;
	while (nlate < META_COMPACT_LATE_BATCH && nnever < META_COMPACT_LATE_BATCH) {
		sqlite3_reset(s);
		sqlite3_bind_int64(s, 1, before);
		sqlite3_bind_int64(s, 2, at);
		sqlite3_bind_int64(s, 3, pk);
		if ((rc = sqlite3_step(s)) != SQLITE_ROW) {
			if (rc != SQLITE_DONE) {
				meta_conn_error(c->db, cause, "find profiles "
				    "to roll up");
				goto out;
			}
			break;
		}
		pk = sqlite3_column_int64(s, 0);
		sv = (const char *)sqlite3_column_text(s, 1);
		ty = (const char *)sqlite3_column_text(s, 2);
		at = sqlite3_column_int64(s, 3);
		if (ty != NULL && strcmp(ty, "trace") == 0) {
			never[nnever++] = pk;
			continue;
		}
		m = store_timeline_bucket(at, store_rollup_step[0]) *
		    store_rollup_step[0];
		rc = meta_compact_covered(c, sv ? sv : "", ty ? ty : "", 0, m,
		    cause);
		if (rc == -1)
			goto out;
		if (rc == 1) {
			late[nlate++] = pk;
			continue;
		}
		*service = xstrdup(sv ? sv : "");
		*type = xstrdup(ty ? ty : "");
		*minute = m;
		found = 1;
		break;
	}
	ret = found;
out:
	sqlite3_finalize(s);
	if (nlate > 0 && meta_rollup_write_ints(ms, "UPDATE profiles SET "
	    "rolled = 0 WHERE pk = ?1 AND rolled = -1", late, nlate,
	    ret == -1 ? NULL : cause) == -1)
		ret = -1;
	if (nnever > 0 && ret != -1 && meta_rollup_write_ints(ms, "UPDATE "
	    "profiles SET rolled = 2 WHERE pk = ?1 AND rolled = -1", never,
	    nnever, cause) == -1)
		ret = -1;
	if (ret == -1 && found) {
		free(*service);
		free(*type);
	}
	if (ret == 0 && (nlate > 0 || nnever > 0))
		ret = 2;	/* flagged some: look again */
	return ret;
}


/*
 * The oldest waiting bucket of level that ended before `before` (s): 1
 * with *service, *type, *bucket, 0 none.
 */
static int
meta_compact_next_todo(struct meta_conn *c, int level, int64_t before,
    char **service, char **type, int64_t *bucket, char **cause)
{
	sqlite3_stmt	*s;
	int		 rc;

	s = meta_rollup_prepare(c, "SELECT service, type, bucket FROM "
	    "rollup_buckets INDEXED BY rollup_buckets_todo WHERE done = 0 "
	    "AND level = ?1 AND bucket <= ?2 ORDER BY bucket LIMIT 1", cause);
	if (s == NULL)
		return -1;
	sqlite3_bind_int(s, 1, level);
	sqlite3_bind_int64(s, 2, before - store_rollup_step[level]);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*service = xstrdup((const char *)sqlite3_column_text(s, 0));
		*type = xstrdup((const char *)sqlite3_column_text(s, 1));
		*bucket = sqlite3_column_int64(s, 2);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return meta_conn_error(c->db, cause, "find rollup buckets");
	return rc == SQLITE_ROW;
}

/* Finds the next bucket to compact and collects its rollups. */
static int
meta_compact_find(struct meta_sqlite *ms, struct meta_conn *c, int64_t now_ns,
    int64_t delay_ns, int64_t after_ns, struct store_compaction **out,
    char **cause)
{
	struct meta_compact_build	 b;
	char		*service = NULL, *type = NULL;
	int64_t		 bucket = 0, before = now_ns - delay_ns;
	int		 level, l, rc;

	do {
		rc = meta_compact_next_minute(ms, c, before, after_ns > 0 ?
		    after_ns : INT64_MIN + 1, &service, &type, &bucket, cause);
	} while (rc == 2);
	if (rc == -1)
		return -1;
	if (rc == 0 && after_ns > 0)
		return 0;	/* a batch of minutes ends */
	level = 0;
	for (l = 1; rc == 0 && l < STORE_ROLLUP_LEVELS; l++) {
		for (;;) {
			rc = meta_compact_next_todo(c, l,
			    store_timeline_bucket(before, 1), &service, &type,
			    &bucket, cause);
			if (rc != 1)
				break;
			if ((rc = meta_compact_covered(c, service, type, l,
			    bucket, cause)) == 0) {
				rc = 1;
				level = l;
				break;
			}
			if (rc == 1)
				rc = meta_rollup_drop_todo(ms, service, type,
				    l, bucket, cause);
			free(service);
			free(type);
			service = type = NULL;
			if (rc == -1)
				return -1;
		}
		if (rc == -1)
			return -1;
	}
	if (rc == 0)
		return 0;
	memset(&b, 0, sizeof b);
	/* One snapshot: the done marks and rows read agree. */
	rc = meta_conn_exec(c->db, "BEGIN", cause, "begin");
	if (rc == 0)
		rc = meta_compact_collect(c, &b, service, type, level, bucket,
		    bucket + store_rollup_step[level], cause);
	sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
	if (rc == 0)
		*out = meta_compact_finish(&b, service, type, level, bucket);
	meta_compact_build_free(&b);
	free(service);
	free(type);
	return rc;
}

/* store_compact_next. */
int
meta_compact_next(struct meta_sqlite *ms, int64_t now_ns, int64_t delay_ns,
    int64_t after_ns, struct store_compaction **out, char **cause)
{
	struct meta_conn	*c;
	int			 rc;

	*out = NULL;
	if ((c = meta_conn_get(&ms->pool, cause)) == NULL)
		return -1;
	rc = meta_compact_find(ms, c, now_ns, delay_ns, after_ns, out, cause);
	meta_conn_put(&ms->pool, c);
	return rc == -1 ? -1 : 0;
}

/* The ids a refs rollup refers to, separated by spaces. */
static char *
meta_compact_refs(const struct store_rollup *r)
{
	char	*s = xcalloc(r->npieces, STORE_ID_LEN + 1);
	size_t	 i, at = 0;

	for (i = 0; i < r->npieces; i++)
		at += (size_t)sprintf(s + at, "%s%.*s", i ? " " : "",
		    STORE_ID_LEN, r->pieces[i]);
	return s;
}

/* Inserts the rows of c, marks, and the bucket's marks, in the open tx. */
static int
meta_compact_write(struct meta_conn *w, const struct store_compaction *c,
    char **cause)
{
	sqlite3_stmt	*s;
	size_t		 i;
	char		*refs;
	int		 rc;

	if ((rc = meta_rollup_is_done(w, c->service, c->type, c->level,
	    c->bucket, cause)) != 0)
		return rc == 1 ? xcause(cause, "bucket already compacted") : -1;
	if ((s = meta_rollup_prepare(w, "INSERT INTO rollups (rid, service, "
	    "type, level, bucket, label_id, sample_types, profiles, size, "
	    "profile, common, uniform) VALUES (?4, ?1, ?2, ?3, ?5, ?6, ?7, "
	    "?8, ?9, ?10, ?11, ?12)", cause)) == NULL)
		return -1;
	for (i = 0; i < c->n; i++) {
		const struct store_rollup *r = &c->r[i];

		sqlite3_reset(s);
		meta_rollup_bind_key(s, c->service, c->type, c->level);
		sqlite3_bind_int64(s, 4, r->rid);
		sqlite3_bind_int64(s, 5, c->bucket);
		sqlite3_bind_int64(s, 6, r->label_id);
		sqlite3_bind_text(s, 7, r->sample_types, -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 8, r->profiles);
		sqlite3_bind_int64(s, 9, r->refs ? 0 : (int64_t)r->len);
		if (r->refs) {
			refs = meta_compact_refs(r);
			sqlite3_bind_text(s, 10, refs, -1, free);
		} else
			sqlite3_bind_null(s, 10);
		sqlite3_bind_text(s, 11, r->common, -1, SQLITE_STATIC);
		sqlite3_bind_int(s, 12, r->uniform);
		if (sqlite3_step(s) != SQLITE_DONE) {
			meta_conn_error(w->db, cause, "insert rollup");
			sqlite3_finalize(s);
			return -1;
		}
	}
	sqlite3_finalize(s);
	if ((s = meta_rollup_prepare(w, "UPDATE profiles SET rolled = 1 "
	    "WHERE pk = ?1 AND rolled = -1", cause)) == NULL)
		return -1;
	for (i = 0; i < c->nmark; i++) {
		sqlite3_reset(s);
		sqlite3_bind_int64(s, 1, c->mark[i]);
		if (sqlite3_step(s) != SQLITE_DONE) {
			meta_conn_error(w->db, cause, "mark profiles");
			sqlite3_finalize(s);
			return -1;
		}
	}
	sqlite3_finalize(s);
	if ((s = meta_rollup_prepare(w, "INSERT INTO rollup_buckets (service, "
	    "type, level, bucket, done) VALUES (?1, ?2, ?3, ?4, ?5) ON "
	    "CONFLICT (service, type, level, bucket) DO UPDATE SET done = "
	    "max(done, excluded.done)", cause)) == NULL)
		return -1;
	meta_rollup_bind_key(s, c->service, c->type, c->level);
	sqlite3_bind_int64(s, 4, c->bucket);
	sqlite3_bind_int(s, 5, 1);
	rc = sqlite3_step(s);
	if (rc == SQLITE_DONE && c->level + 1 < STORE_ROLLUP_LEVELS) {
		/* The parent waits for its end. */
		sqlite3_reset(s);
		meta_rollup_bind_key(s, c->service, c->type, c->level + 1);
		sqlite3_bind_int64(s, 4, c->bucket - c->bucket %
		    store_rollup_step[c->level + 1]);
		sqlite3_bind_int(s, 5, 0);
		rc = sqlite3_step(s);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return meta_conn_error(w->db, cause, "mark rollup bucket");
	return 0;
}

/* store_compact_commit's transaction: n compactions, all or none. */
int
meta_compact_commit(struct meta_sqlite *ms, struct store_compaction **c,
    size_t n, char **cause)
{
	struct meta_conn	*w = ms->writer;
	size_t			 i;
	int			 ret = -1;

	meta_sqlite_writer_acquire(ms);
	if (meta_conn_exec(w->db, "BEGIN IMMEDIATE", cause, "begin") == 0) {
		for (i = 0; i < n; i++) {
			if (meta_compact_write(w, c[i], cause) == -1)
				break;
		}
		if (i == n && meta_conn_exec(w->db, "COMMIT", cause,
		    "commit") == 0)
			ret = 0;
		else
			sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
	}
	meta_sqlite_writer_release(ms);
	return ret;
}

/* store_compact_abandon. */
int
meta_compact_abandon(struct meta_sqlite *ms, struct store_compaction *c,
    char **cause)
{
	if (c->level > 0)
		return meta_rollup_drop_todo(ms, c->service, c->type, c->level,
		    c->bucket, cause);
	return meta_rollup_write_ints(ms, "UPDATE profiles SET rolled = 0 "
	    "WHERE pk = ?1 AND rolled = -1", c->mark, c->nmark, cause);
}





