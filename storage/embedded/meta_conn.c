/*
 * SQLite connections of the metadata store: opening one with profd's
 * pragmas, its cache of prepared statements (every fixed statement the
 * store runs is in meta_conn.c's table), a pool of reader connections,
 * and the small helpers every file of the store uses to run statements.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/xmalloc.h"
#include "storage/embedded/meta_conn.h"

#define META_MMAP_SIZE		"268435456"

static const char *const meta_conn_sql[META_STMT_COUNT] = {
	[META_STMT_INSERT_PROFILE] =
	    "INSERT INTO profiles (id, service, type, created_at, size, "
	    "samples, sample_types, duration_ns, totals) "
	    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
	[META_STMT_INSERT_LABEL] =
	    "INSERT OR IGNORE INTO labels (key, value) VALUES (?1, ?2)",
	[META_STMT_LABEL_ID] =
	    "SELECT label_id FROM labels WHERE key = ?1 AND value = ?2",
	[META_STMT_INSERT_PROFILE_LABEL] =
	    "INSERT OR IGNORE INTO profile_labels (label_id, profile_pk, "
	    "service, created_at) VALUES (?1, ?2, ?3, ?4)",
	[META_STMT_SERVICE_LABEL_ADD] =
	    "INSERT INTO service_labels (service, label_id, refs) "
	    "VALUES (?1, ?2, 1) ON CONFLICT (service, label_id) "
	    "DO UPDATE SET refs = refs + 1",
	[META_STMT_PROFILE_LABELS] =
	    "SELECT l.key, l.value FROM profile_labels AS pl "
	    "JOIN labels AS l ON l.label_id = pl.label_id "
	    "WHERE pl.profile_pk = ?1 ORDER BY l.key, l.value",
	[META_STMT_GET] =
	    "SELECT pk, id, service, type, created_at, size, samples, "
	    "sample_types, duration_ns, totals FROM profiles WHERE id = ?1",
	[META_STMT_LABEL_COUNT] =
	    "SELECT count(*) FROM (SELECT 1 FROM profile_labels "
	    "INDEXED BY profile_labels_label_time WHERE label_id = ?6 "
	    "AND service = ?1 AND created_at BETWEEN ?3 AND ?4 LIMIT ?5)",
	[META_STMT_WINDOW_COUNT] =
	    "SELECT count(*) FROM (SELECT 1 FROM profiles "
	    "INDEXED BY profiles_service_time WHERE service = ?1 "
	    "AND created_at BETWEEN ?3 AND ?4 LIMIT ?5)",
	[META_STMT_WINDOW_COUNT_TYPE] =
	    "SELECT count(*) FROM (SELECT 1 FROM profiles "
	    "INDEXED BY profiles_service_type_time WHERE service = ?1 "
	    "AND type = ?2 AND created_at BETWEEN ?3 AND ?4 LIMIT ?5)",
	[META_STMT_NEXT_SERVICE] =
	    "SELECT service FROM profiles WHERE service > ?1 "
	    "ORDER BY service LIMIT 1",
	[META_STMT_KEYS] =
	    "SELECT DISTINCT l.key FROM service_labels AS sl "
	    "JOIN labels AS l ON l.label_id = sl.label_id ORDER BY l.key",
	[META_STMT_KEYS_SERVICE] =
	    "SELECT DISTINCT l.key FROM service_labels AS sl "
	    "JOIN labels AS l ON l.label_id = sl.label_id "
	    "WHERE sl.service = ?1 ORDER BY l.key",
	[META_STMT_VALUES] =
	    "SELECT l.value FROM labels AS l WHERE l.key = ?1 AND EXISTS "
	    "(SELECT 1 FROM service_labels AS sl "
	    "WHERE sl.label_id = l.label_id) ORDER BY l.value",
	[META_STMT_VALUES_SERVICE] =
	    "SELECT l.value FROM labels AS l JOIN service_labels AS sl "
	    "ON sl.label_id = l.label_id AND sl.service = ?2 "
	    "WHERE l.key = ?1 ORDER BY l.value",
	[META_STMT_EXPIRED] =
	    "SELECT pk, id, size, service, type, created_at, sample_types, "
	    "totals FROM profiles "
	    "WHERE created_at < ?1 ORDER BY created_at LIMIT ?2",
	[META_STMT_LABELS_OF] =
	    "SELECT label_id FROM profile_labels WHERE profile_pk = ?1",
	[META_STMT_SERVICE_LABEL_SUB] =
	    "UPDATE service_labels SET refs = refs - 1 "
	    "WHERE service = ?1 AND label_id = ?2",
	[META_STMT_SERVICE_LABEL_GC] =
	    "DELETE FROM service_labels "
	    "WHERE service = ?1 AND label_id = ?2 AND refs <= 0",
	[META_STMT_DELETE_PROFILE_LABELS] =
	    "DELETE FROM profile_labels WHERE profile_pk = ?1",
	[META_STMT_DELETE_PROFILE] =
	    "DELETE FROM profiles WHERE pk = ?1",
	[META_STMT_TL_ADD] =
	    "INSERT INTO timeline (service, label_id, sample_type, type, "
	    "minute, value, profiles) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1) "
	    "ON CONFLICT (service, label_id, sample_type, type, minute) "
	    "DO UPDATE SET value = value + excluded.value, "
	    "profiles = profiles + 1",
	[META_STMT_TL_SUB] =
	    "UPDATE timeline SET value = value - ?6, profiles = profiles - 1 "
	    "WHERE service = ?1 AND label_id = ?2 AND sample_type = ?3 "
	    "AND type = ?4 AND minute = ?5",
	[META_STMT_TL_GC] =
	    "DELETE FROM timeline WHERE service = ?1 AND label_id = ?2 "
	    "AND sample_type = ?3 AND type = ?4 AND minute = ?5 "
	    "AND profiles <= 0",
	[META_STMT_TL_BUCKETS] =
	    "SELECT minute, value, profiles FROM timeline "
	    "WHERE service = ?1 AND label_id = ?2 AND sample_type = ?3 "
	    "AND type = ?4 AND minute BETWEEN ?5 AND ?6",
	[META_STMT_TL_BUCKETS_ANY] =
	    "SELECT minute, value, profiles FROM timeline "
	    "WHERE service = ?1 AND label_id = ?2 AND sample_type = ?3 "
	    "AND minute BETWEEN ?5 AND ?6",
	[META_STMT_TOTALS_MISSING] =
	    "SELECT id FROM profiles INDEXED BY profiles_no_totals "
	    "WHERE totals IS NULL AND id > ?1 ORDER BY id LIMIT ?2",
	[META_STMT_TOTALS_SET] =
	    "UPDATE profiles SET totals = ?2 WHERE id = ?1 "
	    "AND totals IS NULL "
	    "RETURNING pk, service, type, created_at, sample_types",
};

/* Sets *cause to what failed and SQLite's message. */
int
meta_conn_error(sqlite3 *db, char **cause, const char *what)
{
	return xcause(cause, "%s: %s", what, sqlite3_errmsg(db));
}

