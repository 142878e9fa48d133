/*
 * The postgresql backend's writes. Puts are group-committed as in the
 * embedded store: a put queues itself and waits; whichever waiting thread
 * finds no commit running leads, takes what is queued (up to
 * PG_WRITE_BATCH_ROWS rows and PG_WRITE_BATCH_BYTES bytes) and writes it
 * in one transaction of a few statements, whatever the number of rows:
 * each column of the batch travels as one array (unnest), the blobs many
 * to an INSERT. A 200 is sent only after COMMIT returned, with
 * synchronous_commit on. A batch whose data the server refuses is written
 * again row by row, so a bad row fails alone; a deadlock with another
 * collector's transaction is retried.
 *
 * Every collector on the database writes at once, so rows that several
 * transactions update (labels, service_labels, profd_totals) are always
 * touched in the same order (sorted, totals last), and the server's
 * deadlock detector is left with little to do. Retention runs in one
 * collector at a time: the one holding the retention advisory lock.
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/xmalloc.h"
#include "storage/postgres/pg_int.h"

#define PG_WRITE_BATCH_ROWS	512
/* libpq copies a statement's parameters into its buffer: a batch's
   bytes are held twice while it is sent. */
#define PG_WRITE_BATCH_BYTES	(16 * 1024 * 1024)
#define PG_WRITE_RETRIES	5

/* One (key, value) of a batch, and its label id once known. */
struct pg_write_label {
	const char	*key, *value;
	int64_t		 id;
};

/* One (service, label) count of a batch, for service_labels. */
struct pg_write_ref {
	const char	*service;
	int64_t		 label_id;
	int64_t		 n;
};

/* Orders label pairs by key, then value. */
static int
pg_write_label_cmp(const void *a, const void *b)
{
	const struct pg_write_label *x = a, *y = b;
	int	c = strcmp(x->key, y->key);

	return c ? c : strcmp(x->value, y->value);
}

/* Orders service references by service, then label id. */
static int
pg_write_ref_cmp(const void *a, const void *b)
{
	const struct pg_write_ref *x = a, *y = b;
	int	c = strcmp(x->service, y->service);

	if (c != 0)
		return c;
	return (x->label_id > y->label_id) - (x->label_id < y->label_id);
}

/* Sorts refs and adds up equal ones; returns the new count. */
static size_t
pg_write_refs_merge(struct pg_write_ref *r, size_t n)
{
	size_t	i, k = 0;

	if (n == 0)
		return 0;
	qsort(r, n, sizeof *r, pg_write_ref_cmp);
	for (i = 1; i < n; i++) {
		if (pg_write_ref_cmp(&r[k], &r[i]) == 0)
			r[k].n += r[i].n;
		else
			r[++k] = r[i];
	}
	return k + 1;
}

/* Adds n to the service_labels of refs (sorted), dropping emptied rows. */
static int
pg_write_refs_apply(PGconn *c, const struct pg_write_ref *r, size_t n,
    char **cause)
{
	struct pg_args_array	 s = { 0 }, l = { 0 }, k = { 0 };
	const char	*v[3];
	size_t		 i;
	int		 rc = 0, neg = 0;

	if (n == 0)
		return 0;
	for (i = 0; i < n; i++) {
		pg_args_array_str(&s, r[i].service);
		pg_args_array_int(&l, r[i].label_id);
		pg_args_array_int(&k, r[i].n);
		neg |= r[i].n < 0;
	}
	v[0] = pg_args_array_text(&s);
	v[1] = pg_args_array_text(&l);
	v[2] = pg_args_array_text(&k);
	rc = pg_conn_exec(c, "INSERT INTO service_labels (service, label_id, "
	    "refs) SELECT * FROM unnest($1::text[], $2::bigint[], "
	    "$3::bigint[]) ON CONFLICT (service, label_id) DO UPDATE "
	    "SET refs = service_labels.refs + excluded.refs", 3, v, NULL,
	    NULL, NULL, cause, "count service labels");
	if (rc == 0 && neg)
		rc = pg_conn_exec(c, "DELETE FROM service_labels "
		    "WHERE refs <= 0 AND (service, label_id) IN (SELECT * FROM "
		    "unnest($1::text[], $2::bigint[]))", 2, v, NULL, NULL, NULL,
		    cause, "drop service labels");
	pg_args_array_free(&s);
	pg_args_array_free(&l);
	pg_args_array_free(&k);
	return rc;
}

