/*
 * SQLite connections of the metadata store (meta_conn.c): one connection
 * with its cache of prepared statements, a pool of reader connections,
 * and helpers to run statements. Not for use outside storage/embedded/.
 */
#ifndef PROFD_META_CONN_H
#define PROFD_META_CONN_H

#include <pthread.h>
#include <sqlite3.h>

/* How long a connection waits for another's lock. */
#define META_BUSY_TIMEOUT_MS	10000

/* Statements every connection may prepare once and keep. */
enum meta_stmt {
	META_STMT_INSERT_PROFILE,
	META_STMT_INSERT_LABEL,
	META_STMT_LABEL_ID,
	META_STMT_INSERT_PROFILE_LABEL,
	META_STMT_SERVICE_LABEL_ADD,
	META_STMT_PROFILE_LABELS,	/* key, value of one profile, sorted */
	META_STMT_GET,
	META_STMT_LABEL_COUNT,		/* bounded count of one label */
	META_STMT_WINDOW_COUNT,		/* bounded rows of service+time */
	META_STMT_WINDOW_COUNT_TYPE,	/* ... and type */
	META_STMT_NEXT_SERVICE,
	META_STMT_KEYS,
	META_STMT_KEYS_SERVICE,
	META_STMT_VALUES,
	META_STMT_VALUES_SERVICE,
	META_STMT_EXPIRED,
	META_STMT_LABELS_OF,		/* label ids of one profile */
	META_STMT_SERVICE_LABEL_SUB,
	META_STMT_SERVICE_LABEL_GC,
	META_STMT_DELETE_PROFILE_LABELS,
	META_STMT_DELETE_PROFILE,
	META_STMT_TL_ADD,		/* timeline bucket += one profile */
	META_STMT_TL_SUB,		/* timeline bucket -= one profile */
	META_STMT_TL_GC,		/* drop an emptied bucket */
	META_STMT_TL_BUCKETS,		/* buckets of a label, type, minutes */
	META_STMT_TL_BUCKETS_ANY,	/* ... of every type */
	META_STMT_TOTALS_MISSING,	/* ids of rows without totals */
	META_STMT_TOTALS_SET,		/* sets a row's totals once */
	META_STMT_COUNT
};

/* List statements are cached by shape: plan, type given, label count. */
#define META_LIST_MAX_LABELS	8
#define META_LIST_SHAPES	(2 * 2 * (META_LIST_MAX_LABELS + 1))

struct meta_conn {
	sqlite3			*db;
	sqlite3_stmt		*stmt[META_STMT_COUNT];
	sqlite3_stmt		*list[META_LIST_SHAPES];
	struct meta_conn	*next;		/* in the idle pool */
};

/* Reader connections, each used by one thread at a time. */
struct meta_pool {
	char			*path;
	pthread_mutex_t		 mu;		/* guards idle */
	struct meta_conn	*idle;
};

/* Opens one connection to path with profd's pragmas. */
struct meta_conn	*meta_conn_open(const char *path, char **cause);
/* Finalizes a connection's statements and closes it. */
void			 meta_conn_close(struct meta_conn *);
/* The cached statement `which` of c, reset and unbound; NULL on error. */
sqlite3_stmt		*meta_conn_stmt(struct meta_conn *,
			    enum meta_stmt which, char **cause);
/* Sets *cause to "what: <sqlite error of db>"; returns -1. */
int			 meta_conn_error(sqlite3 *db, char **cause,
			    const char *what);
/* Runs SQL with no result rows; -1 with *cause on error. */
int			 meta_conn_exec(sqlite3 *db, const char *sql,
			    char **cause, const char *what);
/* Binds a string that may be NULL (bound as empty). */
int			 meta_conn_bind_text(sqlite3_stmt *, int i,
			    const char *v);
/* Runs a statement to its end (rows ignored) and resets it. */
int			 meta_conn_step_done(struct meta_conn *,
			    sqlite3_stmt *, char **cause, const char *what);

/* Sets up an empty pool of connections to path. */
void			 meta_conn_pool_init(struct meta_pool *,
			    const char *path);
/* Closes every pooled connection; none may be in use. */
void			 meta_conn_pool_close(struct meta_pool *);
/* Takes a reader connection from the pool (opening one if none idle). */
struct meta_conn	*meta_conn_get(struct meta_pool *, char **cause);
/* Returns a reader connection to the pool. */
void			 meta_conn_put(struct meta_pool *, struct meta_conn *);

#endif
