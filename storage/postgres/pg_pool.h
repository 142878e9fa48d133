/*
 * The postgresql backend's pool of connections (pg_pool.c): up to
 * --store-pool libpq connections, each used by one thread at a time,
 * (re)connected on demand. Not for use outside storage/postgres/.
 */
#ifndef PROFD_PG_POOL_H
#define PROFD_PG_POOL_H

#include <stddef.h>

#include <libpq-fe.h>

struct pg_pool;

/*
 * A pool of up to size connections to uri (a libpq connection URI or
 * string). Connects one connection at once to check the server and the
 * credentials: NULL with *cause when that fails.
 */
struct pg_pool	*pg_pool_new(const char *uri, size_t size, char **cause);
void		 pg_pool_free(struct pg_pool *);
/*
 * Takes a connection into *out, waiting while all are in use; connects
 * (again) if it has none or lost it. 0, or STORE_UNAVAILABLE with *cause
 * when the server cannot be reached.
 */
int		 pg_pool_get(struct pg_pool *, PGconn **out, char **cause);
/* Returns a connection; one left inside a transaction is rolled back. */
void		 pg_pool_put(struct pg_pool *, PGconn *);
/*
 * A connection outside the pool, for a session that must outlive one
 * call (an advisory lock held while leading): 0, or STORE_UNAVAILABLE.
 */
int		 pg_pool_dial(struct pg_pool *, PGconn **out, char **cause);
/* Whether a connection that sat idle is still good (nothing readable). */
int		 pg_pool_idle_ok(PGconn *);

#endif
