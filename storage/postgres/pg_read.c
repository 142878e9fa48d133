/*
 * The postgresql backend's queries, with the embedded store's answers:
 * lists newest first (created_at, then id, descending) through the
 * (service[, type], created_at, id) indexes, label pairs resolved to ids
 * first and matched through profile_labels' (label_id, service,
 * created_at) index, so a label query is exact whatever the arrival
 * order; labels of the listed rows in one more round trip. Services are
 * read by a loose index scan (one index probe per service), label keys and
 * values from service_labels. Timelines add up the rows' totals.
 */
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "storage/postgres/pg_int.h"
#include "storage/store_bucket.h"
#include "storage/store_meta.h"

#define PG_READ_COLUMNS	"p.pk, p.id, p.service, p.type, p.created_at, " \
	"p.size, p.samples, p.sample_types, p.duration_ns, p.totals"
/* Rows without totals counted for a timeline's answer, at most. */
#define PG_READ_PENDING_CAP	"10000000"
#define PG_READ_TIMELINE_ROWS	5000	/* rows fetched at once */
#define PG_READ_TIMELINE_FETCH	"5000"

/* A listed row's pk and its place in the answer. */
struct pg_read_pk {
	int64_t	pk;
	size_t	i;
};

/* Orders by pk. */
static int
pg_read_pk_cmp(const void *a, const void *b)
{
	const struct pg_read_pk	*x = a, *y = b;

	return (x->pk > y->pk) - (x->pk < y->pk);
}

/* Fills m from row i of r (PG_READ_COLUMNS); returns its pk. */
static int64_t
pg_read_row(const PGresult *r, int i, struct profile_meta *m)
{
	memset(m, 0, sizeof *m);
	strncpy(m->id, PQgetvalue(r, i, 1), STORE_ID_LEN);
	m->service = pg_conn_str(r, i, 2);
	m->type = pg_conn_str(r, i, 3);
	m->created_at = pg_conn_int(r, i, 4);
	m->size = pg_conn_int(r, i, 5);
	m->samples = pg_conn_int(r, i, 6);
	m->sample_types = pg_conn_str(r, i, 7);
	m->duration_ns = pg_conn_int(r, i, 8);
	m->totals = pg_conn_str(r, i, 9);
	return pg_conn_int(r, i, 0);
}

/* Reads the labels of n listed rows (pks[i] is row i's) into m[]. */
static int
pg_read_labels_of(PGconn *c, struct profile_meta *m, const int64_t *pks,
    size_t n, char **cause)
{
	struct pg_read_pk	*order, key, *hit;
	struct pg_args_array		 a = { 0 };
	struct profile_meta	*t;
	PGresult		*r;
	const char		*v[1];
	size_t			 i;
	int			 rc;

	if (n == 0)
		return 0;
	order = xcalloc(n, sizeof *order);
	for (i = 0; i < n; i++) {
		order[i].pk = pks[i];
		order[i].i = i;
		pg_args_array_int(&a, pks[i]);
	}
	qsort(order, n, sizeof *order, pg_read_pk_cmp);
	v[0] = pg_args_array_text(&a);
	rc = pg_conn_exec(c, "SELECT pl.profile_pk, l.key, l.value FROM "
	    "profile_labels AS pl JOIN labels AS l ON l.label_id = pl.label_id "
	    "WHERE pl.profile_pk = ANY($1::bigint[]) "
	    "ORDER BY pl.profile_pk, l.key, l.value", 1, v, NULL, NULL, &r,
	    cause, "read labels");
	pg_args_array_free(&a);
	if (rc != 0) {
		free(order);
		return rc;
	}
	for (i = 0; i < (size_t)PQntuples(r); i++) {
		key.pk = pg_conn_int(r, (int)i, 0);
		hit = bsearch(&key, order, n, sizeof *order, pg_read_pk_cmp);
		if (hit == NULL)
			continue;
		t = &m[hit->i];
		t->labels = xreallocarray(t->labels, t->nlabels + 1,
		    sizeof *t->labels);
		t->labels[t->nlabels].key = pg_conn_str(r, (int)i, 1);
		t->labels[t->nlabels++].value = pg_conn_str(r, (int)i, 2);
	}
	PQclear(r);
	free(order);
	return 0;
}

