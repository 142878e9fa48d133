/*
 * Profile metadata in SQLite: the schema and its migration, the writer,
 * group-committed inserts and the totals for /metrics.
 *
 * Connections (meta_conn.c). Reads use a pool of connections, each used
 * by one thread at a time (SQLITE_OPEN_NOMUTEX), each with its own cache
 * of prepared statements; the pool grows to the number of threads
 * reading at once. All writes go through one writer connection.
 *
 * Group commit. With synchronous=FULL in WAL mode every commit costs an
 * fsync of the WAL, so committing each put alone caps throughput at one
 * fsync per row. Instead a put enqueues its row and waits; whichever
 * waiting thread finds the writer free becomes the leader, takes every row
 * queued so far, writes them in one transaction (one savepoint per row, so
 * a bad row fails alone), commits once, and wakes the others. While it
 * commits, new rows queue up for the next leader. Retention deletes and
 * the totals backfill (meta_maint.c) take the writer the same way. Each
 * inserted row's totals go into the timeline's per-minute sums in the
 * same transaction (meta_timeline.c).
 *
 * Labels. labels(key, value) holds each distinct pair once and
 * profile_labels(label_id, profile_pk) the pairs of each profile, so a
 * label query is an exact lookup whatever the arrival order.
 * service_labels(service, label_id, refs) counts the profiles of a service
 * carrying a pair, so the label listings are small index walks; it is kept
 * current by inserts and retention deletes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/xmalloc.h"
#include "storage/embedded/meta_sqlite_int.h"
#include "storage/embedded/meta_rollup.h"
#include "storage/embedded/meta_timeline.h"

#define META_WRITER_CACHE_KIB	"65536"
#define META_SCHEMA_VERSION	3

/* One row waiting for the group commit. */
struct meta_put {
	const struct profile_meta	*m;
	int				(*check)(void *, char **);
	void				*check_arg;
	int				 done;
	int				 rc;
	char				*cause;
	struct meta_put			*next;
};

static const char meta_schema[] =
	"CREATE TABLE IF NOT EXISTS profiles ("
	" pk INTEGER PRIMARY KEY,"
	" id TEXT NOT NULL UNIQUE,"
	" service TEXT NOT NULL,"
	" type TEXT NOT NULL,"
	" created_at INTEGER NOT NULL,"
	" size INTEGER NOT NULL,"
	" samples INTEGER NOT NULL DEFAULT 0,"
	" sample_types TEXT NOT NULL DEFAULT '',"
	" duration_ns INTEGER NOT NULL DEFAULT 0,"
	" totals TEXT,"		/* NULL: not known yet (backfill) */
	/* -1: in no rollup yet, 1: in its buckets' rollups, 0: late, and
	   2: never (traces); see meta_rollup.c */
	" rolled INTEGER NOT NULL DEFAULT -1);"
	/* service [+ type] + time range, newest first: a reverse walk. */
	"CREATE INDEX IF NOT EXISTS profiles_service_type_time"
	" ON profiles (service, type, created_at, id);"
	"CREATE INDEX IF NOT EXISTS profiles_service_time"
	" ON profiles (service, created_at, id);"
	/* retention: oldest first */
	"CREATE INDEX IF NOT EXISTS profiles_time ON profiles (created_at);"
	"CREATE TABLE IF NOT EXISTS labels ("
	" label_id INTEGER PRIMARY KEY,"
	" key TEXT NOT NULL,"
	" value TEXT NOT NULL,"
	" UNIQUE (key, value));"
	/*
	 * service and created_at are copies from the profile row, so that
	 * "label + service + time range, newest first" is one index walk.
	 */
	"CREATE TABLE IF NOT EXISTS profile_labels ("
	" label_id INTEGER NOT NULL,"
	" profile_pk INTEGER NOT NULL,"
	" service TEXT NOT NULL,"
	" created_at INTEGER NOT NULL,"
	" PRIMARY KEY (label_id, profile_pk)) WITHOUT ROWID;"
	"CREATE INDEX IF NOT EXISTS profile_labels_profile"
	" ON profile_labels (profile_pk);"
	"CREATE INDEX IF NOT EXISTS profile_labels_label_time"
	" ON profile_labels (label_id, service, created_at);"
	"CREATE TABLE IF NOT EXISTS service_labels ("
	" service TEXT NOT NULL,"
	" label_id INTEGER NOT NULL,"
	" refs INTEGER NOT NULL,"
	" PRIMARY KEY (service, label_id)) WITHOUT ROWID;"
	"CREATE INDEX IF NOT EXISTS service_labels_label"
	" ON service_labels (label_id);"
	/* Rows the backfill still has to read (none, once it is done). */
	"CREATE INDEX IF NOT EXISTS profiles_no_totals"
	" ON profiles (id) WHERE totals IS NULL;"
	/* Per-minute sums of each sample type (meta_timeline.c). */
	"CREATE TABLE IF NOT EXISTS timeline ("
	" service TEXT NOT NULL,"
	" label_id INTEGER NOT NULL,"	/* 0: every profile */
	" sample_type TEXT NOT NULL,"	/* "cpu/nanoseconds" */
	" type TEXT NOT NULL,"
	" minute INTEGER NOT NULL,"	/* created_at / 60 s, rounded down */
	" value INTEGER NOT NULL,"
	" profiles INTEGER NOT NULL,"
	" PRIMARY KEY (service, label_id, sample_type, type, minute))"
	" WITHOUT ROWID;"
	META_ROLLUP_SCHEMA;

