/*
 * Rollups in the SQLite metadata: meta_compact.c builds them,
 * meta_rollup_maint.c keeps them, meta_plan.c reads them for time-window
 * merges, over meta_rollup.c's helpers. Not for use outside
 * storage/embedded/. docs/DESIGN.md, "Rollups", has the whole design.
 */
#ifndef PROFD_META_ROLLUP_H
#define PROFD_META_ROLLUP_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "storage/rollup_ids.h"
#include "storage/store.h"

struct meta_sqlite;
struct meta_pool;
struct meta_conn;

/*
 * The rollup tables, part of meta_sqlite.c's schema:
 *  - rollups: one row per (service, type, level, bucket, label_id,
 *    sample_types); label_id 0 is the group of every profile. A row
 *    holds `profiles` profiles: its blob (rollups/xx/NAME, rollup_ids_name), or, when
 *    it holds one, the id of that profile (`profile`) and no blob.
 *    common: the label ids every profile in it carries ("3,17,40"),
 *    uniform: 1 if they all carry exactly those.
 *  - rollup_buckets: buckets compacted (done 1) or waiting (done 0;
 *    hours and days, queued by the compaction of their first part).
 *  - profiles_loose: the profiles no rollup holds (rolled <= 0).
 */
#define META_ROLLUP_SCHEMA \
	"CREATE INDEX IF NOT EXISTS profiles_loose" \
	" ON profiles (created_at) WHERE rolled <= 0;" \
	"CREATE TABLE IF NOT EXISTS rollups (" \
	" rid INTEGER PRIMARY KEY," \
	" service TEXT NOT NULL," \
	" type TEXT NOT NULL," \
	" level INTEGER NOT NULL," \
	" bucket INTEGER NOT NULL," \
	" label_id INTEGER NOT NULL," \
	" sample_types TEXT NOT NULL," \
	" profiles INTEGER NOT NULL," \
	" size INTEGER NOT NULL," \
	" profile TEXT," \
	" common TEXT NOT NULL," \
	" uniform INTEGER NOT NULL);" \
	"CREATE INDEX IF NOT EXISTS rollups_group" \
	" ON rollups (service, type, label_id, level, bucket);" \
	"CREATE INDEX IF NOT EXISTS rollups_bucket" \
	" ON rollups (service, type, level, bucket);" \
	"CREATE INDEX IF NOT EXISTS rollups_time ON rollups (bucket);" \
	"CREATE TABLE IF NOT EXISTS rollup_buckets (" \
	" service TEXT NOT NULL," \
	" type TEXT NOT NULL," \
	" level INTEGER NOT NULL," \
	" bucket INTEGER NOT NULL," \
	" done INTEGER NOT NULL," \
	" PRIMARY KEY (service, type, level, bucket)) WITHOUT ROWID;" \
	"CREATE INDEX IF NOT EXISTS rollup_buckets_todo" \
	" ON rollup_buckets (level, bucket) WHERE done = 0;" \
	"CREATE INDEX IF NOT EXISTS rollup_buckets_time" \
	" ON rollup_buckets (bucket);"

/* store_compact_next (meta_compact.c); rids are given by the caller. */
int	meta_compact_next(struct meta_sqlite *, int64_t now_ns,
	    int64_t delay_ns, int64_t after_ns, struct store_compaction **out,
	    char **cause);
/*
 * The transaction of store_compact_commit (blobs already durable, each
 * r[i].rid set).
 */
int	meta_compact_commit(struct meta_sqlite *, struct store_compaction **c,
	    size_t n, char **cause);
/* store_compact_abandon. */
int	meta_compact_abandon(struct meta_sqlite *, struct store_compaction *,
	    char **cause);

/*
 * Retention (meta_rollup_maint.c): deletes up to batch rollup rows (and bucket marks) of
 * buckets starting before cutoff (ns). *names: OUT blob names of the
 * deleted rows that had a blob (free with store_free_strings), *bytes:
 * OUT their sizes, rows[level]: OUT (added to) rows deleted by level; *n:
 * OUT rows deleted.
 */
int	meta_rollup_maint_delete_before(struct meta_sqlite *, int64_t cutoff,
	    size_t batch, char ***names, size_t *nnames, int64_t *bytes,
	    int64_t *rows, size_t *n, char **cause);
/*
 * At open: drops every rollup of a bucket one of whose blobs is missing
 * (has_blob says), with the bucket's done mark, so merges read its parts
 * instead. *rids: OUT the rids that have a blob, sorted (free), for
 * finding orphan blobs; *maxrid: OUT the largest rid of any row; st: OUT
 * rows by level and bytes; *dropped: OUT rows dropped.
 */
int	meta_rollup_maint_recover(struct meta_sqlite *,
	    int (*has_blob)(void *, const char *), void *arg, int64_t **rids,
	    size_t *nrids, int64_t *maxrid, struct store_rollup_stats *st,
	    size_t *dropped, char **cause);
/* The queue and the oldest profile not compacted yet (st's other fields). */
int	meta_rollup_maint_queue(struct meta_sqlite *, struct store_rollup_stats *st,
	    char **cause);

/* Late profiles (rolled = 0): how many, and the newest's pk (0: none). */
int	meta_rollup_maint_late(struct meta_sqlite *, int64_t *count,
	    int64_t *maxpk, char **cause);
/*
 * Healing: in one transaction, every minute of the oldest day (of one
 * service and type) that holds late profiles is reopened: its profiles
 * fresh again, the rows and done marks of the minute and of the buckets
 * over it deleted (those queued again), so compaction rebuilds them with
 * the late ones in. *names: OUT blobs of deleted rows (free with
 * store_free_strings); *minutes: OUT minutes reopened; gone: OUT rows by
 * level and bytes deleted.
 */
int	meta_rollup_maint_heal(struct meta_sqlite *, char ***names,
	    size_t *nnames, size_t *minutes, struct store_rollup_stats *gone,
	    char **cause);

/* store_plan (meta_plan.c). */
int	meta_plan_query(struct meta_pool *, const struct store_query *q,
	    struct store_plan *out, char **cause);

/* Prepares sql on c: NULL with *cause. */
sqlite3_stmt	*meta_rollup_prepare(struct meta_conn *c, const char *sql,
		    char **cause);
/* Binds service, type and level as ?1, ?2, ?3. */
void	meta_rollup_bind_key(sqlite3_stmt *s, const char *service,
	    const char *type, int level);
/* 1 if bucket (level, b) of service and type is done, 0 not, -1 error. */
/*
 * The done buckets of (service, type, level) in [b0, b1): a new sorted
 * array (free) of *n, or -1 with *cause.
 */
int	meta_rollup_done_in(struct meta_conn *c, const char *service,
	    const char *type, int level, int64_t b0, int64_t b1,
	    int64_t **out, size_t *n, char **cause);
int	meta_rollup_is_done(struct meta_conn *c, const char *service,
	    const char *type, int level, int64_t b, char **cause);
/* Runs sql binding each of v[0..n) as ?1, in one transaction. */
int	meta_rollup_write_ints(struct meta_sqlite *, const char *sql,
	    const int64_t *v, size_t n, char **cause);
/* Deletes the waiting mark of an hour or day that cannot be compacted. */
int	meta_rollup_drop_todo(struct meta_sqlite *, const char *service,
	    const char *type, int level, int64_t bucket, char **cause);

#endif
