/*
 * Timelines from metadata alone. At ingest each profile carries its
 * totals: the sum of every sample type over its samples ("12,1200000",
 * in the order of sample_types). meta_timeline_apply adds them to the
 * timeline table, one row per (service, label, sample type, type,
 * minute): label 0 holds every profile, and each label pair of the
 * profile gets its own row, so a timeline of a service, or of a service
 * and one label pair, is a range read of minute rows whatever the number
 * of profiles (a week is 10,080 rows per sample type). Retention
 * subtracts what it deletes, and the backfill adds rows stored before
 * totals existed.
 *
 * A query whose step is a whole number of minutes, with at most one
 * label pair, reads the minute rows of the full minutes inside its
 * window and the profile rows of the partial minutes at its edges. Any
 * other query (a step of seconds, several label pairs, which minute rows
 * cannot intersect) reads the profile rows of its window, driven by the
 * rarest label pair's index like a list.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "storage/embedded/meta_timeline.h"
#include "storage/store_bucket.h"
#include "storage/store_meta.h"

#define META_TIMELINE_MINUTE	60000000000LL	/* ns */
/* Rows without totals counted for the answer, at most. */
#define META_TIMELINE_PENDING_CAP	"10000000"

/* Length of the token of s up to one of the stop characters. */
static size_t
meta_timeline_token(const char *s, const char *stops)
{
	return strcspn(s, stops);
}

/* Number of sample types in sample_types and of values in totals. */
static void
meta_timeline_counts(const char *types, const char *totals, size_t *nt,
    size_t *nv)
{
	const char	*p;

	*nt = *types == '\0' ? 0 : 1;
	for (p = types; *p != '\0'; p++)
		*nt += *p == ',';
	*nv = *totals == '\0' || *totals == ';' ? 0 : 1;
	for (p = totals; *p != '\0' && *p != ';'; p++)
		*nv += *p == ',';
}

/* Adds or subtracts one bucket row; sign 1 or -1. */
static int
meta_timeline_bucket(struct meta_conn *w, const struct meta_timeline_row *r,
    int64_t label_id, const char *st, size_t st_len, int64_t minute,
    int64_t v, int sign, char **cause)
{
	sqlite3_stmt	*s;
	int		 i;

	for (i = 0; i < (sign > 0 ? 1 : 2); i++) {
		s = meta_conn_stmt(w, sign > 0 ? META_STMT_TL_ADD : i == 0 ?
		    META_STMT_TL_SUB : META_STMT_TL_GC, cause);
		if (s == NULL)
			return -1;
		meta_conn_bind_text(s, 1, r->service);
		sqlite3_bind_int64(s, 2, label_id);
		sqlite3_bind_text(s, 3, st, (int)st_len, SQLITE_STATIC);
		meta_conn_bind_text(s, 4, r->type);
		sqlite3_bind_int64(s, 5, minute);
		if (i == 0)
			sqlite3_bind_int64(s, 6, v);
		if (meta_conn_step_done(w, s, cause, "timeline bucket") == -1)
			return -1;
	}
	return 0;
}

/* Adds (sign 1) or subtracts (-1) a row's totals to its minute buckets. */
int
meta_timeline_apply(struct meta_conn *w, const struct meta_timeline_row *r,
    int sign, char **cause)
{
	const char	*st, *tv;
	size_t		 nt, nv, st_len, i;
	int64_t		 minute, v;

	if (r->totals == NULL || r->sample_types == NULL)
		return 0;
	meta_timeline_counts(r->sample_types, r->totals, &nt, &nv);
	if (nt == 0 || nt != nv)
		return 0;
	minute = store_bucket_of(r->created_at, 60);
	st = r->sample_types;
	tv = r->totals;
	for (;;) {
		st_len = meta_timeline_token(st, ",");
		v = strtoll(tv, NULL, 10);
		if (meta_timeline_bucket(w, r, 0, st, st_len, minute, v, sign,
		    cause) == -1)
			return -1;
		for (i = 0; i < r->nlabels; i++)
			if (meta_timeline_bucket(w, r, r->label_ids[i], st,
			    st_len, minute, v, sign, cause) == -1)
				return -1;
		st += st_len;
		tv += meta_timeline_token(tv, ",;");
		if (*st != ',' || *tv != ',')
			break;
		st++;
		tv++;
	}
	return 0;
}