/* The metas of r's rows (PG_READ_COLUMNS) with their labels; clears r. */
static int
pg_read_rows(PGconn *c, PGresult *r, struct profile_meta **out, size_t *n,
    char **cause)
{
	int64_t	*pks;
	size_t	 i, nr = (size_t)PQntuples(r);
	int	 rc;

	*out = nr > 0 ? xcalloc(nr, sizeof **out) : NULL;	/* as embedded */
	pks = xcalloc(nr ? nr : 1, sizeof *pks);
	for (i = 0; i < nr; i++)
		pks[i] = pg_read_row(r, (int)i, &(*out)[i]);
	PQclear(r);
	*n = nr;
	if ((rc = pg_read_labels_of(c, *out, pks, nr, cause)) != 0) {
		store_meta_free_array(*out, nr);
		*out = NULL;
		*n = 0;
	}
	free(pks);
	return rc;
}

/*
 * Resolves q's label pairs to ids: 0, 1 when a pair was never stored
 * (nothing matches), or an error.
 */
int
pg_read_label_ids(PGconn *c, const struct store_query *q, int64_t *ids,
    char **cause)
{
	PGresult	*r;
	const char	*v[2];
	size_t		 i;
	int		 rc, found;

	for (i = 0; i < q->nlabels; i++) {
		v[0] = q->labels[i].key ? q->labels[i].key : "";
		v[1] = q->labels[i].value ? q->labels[i].value : "";
		rc = pg_conn_exec(c, "SELECT label_id FROM labels "
		    "WHERE key = $1 AND value = $2", 2, v, NULL, NULL, &r,
		    cause, "find label");
		if (rc != 0)
			return rc;
		found = PQntuples(r) > 0;
		if (found)
			ids[i] = pg_conn_int(r, 0, 0);
		PQclear(r);
		if (!found)
			return 1;
	}
	return 0;
}

/*
 * The FROM and WHERE of the profiles q selects, its parameters appended
 * to p: $1 service, $2 from, $3 to, then type and label ids.
 */
static char *
pg_read_where(const struct store_query *q, const int64_t *ids,
    struct pg_args *p)
{
	char	*sql, *tmp;
	size_t	 i;
	int	 k;

	pg_args_str(p, q->service);
	pg_args_int(p, q->from);
	pg_args_int(p, q->to);
	sql = xstrdup("FROM profiles AS p WHERE p.service = $1 "
	    "AND p.created_at BETWEEN $2::bigint AND $3::bigint");
	if (q->type != NULL) {
		k = pg_args_str(p, q->type);
		tmp = xasprintf("%s AND p.type = $%d", sql, k);
		free(sql);
		sql = tmp;
	}
	for (i = 0; i < q->nlabels; i++) {
		k = pg_args_int(p, ids[i]);
		/* A probe of the primary key per row, or a walk of the
		   label's (label_id, service, created_at) index: the
		   planner's choice, and neither goes quadratic when the
		   statistics are missing (a new table). */
		tmp = xasprintf("%s AND EXISTS (SELECT 1 FROM profile_labels "
		    "AS pl WHERE pl.label_id = $%d::bigint AND "
		    "pl.profile_pk = p.pk)", sql, k);
		free(sql);
		sql = tmp;
	}
	return sql;
}

/* Lists on one connection. */
static int
pg_read_list_on(PGconn *c, const struct store_query *q,
    struct profile_meta **out, size_t *n, char **cause)
{
	struct pg_args	 p = { 0 };
	PGresult		*r = NULL;
	int64_t			*ids;
	char			*where, *sql;
	int			 rc;