/* Runs SQL with no result rows. */
int
meta_conn_exec(sqlite3 *db, const char *sql, char **cause, const char *what)
{
	char	*err = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		xcause(cause, "%s: %s", what, err ? err : sqlite3_errmsg(db));
		sqlite3_free(err);
		return -1;
	}
	return 0;
}

/* Opens one connection to path and sets its per-connection pragmas. */
struct meta_conn *
meta_conn_open(const char *path, char **cause)
{
	struct meta_conn	*c;
	sqlite3			*db = NULL;
	int			 flags;

	flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
	    SQLITE_OPEN_NOMUTEX;
	if (sqlite3_open_v2(path, &db, flags, NULL) != SQLITE_OK) {
		if (db == NULL)
			xcause(cause, "open %s: out of memory", path);
		else
			xcause(cause, "open %s: %s", path, sqlite3_errmsg(db));
		sqlite3_close(db);
		return NULL;
	}
	sqlite3_extended_result_codes(db, 1);
	sqlite3_busy_timeout(db, META_BUSY_TIMEOUT_MS);
	if (meta_conn_exec(db, "PRAGMA synchronous = FULL;"
	    "PRAGMA mmap_size = " META_MMAP_SIZE ";"
	    "PRAGMA temp_store = MEMORY;", cause, path) == -1) {
		sqlite3_close(db);
		return NULL;
	}
	c = xcalloc(1, sizeof *c);
	c->db = db;
	return c;
}

