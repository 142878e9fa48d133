/*
 * Read queries over the metadata: list, get, services, labels.
 *
 * A list is "service [+ type] + time range + AND of labels, newest first,
 * limit N". Two plans answer it, both index walks newest first that stop
 * after N matches:
 *  - time walk: the (service, type, created_at, id) index backwards from
 *    `to`, checking each label by a primary-key probe of profile_labels;
 *  - label walk: the (label_id, service, created_at) index of
 *    profile_labels for the rarest given label, backwards from `to`, each
 *    entry joined to its row to check type and the other labels.
 * The plan is picked by counting, capped at META_PLAN_CAP (cheap: these
 * are bounded index-only range scans), the entries each walk would visit
 * in the window: the rows of the service [and type], and the entries of
 * each label for the service. The smallest set wins.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "storage/embedded/meta_sqlite_int.h"
#include "storage/store_free.h"
#include "storage/store_meta.h"

#define META_PLAN_CAP	4096

enum meta_plan { META_PLAN_TIME, META_PLAN_LABEL };

static const char meta_columns[] =
	"p.pk, p.id, p.service, p.type, p.created_at, p.size, p.samples, "
	"p.sample_types, p.duration_ns, p.totals";

/* Copies a text column into a new string ("" for NULL). */
static char *
meta_query_column_strdup(sqlite3_stmt *s, int col)
{
	const char	*v = (const char *)sqlite3_column_text(s, col);

	return xstrdup(v ? v : "");
}

/* Reads the labels of profile pk into m, sorted by key then value. */
static int
meta_query_read_labels(struct meta_conn *c, int64_t pk, struct profile_meta *m,
    char **cause)
{
	sqlite3_stmt	*s;
	size_t		 cap = 0;
	int		 rc;

	if ((s = meta_conn_stmt(c, META_STMT_PROFILE_LABELS, cause)) == NULL)
		return -1;
	sqlite3_bind_int64(s, 1, pk);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (m->nlabels == cap) {
			cap = cap ? cap * 2 : 4;
			m->labels = xreallocarray(m->labels, cap,
			    sizeof *m->labels);
		}
		m->labels[m->nlabels].key = meta_query_column_strdup(s, 0);
		m->labels[m->nlabels].value = meta_query_column_strdup(s, 1);
		m->nlabels++;
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return meta_conn_error(c->db, cause, "read labels");
	return 0;
}

/* Fills m from a row of meta_columns, then reads its labels. */
static int
meta_query_read_row(struct meta_conn *c, sqlite3_stmt *s, struct profile_meta *m,
    char **cause)
{
	const char	*id = (const char *)sqlite3_column_text(s, 1);

	memset(m, 0, sizeof *m);
	snprintf(m->id, sizeof m->id, "%s", id ? id : "");
	m->service = meta_query_column_strdup(s, 2);
	m->type = meta_query_column_strdup(s, 3);
	m->created_at = sqlite3_column_int64(s, 4);
	m->size = sqlite3_column_int64(s, 5);
	m->samples = sqlite3_column_int64(s, 6);
	m->sample_types = meta_query_column_strdup(s, 7);
	m->duration_ns = sqlite3_column_int64(s, 8);
	if (sqlite3_column_type(s, 9) != SQLITE_NULL)
		m->totals = meta_query_column_strdup(s, 9);
	return meta_query_read_labels(c, sqlite3_column_int64(s, 0), m, cause);
}

/* Runs a one-integer-result statement; *v: OUT. */
static int
meta_query_step_int(struct meta_conn *c, sqlite3_stmt *s, int64_t *v,
    char **cause, const char *what)
{
	int	rc = sqlite3_step(s);

	if (rc == SQLITE_ROW)
		*v = sqlite3_column_int64(s, 0);
	sqlite3_reset(s);
	if (rc != SQLITE_ROW)
		return meta_conn_error(c->db, cause, what);
	return 0;
}