/* Adds to the one row of profd_totals. */
static int
pg_write_totals(PGconn *c, int64_t profiles, int64_t bytes, char **cause)
{
	char		 a[24], b[24];
	const char	*v[2] = { pg_conn_i64(a, profiles),
	    pg_conn_i64(b, bytes) };

	return pg_conn_exec(c, "UPDATE profd_totals SET profiles = profiles + "
	    "$1::bigint, bytes = bytes + $2::bigint", 2, v, NULL, NULL, NULL,
	    cause, "count totals");
}

/*
 * The distinct label pairs of a batch, sorted, with their ids (inserted
 * when new). *out: OUT (free).
 */
static int
pg_write_labels(PGconn *c, struct pg_put *const *v, size_t n,
    struct pg_write_label **out, size_t *nout, char **cause)
{
	struct pg_write_label	*l = NULL, key;
	struct pg_args_array		 ka = { 0 }, va = { 0 };
	PGresult		*r = NULL;
	const char		*p[2];
	size_t			 nl = 0, cap = 0, i, j, k;
	int			 rc;

	for (i = 0; i < n; i++)
		for (j = 0; j < v[i]->m->nlabels; j++) {
			if (nl == cap) {
				cap = cap ? cap * 2 : 64;
				l = xreallocarray(l, cap, sizeof *l);
			}
			l[nl].key = v[i]->m->labels[j].key;
			l[nl].value = v[i]->m->labels[j].value;
			l[nl++].id = 0;
		}
	*out = l;
	*nout = 0;
	if (nl == 0)
		return 0;
	qsort(l, nl, sizeof *l, pg_write_label_cmp);
	for (i = 1, k = 0; i < nl; i++)
		if (pg_write_label_cmp(&l[k], &l[i]) != 0)
			l[++k] = l[i];
	nl = k + 1;
	*nout = nl;
	for (i = 0; i < nl; i++) {
		pg_args_array_str(&ka, l[i].key);
		pg_args_array_str(&va, l[i].value);
	}
	p[0] = pg_args_array_text(&ka);
	p[1] = pg_args_array_text(&va);
	rc = pg_conn_exec(c, "INSERT INTO labels (key, value) SELECT * FROM "
	    "unnest($1::text[], $2::text[]) ON CONFLICT DO NOTHING", 2, p,
	    NULL, NULL, NULL, cause, "insert labels");
	if (rc == 0)
		rc = pg_conn_exec(c, "SELECT l.label_id, l.key, l.value FROM "
		    "labels AS l JOIN unnest($1::text[], $2::text[]) "
		    "AS t(k, v) ON l.key = t.k AND l.value = t.v", 2, p, NULL,
		    NULL, &r, cause, "find labels");
	pg_args_array_free(&ka);
	pg_args_array_free(&va);
	if (rc != 0)
		return rc;
	for (i = 0; i < (size_t)PQntuples(r); i++) {
		struct pg_write_label	*hit;

		key.key = PQgetvalue(r, (int)i, 1);
		key.value = PQgetvalue(r, (int)i, 2);
		hit = bsearch(&key, l, nl, sizeof *l, pg_write_label_cmp);
		if (hit != NULL)
			hit->id = pg_conn_int(r, (int)i, 0);
	}
	PQclear(r);
	for (i = 0; i < nl; i++)
		if (l[i].id == 0)
			return xcause(cause, "label %s=%s has no id", l[i].key,
			    l[i].value);
	return 0;
}

/* Inserts the batch's profile rows; sets pks[i] (0: the id existed). */
static int
pg_write_profiles(PGconn *c, struct pg_put *const *v, size_t n, int64_t *pks,
    char **cause)
{
	struct pg_args_array	 a[9];
	const char	*p[9];
	PGresult	*r = NULL;
	size_t		 i, j;
	int		 rc;

	memset(a, 0, sizeof a);
	for (i = 0; i < n; i++) {
		const struct profile_meta *m = v[i]->m;

		pg_args_array_str(&a[0], m->id);
		pg_args_array_str(&a[1], m->service);
		pg_args_array_str(&a[2], m->type);
		pg_args_array_int(&a[3], m->created_at);
		pg_args_array_int(&a[4], (int64_t)v[i]->len);
		pg_args_array_int(&a[5], m->samples);
		pg_args_array_str(&a[6], m->sample_types ? m->sample_types :
		    "");
		pg_args_array_int(&a[7], m->duration_ns);
		pg_args_array_str(&a[8], m->totals);
		pks[i] = 0;
	}
	for (i = 0; i < 9; i++)
		p[i] = pg_args_array_text(&a[i]);
	rc = pg_conn_exec(c, "INSERT INTO profiles (id, service, type, "
	    "created_at, size, samples, sample_types, duration_ns, totals) "
	    "SELECT * FROM unnest($1::text[], $2::text[], $3::text[], "
	    "$4::bigint[], $5::bigint[], $6::bigint[], $7::text[], "
	    "$8::bigint[], $9::text[]) ON CONFLICT (id) DO NOTHING "
	    "RETURNING pk, id", 9, p, NULL, NULL, &r, cause,
	    "insert profiles");
	for (i = 0; i < 9; i++)
		pg_args_array_free(&a[i]);
	if (rc != 0)
		return rc;
	for (j = 0; j < (size_t)PQntuples(r); j++)
		for (i = 0; i < n; i++)
			if (pks[i] == 0 && strcmp(v[i]->m->id,
			    PQgetvalue(r, (int)j, 1)) == 0) {
				pks[i] = pg_conn_int(r, (int)j, 0);
				break;
			}
	PQclear(r);
	return 0;
}

