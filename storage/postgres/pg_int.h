/*
 * The postgresql backend's shared state and the functions its files give
 * each other (postgres.c dispatches; pg_schema.c, pg_write.c, pg_read.c
 * and pg_blob.c do the work over pg_conn.c's pool). Not for use outside
 * storage/postgres/.
 */
#ifndef PROFD_PG_INT_H
#define PROFD_PG_INT_H

#include <pthread.h>
#include <stdint.h>

#include "storage/postgres/pg_args.h"
#include "storage/postgres/pg_conn.h"
#include "storage/postgres/pg_pool.h"
#include "storage/store.h"

/* Advisory lock keys (one space for profd: "prfd" and a number). */
#define PG_LOCK_SCHEMA		INT64_C(0x7072666400000001)
#define PG_LOCK_RETENTION	INT64_C(0x7072666400000002)
#define PG_LOCK_COMPACT		INT64_C(0x7072666400000003)
#define PG_LOCK_COMMIT		INT64_C(0x7072666400000004)

/* A put waiting for the group commit (pg_write.c). */
struct pg_put {
	const struct profile_meta	*m;
	const void			*blob;
	size_t				 len;
	int				 done;
	int				 rc;
	char				*cause;
	struct pg_put			*next;
};

struct pg {
	struct pg_pool		*pool;
	pthread_mutex_t		 mu;	/* guards what follows */
	pthread_cond_t		 cv;
	int			 leader;	/* a thread is committing */
	struct pg_put		*queue, **tail;
	/* Compaction (pg_rollup.c): one collector at a time, the one
	   whose session holds PG_LOCK_COMPACT on lead. */
	pthread_mutex_t		 lead_mu;
	PGconn			*lead;
	int			 leading;
	int64_t			 late_maxpk, late_since;	/* healing */
};

/*
 * The blob side, behind its own table so an object store can take the
 * bytes later: here a table of bytea, written and deleted inside the
 * metadata's transaction on c.
 */
struct pg_blob_ops {
	int	(*put)(PGconn *c, const struct pg_put *const *puts, size_t n,
		    char **cause);
	int	(*read)(PGconn *c, const char *id, uint8_t **buf,
		    size_t *len, char **cause);
	int	(*remove)(PGconn *c, const char *ids_array, char **cause);
};
extern const struct pg_blob_ops pg_blob_table;

/* Creates or migrates the schema under an advisory lock (pg_schema.c). */
int	pg_schema_migrate(PGconn *c, char **cause);

/* pg_write.c: group-committed puts, retention, totals backfill. */
int	pg_write_put(struct pg *, const struct profile_meta *m,
	    const void *blob, size_t len, char **cause);
int	pg_write_delete_before(struct pg *, int64_t cutoff, size_t batch,
	    size_t *deleted, char **cause);
int	pg_write_set_totals(struct pg *, char *const *ids,
	    char *const *totals, size_t n, char **cause);

/* pg_read.c: queries. */
int	pg_read_list(struct pg *, const struct store_query *q,
	    struct profile_meta **out, size_t *n, char **cause);
int	pg_read_scan(struct pg *, const char *after, size_t limit,
	    struct profile_meta **out, size_t *n, char **cause);
int	pg_read_get(struct pg *, const char *id, struct profile_meta *out,
	    char **cause);
int	pg_read_blob(struct pg *, const char *id, uint8_t **buf,
	    size_t *len, char **cause);
int	pg_read_services(struct pg *, char ***out, size_t *n, char **cause);
int	pg_read_labels(struct pg *, const char *service, const char *key,
	    char ***out, size_t *n, char **cause);
int	pg_read_totals(struct pg *, int64_t *profiles, int64_t *bytes,
	    char **cause);
int	pg_read_missing_totals(struct pg *, const char *after, size_t limit,
	    char ***out, size_t *n, char **cause);
int	pg_read_timeline(struct pg *, const struct store_query *q,
	    struct store_timeline *tl, char **cause);

/* pg_plan.c: a time-window merge's pieces, over rollups. */
int	pg_plan_query(struct pg *, const struct store_query *q,
	    struct store_plan *out, char **cause);
/* The label ids of q's pairs: 0, 1 if a pair was never stored, error. */
int	pg_read_label_ids(PGconn *c, const struct store_query *q,
	    int64_t *ids, char **cause);

/* pg_rollup.c: compaction, by the collector that leads. */
int	pg_rollup_lead(struct pg *, char **cause);
/*
 * The done buckets of (service, type, level) in [b0, b1) on c: 0 with a
 * new sorted array (free), or pg_conn_exec's failure code with *cause.
 */
int	pg_rollup_done_in(PGconn *c, const char *service, const char *type,
	    int level, int64_t b0, int64_t b1, int64_t **out, size_t *n,
	    char **cause);
void	pg_rollup_close(struct pg *);
int	pg_rollup_next(struct pg *, int64_t now_ns, int64_t delay_ns,
	    int64_t after_ns, struct store_compaction **out, char **cause);
int	pg_rollup_commit(struct pg *, struct store_compaction **c, size_t n,
	    char **cause);
int	pg_rollup_abandon(struct pg *, struct store_compaction *c,
	    char **cause);

/* pg_rollup_maint.c: retention, healing and figures of rollups. */
int	pg_rollup_maint_delete_before(struct pg *, int64_t cutoff,
	    size_t batch, char **cause);
int	pg_rollup_maint_heal(struct pg *, int64_t quiet_ns, size_t *minutes,
	    char **cause);
int	pg_rollup_maint_stats(struct pg *, struct store_rollup_stats *st,
	    char **cause);

#endif