	ids = xcalloc(q->nlabels + 1, sizeof *ids);
	if ((rc = pg_read_label_ids(c, q, ids, cause)) != 0) {
		free(ids);
		return rc == 1 ? 0 : rc;
	}
	where = pg_read_where(q, ids, &p);
	if (q->limit > 0)
		sql = xasprintf("SELECT %s %s ORDER BY p.created_at DESC, "
		    "p.id DESC LIMIT %zu", PG_READ_COLUMNS, where, q->limit);
	else
		sql = xasprintf("SELECT %s %s ORDER BY p.created_at DESC, "
		    "p.id DESC", PG_READ_COLUMNS, where);
	rc = pg_args_exec(c, sql, &p, &r, cause, "list profiles");
	free(sql);
	free(where);
	free(ids);
	pg_args_free(&p);
	if (rc != 0)
		return rc;
	return pg_read_rows(c, r, out, n, cause);
}

/* Lists metas matching q, newest first. */
int
pg_read_list(struct pg *pg, const struct store_query *q,
    struct profile_meta **out, size_t *n, char **cause)
{
	PGconn	*c;
	int	 rc;

	*out = NULL;
	*n = 0;
	if (q->service == NULL)
		return xcause(cause, "list: service is required");
	if (q->from > q->to)
		return 0;
	if ((rc = pg_pool_get(pg->pool, &c, cause)) != 0)
		return rc;
	rc = pg_read_list_on(c, q, out, n, cause);
	pg_pool_put(pg->pool, c);
	return rc;
}

/* Up to limit rows with ids after `after`, by id. */
int
pg_read_scan(struct pg *pg, const char *after, size_t limit,
    struct profile_meta **out, size_t *n, char **cause)
{
	PGresult	*r;
	PGconn		*c;
	char		 lim[24];
	const char	*v[2] = { after, pg_conn_i64(lim, (int64_t)limit) };
	int		 rc;

	*out = NULL;
	*n = 0;
	if ((rc = pg_pool_get(pg->pool, &c, cause)) != 0)
		return rc;
	rc = pg_conn_exec(c, "SELECT " PG_READ_COLUMNS " FROM profiles AS p "
	    "WHERE p.id > $1 ORDER BY p.id LIMIT $2::bigint", 2, v, NULL,
	    NULL, &r, cause, "scan profiles");
	if (rc == 0)
		rc = pg_read_rows(c, r, out, n, cause);
	pg_pool_put(pg->pool, c);
	return rc;
}

/* Looks one profile up: 0, 1 not found, or an error. */
int
pg_read_get(struct pg *pg, const char *id, struct profile_meta *out,
    char **cause)
{
	PGresult	*r;
	PGconn		*c;
	const char	*v[1] = { id };
	int64_t		 pk;
	int		 rc;

	memset(out, 0, sizeof *out);
	if ((rc = pg_pool_get(pg->pool, &c, cause)) != 0)
		return rc;
	rc = pg_conn_exec(c, "SELECT " PG_READ_COLUMNS " FROM profiles AS p "
	    "WHERE p.id = $1", 1, v, NULL, NULL, &r, cause, "get profile");
	if (rc == 0) {
		if (PQntuples(r) == 0)
			rc = 1;
		else {
			pk = pg_read_row(r, 0, out);
			if ((rc = pg_read_labels_of(c, out, &pk, 1,
			    cause)) != 0)
				store_meta_clear(out);
		}
		PQclear(r);
	}
	pg_pool_put(pg->pool, c);
	return rc;
}

/* Reads a profile's bytes: 0, 1 not found, or an error. */
int
pg_read_blob(struct pg *pg, const char *id, uint8_t **buf, size_t *len,
    char **cause)
{
	PGconn	*c;
	int	 rc;

	*buf = NULL;
	*len = 0;
	if ((rc = pg_pool_get(pg->pool, &c, cause)) != 0)
		return rc;
	rc = pg_blob_table.read(c, id, buf, len, cause);
	pg_pool_put(pg->pool, c);
	return rc;
}