/* Creates the schema on a new database; checks the version of an old one. */
static int
meta_sqlite_schema_init(struct meta_conn *w, char **cause)
{
	sqlite3_stmt	*s = NULL;
	int		 version = 0;
	char		 sql[64];

	if (sqlite3_prepare_v2(w->db, "PRAGMA user_version", -1, &s,
	    NULL) != SQLITE_OK)
		return meta_conn_error(w->db, cause, "read schema version");
	if (sqlite3_step(s) == SQLITE_ROW)
		version = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	if (version > META_SCHEMA_VERSION)
		return xcause(cause, "schema version %d is newer than this "
		    "profd (%d)", version, META_SCHEMA_VERSION);
	/* auto_vacuum only takes effect before the first table exists. */
	if (version == 0 && meta_conn_exec(w->db, "PRAGMA auto_vacuum = "
	    "INCREMENTAL", cause, "set auto_vacuum") == -1)
		return -1;
	if (meta_conn_exec(w->db, "PRAGMA journal_mode = WAL", cause,
	    "set journal_mode") == -1)
		return -1;
	if (meta_conn_exec(w->db, "BEGIN IMMEDIATE", cause, "create schema") == -1)
		return -1;
	snprintf(sql, sizeof sql, "PRAGMA user_version = %d",
	    META_SCHEMA_VERSION);
	/* Version 2 added profiles.totals and the timeline, 3 rollups. */
	if ((version == 1 && meta_conn_exec(w->db, "ALTER TABLE profiles "
	    "ADD COLUMN totals TEXT", cause, "migrate schema") == -1) ||
	    ((version == 1 || version == 2) && meta_conn_exec(w->db,
	    "ALTER TABLE profiles ADD COLUMN rolled INTEGER NOT NULL "
	    "DEFAULT -1", cause, "migrate schema") == -1) ||
	    meta_conn_exec(w->db, meta_schema, cause, "create schema") == -1 ||
	    meta_conn_exec(w->db, sql, cause, "create schema") == -1 ||
	    meta_conn_exec(w->db, "COMMIT", cause, "create schema") == -1) {
		sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	return 0;
}

/* Opens the database and the writer connection; readers come on demand. */
struct meta_sqlite *
meta_sqlite_open(const char *path, char **cause)
{
	struct meta_sqlite	*ms;
	struct meta_conn	*w;
	char			 *mode = NULL;
	sqlite3_stmt		*s = NULL;

	if ((w = meta_conn_open(path, cause)) == NULL)
		return NULL;
	/* The writer touches every index on each insert: keep them cached.
	 * After a checkpoint the WAL file is cut back to 64 MiB, so the
	 * space retention frees really returns to the disk. */
	if (meta_conn_exec(w->db, "PRAGMA cache_size = -" META_WRITER_CACHE_KIB,
	    cause, path) == -1 || meta_conn_exec(w->db,
	    "PRAGMA journal_size_limit = 67108864", cause, path) == -1 ||
	    meta_sqlite_schema_init(w, cause) == -1) {
		meta_conn_close(w);
		return NULL;
	}
	if (sqlite3_prepare_v2(w->db, "PRAGMA journal_mode", -1, &s,
	    NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		mode = xstrdup((const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	if (mode == NULL || strcmp(mode, "wal") != 0)
		log_warn("%s: %s: journal_mode is %s, not wal", __func__,
		    path, mode ? mode : "unknown");
	free(mode);

	ms = xcalloc(1, sizeof *ms);
	meta_conn_pool_init(&ms->pool, path);
	ms->writer = w;
	pthread_mutex_init(&ms->mu, NULL);
	pthread_cond_init(&ms->cond, NULL);
	ms->pending_tail = &ms->pending;
	return ms;
}

/* The pool of reader connections. */
struct meta_pool *
meta_sqlite_readers(struct meta_sqlite *ms)
{
	return &ms->pool;
}

/* Closes every connection; no other call may be running. */
void
meta_sqlite_close(struct meta_sqlite *ms)
{
	if (ms == NULL)
		return;
	meta_conn_pool_close(&ms->pool);
	/* Let SQLite refresh its planner statistics, cheaply. */
	sqlite3_exec(ms->writer->db, "PRAGMA optimize", NULL, NULL, NULL);
	meta_conn_close(ms->writer);
	pthread_mutex_destroy(&ms->mu);
	pthread_cond_destroy(&ms->cond);
	free(ms);
}

/* Counts the rows of profiles in the file at path, read-only. */
int
meta_sqlite_count_file(const char *path, int64_t *rows, char **cause)
{
	sqlite3		*db = NULL;
	sqlite3_stmt	*s = NULL;
	int		 rc, ret = -1;

	*rows = 0;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) !=
	    SQLITE_OK) {
		xcause(cause, "open %s: %s", path, db ? sqlite3_errmsg(db) :
		    "out of memory");
		goto out;
	}
	sqlite3_busy_timeout(db, META_BUSY_TIMEOUT_MS);
	rc = sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE "
	    "type = 'table' AND name = 'profiles'", -1, &s, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_DONE) {
		ret = 0;	/* no profiles table: nothing in it */
		goto out;
	}
	sqlite3_finalize(s);
	s = NULL;
	if ((rc != SQLITE_ROW && rc != SQLITE_OK) ||
	    sqlite3_prepare_v2(db, "SELECT count(*) FROM profiles", -1, &s,
	    NULL) != SQLITE_OK || sqlite3_step(s) != SQLITE_ROW) {
		meta_conn_error(db, cause, path);
		goto out;
	}
	*rows = sqlite3_column_int64(s, 0);
	ret = 0;
out:
	sqlite3_finalize(s);
	sqlite3_close(db);
	return ret;
}

/*
 * Label ids seen during one bulk transaction (insert_many), so repeated
 * pairs skip two statements. Only valid until that transaction ends: a
 * rollback would make its ids stale, so it never outlives one.
 */
#define META_LCACHE_SIZE	4096	/* power of two */
struct meta_lcache {
	struct {
		char	*kv;		/* key '\0' value, or NULL */
		size_t	 len;
		int64_t	 id;
	} slot[META_LCACHE_SIZE];
};

/* Hashes (key, value) with FNV-1a into a slot index; sets kv and len. */
static size_t
meta_sqlite_lcache_hash(const struct label *l, char *kv, size_t *len)
{
	size_t		 klen = strlen(l->key), vlen = strlen(l->value), i;
	uint64_t	 h = 1469598103934665603ULL;

	memcpy(kv, l->key, klen + 1);
	memcpy(kv + klen + 1, l->value, vlen);
	*len = klen + 1 + vlen;
	for (i = 0; i < *len; i++)
		h = (h ^ (uint8_t)kv[i]) * 1099511628211ULL;
	return (size_t)h & (META_LCACHE_SIZE - 1);
}

/* Frees the cache's strings and the cache. */
static void
meta_sqlite_lcache_free(struct meta_lcache *lc)
{
	size_t	i;

	if (lc == NULL)
		return;
	for (i = 0; i < META_LCACHE_SIZE; i++)
		free(lc->slot[i].kv);
	free(lc);
}

/* Finds or creates the label (key, value); *id: OUT its label_id. */
static int
meta_sqlite_label_id(struct meta_conn *w, struct meta_lcache *lc,
    const struct label *l, int64_t *id, char **cause)
{
	sqlite3_stmt	*s;
	char		 kv[1024];
	size_t		 h = 0, len = 0;
	int		 rc;

	if (lc != NULL && l->key != NULL && l->value != NULL &&
	    strlen(l->key) + strlen(l->value) + 1 < sizeof kv) {
		h = meta_sqlite_lcache_hash(l, kv, &len);
		if (lc->slot[h].kv != NULL && lc->slot[h].len == len &&
		    memcmp(lc->slot[h].kv, kv, len) == 0) {
			*id = lc->slot[h].id;
			return 0;
		}
	} else
		lc = NULL;

	if ((s = meta_conn_stmt(w, META_STMT_INSERT_LABEL, cause)) == NULL)
		return -1;
	meta_conn_bind_text(s, 1, l->key);
	meta_conn_bind_text(s, 2, l->value);
	if (meta_conn_step_done(w, s, cause, "insert label") == -1)
		return -1;
	if ((s = meta_conn_stmt(w, META_STMT_LABEL_ID, cause)) == NULL)
		return -1;
	meta_conn_bind_text(s, 1, l->key);
	meta_conn_bind_text(s, 2, l->value);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*id = sqlite3_column_int64(s, 0);
	sqlite3_reset(s);
	if (rc != SQLITE_ROW)
		return meta_conn_error(w->db, cause, "find label");
	if (lc != NULL) {
		free(lc->slot[h].kv);
		lc->slot[h].kv = xmalloc(len);
		memcpy(lc->slot[h].kv, kv, len);
		lc->slot[h].len = len;
		lc->slot[h].id = *id;
	}
	return 0;
}

/*
 * Writes one profile row and its labels inside the open transaction; lc
 * (may be NULL) caches label ids for this transaction.
 */
static int
meta_sqlite_write_row(struct meta_conn *w, struct meta_lcache *lc,
    const struct profile_meta *m, char **cause)
{
	struct meta_timeline_row	 r = { 0 };
	sqlite3_stmt			*s;
	int64_t				 pk, label_id = 0, *ids;
	size_t				 i;

	if ((s = meta_conn_stmt(w, META_STMT_INSERT_PROFILE, cause)) == NULL)
		return -1;
	meta_conn_bind_text(s, 1, m->id);
	meta_conn_bind_text(s, 2, m->service);
	meta_conn_bind_text(s, 3, m->type);
	sqlite3_bind_int64(s, 4, m->created_at);
	sqlite3_bind_int64(s, 5, m->size);
	sqlite3_bind_int64(s, 6, m->samples);
	meta_conn_bind_text(s, 7, m->sample_types);
	sqlite3_bind_int64(s, 8, m->duration_ns);
	if (m->totals != NULL)
		sqlite3_bind_text(s, 9, m->totals, -1, SQLITE_STATIC);
	if (meta_conn_step_done(w, s, cause, "insert profile") == -1)
		return -1;
	pk = sqlite3_last_insert_rowid(w->db);
	ids = xreallocarray(NULL, m->nlabels + 1, sizeof *ids);

	for (i = 0; i < m->nlabels; i++) {
		if (meta_sqlite_label_id(w, lc, &m->labels[i], &label_id, cause) == -1)
			goto fail;
		s = meta_conn_stmt(w, META_STMT_INSERT_PROFILE_LABEL, cause);
		if (s == NULL)
			goto fail;
		sqlite3_bind_int64(s, 1, label_id);
		sqlite3_bind_int64(s, 2, pk);
		meta_conn_bind_text(s, 3, m->service);
		sqlite3_bind_int64(s, 4, m->created_at);
		if (meta_conn_step_done(w, s, cause, "insert profile label") == -1)
			goto fail;
		if (sqlite3_changes(w->db) == 0)
			continue;	/* the same pair given twice */
		ids[r.nlabels++] = label_id;
		s = meta_conn_stmt(w, META_STMT_SERVICE_LABEL_ADD, cause);
		if (s == NULL)
			goto fail;
		meta_conn_bind_text(s, 1, m->service);
		sqlite3_bind_int64(s, 2, label_id);
		if (meta_conn_step_done(w, s, cause, "count service label") == -1)
			goto fail;
	}
	r.service = m->service;
	r.type = m->type;
	r.created_at = m->created_at;
	r.sample_types = m->sample_types;
	r.totals = m->totals;
	r.label_ids = ids;
	if (meta_timeline_apply(w, &r, 1, cause) == -1)
		goto fail;
	free(ids);
	return 0;
fail:
	free(ids);
	return -1;
}

/* Waits until this thread holds the writer. Called with mu held. */
static void
meta_sqlite_writer_acquire_locked(struct meta_sqlite *ms)
{
	while (ms->leader)
		pthread_cond_wait(&ms->cond, &ms->mu);
	ms->leader = 1;
}

/* Gives the writer up and wakes every waiter. Called with mu held. */
static void
meta_sqlite_writer_release_locked(struct meta_sqlite *ms)
{
	ms->leader = 0;
	pthread_cond_broadcast(&ms->cond);
}

/* Waits until this thread holds the writer. */
void
meta_sqlite_writer_acquire(struct meta_sqlite *ms)
{
	pthread_mutex_lock(&ms->mu);
	meta_sqlite_writer_acquire_locked(ms);
	pthread_mutex_unlock(&ms->mu);
}

/* Gives the writer up and wakes every waiter. */
void
meta_sqlite_writer_release(struct meta_sqlite *ms)
{
	pthread_mutex_lock(&ms->mu);
	meta_sqlite_writer_release_locked(ms);
	pthread_mutex_unlock(&ms->mu);
}

/*
 * Writes a batch of queued rows in one transaction, a savepoint per row,
 * and commits. Sets rc and cause of each; *bytes: OUT size committed.
 * Called holding the writer, without mu.
 */
static void
meta_sqlite_commit_batch(struct meta_sqlite *ms, struct meta_put *batch,
    int64_t *rows, int64_t *bytes)
{
	struct meta_conn	*w = ms->writer;
	struct meta_put		*p;
	char			*why = NULL;

	*rows = *bytes = 0;
	for (p = batch; p != NULL && p->check == NULL; p = p->next)
		;
	if (p != NULL && ms->barrier != NULL &&
	    ms->barrier(ms->barrier_arg, &why) == -1)
		goto fail_all;
	if (meta_conn_exec(w->db, "BEGIN IMMEDIATE", &why, "begin") == -1)
		goto fail_all;
	for (p = batch; p != NULL; p = p->next) {
		if (p->check != NULL &&
		    p->check(p->check_arg, &p->cause) == -1) {
			p->rc = -1;
			continue;
		}
		if (meta_conn_exec(w->db, "SAVEPOINT row", &p->cause,
		    "savepoint") == -1) {
			p->rc = -1;
			continue;
		}
		if (meta_sqlite_write_row(w, NULL, p->m, &p->cause) == -1) {
			p->rc = -1;
			sqlite3_exec(w->db, "ROLLBACK TO row", NULL, NULL, NULL);
		}
		sqlite3_exec(w->db, "RELEASE row", NULL, NULL, NULL);
	}
	if (meta_conn_exec(w->db, "COMMIT", &why, "commit") == -1) {
		sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
		goto fail_all;
	}
	for (p = batch; p != NULL; p = p->next) {
		if (p->rc == 0) {
			(*rows)++;
			*bytes += p->m->size;
		}
	}
	return;

fail_all:
	for (p = batch; p != NULL; p = p->next) {
		if (p->rc == 0) {
			p->rc = -1;
			p->cause = xstrdup(why);
		}
	}
	free(why);
}

/* Sets the barrier a group commit runs before rows that have a check. */
void
meta_sqlite_set_barrier(struct meta_sqlite *ms, int (*fn)(void *, char **),
    void *arg)
{
	ms->barrier = fn;
	ms->barrier_arg = arg;
}

/* Queues one row for the group commit; waits until it is durable. */
int
meta_sqlite_insert_checked(struct meta_sqlite *ms,
    const struct profile_meta *m, int (*check)(void *, char **),
    void *check_arg, char **cause)
{
	struct meta_put	 req = { .m = m, .check = check,
			    .check_arg = check_arg };
	struct meta_put	*batch;
	int64_t		 rows, bytes;

	pthread_mutex_lock(&ms->mu);
	*ms->pending_tail = &req;
	ms->pending_tail = &req.next;
	while (!req.done) {
		if (ms->leader) {
			pthread_cond_wait(&ms->cond, &ms->mu);
			continue;
		}
		/* Lead: take everything queued, ours included. */
		ms->leader = 1;
		batch = ms->pending;
		ms->pending = NULL;
		ms->pending_tail = &ms->pending;
		pthread_mutex_unlock(&ms->mu);

		meta_sqlite_commit_batch(ms, batch, &rows, &bytes);

		pthread_mutex_lock(&ms->mu);
		if (ms->totals_known) {
			ms->total_profiles += rows;
			ms->total_bytes += bytes;
		}
		while (batch != NULL) {
			struct meta_put *next = batch->next;

			batch->done = 1;	/* batch may be freed after */
			batch = next;
		}
		meta_sqlite_writer_release_locked(ms);
	}
	pthread_mutex_unlock(&ms->mu);
	if (req.rc != 0) {
		if (cause != NULL)
			*cause = req.cause;
		else
			free(req.cause);
		return -1;
	}
	return 0;
}

/* Bulk insert: n rows in one transaction, all or nothing. */
int
meta_sqlite_insert_many(struct meta_sqlite *ms, const struct profile_meta *m,
    size_t n, char **cause)
{
	struct meta_conn	*w = ms->writer;
	struct meta_lcache	*lc = NULL;
	int64_t			 bytes = 0;
	size_t			 i;
	int			 ret = -1;

	pthread_mutex_lock(&ms->mu);
	meta_sqlite_writer_acquire_locked(ms);
	pthread_mutex_unlock(&ms->mu);

	if (meta_conn_exec(w->db, "BEGIN IMMEDIATE", cause, "begin") == -1)
		goto out;
	lc = xcalloc(1, sizeof *lc);
	for (i = 0; i < n; i++) {
		if (meta_sqlite_write_row(w, lc, &m[i], cause) == -1) {
			sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
			goto out;
		}
		bytes += m[i].size;
	}
	if (meta_conn_exec(w->db, "COMMIT", cause, "commit") == -1) {
		sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
		goto out;
	}
	ret = 0;
out:
	meta_sqlite_lcache_free(lc);
	pthread_mutex_lock(&ms->mu);
	if (ret == 0 && ms->totals_known) {
		ms->total_profiles += (int64_t)n;
		ms->total_bytes += bytes;
	}
	meta_sqlite_writer_release_locked(ms);
	pthread_mutex_unlock(&ms->mu);
	return ret;
}

/* Counts rows and bytes once (holding the writer), then keeps them. */
int
meta_sqlite_totals(struct meta_sqlite *ms, int64_t *profiles, int64_t *bytes,
    char **cause)
{
	sqlite3_stmt	*s = NULL;
	int		 ret = 0;

	pthread_mutex_lock(&ms->mu);
	if (!ms->totals_known) {
		meta_sqlite_writer_acquire_locked(ms);
		pthread_mutex_unlock(&ms->mu);
		if (sqlite3_prepare_v2(ms->writer->db, "SELECT count(*), "
		    "total(size) FROM profiles", -1, &s, NULL) != SQLITE_OK ||
		    sqlite3_step(s) != SQLITE_ROW)
			ret = meta_conn_error(ms->writer->db, cause,
			    "count profiles");
		pthread_mutex_lock(&ms->mu);
		if (ret == 0) {
			ms->total_profiles = sqlite3_column_int64(s, 0);
			ms->total_bytes = (int64_t)sqlite3_column_double(s, 1);
			ms->totals_known = 1;
		}
		sqlite3_finalize(s);
		meta_sqlite_writer_release_locked(ms);
	}
	*profiles = ms->total_profiles;
	*bytes = ms->total_bytes;
	pthread_mutex_unlock(&ms->mu);
	return ret;
}

/* Streams every id through the id index into one sorted buffer. */
int
meta_sqlite_ids(struct meta_sqlite *ms, char **ids, size_t *n, char **cause)
{
	struct meta_conn	*c;
	sqlite3_stmt		*s = NULL;
	char			*buf = NULL;
	size_t			 len = 0, cap = 0;
	int			 rc, ret = -1;

	*ids = NULL;
	*n = 0;
	if ((c = meta_conn_get(&ms->pool, cause)) == NULL)
		return -1;
	if (sqlite3_prepare_v2(c->db, "SELECT id FROM profiles ORDER BY id",
	    -1, &s, NULL) != SQLITE_OK) {
		meta_conn_error(c->db, cause, "list ids");
		goto out;
	}
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char	*id = (const char *)sqlite3_column_text(s, 0);

		if (id == NULL || strlen(id) != STORE_ID_LEN)
			continue;	/* cannot name a blob */
		if (len == cap) {
			cap = cap ? cap * 2 : 4096;
			buf = xreallocarray(buf, cap, STORE_ID_LEN);
		}
		memcpy(buf + len * STORE_ID_LEN, id, STORE_ID_LEN);
		len++;
	}
	if (rc != SQLITE_DONE) {
		meta_conn_error(c->db, cause, "list ids");
		free(buf);
		goto out;
	}
	*ids = buf;
	*n = len;
	ret = 0;
out:
	sqlite3_finalize(s);
	meta_conn_put(&ms->pool, c);
	return ret;
}
