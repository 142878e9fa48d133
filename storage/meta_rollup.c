/*
 * Compaction's side of the SQLite metadata: which bucket to roll up next,
 * what each of its rollups merges, and the transaction that records them;
 * retention and the check at open for rollups.
 *
 * The rule every rollup keeps: the rollup of a bucket and group holds
 * exactly the profiles of that group in the bucket that are marked
 * (rolled = 1). A compaction of bucket B takes, for each group, the rows
 * of B's parts that are done (every group present in a done part has a
 * row there, a lone profile recorded as such) and, for parts not done,
 * the profiles themselves (fresh ones, rolled = -1, then marked). Nothing
 * inside B is compacted again once B is done, and a profile arriving
 * later in a done bucket is flagged late (rolled = 0): it stays loose,
 * read as itself by every merge. So a merge may use the rollup of a done
 * bucket plus the loose profiles in it, and count each profile once.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "storage/meta_rollup.h"
#include "storage/meta_sqlite_int.h"

#define MR_NS		INT64_C(1000000000)
#define MR_LATE_BATCH	512	/* late profiles flagged per transaction */

/*
 * The blob name of rollup rid: two capitals (rid mod 676, so the blobs
 * spread over that many directories) and 18 digits. Profile ids are
 * lower case: the two never meet.
 */
void
meta_rollup_name(int64_t rid, char out[STORE_ID_LEN + 1])
{
	snprintf(out, STORE_ID_LEN + 1, "%c%c%018" PRId64,
	    'A' + (int)(rid % 26), 'A' + (int)(rid / 26 % 26), rid);
}

/* rid of a rollup blob name; 0 if it is not one. */
int64_t
meta_rollup_rid(const char *name)
{
	int64_t	 v = 0;
	size_t	 i;
	char	 check[STORE_ID_LEN + 1];

	if (name == NULL || strlen(name) != STORE_ID_LEN ||
	    name[0] < 'A' || name[0] > 'Z')
		return 0;
	for (i = 2; i < STORE_ID_LEN; i++) {
		if (name[i] < '0' || name[i] > '9')
			return 0;
		v = v * 10 + (name[i] - '0');
	}
	meta_rollup_name(v, check);
	return v > 0 && strcmp(check, name) == 0 ? v : 0;
}

