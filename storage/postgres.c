/*
 * The postgresql backend: metadata, label tables and blobs in one
 * PostgreSQL database, so any number of stateless collectors can share it
 * (docs/DESIGN.md, "PostgreSQL"). This file opens it (a pool of
 * connections, the schema migrated under an advisory lock) and dispatches
 * the store's calls to pg_write.c (group-committed puts, retention, totals
 * backfill) and pg_read.c (queries); the bytes live behind pg_blob.c.
 *
 * Not here yet: rollups. Compaction finds nothing to do on this backend,
 * and a time-window merge reads every profile of its window (bounded by
 * the merge's limits, as on the embedded store before rollups).
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/xmalloc.h"
#include "storage/pg_int.h"
#include "storage/store_ops.h"

#define POSTGRES_POOL_DEFAULT	8

/* Closes the backend. */
static void
postgres_close(void *be)
{
	struct pg	*pg = be;

	if (pg == NULL)
		return;
	pg_pool_free(pg->pool);
	pthread_mutex_destroy(&pg->mu);
	pthread_cond_destroy(&pg->cv);
	free(pg);
}

/* Connects, migrates the schema, and reports an empty recovery. */
static void *
postgres_open(const struct store_options *o, struct store_recovery *rec,
    char **cause)
{
	struct pg	*pg;
	PGconn		*c;
	int		 rc;

	if (rec != NULL)
		memset(rec, 0, sizeof *rec);
	pg = xcalloc(1, sizeof *pg);
	pthread_mutex_init(&pg->mu, NULL);
	pthread_cond_init(&pg->cv, NULL);
	pg->tail = &pg->queue;
	pg->pool = pg_pool_new(o->location, o->pool ? o->pool :
	    POSTGRES_POOL_DEFAULT, cause);
	if (pg->pool == NULL)
		goto fail;
	if (pg_pool_get(pg->pool, &c, cause) != 0)
		goto fail;
	rc = pg_schema_migrate(c, cause);
	pg_pool_put(pg->pool, c);
	if (rc != 0)
		goto fail;
	return pg;
fail:
	postgres_close(pg);
	return NULL;
}

/* A retry signal left over is an ordinary failure to callers. */
static int
postgres_rc(int rc)
{
	return rc == PG_RETRY ? -1 : rc;
}

/* Stores a profile: blob and row in one group-committed transaction. */
static int
postgres_put(void *be, const struct profile_meta *m, const void *blob,
    size_t len, char **cause)
{
	return postgres_rc(pg_write_put(be, m, blob, len, cause));
}

/* Lists profiles, newest first. */
static int
postgres_list(void *be, const struct store_query *q,
    struct profile_meta **out, size_t *n, char **cause)
{
	return postgres_rc(pg_read_list(be, q, out, n, cause));
}

/* Rows by id, paged. */
static int
postgres_scan(void *be, const char *after, size_t limit,
    struct profile_meta **out, size_t *n, char **cause)
{
	return postgres_rc(pg_read_scan(be, after, limit, out, n, cause));
}

/* A timeline from the rows' totals. */
static int
postgres_timeline(void *be, const struct store_query *q,
    struct store_timeline *tl, char **cause)
{
	return postgres_rc(pg_read_timeline(be, q, tl, cause));
}

/* Ids of rows without totals. */
static int
postgres_missing_totals(void *be, const char *after, size_t limit,
    char ***out, size_t *n, char **cause)
{
	return postgres_rc(pg_read_missing_totals(be, after, limit, out, n,
	    cause));
}

/* Records totals of rows without them. */
static int
postgres_set_totals(void *be, char *const *ids, char *const *totals,
    size_t n, char **cause)
{
	return postgres_rc(pg_write_set_totals(be, ids, totals, n, cause));
}

/* One profile's row. */
static int
postgres_get(void *be, const char *id, struct profile_meta *out,
    char **cause)
{
	return postgres_rc(pg_read_get(be, id, out, cause));
}

/* One profile's bytes. */
static int
postgres_read_blob(void *be, const char *id, uint8_t **buf, size_t *len,
    char **cause)
{
	return postgres_rc(pg_read_blob(be, id, buf, len, cause));
}

/* Service names. */
static int
postgres_services(void *be, char ***out, size_t *n, char **cause)
{
	return postgres_rc(pg_read_services(be, out, n, cause));
}

/* Label keys or values. */
static int
postgres_labels(void *be, const char *service, const char *key,
    char ***out, size_t *n, char **cause)
{
	return postgres_rc(pg_read_labels(be, service, key, out, n, cause));
}

/* One retention batch (if this collector holds the retention lock). */
static int
postgres_delete_before(void *be, int64_t cutoff, size_t batch,
    size_t *deleted, char **cause)
{
	return postgres_rc(pg_write_delete_before(be, cutoff, batch, deleted,
	    cause));
}

/* Profiles and bytes stored. */
static int
postgres_totals(void *be, int64_t *profiles, int64_t *bytes, char **cause)
{
	return postgres_rc(pg_read_totals(be, profiles, bytes, cause));
}

/* A window merge's pieces: every profile of the window (no rollups). */
static int
postgres_plan(void *be, const struct store_query *q, struct store_plan *out,
    char **cause)
{
	return postgres_rc(pg_read_plan(be, q, out, cause));
}

/* Compaction: nothing to do on this backend yet. */
static int
postgres_compact_next(void *be, int64_t now_ns, int64_t delay_ns,
    int64_t after_ns, struct store_compaction **out, char **cause)
{
	(void)be;
	(void)now_ns;
	(void)delay_ns;
	(void)after_ns;
	(void)cause;
	*out = NULL;
	return 0;
}

/* Never called: compact_next hands out nothing. */
static int
postgres_compact_commit(void *be, struct store_compaction **c, size_t n,
    char **cause)
{
	(void)be;
	(void)c;
	(void)n;
	return xcause(cause, "postgresql: no rollups");
}

/* Never called: compact_next hands out nothing. */
static int
postgres_compact_abandon(void *be, struct store_compaction *c, char **cause)
{
	(void)be;
	(void)c;
	return xcause(cause, "postgresql: no rollups");
}

/* Nothing to heal. */
static int
postgres_compact_heal(void *be, int64_t quiet_ns, size_t *minutes,
    char **cause)
{
	(void)be;
	(void)quiet_ns;
	(void)cause;
	*minutes = 0;
	return 0;
}

/* No rollups: zeros. */
static int
postgres_rollup_stats(void *be, struct store_rollup_stats *st, char **cause)
{
	(void)be;
	(void)cause;
	memset(st, 0, sizeof *st);
	return 0;
}

const struct store_ops postgres_store_ops = {
	.name = "postgresql",
	.open = postgres_open,
	.close = postgres_close,
	.put = postgres_put,
	.list = postgres_list,
	.scan = postgres_scan,
	.timeline = postgres_timeline,
	.missing_totals = postgres_missing_totals,
	.set_totals = postgres_set_totals,
	.get = postgres_get,
	.read_blob = postgres_read_blob,
	.services = postgres_services,
	.labels = postgres_labels,
	.delete_before = postgres_delete_before,
	.totals = postgres_totals,
	.plan = postgres_plan,
	.compact_next = postgres_compact_next,
	.compact_commit = postgres_compact_commit,
	.compact_abandon = postgres_compact_abandon,
	.compact_heal = postgres_compact_heal,
	.rollup_stats = postgres_rollup_stats,
	.rebuild = NULL,
};