/* Inserts profile_labels and counts service_labels of the batch. */
static int
pg_write_profile_labels(PGconn *c, struct pg_put *const *v, size_t n,
    const int64_t *pks, const struct pg_write_label *l, size_t nl,
    char **cause)
{
	struct pg_args_array		 a[4];
	struct pg_write_ref	*refs;
	struct pg_write_label	 key, *hit;
	const char		*p[4];
	size_t			 i, j, nrefs = 0, total = 0;
	int			 rc;

	if (nl == 0)
		return 0;
	memset(a, 0, sizeof a);
	for (i = 0; i < n; i++)
		total += v[i]->m->nlabels;
	refs = xcalloc(total ? total : 1, sizeof *refs);
	for (i = 0; i < n; i++) {
		if (pks[i] == 0)
			continue;
		for (j = 0; j < v[i]->m->nlabels; j++) {
			key.key = v[i]->m->labels[j].key;
			key.value = v[i]->m->labels[j].value;
			if (j > 0 && strcmp(key.key, v[i]->m->labels[j -
			    1].key) == 0 && strcmp(key.value,
			    v[i]->m->labels[j - 1].value) == 0)
				continue;	/* a pair given twice */
			hit = bsearch(&key, l, nl, sizeof *l,
			    pg_write_label_cmp);
			pg_args_array_int(&a[0], hit->id);
			pg_args_array_int(&a[1], pks[i]);
			pg_args_array_str(&a[2], v[i]->m->service);
			pg_args_array_int(&a[3], v[i]->m->created_at);
			refs[nrefs].service = v[i]->m->service;
			refs[nrefs].label_id = hit->id;
			refs[nrefs++].n = 1;
		}
	}
	for (i = 0; i < 4; i++)
		p[i] = pg_args_array_text(&a[i]);
	rc = pg_conn_exec(c, "INSERT INTO profile_labels (label_id, "
	    "profile_pk, service, created_at) SELECT * FROM "
	    "unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[]) "
	    "ON CONFLICT DO NOTHING", 4, p, NULL, NULL, NULL, cause,
	    "insert profile labels");
	for (i = 0; i < 4; i++)
		pg_args_array_free(&a[i]);
	if (rc == 0)
		rc = pg_write_refs_apply(c, refs, pg_write_refs_merge(refs,
		    nrefs), cause);
	free(refs);
	return rc;
}

/*
 * Writes a batch in one transaction; sets each put's rc on success.
 * *began: OUT whether the server took the BEGIN (before it, a failure
 * cannot have committed anything).
 */
static int
pg_write_batch(PGconn *c, struct pg_put *const *v, size_t n, int *began,
    char **cause)
{
	struct pg_write_label	*l = NULL;
	const struct pg_put	**ok;
	int64_t			*pks, bytes = 0, rows = 0;
	size_t			 nl = 0, nok = 0, i;
	int			 rc;

	pks = xcalloc(n, sizeof *pks);
	ok = xcalloc(n, sizeof *ok);
	*began = 0;
	if ((rc = pg_conn_cmd(c, "BEGIN", cause, "begin")) != 0)
		goto out;
	*began = 1;
	if ((rc = pg_write_labels(c, v, n, &l, &nl, cause)) != 0 ||
	    (rc = pg_write_profiles(c, v, n, pks, cause)) != 0 ||
	    (rc = pg_write_profile_labels(c, v, n, pks, l, nl, cause)) != 0)
		goto rollback;
	for (i = 0; i < n; i++)
		if (pks[i] != 0) {
			ok[nok++] = v[i];
			rows++;
			bytes += (int64_t)v[i]->len;
		}
	if ((rc = pg_blob_table.put(c, ok, nok, cause)) != 0 ||
	    (rc = pg_write_totals(c, rows, bytes, cause)) != 0)
		goto rollback;
	if ((rc = pg_conn_cmd(c, "COMMIT", cause, "commit")) != 0)
		goto out;
	for (i = 0; i < n; i++) {
		v[i]->rc = pks[i] != 0 ? 0 : -1;
		if (pks[i] == 0)
			v[i]->cause = xasprintf("profile %s exists",
			    v[i]->m->id);
	}
	goto out;
rollback:
	(void)pg_conn_cmd(c, "ROLLBACK", NULL, NULL);
out:
	free(l);
	free(pks);
	free(ok);
	return rc;
}