/* qsort: int64. */
static int
meta_rollup_cmp_i64(const void *a, const void *b)
{
	int64_t	x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Parses "3,17,40" into a new sorted array; returns the count. */
size_t
meta_rollup_ids_parse(const char *s, int64_t **v)
{
	size_t	 n = 0;
	char	*end;

	*v = NULL;
	while (s != NULL && *s != '\0') {
		*v = xreallocarray(*v, n + 1, sizeof **v);
		(*v)[n++] = strtoll(s, &end, 10);
		if (end == s)
			break;
		s = *end == ',' ? end + 1 : end;
	}
	qsort(*v, n, sizeof **v, meta_rollup_cmp_i64);
	return n;
}

/* 1 if every id of want is in the set s. */
int
meta_rollup_ids_cover(const char *s, const int64_t *want, size_t nwant)
{
	int64_t	*v;
	size_t	 n = meta_rollup_ids_parse(s, &v), i;
	int	 ok = 1;

	for (i = 0; i < nwant && ok; i++)
		ok = bsearch(&want[i], v, n, sizeof *v,
		    meta_rollup_cmp_i64) != NULL;
	free(v);
	return ok;
}

/* Formats a sorted id set as text. */
static char *
meta_rollup_ids_format(const int64_t *v, size_t n)
{
	char	*s = xcalloc(1, n * 21 + 1);
	size_t	 i, at = 0;

	for (i = 0; i < n; i++)
		at += (size_t)sprintf(s + at, "%s%" PRId64, i ? "," : "", v[i]);
	return s;
}

/* A group being built: its pieces and what they share. */
struct mr_group {
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
struct mr_build {
	struct mr_group	*g;
	size_t		 ng, capg;
	size_t		*slot;		/* hash: index + 1, 0 empty */
	size_t		 nslot;
	int64_t		*mark;
	size_t		 nmark, capmark;
};

/* Hash of a group key. */
static size_t
meta_rollup_hash(int64_t label_id, const char *st)
{
	uint64_t	h = 1469598103934665603ULL ^ (uint64_t)label_id;

	for (; *st != '\0'; st++)
		h = (h ^ (uint8_t)*st) * 1099511628211ULL;
	return (size_t)(h ^ (h >> 29));
}

/* Re-hashes every group into a table of twice the size. */
static void
meta_rollup_rehash(struct mr_build *b)
{
	size_t	i, h;

	free(b->slot);
	b->nslot = b->nslot ? b->nslot * 2 : 64;
	b->slot = xcalloc(b->nslot, sizeof *b->slot);
	for (i = 0; i < b->ng; i++) {
		h = meta_rollup_hash(b->g[i].label_id, b->g[i].sample_types);
		while (b->slot[h & (b->nslot - 1)] != 0)
			h++;
		b->slot[h & (b->nslot - 1)] = i + 1;
	}
}

/* The group (label_id, sample_types), created if new. */
static struct mr_group *
meta_rollup_group(struct mr_build *b, int64_t label_id, const char *st)
{
	struct mr_group	*g;
	size_t		 h, i;

	if (b->ng * 2 >= b->nslot)
		meta_rollup_rehash(b);
	for (h = meta_rollup_hash(label_id, st);; h++) {
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
meta_rollup_add(struct mr_group *g, const char *id, int is_rollup,
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
static void meta_rollup_group_free(struct mr_group *);
static void
meta_rollup_build_free(struct mr_build *b)
{
	size_t	i;

	for (i = 0; i < b->ng; i++)
		meta_rollup_group_free(&b->g[i]);
	free(b->g);
	free(b->slot);
	free(b->mark);
	memset(b, 0, sizeof *b);
}

/* Adds one profile to its groups: every profile's, and each pair's. */
static void
meta_rollup_add_profile(struct mr_build *b, const char *id,
    const char *st, int64_t *labels, size_t nlabels)
{
	size_t	i;

	qsort(labels, nlabels, sizeof *labels, meta_rollup_cmp_i64);
	meta_rollup_add(meta_rollup_group(b, 0, st), id, 0, 1, labels,
	    nlabels, 1);
	for (i = 0; i < nlabels; i++) {
		if (i > 0 && labels[i] == labels[i - 1])
			continue;
		meta_rollup_add(meta_rollup_group(b, labels[i], st), id, 0, 1,
		    labels, nlabels, 1);
	}
}

/* Prepares sql on c; NULL with *cause. */
static sqlite3_stmt *
meta_rollup_prepare(struct meta_conn *c, const char *sql, char **cause)
{
	sqlite3_stmt	*s = NULL;

	if (sqlite3_prepare_v2(c->db, sql, -1, &s, NULL) != SQLITE_OK) {
		meta_conn_error(c->db, cause, "prepare rollup query");
		return NULL;
	}
	return s;
}

/* Binds service, type, and level (?1..?3). */
static void
meta_rollup_bind_key(sqlite3_stmt *s, const char *service, const char *type,
    int level)
{
	sqlite3_bind_text(s, 1, service, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, type, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 3, level);
}

/*
 * Takes the profiles of [b0, b1) seconds that belong in a rollup: fresh
 * ones (marked when the compaction commits) and marked ones; late ones
 * stay out.
 */
static int
meta_rollup_take_raw(struct meta_conn *c, struct mr_build *b,
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
	sqlite3_bind_int64(s, 3, b0 * MR_NS);
	sqlite3_bind_int64(s, 4, b1 * MR_NS);
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
			meta_rollup_add_profile(b, id, st, labels, nl);
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
meta_rollup_done_in(struct meta_conn *c, const char *service,
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
meta_rollup_add_row(struct mr_group *g, const char *name, const char *refs,
    int64_t profiles, const int64_t *common, size_t ncommon, int uniform)
{
	char	*copy, *tok, *save;

	if (refs == NULL) {
		meta_rollup_add(g, name, 1, profiles, common, ncommon, uniform);
		return;
	}
	copy = xstrdup(refs);
	for (tok = strtok_r(copy, " ", &save); tok != NULL;
	    tok = strtok_r(NULL, " ", &save))
		meta_rollup_add(g, tok, 0, 1, common, ncommon, uniform);
	free(copy);
}

/* Adds the rows of the done buckets of a level in [b0, b1). */
static int
meta_rollup_take_rows(struct meta_conn *c, struct mr_build *b,
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
		if (bsearch(&bucket, done, ndone, sizeof *done,
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
			meta_rollup_add_row(meta_rollup_group(b, i == 0 ?
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
meta_rollup_collect(struct meta_conn *c, struct mr_build *b,
    const char *service, const char *type, int level, int64_t b0,
    int64_t b1, char **cause)
{
	int64_t	*done = NULL, step, t;
	size_t	 ndone = 0, i = 0;
	int	 ret = -1;

	if (level == 0)
		return meta_rollup_take_raw(c, b, service, type, b0, b1, cause);
	step = store_rollup_step[level - 1];
	if (meta_rollup_done_in(c, service, type, level - 1, b0, b1, &done,
	    &ndone, cause) == -1)
		return -1;
	if (ndone > 0 && meta_rollup_take_rows(c, b, service, type,
	    level - 1, b0, b1, done, ndone, cause) == -1)
		goto out;
	for (t = b0; t < b1; t += step) {
		if (i < ndone && done[i] == t) {
			i++;
			continue;
		}
		if (meta_rollup_collect(c, b, service, type, level - 1, t,
		    t + step, cause) == -1)
			goto out;
	}
	ret = 0;
out:
	free(done);
	return ret;
}

/* 1 if id is in the sorted set v. */
static int
meta_rollup_has(const int64_t *v, size_t n, int64_t id)
{
	return bsearch(&id, v, n, sizeof *v, meta_rollup_cmp_i64) != NULL;
}

/*
 * 1 if group g holds the same profiles as the group of every profile with
 * its sample types (every one of them carries g's pair): it is not stored
 * again, merges use that group's rollup.
 */
static int
meta_rollup_same_as_all(struct mr_build *b, const struct mr_group *g)
{
	const struct mr_group	*all;
	size_t			 h, i;

	if (g->label_id == 0)
		return 0;
	for (h = meta_rollup_hash(0, g->sample_types);; h++) {
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
meta_rollup_group_free(struct mr_group *g)
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
meta_rollup_finish(struct mr_build *b, const char *service, const char *type,
    int level, int64_t bucket)
{
	struct store_compaction	*c = xcalloc(1, sizeof *c);
	struct store_rollup	*r;
	struct mr_group		*g;
	size_t			 i, j;

	c->service = xstrdup(service);
	c->type = xstrdup(type);
	c->level = level;
	c->bucket = bucket;
	c->r = xcalloc(b->ng ? b->ng : 1, sizeof *c->r);
	for (i = 0; i < b->ng; i++) {
		g = &b->g[i];
		if (meta_rollup_same_as_all(b, g))
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
		meta_rollup_group_free(&b->g[i]);
	c->mark = b->mark;
	c->nmark = b->nmark;
	free(b->g);
	free(b->slot);
	memset(b, 0, sizeof *b);
	return c;
}

/* Frees a compaction. */
void
store_compaction_free(struct store_compaction *c)
{
	size_t	i, j;

	if (c == NULL)
		return;
	for (i = 0; i < c->n; i++) {
		for (j = 0; j < c->r[i].npieces; j++)
			free(c->r[i].pieces[j]);
		free(c->r[i].pieces);
		free(c->r[i].sample_types);
		free(c->r[i].common);
		free(c->r[i].bytes);
	}
	free(c->r);
	free(c->mark);
	free(c->service);
	free(c->type);
	free(c);
}

/* 1 if bucket (level, b) of service and type is done. */
static int
meta_rollup_is_done(struct meta_conn *c, const char *service,
    const char *type, int level, int64_t b, char **cause)
{
	sqlite3_stmt	*s;
	int		 rc, done = 0;

	s = meta_rollup_prepare(c, "SELECT done FROM rollup_buckets WHERE "
	    "service = ?1 AND type = ?2 AND level = ?3 AND bucket = ?4",
	    cause);
	if (s == NULL)
		return -1;
	meta_rollup_bind_key(s, service, type, level);
	sqlite3_bind_int64(s, 4, b);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		done = sqlite3_column_int(s, 0) == 1;
	sqlite3_finalize(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return meta_conn_error(c->db, cause, "read rollup bucket");
	return done;
}

/* 1 if bucket (level, b) or a bucket around it is done. */
static int
meta_rollup_covered(struct meta_conn *c, const char *service,
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

/* Runs sql (binding ints) on the writer in a transaction of its own. */
static int
meta_rollup_write_ints(struct meta_sqlite *ms, const char *sql,
    const int64_t *v, size_t n, char **cause)
{
	struct meta_conn	*w = ms->writer;
	sqlite3_stmt		*s = NULL;
	size_t			 i;
	int			 ret = -1;

	meta_sqlite_writer_acquire(ms);
	if (meta_conn_exec(w->db, "BEGIN IMMEDIATE", cause, "begin") == -1)
		goto out;
	if ((s = meta_rollup_prepare(w, sql, cause)) == NULL)
		goto rollback;
	for (i = 0; i < n; i++) {
		sqlite3_bind_int64(s, 1, v[i]);
		if (meta_conn_step_done(w, s, cause, "flag profiles") == -1)
			goto rollback;
	}
	sqlite3_finalize(s);
	s = NULL;
	if (meta_conn_exec(w->db, "COMMIT", cause, "commit") == 0) {
		ret = 0;
		goto out;
	}
rollback:
	sqlite3_finalize(s);
	sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
out:
	meta_sqlite_writer_release(ms);
	return ret;
}

/*
 * The oldest fresh profile older than before (ns) whose minute may be
 * compacted: 1 with *service, *type, *minute set; late ones met on the
 * way are flagged (and traces set never to be rolled up); 0 none.
 */
static int
meta_rollup_next_minute(struct meta_sqlite *ms, struct meta_conn *c,
    int64_t before, int64_t after, char **service, char **type,
    int64_t *minute, char **cause)
{
	sqlite3_stmt	*s;
	int64_t		 late[MR_LATE_BATCH], never[MR_LATE_BATCH];
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
	while (nlate < MR_LATE_BATCH && nnever < MR_LATE_BATCH) {
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
		rc = meta_rollup_covered(c, sv ? sv : "", ty ? ty : "", 0, m,
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

/* Deletes the waiting mark of an hour or day that cannot be compacted. */
static int
meta_rollup_drop_todo(struct meta_sqlite *ms, const char *service,
    const char *type, int level, int64_t bucket, char **cause)
{
	struct meta_conn	*w = ms->writer;
	sqlite3_stmt		*s;
	int			 ret = -1;

	meta_sqlite_writer_acquire(ms);
	if ((s = meta_rollup_prepare(w, "DELETE FROM rollup_buckets WHERE "
	    "service = ?1 AND type = ?2 AND level = ?3 AND bucket = ?4 AND "
	    "done = 0", cause)) != NULL) {
		meta_rollup_bind_key(s, service, type, level);
		sqlite3_bind_int64(s, 4, bucket);
		if (sqlite3_step(s) == SQLITE_DONE)
			ret = 0;
		else
			meta_conn_error(w->db, cause, "drop rollup bucket");
		sqlite3_finalize(s);
	}
	meta_sqlite_writer_release(ms);
	return ret;
}

/*
 * The oldest waiting bucket of level that ended before `before` (s): 1
 * with *service, *type, *bucket, 0 none.
 */
static int
meta_rollup_next_todo(struct meta_conn *c, int level, int64_t before,
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
meta_rollup_find(struct meta_sqlite *ms, struct meta_conn *c, int64_t now_ns,
    int64_t delay_ns, int64_t after_ns, struct store_compaction **out,
    char **cause)
{
	struct mr_build	 b;
	char		*service = NULL, *type = NULL;
	int64_t		 bucket = 0, before = now_ns - delay_ns;
	int		 level, l, rc;

	do {
		rc = meta_rollup_next_minute(ms, c, before, after_ns > 0 ?
		    after_ns : INT64_MIN + 1, &service, &type, &bucket, cause);
	} while (rc == 2);
	if (rc == -1)
		return -1;
	if (rc == 0 && after_ns > 0)
		return 0;	/* a batch of minutes ends */
	level = 0;
	for (l = 1; rc == 0 && l < STORE_ROLLUP_LEVELS; l++) {
		for (;;) {
			rc = meta_rollup_next_todo(c, l,
			    store_timeline_bucket(before, 1), &service, &type,
			    &bucket, cause);
			if (rc != 1)
				break;
			if ((rc = meta_rollup_covered(c, service, type, l,
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
		rc = meta_rollup_collect(c, &b, service, type, level, bucket,
		    bucket + store_rollup_step[level], cause);
	sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
	if (rc == 0)
		*out = meta_rollup_finish(&b, service, type, level, bucket);
	meta_rollup_build_free(&b);
	free(service);
	free(type);
	return rc;
}

/* store_compact_next. */
int
meta_rollup_next(struct meta_sqlite *ms, int64_t now_ns, int64_t delay_ns,
    int64_t after_ns, struct store_compaction **out, char **cause)
{
	struct meta_conn	*c;
	int			 rc;

	*out = NULL;
	if ((c = meta_conn_get(&ms->pool, cause)) == NULL)
		return -1;
	rc = meta_rollup_find(ms, c, now_ns, delay_ns, after_ns, out, cause);
	meta_conn_put(&ms->pool, c);
	return rc == -1 ? -1 : 0;
}

/* The ids a refs rollup refers to, separated by spaces. */
static char *
meta_rollup_refs(const struct store_rollup *r)
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
meta_rollup_write(struct meta_conn *w, const struct store_compaction *c,
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
			refs = meta_rollup_refs(r);
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
meta_rollup_commit(struct meta_sqlite *ms, struct store_compaction **c,
    size_t n, char **cause)
{
	struct meta_conn	*w = ms->writer;
	size_t			 i;
	int			 ret = -1;

	meta_sqlite_writer_acquire(ms);
	if (meta_conn_exec(w->db, "BEGIN IMMEDIATE", cause, "begin") == 0) {
		for (i = 0; i < n; i++) {
			if (meta_rollup_write(w, c[i], cause) == -1)
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
meta_rollup_abandon(struct meta_sqlite *ms, struct store_compaction *c,
    char **cause)
{
	if (c->level > 0)
		return meta_rollup_drop_todo(ms, c->service, c->type, c->level,
		    c->bucket, cause);
	return meta_rollup_write_ints(ms, "UPDATE profiles SET rolled = 0 "
	    "WHERE pk = ?1 AND rolled = -1", c->mark, c->nmark, cause);
}

/* Retention of rollups: marks first, then up to batch rows. */
int
meta_rollup_delete_before(struct meta_sqlite *ms, int64_t cutoff,
    size_t batch, char ***names, size_t *nnames, int64_t *bytes,
    int64_t *rows, size_t *n, char **cause)
{
	struct meta_conn	*w = ms->writer;
	sqlite3_stmt		*s = NULL, *d = NULL;
	int64_t			 before;
	char			 name[STORE_ID_LEN + 1];
	int			 rc, ret = -1;

	*names = NULL;
	*nnames = *n = 0;
	*bytes = 0;
	/* Buckets that start before cutoff: bucket * 1e9 < cutoff. */
	before = cutoff / MR_NS + (cutoff % MR_NS > 0 ? 1 : 0);
	meta_sqlite_writer_acquire(ms);
	if (meta_conn_exec(w->db, "BEGIN IMMEDIATE", cause, "begin") == -1)
		goto out;
	if ((s = meta_rollup_prepare(w, "DELETE FROM rollup_buckets WHERE "
	    "bucket < ?1", cause)) == NULL)
		goto rollback;
	sqlite3_bind_int64(s, 1, before);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	s = NULL;
	if (rc != SQLITE_DONE) {
		meta_conn_error(w->db, cause, "delete rollup buckets");
		goto rollback;
	}
	if ((s = meta_rollup_prepare(w, "SELECT rid, size, profile, level "
	    "FROM rollups INDEXED BY rollups_time WHERE bucket < ?1 LIMIT ?2",
	    cause)) == NULL || (d = meta_rollup_prepare(w, "DELETE FROM "
	    "rollups WHERE rid = ?1", cause)) == NULL)
		goto rollback;
	sqlite3_bind_int64(s, 1, before);
	sqlite3_bind_int64(s, 2, batch == 0 ? -1 : (sqlite3_int64)batch);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		sqlite3_reset(d);
		sqlite3_bind_int64(d, 1, sqlite3_column_int64(s, 0));
		if (sqlite3_step(d) != SQLITE_DONE) {
			rc = SQLITE_ERROR;
			break;
		}
		(*n)++;
		if (sqlite3_column_int(s, 3) >= 0 &&
		    sqlite3_column_int(s, 3) < STORE_ROLLUP_LEVELS)
			rows[sqlite3_column_int(s, 3)]++;
		if (sqlite3_column_type(s, 2) != SQLITE_NULL)
			continue;
		meta_rollup_name(sqlite3_column_int64(s, 0), name);
		*names = xreallocarray(*names, *nnames + 1, sizeof **names);
		(*names)[(*nnames)++] = xstrdup(name);
		*bytes += sqlite3_column_int64(s, 1);
	}
	if (rc != SQLITE_DONE) {
		meta_conn_error(w->db, cause, "delete rollups");
		goto rollback;
	}
	sqlite3_finalize(s);
	sqlite3_finalize(d);
	s = d = NULL;
	if (meta_conn_exec(w->db, "COMMIT", cause, "commit") == 0) {
		ret = 0;
		goto out;
	}
rollback:
	sqlite3_finalize(s);
	sqlite3_finalize(d);
	sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
out:
	meta_sqlite_writer_release(ms);
	if (ret == -1) {
		store_strings_free(*names, *nnames);
		*names = NULL;
		*nnames = *n = 0;
		*bytes = 0;
	}
	return ret;
}

/* A bucket to drop at open (a blob of it is missing). */
struct mr_lost {
	char	*service, *type;
	int	 level;
	int64_t	 bucket;
};

/* Drops every row and the done mark of each lost bucket, in the open tx. */
static int
meta_rollup_drop_lost(struct meta_conn *w, const struct mr_lost *lost,
    size_t nlost, size_t *dropped, char **cause)
{
	sqlite3_stmt	*s = NULL, *d = NULL;
	size_t		 i;
	int		 ret = -1;

	if ((s = meta_rollup_prepare(w, "DELETE FROM rollups WHERE service = "
	    "?1 AND type = ?2 AND level = ?3 AND bucket = ?4", cause)) == NULL ||
	    (d = meta_rollup_prepare(w, "DELETE FROM rollup_buckets WHERE "
	    "service = ?1 AND type = ?2 AND level = ?3 AND bucket = ?4",
	    cause)) == NULL)
		goto out;
	for (i = 0; i < nlost; i++) {
		sqlite3_reset(s);
		sqlite3_reset(d);
		meta_rollup_bind_key(s, lost[i].service, lost[i].type,
		    lost[i].level);
		sqlite3_bind_int64(s, 4, lost[i].bucket);
		meta_rollup_bind_key(d, lost[i].service, lost[i].type,
		    lost[i].level);
		sqlite3_bind_int64(d, 4, lost[i].bucket);
		if (sqlite3_step(s) != SQLITE_DONE ||
		    sqlite3_step(d) != SQLITE_DONE) {
			meta_conn_error(w->db, cause, "drop rollups");
			goto out;
		}
		*dropped += (size_t)sqlite3_changes(w->db) > 0 ? 1 : 0;
	}
	ret = 0;
out:
	sqlite3_finalize(s);
	sqlite3_finalize(d);
	return ret;
}

/* At open: see meta_rollup.h. */
int
meta_rollup_recover(struct meta_sqlite *ms,
    int (*has_blob)(void *, const char *), void *arg, int64_t **rids,
    size_t *nrids, int64_t *maxrid, struct store_rollup_stats *st,
    size_t *dropped, char **cause)
{
	struct meta_conn	*w = ms->writer;
	struct mr_lost		*lost = NULL;
	sqlite3_stmt		*s = NULL;
	size_t			 nlost = 0, i;
	char			 name[STORE_ID_LEN + 1];
	int			 rc, level, ret = -1;

	*rids = NULL;
	*nrids = *dropped = 0;
	*maxrid = 0;
	memset(st, 0, sizeof *st);
	meta_sqlite_writer_acquire(ms);
	if (meta_conn_exec(w->db, "BEGIN IMMEDIATE", cause, "begin") == -1)
		goto out;
	if ((s = meta_rollup_prepare(w, "SELECT rid, service, type, level, "
	    "bucket, size, profile FROM rollups ORDER BY rid", cause)) == NULL)
		goto rollback;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		*maxrid = sqlite3_column_int64(s, 0);
		level = sqlite3_column_int(s, 3);
		if (level >= 0 && level < STORE_ROLLUP_LEVELS)
			st->rollups[level]++;
		if (sqlite3_column_type(s, 6) != SQLITE_NULL)
			continue;
		meta_rollup_name(sqlite3_column_int64(s, 0), name);
		if (has_blob(arg, name)) {
			*rids = xreallocarray(*rids, *nrids + 1, sizeof **rids);
			(*rids)[(*nrids)++] = sqlite3_column_int64(s, 0);
			st->bytes += sqlite3_column_int64(s, 5);
			continue;
		}
		lost = xreallocarray(lost, nlost + 1, sizeof *lost);
		lost[nlost].service = xstrdup((const char *)
		    sqlite3_column_text(s, 1));
		lost[nlost].type = xstrdup((const char *)
		    sqlite3_column_text(s, 2));
		lost[nlost].level = level;
		lost[nlost].bucket = sqlite3_column_int64(s, 4);
		nlost++;
	}
	sqlite3_finalize(s);
	s = NULL;
	if (rc != SQLITE_DONE) {
		meta_conn_error(w->db, cause, "read rollups");
		goto rollback;
	}
	if (nlost > 0) {
		if (meta_rollup_drop_lost(w, lost, nlost, dropped, cause) == -1)
			goto rollback;
		/* Counts again after the drop: simpler than subtracting. */
		memset(st->rollups, 0, sizeof st->rollups);
		if ((s = meta_rollup_prepare(w, "SELECT level, count(*) FROM "
		    "rollups GROUP BY level", cause)) == NULL)
			goto rollback;
		while (sqlite3_step(s) == SQLITE_ROW) {
			level = sqlite3_column_int(s, 0);
			if (level >= 0 && level < STORE_ROLLUP_LEVELS)
				st->rollups[level] = sqlite3_column_int64(s, 1);
		}
		sqlite3_finalize(s);
		s = NULL;
	}
	if (meta_conn_exec(w->db, "COMMIT", cause, "commit") == 0) {
		ret = 0;
		goto out;
	}
rollback:
	sqlite3_finalize(s);
	sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
out:
	meta_sqlite_writer_release(ms);
	for (i = 0; i < nlost; i++) {
		free(lost[i].service);
		free(lost[i].type);
	}
	free(lost);
	if (ret == -1) {
		free(*rids);
		*rids = NULL;
		*nrids = 0;
	}
	return ret;
}

/* The queue: waiting hours and days, and the oldest fresh profile. */
int
meta_rollup_queue(struct meta_sqlite *ms, struct store_rollup_stats *st,
    char **cause)
{
	struct meta_conn	*c;
	sqlite3_stmt		*s;
	int			 ret = -1;

	if ((c = meta_conn_get(&ms->pool, cause)) == NULL)
		return -1;
	st->todo = st->oldest_fresh = 0;
	if ((s = meta_rollup_prepare(c, "SELECT count(*) FROM rollup_buckets "
	    "INDEXED BY rollup_buckets_todo WHERE done = 0", cause)) == NULL)
		goto out;
	if (sqlite3_step(s) == SQLITE_ROW)
		st->todo = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	if ((s = meta_rollup_prepare(c, "SELECT created_at FROM profiles "
	    "INDEXED BY profiles_loose WHERE rolled <= 0 AND rolled = -1 "
	    "ORDER BY created_at LIMIT 1", cause)) == NULL)
		goto out;
	if (sqlite3_step(s) == SQLITE_ROW)
		st->oldest_fresh = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	ret = 0;
out:
	meta_conn_put(&ms->pool, c);
	return ret;
}
