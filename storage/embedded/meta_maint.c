/*
 * Maintenance writes of the SQLite metadata, outside the group commit:
 * each takes the writer for one transaction of its own.
 *  - Retention: deletes the oldest rows in batches, with their labels,
 *    their counts in service_labels and their sums in the timeline.
 *  - Totals backfill: rows stored before profiles carried totals (or
 *    rebuilt from blobs) get them once computed from their blobs, and
 *    their sums are added to the timeline then.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/xmalloc.h"
#include "storage/embedded/meta_sqlite_int.h"
#include "storage/embedded/meta_timeline.h"
#include "storage/store_free.h"

/* Pages returned to the file system after each retention batch. */
#define META_VACUUM_PAGES	"4096"

/* One row chosen for deletion. */
struct meta_expired {
	int64_t	 pk;
	int64_t	 size;
	int64_t	 created_at;
	char	*id;
	char	*service;
	char	*type;
	char	*sample_types;
	char	*totals;	/* NULL: none */
};

/* Copies a text column (NULL stays NULL). */
static char *
meta_maint_column(sqlite3_stmt *s, int col)
{
	const char	*v = (const char *)sqlite3_column_text(s, col);

	return v != NULL ? xstrdup(v) : NULL;
}

/* Deletes one profile's labels and row inside the open transaction. */
static int
meta_maint_delete_row(struct meta_conn *w, const struct meta_expired *e,
    char **cause)
{
	struct meta_timeline_row	 tr = { 0 };
	sqlite3_stmt			*s, *sub, *gc;
	int64_t				*ids = NULL;
	size_t				 n = 0, i;
	int				 rc, ret = -1;

	if ((s = meta_conn_stmt(w, META_STMT_LABELS_OF, cause)) == NULL)
		return -1;
	sqlite3_bind_int64(s, 1, e->pk);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		ids = xreallocarray(ids, n + 1, sizeof *ids);
		ids[n++] = sqlite3_column_int64(s, 0);
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE) {
		meta_conn_error(w->db, cause, "read labels");
		goto out;
	}
	for (i = 0; i < n; i++) {
		if ((sub = meta_conn_stmt(w, META_STMT_SERVICE_LABEL_SUB,
		    cause)) == NULL)
			goto out;
		meta_conn_bind_text(sub, 1, e->service);
		sqlite3_bind_int64(sub, 2, ids[i]);
		if (meta_conn_step_done(w, sub, cause, "count service label") == -1)
			goto out;
		if ((gc = meta_conn_stmt(w, META_STMT_SERVICE_LABEL_GC,
		    cause)) == NULL)
			goto out;
		meta_conn_bind_text(gc, 1, e->service);
		sqlite3_bind_int64(gc, 2, ids[i]);
		if (meta_conn_step_done(w, gc, cause, "drop service label") == -1)
			goto out;
	}
	tr.service = e->service;
	tr.type = e->type;
	tr.created_at = e->created_at;
	tr.sample_types = e->sample_types;
	tr.totals = e->totals;
	tr.label_ids = ids;
	tr.nlabels = n;
	if (meta_timeline_apply(w, &tr, -1, cause) == -1)
		goto out;
	if ((s = meta_conn_stmt(w, META_STMT_DELETE_PROFILE_LABELS,
	    cause)) == NULL)
		goto out;
	sqlite3_bind_int64(s, 1, e->pk);
	if (meta_conn_step_done(w, s, cause, "delete profile labels") == -1)
		goto out;
	if ((s = meta_conn_stmt(w, META_STMT_DELETE_PROFILE, cause)) == NULL)
		goto out;
	sqlite3_bind_int64(s, 1, e->pk);
	if (meta_conn_step_done(w, s, cause, "delete profile") == -1)
		goto out;
	ret = 0;
out:
	free(ids);
	return ret;
}

/* Retention: deletes up to batch expired rows in one transaction. */
int
meta_maint_delete_before(struct meta_sqlite *ms, int64_t cutoff,
    size_t batch, char ***ids, size_t *n, char **cause)
{
	struct meta_conn	*w = ms->writer;
	struct meta_expired	*rows = NULL;
	sqlite3_stmt		*s;
	size_t			 nrows = 0, i;
	int64_t			 bytes = 0;
	int			 rc, ret = -1;
	char			*why = NULL;

	*ids = NULL;
	*n = 0;
	meta_sqlite_writer_acquire(ms);

	if (meta_conn_exec(w->db, "BEGIN IMMEDIATE", cause, "delete: begin") == -1)
		goto out;
	if ((s = meta_conn_stmt(w, META_STMT_EXPIRED, cause)) == NULL)
		goto rollback;
	sqlite3_bind_int64(s, 1, cutoff);
	sqlite3_bind_int64(s, 2, batch == 0 ? -1 : (sqlite3_int64)batch);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct meta_expired *e;

		rows = xreallocarray(rows, nrows + 1, sizeof *rows);
		e = &rows[nrows++];
		e->pk = sqlite3_column_int64(s, 0);
		e->id = xstrdup((const char *)sqlite3_column_text(s, 1));
		e->size = sqlite3_column_int64(s, 2);
		e->service = meta_maint_column(s, 3);
		e->type = meta_maint_column(s, 4);
		e->created_at = sqlite3_column_int64(s, 5);
		e->sample_types = meta_maint_column(s, 6);
		e->totals = meta_maint_column(s, 7);
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE) {
		meta_conn_error(w->db, cause, "delete: find expired rows");
		goto rollback;
	}
	for (i = 0; i < nrows; i++) {
		if (meta_maint_delete_row(w, &rows[i], &why) == -1) {
			xcause(cause, "delete %s: %s", rows[i].id, why);
			goto rollback;
		}
		bytes += rows[i].size;
	}
	if (meta_conn_exec(w->db, "COMMIT", cause, "delete: commit") == -1)
		goto rollback;
	if (nrows > 0 && meta_conn_exec(w->db, "PRAGMA incremental_vacuum("
	    META_VACUUM_PAGES ")", &why, "incremental vacuum") == -1) {
		log_warn("%s: %s", __func__, why);
		free(why);
		why = NULL;
	}
	*ids = xreallocarray(NULL, nrows, sizeof **ids);
	for (i = 0; i < nrows; i++) {
		(*ids)[i] = rows[i].id;
		rows[i].id = NULL;
	}
	*n = nrows;
	ret = 0;
	goto out;

