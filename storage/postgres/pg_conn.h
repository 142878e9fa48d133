/*
 * Statements on one connection of the postgresql backend (pg_conn.c).
 * Errors are classed: a server that cannot be reached, is restarting or
 * refuses connections is STORE_UNAVAILABLE (the caller answers 503 and
 * tries again later), a deadlock or serialization failure is PG_RETRY,
 * anything else -1. Not for use outside storage/postgres/.
 */
#ifndef PROFD_PG_CONN_H
#define PROFD_PG_CONN_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

/* A transaction to run again: deadlock or serialization failure. */
#define PG_RETRY	(-3)

/*
 * Runs sql with n text parameters (values[i] NULL: SQL NULL; lens and
 * formats may be NULL for all text) and text results. 0 with *res set
 * (PQclear it; res may be NULL to drop it), else -1, PG_RETRY or
 * STORE_UNAVAILABLE with *cause "what: message".
 */
int	pg_conn_exec(PGconn *, const char *sql, int n,
	    const char *const *values, const int *lens, const int *formats,
	    PGresult **res, char **cause, const char *what);
/*
 * pg_conn_exec of sql with binary results, prepared once per connection
 * as statement name (on first use, so after a reconnect too): no parse
 * and plan per call, for statements run thousands of times a second.
 */
int	pg_conn_exec_prepared_binary(PGconn *, const char *name,
	    const char *sql, int n, const char *const *values, PGresult **res,
	    char **cause, const char *what);
/* pg_conn_exec of SQL without parameters or result. */
int	pg_conn_cmd(PGconn *, const char *sql, char **cause,
	    const char *what);
/*
 * BEGIN, then pg_try_advisory_xact_lock(key): 0 with the transaction open
 * and *locked, or an error code (rolled back) with *cause.
 */
int	pg_conn_begin_try_lock(PGconn *, int64_t key, int *locked,
	    char **cause, const char *what);
/* Column col of row r as an int64 (0 if NULL). */
int64_t	pg_conn_int(const PGresult *, int r, int col);
/* Column col of row r as a new string (NULL if SQL NULL). */
char	*pg_conn_str(const PGresult *, int r, int col);

/* Text of an int64, in a caller's buffer of at least 24 bytes. */
const char	*pg_conn_i64(char *buf, int64_t v);

#endif
