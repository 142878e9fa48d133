/*
 * The postgresql backend's connections: a fixed-size pool of libpq
 * connections, each used by one thread at a time. A connection is made
 * when first needed and made again when the server dropped it (a restart,
 * a failover), so profd never has to be restarted after the database was:
 * until the server is back, every call fails fast as STORE_UNAVAILABLE.
 * Every connection sets synchronous_commit on (a commit is on the
 * server's disk before we acknowledge), UTF-8 and a connect timeout.
 */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/xmalloc.h"
#include "storage/postgres/pg_conn.h"
#include "storage/postgres/pg_pool.h"
#include "storage/store.h"

/* Seconds a connection attempt may take, unless the URI says. */
#define PG_POOL_CONNECT_TIMEOUT	"5"

struct pg_pool {
	char		*uri;
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	PGconn		**idle;		/* NULL: not connected */
	size_t		 nidle, size;
};

/* libpq's notices (NOTICE, WARNING) go to our log, not to stderr. */
static void
pg_pool_notice(void *arg, const char *msg)
{
	(void)arg;
	log_debug("postgresql: %.*s", (int)strcspn(msg, "\n"), msg);
}

/* Connects once: 0, or STORE_UNAVAILABLE / -1 with *cause. */
static int
pg_pool_connect(const char *uri, PGconn **out, char **cause)
{
	/* Defaults the URI may override. A server that vanishes without
	   closing the connection (a cut cable, a dead host) is noticed by
	   keepalives and tcp_user_timeout within about 30 s, instead of a
	   thread blocked in recv() for good; statement_timeout bounds a
	   statement stuck behind a lock. */
	const char *const keys[] = { "connect_timeout", "application_name",
	    "client_encoding", "keepalives", "keepalives_idle",
	    "keepalives_interval", "keepalives_count", "tcp_user_timeout",
	    "options", "dbname", NULL };
	const char *const vals[] = { PG_POOL_CONNECT_TIMEOUT, "profd", "UTF8",
	    "1", "10", "5", "3", "30000", "-c statement_timeout=60s", uri,
	    NULL };
	PGconn	*c;
	char	*msg;
	int	 rc;

	*out = NULL;
	c = PQconnectdbParams(keys, vals, 1);
	if (c == NULL)
		return xcause(cause, "postgresql: out of memory");
	if (PQstatus(c) != CONNECTION_OK) {
		msg = xstrdup(PQerrorMessage(c));
		msg[strcspn(msg, "\n")] = '\0';
		xcause(cause, "postgresql: cannot connect: %s", msg);
		free(msg);
		PQfinish(c);
		return STORE_UNAVAILABLE;
	}
	PQsetNoticeProcessor(c, pg_pool_notice, NULL);
	rc = pg_conn_cmd(c, "SET synchronous_commit = on", cause,
	    "set synchronous_commit");
	if (rc != 0) {
		PQfinish(c);
		return rc;
	}
	*out = c;
	return 0;
}

/* Makes a pool and checks the server with one connection. */
struct pg_pool *
pg_pool_new(const char *uri, size_t size, char **cause)
{
	struct pg_pool	*p;
	PGconn		*c;

	if (pg_pool_connect(uri, &c, cause) != 0)
		return NULL;
	p = xcalloc(1, sizeof *p);
	p->uri = xstrdup(uri);
	p->size = size > 0 ? size : 1;
	p->idle = xcalloc(p->size, sizeof *p->idle);
	p->idle[0] = c;
	p->nidle = p->size;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	return p;
}

/* Closes every connection; none may be in use. */
void
pg_pool_free(struct pg_pool *p)
{
	size_t	i;

	if (p == NULL)
		return;
	for (i = 0; i < p->nidle; i++)
		if (p->idle[i] != NULL)
			PQfinish(p->idle[i]);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p->idle);
	free(p->uri);
	free(p);
}

/* Whether an idle connection is still good: we never LISTEN, so
   anything readable on its socket is the server ending it (a FATAL
   "terminating connection", then end of file) or the end itself. Both may
   arrive in separate reads, so the mere readability condemns it. */
int
pg_pool_idle_ok(PGconn *c)
{
	struct pollfd pfd;

	if (PQstatus(c) != CONNECTION_OK || (pfd.fd = PQsocket(c)) < 0)
		return 0;
	pfd.events = POLLIN;
	pfd.revents = 0;
	return poll(&pfd, 1, 0) == 0;
}

/* Takes a connection, connecting when needed. */
int
pg_pool_get(struct pg_pool *p, PGconn **out, char **cause)
{
	PGconn	*c;
	int	 rc;

	pthread_mutex_lock(&p->mu);
	while (p->nidle == 0)
		pthread_cond_wait(&p->cv, &p->mu);
	c = p->idle[--p->nidle];
	pthread_mutex_unlock(&p->mu);
	if (c != NULL && !pg_pool_idle_ok(c)) {
		PQfinish(c);
		c = NULL;
	}
	if (c == NULL && (rc = pg_pool_connect(p->uri, &c, cause)) != 0) {
		pg_pool_put(p, NULL);
		return rc;
	}
	*out = c;
	return 0;
}

/* Gives a connection back (NULL: a slot whose connection was dropped). */
void
pg_pool_put(struct pg_pool *p, PGconn *c)
{
	if (c != NULL && PQstatus(c) == CONNECTION_OK &&
	    PQtransactionStatus(c) != PQTRANS_IDLE)
		(void)pg_conn_cmd(c, "ROLLBACK", NULL, NULL);
	if (c != NULL && PQstatus(c) != CONNECTION_OK) {
		PQfinish(c);
		c = NULL;
	}
	pthread_mutex_lock(&p->mu);
	p->idle[p->nidle++] = c;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}


/* A connection of its own, outside the pool (same settings). */
int
pg_pool_dial(struct pg_pool *p, PGconn **out, char **cause)
{
	return pg_pool_connect(p->uri, out, cause);
}