/* Runs sql (parameters v) and returns column 0 of its rows. */
static int
pg_read_strings(struct pg *pg, const char *sql, int nv, const char *const *v,
    char ***out, size_t *n, char **cause, const char *what)
{
	PGresult	*r;
	PGconn		*c;
	size_t		 i;
	int		 rc;

	*out = NULL;
	*n = 0;
	if ((rc = pg_pool_get(pg->pool, &c, cause)) != 0)
		return rc;
	rc = pg_conn_exec(c, sql, nv, v, NULL, NULL, &r, cause, what);
	pg_pool_put(pg->pool, c);
	if (rc != 0)
		return rc;
	*n = (size_t)PQntuples(r);
	*out = *n > 0 ? xcalloc(*n, sizeof **out) : NULL;	/* as embedded */
	for (i = 0; i < *n; i++)
		(*out)[i] = xstrdup(PQgetvalue(r, (int)i, 0));
	PQclear(r);
	return 0;
}

/* Service names, sorted: one index probe per service. */
int
pg_read_services(struct pg *pg, char ***out, size_t *n, char **cause)
{
	return pg_read_strings(pg, "WITH RECURSIVE s(service) AS ("
	    "(SELECT service FROM profiles ORDER BY service LIMIT 1) "
	    "UNION ALL SELECT (SELECT p.service FROM profiles AS p "
	    "WHERE p.service > s.service ORDER BY p.service LIMIT 1) "
	    "FROM s WHERE s.service IS NOT NULL) "
	    "SELECT service FROM s WHERE service IS NOT NULL", 0, NULL, out,
	    n, cause, "list services");
}

/* Label keys, or the values of one key, optionally of one service. */
int
pg_read_labels(struct pg *pg, const char *service, const char *key,
    char ***out, size_t *n, char **cause)
{
	const char	*v[2];

	if (key == NULL && service == NULL)
		return pg_read_strings(pg, "SELECT DISTINCT l.key FROM "
		    "service_labels AS sl JOIN labels AS l "
		    "ON l.label_id = sl.label_id ORDER BY l.key", 0, NULL, out,
		    n, cause, "list label keys");
	if (key == NULL) {
		v[0] = service;
		return pg_read_strings(pg, "SELECT DISTINCT l.key FROM "
		    "service_labels AS sl JOIN labels AS l "
		    "ON l.label_id = sl.label_id WHERE sl.service = $1 "
		    "ORDER BY l.key", 1, v, out, n, cause, "list label keys");
	}
	v[0] = key;
	v[1] = service;
	if (service == NULL)
		return pg_read_strings(pg, "SELECT l.value FROM labels AS l "
		    "WHERE l.key = $1 AND EXISTS (SELECT 1 FROM service_labels "
		    "AS sl WHERE sl.label_id = l.label_id) ORDER BY l.value", 1,
		    v, out, n, cause, "list label values");
	return pg_read_strings(pg, "SELECT l.value FROM labels AS l "
	    "JOIN service_labels AS sl ON sl.label_id = l.label_id "
	    "AND sl.service = $2 WHERE l.key = $1 ORDER BY l.value", 2, v,
	    out, n, cause, "list label values");
}

/* Profiles and bytes stored, from profd_totals. */
int
pg_read_totals(struct pg *pg, int64_t *profiles, int64_t *bytes,
    char **cause)
{
	PGresult	*r;
	PGconn		*c;
	int		 rc;

	*profiles = *bytes = 0;
	if ((rc = pg_pool_get(pg->pool, &c, cause)) != 0)
		return rc;
	rc = pg_conn_exec(c, "SELECT profiles, bytes FROM profd_totals", 0,
	    NULL, NULL, NULL, &r, cause, "read totals");
	pg_pool_put(pg->pool, c);
	if (rc != 0)
		return rc;
	if (PQntuples(r) > 0) {
		*profiles = pg_conn_int(r, 0, 0);
		*bytes = pg_conn_int(r, 0, 1);
	}
	PQclear(r);
	return 0;
}