/* Finalizes a connection's statements and closes it. */
void
meta_conn_close(struct meta_conn *c)
{
	size_t	i;

	if (c == NULL)
		return;
	for (i = 0; i < META_STMT_COUNT; i++)
		sqlite3_finalize(c->stmt[i]);
	for (i = 0; i < META_LIST_SHAPES; i++)
		sqlite3_finalize(c->list[i]);
	if (sqlite3_close(c->db) != SQLITE_OK)
		log_warn("%s: %s", __func__, sqlite3_errmsg(c->db));
	free(c);
}

/* Returns the cached statement, preparing it on first use. */
sqlite3_stmt *
meta_conn_stmt(struct meta_conn *c, enum meta_stmt which, char **cause)
{
	sqlite3_stmt	*s = c->stmt[which];

	if (s != NULL) {
		sqlite3_reset(s);
		sqlite3_clear_bindings(s);
		return s;
	}
	if (sqlite3_prepare_v3(c->db, meta_conn_sql[which], -1,
	    SQLITE_PREPARE_PERSISTENT, &s, NULL) != SQLITE_OK) {
		meta_conn_error(c->db, cause, "prepare statement");
		return NULL;
	}
	c->stmt[which] = s;
	return s;
}

/* Takes an idle reader connection or opens a new one. */
struct meta_conn *
meta_conn_get(struct meta_pool *pool, char **cause)
{
	struct meta_conn	*c;

	pthread_mutex_lock(&pool->mu);
	if ((c = pool->idle) != NULL)
		pool->idle = c->next;
	pthread_mutex_unlock(&pool->mu);
	if (c != NULL)
		return c;
	return meta_conn_open(pool->path, cause);
}

/* Resets anything left running (ending its read transaction) and pools c. */
void
meta_conn_put(struct meta_pool *pool, struct meta_conn *c)
{
	sqlite3_stmt	*s = NULL;

	while ((s = sqlite3_next_stmt(c->db, s)) != NULL) {
		if (sqlite3_stmt_busy(s))
			sqlite3_reset(s);
	}
	pthread_mutex_lock(&pool->mu);
	c->next = pool->idle;
	pool->idle = c;
	pthread_mutex_unlock(&pool->mu);
}

/* Binds a string that may be NULL (stored as empty). */
int
meta_conn_bind_text(sqlite3_stmt *s, int i, const char *v)
{
	return sqlite3_bind_text(s, i, v ? v : "", -1, SQLITE_STATIC);
}

/* Runs a statement expected to return no rows (or ignores them). */
int
meta_conn_step_done(struct meta_conn *c, sqlite3_stmt *s, char **cause,
    const char *what)
{
	int	rc;

	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		;
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return meta_conn_error(c->db, cause, what);
	return 0;
}


/* Sets up an empty pool of connections to path. */
void
meta_conn_pool_init(struct meta_pool *pool, const char *path)
{
	pool->path = xstrdup(path);
	pthread_mutex_init(&pool->mu, NULL);
	pool->idle = NULL;
}

/* Closes every pooled connection; none may be in use. */
void
meta_conn_pool_close(struct meta_pool *pool)
{
	struct meta_conn	*c;

	while ((c = pool->idle) != NULL) {
		pool->idle = c->next;
		meta_conn_close(c);
	}
	pthread_mutex_destroy(&pool->mu);
	free(pool->path);
	pool->path = NULL;
}
