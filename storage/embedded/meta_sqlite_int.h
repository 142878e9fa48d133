/*
 * Internals shared by the files of the SQLite metadata store: the store
 * state and the writer's lock.
 * Not for use outside storage/embedded/.
 */
#ifndef PROFD_META_SQLITE_INT_H
#define PROFD_META_SQLITE_INT_H

#include <pthread.h>
#include <sqlite3.h>

#include "storage/embedded/meta_conn.h"
#include "storage/embedded/meta_sqlite.h"

struct meta_put;

struct meta_sqlite {
	struct meta_pool	 pool;		/* reader connections */

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

/* Waits until this thread holds the writer (meta_sqlite.c). */
void	meta_sqlite_writer_acquire(struct meta_sqlite *);
/* Gives the writer up and wakes every waiter. */
void	meta_sqlite_writer_release(struct meta_sqlite *);

#endif