/*
 * Commits a batch: retried after deadlocks, and once on a new connection
 * when a pooled one turns out dead at BEGIN (the server restarted since);
 * row by row after a refusal of its data. Sets every put's rc and cause.
 */
static void
pg_write_commit(struct pg *pg, struct pg_put **v, size_t n)
{
	PGconn	*c = NULL;
	char	*why = NULL;
	size_t	 i;
	int	 rc, attempt, began, stale = 0;

	for (attempt = 0; attempt < PG_WRITE_RETRIES; attempt++) {
		free(why);
		why = NULL;
		if ((rc = pg_pool_get(pg->pool, &c, &why)) != 0)
			break;
		rc = pg_write_batch(c, v, n, &began, &why);
		pg_pool_put(pg->pool, c);
		if (rc == STORE_UNAVAILABLE && !began && !stale++)
			continue;
		if (rc != PG_RETRY)
			break;
	}
	if (rc == -1 && n > 1) {
		/* Find the bad rows: each alone. */
		for (i = 0; i < n; i++)
			pg_write_commit(pg, &v[i], 1);
		free(why);
		return;
	}
	if (rc != 0)
		for (i = 0; i < n; i++) {
			v[i]->rc = rc == PG_RETRY ? -1 : rc;
			v[i]->cause = xstrdup(why ? why : "write failed");
		}
	free(why);
}

/* Queues a put for the group commit and waits until it is committed. */
int
pg_write_put(struct pg *pg, const struct profile_meta *m, const void *blob,
    size_t len, char **cause)
{
	struct pg_put	 req = { .m = m, .blob = blob, .len = len };
	struct pg_put	**v, *p;
	size_t		 n, bytes;

	v = xcalloc(PG_WRITE_BATCH_ROWS, sizeof *v);
	pthread_mutex_lock(&pg->mu);
	*pg->tail = &req;
	pg->tail = &req.next;
	while (!req.done) {
		if (pg->leader) {
			pthread_cond_wait(&pg->cv, &pg->mu);
			continue;
		}
		pg->leader = 1;
		n = 0;
		bytes = 0;
		while ((p = pg->queue) != NULL && n < PG_WRITE_BATCH_ROWS &&
		    (n == 0 || bytes + p->len <= PG_WRITE_BATCH_BYTES)) {
			v[n++] = p;
			bytes += p->len;
			if ((pg->queue = p->next) == NULL)
				pg->tail = &pg->queue;
			p->next = NULL;
		}
		pthread_mutex_unlock(&pg->mu);

		pg_write_commit(pg, v, n);

		pthread_mutex_lock(&pg->mu);
		while (n > 0)
			v[--n]->done = 1;	/* may be freed after */
		pg->leader = 0;
		pthread_cond_broadcast(&pg->cv);
	}
	pthread_mutex_unlock(&pg->mu);
	free(v);
	if (req.rc != 0) {
		if (cause != NULL)
			*cause = req.cause;
		else
			free(req.cause);
		return req.rc;
	}
	return 0;
}

