/*
 * Internals shared by meta_sqlite.c and meta_query.c: the connection
 * object with its cache of prepared statements, and the store state.
 * Not for use outside storage/.
 */
#ifndef PROFD_META_SQLITE_INT_H
#define PROFD_META_SQLITE_INT_H

#include <pthread.h>
#include <sqlite3.h>

#include "storage/meta_sqlite.h"

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

struct meta_put;

struct meta_sqlite {
	char			*path;

	pthread_mutex_t		 pool_mu;	/* guards idle */
	struct meta_conn	*idle;		/* reader connections */

	/* Writer: one connection, used by whoever is the leader. */
	struct meta_conn	*writer;
	pthread_mutex_t		 mu;		/* guards the fields below */
	pthread_cond_t		 cond;
	int			 leader;	/* someone holds the writer */
	struct meta_put		*pending;	/* rows waiting for a commit */
	struct meta_put		**pending_tail;
	/* Run once per batch before rows with checks (blob durability). */
	int			(*barrier)(void *, char **);
	void			*barrier_arg;

	/* Totals, valid once known; guarded by mu. */
	int			 totals_known;
	int64_t			 total_profiles;
	int64_t			 total_bytes;
};

/* Takes a reader connection from the pool (opening one if none idle). */
struct meta_conn	*meta_sqlite_conn_get(struct meta_sqlite *,
			    char **cause);
/* Returns a reader connection to the pool. */
void			 meta_sqlite_conn_put(struct meta_sqlite *,
			    struct meta_conn *);
/* The cached statement `which` of c, reset and unbound; NULL on error. */
sqlite3_stmt		*meta_sqlite_stmt(struct meta_conn *,
			    enum meta_stmt which, char **cause);
/* Sets *cause to "what: <sqlite error of db>"; returns -1. */
int			 meta_sqlite_error(sqlite3 *db, char **cause,
			    const char *what);

#endif
