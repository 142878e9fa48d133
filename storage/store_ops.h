/*
 * The backend seam behind storage/store.h: a backend is a table of
 * functions over its own opaque state, and store.c only dispatches. The
 * embedded backend keeps SQLite metadata and blob files, the postgresql
 * backend both in one database; another adds a table here and a case in
 * store.c. A function returns STORE_UNAVAILABLE (not -1) when the backend
 * cannot be reached; store.c turns it into -1 and store_unavailable().
 */
#ifndef PROFD_STORE_OPS_H
#define PROFD_STORE_OPS_H

#include "storage/store.h"

struct store_ops {
	const char	*name;
	void		*(*open)(const struct store_options *o,
			    struct store_recovery *rec, char **cause);
	void		 (*close)(void *be);
	int		 (*put)(void *be, const struct profile_meta *m,
			    const void *blob, size_t len, char **cause);
	int		 (*list)(void *be, const struct store_query *q,
			    struct profile_meta **out, size_t *n, char **cause);
	int		 (*scan)(void *be, const char *after, size_t limit,
			    struct profile_meta **out, size_t *n,
			    char **cause);
	int		 (*timeline)(void *be, const struct store_query *q,
			    struct store_timeline *tl, char **cause);
	int		 (*missing_totals)(void *be, const char *after,
			    size_t limit, char ***out, size_t *n,
			    char **cause);
	int		 (*set_totals)(void *be, char *const *ids,
			    char *const *totals, size_t n, char **cause);
	int		 (*get)(void *be, const char *id,
			    struct profile_meta *out, char **cause);
	int		 (*read_blob)(void *be, const char *id, uint8_t **buf,
			    size_t *len, char **cause);
	int		 (*services)(void *be, char ***out, size_t *n,
			    char **cause);
	int		 (*labels)(void *be, const char *service,
			    const char *key, char ***out, size_t *n,
			    char **cause);
	int		 (*delete_before)(void *be, int64_t cutoff,
			    size_t batch, size_t *deleted, char **cause);
	int		 (*totals)(void *be, int64_t *profiles, int64_t *bytes,
			    char **cause);
	int		 (*plan)(void *be, const struct store_query *q,
			    struct store_plan *out, char **cause);
	int		 (*compact_next)(void *be, int64_t now_ns,
			    int64_t delay_ns, int64_t after_ns,
			    struct store_compaction **out, char **cause);
	int		 (*compact_commit)(void *be,
			    struct store_compaction **c, size_t n,
			    char **cause);
	int		 (*compact_abandon)(void *be,
			    struct store_compaction *c, char **cause);
	int		 (*compact_heal)(void *be, int64_t quiet_ns,
			    size_t *minutes, char **cause);
	int		 (*rollup_stats)(void *be,
			    struct store_rollup_stats *st, char **cause);
	/* Not on an open store: rebuilds its metadata (store_rebuild). */
	int		 (*rebuild)(const char *data_dir, store_legacy_cb legacy,
			    void *arg, struct store_rebuild *rep,
			    char **cause);
};

/* The embedded backend: storage/embedded/embedded.c. */
extern const struct store_ops embedded_store_ops;
/* The postgresql backend: storage/postgres/postgres.c. */
extern const struct store_ops postgres_store_ops;

#endif