rollback:
	sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
out:
	pthread_mutex_lock(&ms->mu);
	if (ret == 0 && ms->totals_known) {
		ms->total_profiles -= (int64_t)nrows;
		ms->total_bytes -= bytes;
	}
	pthread_mutex_unlock(&ms->mu);
	meta_sqlite_writer_release(ms);
	for (i = 0; i < nrows; i++) {
		free(rows[i].id);
		free(rows[i].service);
		free(rows[i].type);
		free(rows[i].sample_types);
		free(rows[i].totals);
	}
	free(rows);
	free(why);
	return ret;
}


/* Up to limit ids of rows without totals after `after`, sorted. */
int
meta_maint_missing_totals(struct meta_sqlite *ms, const char *after,
    size_t limit, char ***out, size_t *n, char **cause)
{
	struct meta_conn	*c;
	sqlite3_stmt		*s;
	char			**v = NULL;
	size_t			  nv = 0;
	int			  rc, ret = -1;

	*out = NULL;
	*n = 0;
	if ((c = meta_conn_get(&ms->pool, cause)) == NULL)
		return -1;
	if ((s = meta_conn_stmt(c, META_STMT_TOTALS_MISSING, cause)) == NULL)
		goto out;
	meta_conn_bind_text(s, 1, after);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)limit);
	v = xreallocarray(NULL, limit + 1, sizeof *v);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW && nv < limit)
		v[nv++] = xstrdup((const char *)sqlite3_column_text(s, 0));
	sqlite3_reset(s);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		meta_conn_error(c->db, cause, "find rows without totals");
		store_free_strings(v, nv);
		goto out;
	}
	if (nv == 0) {
		free(v);
		v = NULL;
	}
	*out = v;
	*n = nv;
	ret = 0;
out:
	meta_conn_put(&ms->pool, c);
	return ret;
}

/* Sets one row's totals if it has none, and adds them to the timeline. */
static int
meta_maint_set_row(struct meta_conn *w, const char *id, const char *totals,
    char **cause)
{
	struct meta_timeline_row	 tr = { 0 };
	sqlite3_stmt			*s, *l;
	int64_t				*ids = NULL;
	char				*service = NULL, *type = NULL;
	char				*types = NULL;
	size_t				 n = 0;
	int				 rc, ret = -1;

	if ((s = meta_conn_stmt(w, META_STMT_TOTALS_SET, cause)) == NULL)
		return -1;
	meta_conn_bind_text(s, 1, id);
	meta_conn_bind_text(s, 2, totals);
	if ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		tr.created_at = sqlite3_column_int64(s, 3);
		service = meta_maint_column(s, 1);
		type = meta_maint_column(s, 2);
		types = meta_maint_column(s, 4);
		if ((l = meta_conn_stmt(w, META_STMT_LABELS_OF, cause)) == NULL)
			goto out;
		sqlite3_bind_int64(l, 1, sqlite3_column_int64(s, 0));
		while ((rc = sqlite3_step(l)) == SQLITE_ROW) {
			ids = xreallocarray(ids, n + 1, sizeof *ids);
			ids[n++] = sqlite3_column_int64(l, 0);
		}
		sqlite3_reset(l);
		if (rc != SQLITE_DONE) {
			meta_conn_error(w->db, cause, "read labels");
			goto out;
		}
		/* RETURNING rows are all out: finish the statement. */
		if ((rc = sqlite3_step(s)) != SQLITE_DONE) {
			meta_conn_error(w->db, cause, "set totals");
			goto out;
		}
		tr.service = service;
		tr.type = type;
		tr.sample_types = types;
		tr.totals = totals;
		tr.label_ids = ids;
		tr.nlabels = n;
		ret = meta_timeline_apply(w, &tr, 1, cause);
	} else if (rc == SQLITE_DONE)
		ret = 0;	/* gone, or done already */
	else
		meta_conn_error(w->db, cause, "set totals");
out:
	sqlite3_reset(s);
	free(ids);
	free(service);
	free(type);
	free(types);
	return ret;
}

/* Records the totals of n rows that have none, in one transaction. */
int
meta_maint_set_totals(struct meta_sqlite *ms, char *const *ids,
    char *const *totals, size_t n, char **cause)
{
	struct meta_conn	*w = ms->writer;
	size_t			 i;
	int			 ret = -1;

	meta_sqlite_writer_acquire(ms);
	if (meta_conn_exec(w->db, "BEGIN IMMEDIATE", cause,
	    "set totals: begin") == -1)
		goto out;
	for (i = 0; i < n; i++)
		if (meta_maint_set_row(w, ids[i], totals[i], cause) == -1)
			goto rollback;
	if (meta_conn_exec(w->db, "COMMIT", cause, "set totals: commit") == 0) {
		ret = 0;
		goto out;
	}
rollback:
	sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
out:
	meta_sqlite_writer_release(ms);
	return ret;
}
