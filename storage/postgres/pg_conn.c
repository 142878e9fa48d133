/*
 * Running statements on one libpq connection of the postgresql backend,
 * and classing their failures: a server that cannot be reached, is
 * shutting down or starting, or refuses connections is STORE_UNAVAILABLE
 * (the caller answers 503), a deadlock or serialization failure is
 * PG_RETRY (run the transaction again), anything else -1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "storage/postgres/pg_conn.h"
#include "storage/store.h"

/* The class of a failed result: STORE_UNAVAILABLE, PG_RETRY or -1. */
static int
pg_conn_class(PGconn *c, const PGresult *res)
{
	const char	*state = res ? PQresultErrorField(res,
	    PG_DIAG_SQLSTATE) : NULL;

	if (PQstatus(c) != CONNECTION_OK)
		return STORE_UNAVAILABLE;
	if (state == NULL)
		return -1;
	/* 08: connection exception; 57P0x: shutdown, crash, starting;
	   53300: too many connections; 25006: read-only (a standby). */
	if (strncmp(state, "08", 2) == 0 || strncmp(state, "57P", 3) == 0 ||
	    strcmp(state, "53300") == 0 || strcmp(state, "25006") == 0)
		return STORE_UNAVAILABLE;
	if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0)
		return PG_RETRY;
	return -1;
}

/* Turns a result into 0 (*res set) or a classed failure (*cause). */
static int
pg_conn_result(PGconn *c, PGresult *r, PGresult **res, char **cause,
    const char *what)
{
	ExecStatusType	 st;
	char		*msg;
	int		 rc;

	if (res != NULL)
		*res = NULL;
	st = r != NULL ? PQresultStatus(r) : PGRES_FATAL_ERROR;
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
		if (res != NULL)
			*res = r;
		else
			PQclear(r);
		return 0;
	}
	rc = pg_conn_class(c, r);
	if (cause != NULL) {
		msg = xstrdup(r != NULL && *PQresultErrorMessage(r) ?
		    PQresultErrorMessage(r) : PQerrorMessage(c));
		msg[strcspn(msg, "\n")] = '\0';
		xcause(cause, "%s%s: %s", rc == STORE_UNAVAILABLE ?
		    "postgresql unavailable: " : "", what ? what : "query",
		    msg);
		free(msg);
	}
	PQclear(r);
	return rc;
}

/* Runs one statement with parameters, results as text or binary. */
static int
pg_conn_run(PGconn *c, const char *sql, int n, const char *const *values,
    const int *lens, const int *formats, int binary, PGresult **res,
    char **cause, const char *what)
{
	PGresult	*r;

	/* Without parameters, the simple protocol: several statements. */
	if (n == 0 && !binary)
		r = PQexec(c, sql);
	else
		r = PQexecParams(c, sql, n, NULL, values, lens, formats,
		    binary);
	return pg_conn_result(c, r, res, cause, what);
}

/* Runs a statement prepared once per connection, binary results. */
int
pg_conn_exec_prepared_binary(PGconn *c, const char *name, const char *sql,
    int n, const char *const *values, PGresult **res, char **cause,
    const char *what)
{
	PGresult	*r;
	const char	*state;
	int		 rc;

	r = PQexecPrepared(c, name, n, values, NULL, NULL, 1);
	state = r != NULL ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	if (state != NULL && strcmp(state, "26000") == 0) {
		/* Not prepared on this connection yet. */
		PQclear(r);
		rc = pg_conn_result(c, PQprepare(c, name, sql, n, NULL), NULL,
		    cause, what);
		if (rc != 0)
			return rc;
		r = PQexecPrepared(c, name, n, values, NULL, NULL, 1);
	}
	return pg_conn_result(c, r, res, cause, what);
}

/* Runs one statement with parameters, text results. */
int
pg_conn_exec(PGconn *c, const char *sql, int n, const char *const *values,
    const int *lens, const int *formats, PGresult **res, char **cause,
    const char *what)
{
	return pg_conn_run(c, sql, n, values, lens, formats, 0, res, cause,
	    what);
}

/* Runs SQL without parameters or rows. */
int
pg_conn_cmd(PGconn *c, const char *sql, char **cause, const char *what)
{
	return pg_conn_exec(c, sql, 0, NULL, NULL, NULL, NULL, cause, what);
}

/* Opens a transaction holding key if free; see the header. */
int
pg_conn_begin_try_lock(PGconn *c, int64_t key, int *locked, char **cause,
    const char *what)
{
	PGresult	*r;
	char		 k[24];
	const char	*v[1] = { pg_conn_i64(k, key) };
	int		 rc;

	*locked = 0;
	if ((rc = pg_conn_cmd(c, "BEGIN", cause, "begin")) != 0)
		return rc;
	rc = pg_conn_exec(c, "SELECT pg_try_advisory_xact_lock($1::bigint)",
	    1, v, NULL, NULL, &r, cause, what);
	if (rc != 0) {
		(void)pg_conn_cmd(c, "ROLLBACK", NULL, NULL);
		return rc;
	}
	*locked = PQgetvalue(r, 0, 0)[0] == 't';
	PQclear(r);
	return 0;
}

/* An int64 column. */
int64_t
pg_conn_int(const PGresult *r, int row, int col)
{
	if (PQgetisnull(r, row, col))
		return 0;
	return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

/* A string column, copied. */
char *
pg_conn_str(const PGresult *r, int row, int col)
{
	if (PQgetisnull(r, row, col))
		return NULL;
	return xstrdup(PQgetvalue(r, row, col));
}

/* Formats an int64. */
const char *
pg_conn_i64(char *buf, int64_t v)
{
	snprintf(buf, 24, "%lld", (long long)v);
	return buf;
}