/* The retention batch: rows, inside the transaction holding the lock. */
static int
pg_write_expire(PGconn *c, int64_t cutoff, size_t batch, size_t *deleted,
    char **cause)
{
	struct pg_args_array		 pks = { 0 }, ids = { 0 };
	struct pg_write_ref	*refs = NULL;
	PGresult		*r = NULL, *lr = NULL;
	char			 a[24], b[24];
	const char		*p[2] = { pg_conn_i64(a, cutoff),
	    pg_conn_i64(b, (int64_t)batch) };
	int64_t			 bytes = 0;
	size_t			 n, i;
	int			 rc;

	rc = pg_conn_exec(c, "SELECT pk, id, size FROM profiles WHERE "
	    "created_at < $1::bigint ORDER BY created_at LIMIT $2::bigint "
	    "FOR UPDATE", 2, p, NULL, NULL, &r, cause, "find expired");
	if (rc != 0)
		return rc;
	n = (size_t)PQntuples(r);
	for (i = 0; i < n; i++) {
		pg_args_array_int(&pks, pg_conn_int(r, (int)i, 0));
		pg_args_array_str(&ids, PQgetvalue(r, (int)i, 1));
		bytes += pg_conn_int(r, (int)i, 2);
	}
	PQclear(r);
	if (n == 0)
		goto out;
	p[0] = pg_args_array_text(&pks);
	rc = pg_conn_exec(c, "DELETE FROM profile_labels WHERE profile_pk = "
	    "ANY($1::bigint[]) RETURNING service, label_id", 1, p, NULL, NULL,
	    &lr, cause, "delete profile labels");
	if (rc != 0)
		goto out;
	refs = xcalloc((size_t)PQntuples(lr) + 1, sizeof *refs);
	for (i = 0; i < (size_t)PQntuples(lr); i++) {
		refs[i].service = PQgetvalue(lr, (int)i, 0);
		refs[i].label_id = pg_conn_int(lr, (int)i, 1);
		refs[i].n = -1;
	}
	if ((rc = pg_write_refs_apply(c, refs, pg_write_refs_merge(refs,
	    (size_t)PQntuples(lr)), cause)) != 0)
		goto out;
	if ((rc = pg_conn_exec(c, "DELETE FROM profiles WHERE pk = "
	    "ANY($1::bigint[])", 1, p, NULL, NULL, NULL, cause,
	    "delete profiles")) != 0 ||
	    (rc = pg_blob_table.remove(c, pg_args_array_text(&ids),
	    cause)) != 0 ||
	    (rc = pg_write_totals(c, -(int64_t)n, -bytes, cause)) != 0)
		goto out;
	*deleted = n;
out:
	free(refs);
	PQclear(lr);
	pg_args_array_free(&pks);
	pg_args_array_free(&ids);
	return rc;
}

/* One retention batch, by the collector holding the retention lock. */
static int
pg_write_delete_once(PGconn *c, int64_t cutoff, size_t batch,
    size_t *deleted, char **cause)
{
	int		 rc, locked;

	*deleted = 0;
	if ((rc = pg_conn_begin_try_lock(c, PG_LOCK_RETENTION, &locked, cause,
	    "lock retention")) != 0)
		return rc;
	if (!locked)
		goto rollback;	/* another collector sweeps */
	if ((rc = pg_write_expire(c, cutoff, batch, deleted, cause)) != 0)
		goto rollback;
	if ((rc = pg_conn_cmd(c, "COMMIT", cause, "commit")) != 0)
		*deleted = 0;
	return rc;
rollback:
	*deleted = 0;
	(void)pg_conn_cmd(c, "ROLLBACK", NULL, NULL);
	return rc;
}

/* Deletes up to batch profiles created before cutoff. */
int
pg_write_delete_before(struct pg *pg, int64_t cutoff, size_t batch,
    size_t *deleted, char **cause)
{
	PGconn	*c;
	int	 rc = 0, attempt;

	*deleted = 0;
	for (attempt = 0; attempt < PG_WRITE_RETRIES; attempt++) {
		if (attempt > 0 && cause != NULL) {
			free(*cause);
			*cause = NULL;
		}
		if ((rc = pg_pool_get(pg->pool, &c, cause)) != 0)
			return rc;
		rc = pg_write_delete_once(c, cutoff, batch, deleted, cause);
		pg_pool_put(pg->pool, c);
		if (rc != PG_RETRY)
			break;
	}
	return rc == PG_RETRY ? -1 : rc;
}

/* Records computed totals of rows that had none, in one transaction. */
int
pg_write_set_totals(struct pg *pg, char *const *ids, char *const *totals,
    size_t n, char **cause)
{
	struct pg_args_array	 ia = { 0 }, ta = { 0 };
	const char	*p[2];
	PGconn		*c;
	size_t		 i;
	int		 rc;

	if (n == 0)
		return 0;
	for (i = 0; i < n; i++) {
		pg_args_array_str(&ia, ids[i]);
		pg_args_array_str(&ta, totals[i]);
	}
	p[0] = pg_args_array_text(&ia);
	p[1] = pg_args_array_text(&ta);
	if ((rc = pg_pool_get(pg->pool, &c, cause)) == 0) {
		rc = pg_conn_exec(c, "UPDATE profiles AS p SET totals = t.v "
		    "FROM unnest($1::text[], $2::text[]) AS t(id, v) "
		    "WHERE p.id = t.id AND p.totals IS NULL", 2, p, NULL, NULL,
		    NULL, cause, "set totals");
		pg_pool_put(pg->pool, c);
	}
	pg_args_array_free(&ia);
	pg_args_array_free(&ta);
	return rc == PG_RETRY ? -1 : rc;
}