/* Builds the SQL of one list shape. */
static char *
meta_query_list_sql(enum meta_plan plan, int has_type, size_t nlabels)
{
	char	*sql, *tmp;
	size_t	 i, first;

	if (plan == META_PLAN_LABEL) {
		/* ?6 is the rarest label: drive from its entries. */
		sql = xasprintf("SELECT %s FROM profile_labels AS pl0 "
		    "INDEXED BY profile_labels_label_time CROSS JOIN "
		    "profiles AS p WHERE pl0.label_id = ?6 "
		    "AND pl0.service = ?1 AND pl0.created_at BETWEEN ?3 AND ?4 "
		    "AND p.pk = pl0.profile_pk%s", meta_columns,
		    has_type ? " AND p.type = ?2" : "");
		first = 1;
	} else {
		sql = xasprintf("SELECT %s FROM profiles AS p INDEXED BY %s "
		    "WHERE p.service = ?1%s AND p.created_at BETWEEN ?3 AND ?4",
		    meta_columns, has_type ? "profiles_service_type_time" :
		    "profiles_service_time", has_type ? " AND p.type = ?2" :
		    "");
		first = 0;
	}
	for (i = first; i < nlabels; i++) {
		tmp = xasprintf("%s AND EXISTS (SELECT 1 FROM profile_labels "
		    "WHERE label_id = ?%zu AND profile_pk = p.pk)", sql, 6 + i);
		free(sql);
		sql = tmp;
	}
	/* The label walk's index gives created_at order itself. */
	tmp = xasprintf("%s ORDER BY %s.created_at DESC, p.id DESC LIMIT ?5",
	    sql, plan == META_PLAN_LABEL ? "pl0" : "p");
	free(sql);
	return tmp;
}

/*
 * The list statement of a shape, prepared once per connection (shapes with
 * more than META_LIST_MAX_LABELS labels are prepared each time: *owned
 * tells the caller to finalize).
 */
static sqlite3_stmt *
meta_query_list_stmt(struct meta_conn *c, enum meta_plan plan, int has_type,
    size_t nlabels, int *owned, char **cause)
{
	sqlite3_stmt	**slot = NULL, *s = NULL;
	char		 *sql;
	int		  rc;

	*owned = 0;
	if (nlabels <= META_LIST_MAX_LABELS) {
		slot = &c->list[((size_t)plan * 2 + (has_type ? 1 : 0)) *
		    (META_LIST_MAX_LABELS + 1) + nlabels];
		if (*slot != NULL) {
			sqlite3_reset(*slot);
			sqlite3_clear_bindings(*slot);
			return *slot;
		}
	}
	sql = meta_query_list_sql(plan, has_type, nlabels);
	rc = sqlite3_prepare_v3(c->db, sql, -1, slot ?
	    SQLITE_PREPARE_PERSISTENT : 0, &s, NULL);
	free(sql);
	if (rc != SQLITE_OK) {
		meta_conn_error(c->db, cause, "prepare list");
		return NULL;
	}
	if (slot != NULL)
		*slot = s;
	else
		*owned = 1;
	return s;
}

/* A resolved label of the query with its (capped) number of entries. */
struct meta_qlabel {
	int64_t	id;
	int64_t	count;
};

/* Orders labels rarest first. */
static int
meta_query_qlabel_cmp(const void *a, const void *b)
{
	const struct meta_qlabel	*x = a, *y = b;

	return (x->count > y->count) - (x->count < y->count);
}

/* Binds service, type, time range and limit (?1 to ?5). */
static void
meta_query_bind_window(sqlite3_stmt *s, const struct store_query *q,
    sqlite3_int64 limit)
{
	sqlite3_bind_text(s, 1, q->service, -1, SQLITE_STATIC);
	if (q->type != NULL)
		sqlite3_bind_text(s, 2, q->type, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, q->from);
	sqlite3_bind_int64(s, 4, q->to);
	sqlite3_bind_int64(s, 5, limit);
}

/*
 * Resolves the query's labels to ids and counts (capped) each one's entries
 * for the service in the window; sorts them rarest first.
 * Returns 1 if some pair does not exist at all (nothing can match).
 */
static int
meta_query_resolve_labels(struct meta_conn *c, const struct store_query *q,
    struct meta_qlabel *ql, char **cause)
{
	sqlite3_stmt	*s;
	size_t		 i;
	int		 rc;

	for (i = 0; i < q->nlabels; i++) {
		if ((s = meta_conn_stmt(c, META_STMT_LABEL_ID, cause)) == NULL)
			return -1;
		sqlite3_bind_text(s, 1, q->labels[i].key ? q->labels[i].key :
		    "", -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 2, q->labels[i].value ?
		    q->labels[i].value : "", -1, SQLITE_STATIC);
		rc = sqlite3_step(s);
		if (rc == SQLITE_ROW)
			ql[i].id = sqlite3_column_int64(s, 0);
		sqlite3_reset(s);
		if (rc == SQLITE_DONE)
			return 1;
		if (rc != SQLITE_ROW)
			return meta_conn_error(c->db, cause, "find label");
		if ((s = meta_conn_stmt(c, META_STMT_LABEL_COUNT,
		    cause)) == NULL)
			return -1;
		meta_query_bind_window(s, q, META_PLAN_CAP);
		sqlite3_bind_int64(s, 6, ql[i].id);
		if (meta_query_step_int(c, s, &ql[i].count, cause,
		    "count label") == -1)
			return -1;
		if (ql[i].count == 0)
			return 1;
	}
	qsort(ql, q->nlabels, sizeof *ql, meta_query_qlabel_cmp);
	return 0;
}

