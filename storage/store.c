/*
 * The store interface (store.h): picks a backend by the store's location
 * and dispatches each call to it (store_ops.h). The top of storage/:
 * nothing below calls back into this file; what the backends share
 * lives under it (store_meta.c, store_free.c, store_bucket.c, rollup_*.c).
 */
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "storage/store_ops.h"

struct store {
	const struct store_ops	*ops;
	void			*be;	/* the backend's state */
};

/* Set when this thread's last store call found the backend unreachable. */
static __thread int store_tls_unavailable;

/* Turns a backend's result into the interface's (see store_unavailable). */
static int
store_rc(int rc)
{
	store_tls_unavailable = rc == STORE_UNAVAILABLE;
	return rc == STORE_UNAVAILABLE ? -1 : rc;
}

/* Whether this thread's last failed call found the backend unreachable. */
int
store_unavailable(void)
{
	return store_tls_unavailable;
}

/* Whether location is a PostgreSQL URI. */
int
store_is_postgresql(const char *location)
{
	return location != NULL && (strncmp(location, "postgresql://", 13) ==
	    0 || strncmp(location, "postgres://", 11) == 0);
}

/* Opens the store, picking the backend by its location. */
struct store *
store_open_options(const struct store_options *o, struct store_recovery *rec,
    char **cause)
{
	const struct store_ops	*ops = &embedded_store_ops;
	struct store		*st;
	void			*be;

	if (o->location == NULL || *o->location == '\0') {
		xcause(cause, "open store: no data directory");
		return NULL;
	}
	if (store_is_postgresql(o->location))
		ops = &postgres_store_ops;
	if ((be = ops->open(o, rec, cause)) == NULL)
		return NULL;
	st = xcalloc(1, sizeof *st);
	st->ops = ops;
	st->be = be;
	return st;
}

/* Opens the store in data_dir (or at a postgresql:// URI). */
struct store *
store_open(const char *data_dir, size_t orphan_limit,
    struct store_recovery *rec, char **cause)
{
	struct store_options	o = { data_dir, orphan_limit, 0 };

	return store_open_options(&o, rec, cause);
}

/* The backend's name. */
const char *
store_backend(const struct store *st)
{
	return st->ops->name;
}

/* Closes the store; no other call may be running. */
void
store_close(struct store *st)
{
	if (st == NULL)
		return;
	st->ops->close(st->be);
	free(st);
}

/* Stores a profile durably. */
int
store_put(struct store *st, const struct profile_meta *m, const void *blob,
    size_t len, char **cause)
{
	return store_rc(st->ops->put(st->be, m, blob, len, cause));
}

/* The pieces of a time-window merge. */
int
store_plan(struct store *st, const struct store_query *q,
    struct store_plan *out, char **cause)
{
	return store_rc(st->ops->plan(st->be, q, out, cause));
}

/* The next compaction due. */
int
store_compact_next(struct store *st, int64_t now_ns, int64_t delay_ns,
    int64_t after_ns, struct store_compaction **out, char **cause)
{
	return store_rc(st->ops->compact_next(st->be, now_ns, delay_ns,
	    after_ns, out, cause));
}

/* Records a compaction's rollups. */
int
store_compact_commit(struct store *st, struct store_compaction **c,
    size_t n, char **cause)
{
	return store_rc(st->ops->compact_commit(st->be, c, n, cause));
}

/* Gives a compaction up. */
int
store_compact_abandon(struct store *st, struct store_compaction *c,
    char **cause)
{
	return store_rc(st->ops->compact_abandon(st->be, c, cause));
}

/* Heals late profiles into rollups. */
int
store_compact_heal(struct store *st, int64_t quiet_ns, size_t *minutes,
    char **cause)
{
	return store_rc(st->ops->compact_heal(st->be, quiet_ns, minutes,
	    cause));
}

/* Rollup figures for /metrics. */
int
store_rollup_stats(struct store *st, struct store_rollup_stats *rs,
    char **cause)
{
	return store_rc(st->ops->rollup_stats(st->be, rs, cause));
}

/* Lists profiles, newest first. */
int
store_list(struct store *st, const struct store_query *q,
    struct profile_meta **out, size_t *n, char **cause)
{
	return store_rc(st->ops->list(st->be, q, out, n, cause));
}

/* Every profile, a page at a time, by id. */
int
store_scan(struct store *st, const char *after, size_t limit,
    struct profile_meta **out, size_t *n, char **cause)
{
	return store_rc(st->ops->scan(st->be, after, limit, out, n, cause));
}

/* Sums a sample type per time bucket from metadata alone. */
int
store_timeline(struct store *st, const struct store_query *q,
    struct store_timeline *tl, char **cause)
{
	return store_rc(st->ops->timeline(st->be, q, tl, cause));
}

/* Ids of rows whose totals are not known yet. */
int
store_missing_totals(struct store *st, const char *after, size_t limit,
    char ***out, size_t *n, char **cause)
{
	return store_rc(st->ops->missing_totals(st->be, after, limit, out,
	    n, cause));
}

/* Records computed totals of rows that have none. */
int
store_set_totals(struct store *st, char *const *ids, char *const *totals,
    size_t n, char **cause)
{
	return store_rc(st->ops->set_totals(st->be, ids, totals, n, cause));
}

/* Looks one profile up. */
int
store_get(struct store *st, const char *id, struct profile_meta *out,
    char **cause)
{
	return store_rc(st->ops->get(st->be, id, out, cause));
}

/* Reads the stored bytes of a profile. */
int
store_read_blob(struct store *st, const char *id, uint8_t **buf, size_t *len,
    char **cause)
{
	return store_rc(st->ops->read_blob(st->be, id, buf, len, cause));
}

/* Lists service names. */
int
store_services(struct store *st, char ***out, size_t *n, char **cause)
{
	return store_rc(st->ops->services(st->be, out, n, cause));
}

/* Lists label keys or the values of one key. */
int
store_labels(struct store *st, const char *service, const char *key,
    char ***out, size_t *n, char **cause)
{
	return store_rc(st->ops->labels(st->be, service, key, out, n, cause));
}

/* Deletes profiles created before cutoff, up to batch of them. */
int
store_delete_before(struct store *st, int64_t cutoff, size_t batch,
    size_t *deleted, char **cause)
{
	return store_rc(st->ops->delete_before(st->be, cutoff, batch,
	    deleted, cause));
}

/* Counts profiles and bytes. */
int
store_totals(struct store *st, int64_t *profiles, int64_t *bytes,
    char **cause)
{
	return store_rc(st->ops->totals(st->be, profiles, bytes, cause));
}

/* Rebuilds the metadata of the store in data_dir (not open). */
int
store_rebuild(const char *data_dir, store_legacy_cb legacy, void *arg,
    struct store_rebuild *rep, char **cause)
{
	const struct store_ops	*ops = &embedded_store_ops;

	if (data_dir == NULL || *data_dir == '\0')
		return xcause(cause, "rebuild: no data directory");
	return ops->rebuild(data_dir, legacy, arg, rep, cause);
}