/* Ids of rows without totals after `after`, sorted. */
int
pg_read_missing_totals(struct pg *pg, const char *after, size_t limit,
    char ***out, size_t *n, char **cause)
{
	char		 lim[24];
	const char	*v[2] = { after ? after : "",
	    pg_conn_i64(lim, (int64_t)limit) };

	return pg_read_strings(pg, "SELECT id FROM profiles WHERE totals IS "
	    "NULL AND id > $1 ORDER BY id LIMIT $2::bigint", 2, v, out, n,
	    cause, "list rows without totals");
}

/* Adds v of one profile at time ns to its bucket. */
static void
pg_read_timeline_add(struct store_timeline *tl, int64_t ns, int64_t v)
{
	int64_t	i = store_bucket_of(ns, tl->step) - tl->b0;

	if (i < 0 || (uint64_t)i >= tl->n)
		return;
	tl->value[i] = (int64_t)((uint64_t)tl->value[i] + (uint64_t)v);
	tl->profiles[i]++;
}

/* A timeline on one connection. */
static int
pg_read_timeline_on(PGconn *c, const struct store_query *q,
    struct store_timeline *tl, char **cause)
{
	struct pg_args	 p = { 0 };
	PGresult		*r;
	int64_t			*ids, v;
	char			*where, *sql;
	int			 rc, i, n;

	ids = xcalloc(q->nlabels + 1, sizeof *ids);
	rc = pg_read_label_ids(c, q, ids, cause);
	if (rc == 0)
		rc = pg_conn_cmd(c, "BEGIN READ ONLY", cause, "begin");
	if (rc == 0) {
		/* Through a cursor, PG_READ_TIMELINE_ROWS rows at a time: a
		   window of millions of profiles costs a batch of memory. */
		where = pg_read_where(q, ids, &p);
		sql = xasprintf("DECLARE profd_timeline NO SCROLL CURSOR FOR "
		    "SELECT p.created_at, p.sample_types, p.totals %s AND "
		    "p.totals IS NOT NULL", where);
		rc = pg_args_exec(c, sql, &p, NULL, cause, "read timeline");
		free(sql);
		free(where);
		pg_args_free(&p);
		for (n = PG_READ_TIMELINE_ROWS; rc == 0 &&
		    n == PG_READ_TIMELINE_ROWS;) {
			rc = pg_conn_exec(c, "FETCH " PG_READ_TIMELINE_FETCH
			    " FROM profd_timeline", 0, NULL, NULL, NULL, &r,
			    cause, "read timeline");
			if (rc != 0)
				break;
			n = PQntuples(r);
			for (i = 0; i < n; i++)
				if (store_meta_totals_value(PQgetvalue(r, i, 1),
				    PQgetvalue(r, i, 2), tl->sample_type, &v))
					pg_read_timeline_add(tl,
					    pg_conn_int(r, i, 0), v);
			PQclear(r);
		}
		if (rc == 0)
			rc = pg_conn_cmd(c, "COMMIT", cause, "commit");
		else
			(void)pg_conn_cmd(c, "ROLLBACK", NULL, NULL);
	}
	free(ids);
	if (rc == 1)
		rc = 0;		/* a pair never stored: nothing */
	if (rc != 0)
		return rc;
	rc = pg_conn_exec(c, "SELECT count(*) FROM (SELECT 1 FROM profiles "
	    "WHERE totals IS NULL LIMIT " PG_READ_PENDING_CAP ") AS t", 0, NULL,
	    NULL, NULL, &r, cause, "count pending totals");
	if (rc == 0) {
		tl->pending = pg_conn_int(r, 0, 0);
		PQclear(r);
	}
	return rc;
}

/* Sums a sample type per time bucket. */
int
pg_read_timeline(struct pg *pg, const struct store_query *q,
    struct store_timeline *tl, char **cause)
{
	PGconn	*c;
	int	 rc;

	tl->pending = 0;
	if (q->service == NULL)
		return xcause(cause, "timeline: service is required");
	if (q->from > q->to)
		return 0;
	if ((rc = pg_pool_get(pg->pool, &c, cause)) != 0)
		return rc;
	rc = pg_read_timeline_on(c, q, tl, cause);
	pg_pool_put(pg->pool, c);
	return rc;
}