/* Adds v (of one profile, or of a minute row's n) at time ns. */
static void
meta_timeline_add(struct store_timeline *tl, int64_t ns, int64_t v, int64_t n)
{
	int64_t	i = store_bucket_of(ns, tl->step) - tl->b0;

	if (i < 0 || (uint64_t)i >= tl->n)
		return;
	tl->value[i] = (int64_t)((uint64_t)tl->value[i] + (uint64_t)v);
	tl->profiles[i] += n;
}

/* Reads the minute rows of one label (0: all) in [lo, hi] minutes. */
static int
meta_timeline_minutes(struct meta_conn *c, const struct store_query *q,
    int64_t label_id, int64_t lo, int64_t hi, struct store_timeline *tl,
    int64_t *count, char **cause)
{
	sqlite3_stmt	*s;
	int		 rc;

	s = meta_conn_stmt(c, q->type != NULL ? META_STMT_TL_BUCKETS :
	    META_STMT_TL_BUCKETS_ANY, cause);
	if (s == NULL)
		return -1;
	meta_conn_bind_text(s, 1, q->service);
	sqlite3_bind_int64(s, 2, label_id);
	meta_conn_bind_text(s, 3, tl->sample_type);
	if (q->type != NULL)
		meta_conn_bind_text(s, 4, q->type);
	sqlite3_bind_int64(s, 5, lo);
	sqlite3_bind_int64(s, 6, hi);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (count != NULL)
			*count += sqlite3_column_int64(s, 2);
		else
			meta_timeline_add(tl, sqlite3_column_int64(s, 0) *
			    META_TIMELINE_MINUTE,
			    sqlite3_column_int64(s, 1),
			    sqlite3_column_int64(s, 2));
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return meta_conn_error(c->db, cause, "read timeline");
	return 0;
}

/* The SQL reading the profile rows of a window (see the file comment). */
static char *
meta_timeline_rows_sql(int has_type, size_t nlabels)
{
	char	*sql, *tmp;
	size_t	 i;

	if (nlabels == 0)
		return xasprintf("SELECT p.created_at, p.sample_types, "
		    "p.totals FROM profiles AS p INDEXED BY %s "
		    "WHERE p.service = ?1%s AND p.created_at BETWEEN ?3 AND ?4",
		    has_type ? "profiles_service_type_time" :
		    "profiles_service_time", has_type ? " AND p.type = ?2" : "");
	sql = xasprintf("SELECT p.created_at, p.sample_types, p.totals "
	    "FROM profile_labels AS pl0 INDEXED BY profile_labels_label_time "
	    "CROSS JOIN profiles AS p WHERE pl0.label_id = ?6 "
	    "AND pl0.service = ?1 AND pl0.created_at BETWEEN ?3 AND ?4 "
	    "AND p.pk = pl0.profile_pk%s", has_type ? " AND p.type = ?2" : "");
	for (i = 1; i < nlabels; i++) {
		tmp = xasprintf("%s AND EXISTS (SELECT 1 FROM profile_labels "
		    "WHERE label_id = ?%zu AND profile_pk = p.pk)", sql, 6 + i);
		free(sql);
		sql = tmp;
	}
	return sql;
}

/* Adds the profile rows of [from, to] (ns) carrying every label. */
static int
meta_timeline_rows(struct meta_conn *c, const struct store_query *q,
    const int64_t *ids, int64_t from, int64_t to, struct store_timeline *tl,
    char **cause)
{
	sqlite3_stmt	*s = NULL;
	char		*sql;
	int64_t		 v;
	size_t		 i;
	int		 rc;

	if (from > to)
		return 0;
	sql = meta_timeline_rows_sql(q->type != NULL, q->nlabels);
	rc = sqlite3_prepare_v2(c->db, sql, -1, &s, NULL);
	free(sql);
	if (rc != SQLITE_OK)
		return meta_conn_error(c->db, cause, "prepare timeline");
	meta_conn_bind_text(s, 1, q->service);
	if (q->type != NULL)
		meta_conn_bind_text(s, 2, q->type);
	sqlite3_bind_int64(s, 3, from);
	sqlite3_bind_int64(s, 4, to);
	for (i = 0; i < q->nlabels; i++)
		sqlite3_bind_int64(s, 6 + (int)i, ids[i]);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (store_meta_totals_value((const char *)sqlite3_column_text(s,
		    1), (const char *)sqlite3_column_text(s, 2),
		    tl->sample_type, &v))
			meta_timeline_add(tl, sqlite3_column_int64(s, 0), v,
			    1);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return meta_conn_error(c->db, cause, "read profiles");
	return 0;
}

/* A query label resolved, with its profiles in the window's minutes. */
struct meta_timeline_label {
	int64_t	id;
	int64_t	count;
};

