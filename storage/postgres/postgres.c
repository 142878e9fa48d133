/*
 * The postgresql backend: metadata, label tables and blobs in one
 * PostgreSQL database, so any number of stateless collectors can share it
 * (docs/DESIGN.md, "PostgreSQL"). This file opens it (a pool of
 * connections, the schema migrated under an advisory lock) and dispatches
 * the store's calls to pg_write.c (group-committed puts, retention, totals
 * backfill), pg_read.c (queries), pg_plan.c (window merges over
 * rollups), pg_rollup.c (compaction, by one collector at a time) and
 * pg_rollup_maint.c (their retention, healing and figures); the bytes
 * live behind pg_blob.c.
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/xmalloc.h"
#include "storage/postgres/pg_int.h"
#include "storage/store_ops.h"

#define POSTGRES_POOL_DEFAULT	8

/* Closes the backend. */
static void
postgres_close(void *be)
{
	struct pg	*pg = be;

	if (pg == NULL)
		return;
	pg_rollup_close(pg);
	pg_pool_free(pg->pool);
	pthread_mutex_destroy(&pg->lead_mu);
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
	pthread_mutex_init(&pg->lead_mu, NULL);
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
	int	rc;

	/* Rollups first: one left over would count what was deleted. */
	*deleted = 0;
	if ((rc = pg_rollup_maint_delete_before(be, cutoff, batch,
	    cause)) != 0)
		return postgres_rc(rc);
	return postgres_rc(pg_write_delete_before(be, cutoff, batch, deleted,
	    cause));
}

/* Profiles and bytes stored. */
static int
postgres_totals(void *be, int64_t *profiles, int64_t *bytes, char **cause)
{
	return postgres_rc(pg_read_totals(be, profiles, bytes, cause));
}

/* A window merge's pieces: rollups where they answer, else profiles. */
static int
postgres_plan(void *be, const struct store_query *q, struct store_plan *out,
    char **cause)
{
	return postgres_rc(pg_plan_query(be, q, out, cause));
}

/* The next compaction, if this collector leads compaction. */
static int
postgres_compact_next(void *be, int64_t now_ns, int64_t delay_ns,
    int64_t after_ns, struct store_compaction **out, char **cause)
{
	return postgres_rc(pg_rollup_next(be, now_ns, delay_ns, after_ns, out,
	    cause));
}

/* Rollups' rows, bytes and marks in one transaction. */
static int
postgres_compact_commit(void *be, struct store_compaction **c, size_t n,
    char **cause)
{
	return postgres_rc(pg_rollup_commit(be, c, n, cause));
}

/* Gives a compaction up. */
static int
postgres_compact_abandon(void *be, struct store_compaction *c, char **cause)
{
	return postgres_rc(pg_rollup_abandon(be, c, cause));
}

/* Heals late profiles, if this collector leads compaction. */
static int
postgres_compact_heal(void *be, int64_t quiet_ns, size_t *minutes,
    char **cause)
{
	int	rc;

	*minutes = 0;
	if ((rc = pg_rollup_lead(be, cause)) != 1)
		return postgres_rc(rc);
	return postgres_rc(pg_rollup_maint_heal(be, quiet_ns, minutes, cause));
}

/* Rollup figures. */
static int
postgres_rollup_stats(void *be, struct store_rollup_stats *st, char **cause)
{
	return postgres_rc(pg_rollup_maint_stats(be, st, cause));
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
