/*
 * Profile metadata in SQLite (WAL): the schema, the writer and
 * group-committed inserts, totals (meta_sqlite.c), retention deletes and
 * the totals backfill (meta_maint.c), the read queries (meta_query.c)
 * and timelines (meta_timeline.c), over the connections of meta_conn.c.
 */
#ifndef PROFD_META_SQLITE_H
#define PROFD_META_SQLITE_H

#include <stddef.h>
#include <stdint.h>

#include "storage/store.h"

struct meta_sqlite;

/* Opens (creating schema if needed) the database at path. */
struct meta_sqlite	*meta_sqlite_open(const char *path, char **cause);
void			 meta_sqlite_close(struct meta_sqlite *);
/*
 * Counts the profiles in the database file at path without writing to
 * it (read-only; a database without a profiles table holds 0).
 */
int	meta_sqlite_count_file(const char *path, int64_t *rows, char **cause);

/*
 * Inserts one row durably, group-committed with concurrent callers:
 * returns once the transaction holding it is on disk. For a row that
 * depends on something made durable outside SQLite (its blob), the
 * group's leader first runs the barrier set with meta_sqlite_set_barrier
 * once for the whole batch (one syncfs for all the batch's blobs), then
 * check(check_arg) for this row (check may be NULL); a row whose check
 * fails is left out and its insert fails with the check's cause.
 */
int	meta_sqlite_insert_checked(struct meta_sqlite *,
	    const struct profile_meta *m, int (*check)(void *, char **),
	    void *check_arg, char **cause);
/* Sets the barrier of meta_sqlite_insert_checked (before any insert). */
void	meta_sqlite_set_barrier(struct meta_sqlite *,
	    int (*fn)(void *, char **), void *arg);
/* Inserts n rows in one transaction, all or nothing (bulk loading). */
int	meta_sqlite_insert_many(struct meta_sqlite *,
	    const struct profile_meta *m, size_t n, char **cause);

/*
 * Deletes up to batch rows created before cutoff, oldest first, in one
 * committed transaction. *ids: OUT new array of the deleted ids (free with
 * store_free_strings), *n: OUT count.
 */
int	meta_maint_delete_before(struct meta_sqlite *, int64_t cutoff,
	    size_t batch, char ***ids, size_t *n, char **cause);
/* store_missing_totals and store_set_totals (meta_maint.c). */
int	meta_maint_missing_totals(struct meta_sqlite *, const char *after,
	    size_t limit, char ***out, size_t *n, char **cause);
int	meta_maint_set_totals(struct meta_sqlite *, char *const *ids,
	    char *const *totals, size_t n, char **cause);

/* Number of rows and sum of sizes (computed once, then kept current). */
int	meta_sqlite_totals(struct meta_sqlite *, int64_t *profiles,
	    int64_t *bytes, char **cause);

/*
 * All ids, sorted, as one buffer of *n records of STORE_ID_LEN bytes (no
 * terminators). *ids: OUT (free). Streams the id index; no per-row query.
 */
int	meta_sqlite_ids(struct meta_sqlite *, char **ids, size_t *n,
	    char **cause);

/* The pool of reader connections (for meta_timeline_query). */
struct meta_pool	*meta_sqlite_readers(struct meta_sqlite *);

/* Queries (meta_query.c); semantics as store_list etc. in storage/store.h. */
int	meta_query_list(struct meta_sqlite *, const struct store_query *q,
	    struct profile_meta **out, size_t *n, char **cause);
int	meta_query_scan(struct meta_sqlite *, const char *after,
	    size_t limit, struct profile_meta **out, size_t *n,
	    char **cause);
int	meta_query_get(struct meta_sqlite *, const char *id,
	    struct profile_meta *out, char **cause);
int	meta_query_services(struct meta_sqlite *, char ***out, size_t *n,
	    char **cause);
int	meta_query_labels(struct meta_sqlite *, const char *service,
	    const char *key, char ***out, size_t *n, char **cause);

#endif