/* Picks the plan: the label walk if the rarest label has fewer entries. */
static int
meta_query_pick_plan(struct meta_conn *c, const struct store_query *q,
    const struct meta_qlabel *ql, enum meta_plan *plan, char **cause)
{
	sqlite3_stmt	*s;
	int64_t		 window = 0;

	*plan = META_PLAN_TIME;
	if (q->nlabels == 0)
		return 0;
	s = meta_conn_stmt(c, q->type ? META_STMT_WINDOW_COUNT_TYPE :
	    META_STMT_WINDOW_COUNT, cause);
	if (s == NULL)
		return -1;
	meta_query_bind_window(s, q, META_PLAN_CAP);
	if (meta_query_step_int(c, s, &window, cause, "count window") == -1)
		return -1;
	if (ql[0].count < window)
		*plan = META_PLAN_LABEL;
	return 0;
}

/* Lists metas matching q, newest first. */
int
meta_query_list(struct meta_sqlite *ms, const struct store_query *q,
    struct profile_meta **out, size_t *n, char **cause)
{
	struct meta_conn	*c;
	struct meta_qlabel	*ql = NULL;
	struct profile_meta	*res = NULL;
	sqlite3_stmt		*s = NULL;
	enum meta_plan		 plan;
	size_t			 nres = 0, cap = 0, i;
	int			 owned = 0, rc, ret = -1;

	*out = NULL;
	*n = 0;
	if (q->service == NULL)
		return xcause(cause, "list: service is required");
	if (q->from > q->to)
		return 0;
	if ((c = meta_conn_get(&ms->pool, cause)) == NULL)
		return -1;
	ql = xcalloc(q->nlabels ? q->nlabels : 1, sizeof *ql);
	if ((rc = meta_query_resolve_labels(c, q, ql, cause)) != 0) {
		ret = rc == 1 ? 0 : -1;
		goto out;
	}
	if (meta_query_pick_plan(c, q, ql, &plan, cause) == -1)
		goto out;
	if ((s = meta_query_list_stmt(c, plan, q->type != NULL, q->nlabels, &owned,
	    cause)) == NULL)
		goto out;
	meta_query_bind_window(s, q, q->limit == 0 ? -1 : (sqlite3_int64)q->limit);
	for (i = 0; i < q->nlabels; i++)
		sqlite3_bind_int64(s, 6 + (int)i, ql[i].id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (nres == cap) {
			cap = cap ? cap * 2 : 16;
			res = xreallocarray(res, cap, sizeof *res);
		}
		if (meta_query_read_row(c, s, &res[nres++], cause) == -1)
			goto fail;
	}
	if (rc != SQLITE_DONE) {
		meta_conn_error(c->db, cause, "list profiles");
		goto fail;
	}
	*out = res;
	*n = nres;
	ret = 0;
	goto out;
fail:
	store_meta_free_array(res, nres);
out:
	if (owned)
		sqlite3_finalize(s);
	else if (s != NULL)
		sqlite3_reset(s);
	free(ql);
	meta_conn_put(&ms->pool, c);
	return ret;
}

/* Looks one profile up by id: 0 found, 1 not found, -1 error. */
int
meta_query_get(struct meta_sqlite *ms, const char *id,
    struct profile_meta *out, char **cause)
{
	struct meta_conn	*c;
	sqlite3_stmt		*s;
	int			 rc, ret = -1;

	memset(out, 0, sizeof *out);
	if ((c = meta_conn_get(&ms->pool, cause)) == NULL)
		return -1;
	if ((s = meta_conn_stmt(c, META_STMT_GET, cause)) == NULL)
		goto out;
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	if (rc == SQLITE_DONE)
		ret = 1;
	else if (rc != SQLITE_ROW)
		meta_conn_error(c->db, cause, "get profile");
	else if (meta_query_read_row(c, s, out, cause) == -1)
		store_meta_clear(out);
	else
		ret = 0;
	sqlite3_reset(s);
out:
	meta_conn_put(&ms->pool, c);
	return ret;
}

/* Up to limit rows with ids greater than after, by id (store_scan). */
int
meta_query_scan(struct meta_sqlite *ms, const char *after, size_t limit,
    struct profile_meta **out, size_t *n, char **cause)
{
	struct meta_conn	*c;
	struct profile_meta	*res;
	sqlite3_stmt		*s = NULL;
	size_t			 nres = 0;
	int			 rc, ret = -1;