/* Orders labels rarest first. */
static int
meta_timeline_label_cmp(const void *a, const void *b)
{
	const struct meta_timeline_label *x = a, *y = b;

	return (x->count > y->count) - (x->count < y->count);
}

/*
 * Resolves the query's labels to ids, rarest first (by their minute
 * rows in [lo, hi]). Returns 1 if some pair was never stored.
 */
static int
meta_timeline_labels(struct meta_conn *c, const struct store_query *q,
    int64_t lo, int64_t hi, struct store_timeline *tl, int64_t *ids,
    char **cause)
{
	struct meta_timeline_label	*l;
	sqlite3_stmt			*s;
	size_t				 i;
	int				 rc;

	l = xcalloc(q->nlabels + 1, sizeof *l);
	for (i = 0; i < q->nlabels; i++) {
		if ((s = meta_conn_stmt(c, META_STMT_LABEL_ID, cause)) == NULL)
			goto fail;
		meta_conn_bind_text(s, 1, q->labels[i].key);
		meta_conn_bind_text(s, 2, q->labels[i].value);
		rc = sqlite3_step(s);
		if (rc == SQLITE_ROW)
			l[i].id = sqlite3_column_int64(s, 0);
		sqlite3_reset(s);
		if (rc == SQLITE_DONE) {
			free(l);
			return 1;
		}
		if (rc != SQLITE_ROW) {
			meta_conn_error(c->db, cause, "find label");
			goto fail;
		}
		if (q->nlabels > 1 && meta_timeline_minutes(c, q, l[i].id, lo,
		    hi, tl, &l[i].count, cause) == -1)
			goto fail;
	}
	qsort(l, q->nlabels, sizeof *l, meta_timeline_label_cmp);
	for (i = 0; i < q->nlabels; i++)
		ids[i] = l[i].id;
	free(l);
	return 0;
fail:
	free(l);
	return -1;
}

/* Counts the rows of the whole store whose totals are not known yet. */
static int
meta_timeline_pending(struct meta_conn *c, int64_t *pending, char **cause)
{
	sqlite3_stmt	*s = NULL;
	int		 rc;

	rc = sqlite3_prepare_v2(c->db, "SELECT count(*) FROM (SELECT 1 "
	    "FROM profiles INDEXED BY profiles_no_totals WHERE totals IS NULL "
	    "LIMIT " META_TIMELINE_PENDING_CAP ")", -1, &s, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW)
		*pending = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	if (rc != SQLITE_ROW)
		return meta_conn_error(c->db, cause, "count pending totals");
	return 0;
}

/* store_timeline over the embedded metadata. */
int
meta_timeline_query(struct meta_pool *readers, const struct store_query *q,
    struct store_timeline *tl, char **cause)
{
	struct meta_conn	*c;
	int64_t			*ids, lo, hi, edge;
	int			 rc, ret = -1;

	tl->pending = 0;
	if (q->service == NULL)
		return xcause(cause, "timeline: service is required");
	if ((c = meta_conn_get(readers, cause)) == NULL)
		return -1;
	ids = xcalloc(q->nlabels + 1, sizeof *ids);
	/* The full minutes inside [from, to]. */
	lo = store_bucket_of(q->from - 1, 60) + 1;
	hi = store_bucket_of(q->to + 1, 60) - 1;
	if (q->from > q->to)
		goto done;
	if ((rc = meta_timeline_labels(c, q, lo, hi, tl, ids, cause)) != 0) {
		if (rc == 1)
			goto done;	/* a pair never stored: nothing */
		goto out;
	}
	if (tl->step % 60 != 0 || q->nlabels > 1 || lo > hi) {
		if (meta_timeline_rows(c, q, ids, q->from, q->to, tl,
		    cause) == -1)
			goto out;
		goto done;
	}
	if (meta_timeline_minutes(c, q, q->nlabels ? ids[0] : 0, lo, hi, tl,
	    NULL, cause) == -1)
		goto out;
	edge = lo * META_TIMELINE_MINUTE;
	if (q->from < edge && meta_timeline_rows(c, q, ids, q->from, edge - 1,
	    tl, cause) == -1)
		goto out;
	edge = (hi + 1) * META_TIMELINE_MINUTE;
	if (edge <= q->to && meta_timeline_rows(c, q, ids, edge, q->to, tl,
	    cause) == -1)
		goto out;
done:
	ret = meta_timeline_pending(c, &tl->pending, cause);
out:
	free(ids);
	meta_conn_put(readers, c);
	return ret;
}