	*out = NULL;
	*n = 0;
	if ((c = meta_conn_get(&ms->pool, cause)) == NULL)
		return -1;
	res = xcalloc(limit ? limit : 1, sizeof *res);
	if (sqlite3_prepare_v2(c->db, "SELECT p.pk, p.id, p.service, p.type, "
	    "p.created_at, p.size, p.samples, p.sample_types, p.duration_ns, "
	    "p.totals FROM profiles AS p WHERE p.id > ?1 ORDER BY p.id "
	    "LIMIT ?2", -1, &s, NULL) != SQLITE_OK) {
		meta_conn_error(c->db, cause, "scan profiles");
		goto out;
	}
	sqlite3_bind_text(s, 1, after, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)limit);
	while (nres < limit && (rc = sqlite3_step(s)) == SQLITE_ROW)
		if (meta_query_read_row(c, s, &res[nres++], cause) == -1)
			goto out;
	if (nres < limit && rc != SQLITE_DONE) {
		meta_conn_error(c->db, cause, "scan profiles");
		goto out;
	}
	if (nres > 0) {
		*out = res;
		*n = nres;
		res = NULL;
	}
	ret = 0;
out:
	store_meta_free_array(res, nres);
	sqlite3_finalize(s);
	meta_conn_put(&ms->pool, c);
	return ret;
}

/* Collects the first text column of every row of s into a string array. */
static int
meta_query_collect_strings(struct meta_conn *c, sqlite3_stmt *s, char ***out,
    size_t *n, char **cause, const char *what)
{
	char	**v = NULL;
	size_t	  nv = 0, cap = 0;
	int	  rc;

	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (nv == cap) {
			cap = cap ? cap * 2 : 16;
			v = xreallocarray(v, cap, sizeof *v);
		}
		v[nv++] = meta_query_column_strdup(s, 0);
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE) {
		store_free_strings(v, nv);
		return meta_conn_error(c->db, cause, what);
	}
	*out = v;
	*n = nv;
	return 0;
}

/* Service names, sorted: one index seek per service (a skip scan). */
int
meta_query_services(struct meta_sqlite *ms, char ***out, size_t *n,
    char **cause)
{
	struct meta_conn	*c;
	sqlite3_stmt		*s = NULL;
	char			**v = NULL, *last = xstrdup("");
	size_t			  nv = 0;
	int			  rc, ret = -1;

	*out = NULL;
	*n = 0;
	if ((c = meta_conn_get(&ms->pool, cause)) == NULL) {
		free(last);
		return -1;
	}
	for (;;) {
		if ((s = meta_conn_stmt(c, META_STMT_NEXT_SERVICE,
		    cause)) == NULL)
			goto out;
		sqlite3_bind_text(s, 1, last, -1, SQLITE_STATIC);
		rc = sqlite3_step(s);
		if (rc == SQLITE_DONE)
			break;
		if (rc != SQLITE_ROW) {
			meta_conn_error(c->db, cause, "list services");
			goto out;
		}
		free(last);
		last = meta_query_column_strdup(s, 0);
		sqlite3_reset(s);
		v = xreallocarray(v, nv + 1, sizeof *v);
		v[nv++] = xstrdup(last);
	}
	*out = v;
	*n = nv;
	v = NULL;
	nv = 0;
	ret = 0;
out:
	if (s != NULL)
		sqlite3_reset(s);
	store_free_strings(v, nv);
	free(last);
	meta_conn_put(&ms->pool, c);
	return ret;
}

/* Label keys, or the values of one key, optionally of one service. */
int
meta_query_labels(struct meta_sqlite *ms, const char *service,
    const char *key, char ***out, size_t *n, char **cause)
{
	struct meta_conn	*c;
	sqlite3_stmt		*s;
	enum meta_stmt		 which;
	int			 ret = -1;

	*out = NULL;
	*n = 0;
	if (key == NULL)
		which = service ? META_STMT_KEYS_SERVICE : META_STMT_KEYS;
	else
		which = service ? META_STMT_VALUES_SERVICE : META_STMT_VALUES;
	if ((c = meta_conn_get(&ms->pool, cause)) == NULL)
		return -1;
	if ((s = meta_conn_stmt(c, which, cause)) != NULL) {
		if (key != NULL) {
			sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
			if (service != NULL)
				sqlite3_bind_text(s, 2, service, -1,
				    SQLITE_STATIC);
		} else if (service != NULL)
			sqlite3_bind_text(s, 1, service, -1, SQLITE_STATIC);
		ret = meta_query_collect_strings(c, s, out, n, cause,
		    "list labels");
	}
	meta_conn_put(&ms->pool, c);
	return ret;
}
