/*
 * The postgresql backend's schema: the same tables as the embedded store's
 * meta.db (profiles, labels, profile_labels, service_labels) plus blobs
 * (bytea, STORAGE EXTERNAL: uploads are already compressed, so TOAST
 * stores them as they are) and profd_totals (one row: profiles and bytes,
 * kept by every write, for /metrics). Text columns use the "C" collation,
 * so sorting is by bytes as in SQLite, whatever the database's locale.
 *
 * Version 2 adds rollups. profd_schema holds the version. Collectors starting together migrate
 * one at a time under an advisory lock; one that finds a newer version
 * than it knows refuses to start (it would write rows the newer schema
 * does not expect).
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/xmalloc.h"
#include "storage/postgres/pg_int.h"

#define PG_SCHEMA_VERSION	2

static const char pg_schema_v1[] =
	"CREATE TABLE profiles ("
	" pk bigserial PRIMARY KEY,"
	" id text COLLATE \"C\" NOT NULL UNIQUE,"
	" service text COLLATE \"C\" NOT NULL,"
	" type text COLLATE \"C\" NOT NULL,"
	" created_at bigint NOT NULL,"
	" size bigint NOT NULL,"
	" samples bigint NOT NULL DEFAULT 0,"
	" sample_types text COLLATE \"C\" NOT NULL DEFAULT '',"
	" duration_ns bigint NOT NULL DEFAULT 0,"
	" totals text COLLATE \"C\","
	" rolled smallint NOT NULL DEFAULT -1);"
	"CREATE INDEX profiles_service_type_time"
	" ON profiles (service, type, created_at, id);"
	"CREATE INDEX profiles_service_time"
	" ON profiles (service, created_at, id);"
	"CREATE INDEX profiles_time ON profiles (created_at);"
	"CREATE INDEX profiles_no_totals ON profiles (id) WHERE totals IS NULL;"
	"CREATE TABLE labels ("
	" label_id bigserial PRIMARY KEY,"
	" key text COLLATE \"C\" NOT NULL,"
	" value text COLLATE \"C\" NOT NULL,"
	" UNIQUE (key, value));"
	"CREATE TABLE profile_labels ("
	" label_id bigint NOT NULL,"
	" profile_pk bigint NOT NULL,"
	" service text COLLATE \"C\" NOT NULL,"
	" created_at bigint NOT NULL,"
	" PRIMARY KEY (label_id, profile_pk));"
	"CREATE INDEX profile_labels_profile ON profile_labels (profile_pk);"
	"CREATE INDEX profile_labels_label_time"
	" ON profile_labels (label_id, service, created_at);"
	"CREATE TABLE service_labels ("
	" service text COLLATE \"C\" NOT NULL,"
	" label_id bigint NOT NULL,"
	" refs bigint NOT NULL,"
	" PRIMARY KEY (service, label_id));"
	"CREATE INDEX service_labels_label ON service_labels (label_id);"
	"CREATE TABLE blobs ("
	" id text COLLATE \"C\" PRIMARY KEY,"
	" data bytea NOT NULL);"
	"ALTER TABLE blobs ALTER COLUMN data SET STORAGE EXTERNAL;"
	"CREATE TABLE profd_totals (profiles bigint NOT NULL,"
	" bytes bigint NOT NULL);"
	"INSERT INTO profd_totals VALUES (0, 0);";

/*
 * Version 2: rollups (as the embedded store's, docs/DESIGN.md
 * "Rollups"): their rows, their buckets' marks, the profiles in none yet
 * (profiles_loose), rids from a sequence (a rollup's blob is in blobs
 * under its name) and the figures /metrics shows, kept by every write.
 */
static const char pg_schema_v2[] =
	"CREATE INDEX profiles_loose ON profiles (created_at, pk)"
	" WHERE rolled <= 0;"
	"CREATE SEQUENCE rollup_rid;"
	"CREATE TABLE rollups ("
	" rid bigint PRIMARY KEY,"
	" service text COLLATE \"C\" NOT NULL,"
	" type text COLLATE \"C\" NOT NULL,"
	" level smallint NOT NULL,"
	" bucket bigint NOT NULL,"
	" label_id bigint NOT NULL,"
	" sample_types text COLLATE \"C\" NOT NULL,"
	" profiles bigint NOT NULL,"
	" size bigint NOT NULL,"
	" profile text COLLATE \"C\","
	" common text NOT NULL,"
	" uniform smallint NOT NULL);"
	"CREATE INDEX rollups_group"
	" ON rollups (service, type, label_id, level, bucket);"
	"CREATE INDEX rollups_bucket ON rollups (service, type, level, bucket);"
	"CREATE INDEX rollups_time ON rollups (bucket);"
	"CREATE TABLE rollup_buckets ("
	" service text COLLATE \"C\" NOT NULL,"
	" type text COLLATE \"C\" NOT NULL,"
	" level smallint NOT NULL,"
	" bucket bigint NOT NULL,"
	" done smallint NOT NULL,"
	" PRIMARY KEY (service, type, level, bucket));"
	"CREATE INDEX rollup_buckets_todo ON rollup_buckets (level, bucket)"
	" WHERE done = 0;"
	"CREATE INDEX rollup_buckets_time ON rollup_buckets (bucket);"
	"CREATE TABLE profd_rollup_totals (level smallint PRIMARY KEY,"
	" rows bigint NOT NULL, bytes bigint NOT NULL);"
	"INSERT INTO profd_rollup_totals VALUES (0, 0, 0), (1, 0, 0),"
	" (2, 0, 0), (3, 0, 0);";

/* The steps from version i to i + 1. */
static const char *const pg_schema_steps[PG_SCHEMA_VERSION] = {
	pg_schema_v1, pg_schema_v2
};

/* Reads the version (0: no schema yet). */
static int
pg_schema_version(PGconn *c, int *version, char **cause)
{
	PGresult	*r;
	int		 rc;

	*version = 0;
	rc = pg_conn_cmd(c, "CREATE TABLE IF NOT EXISTS profd_schema "
	    "(version integer NOT NULL)", cause, "create profd_schema");
	if (rc != 0)
		return rc;
	rc = pg_conn_exec(c, "SELECT max(version) FROM profd_schema", 0,
	    NULL, NULL, NULL, &r, cause, "read schema version");
	if (rc != 0)
		return rc;
	*version = (int)pg_conn_int(r, 0, 0);
	PQclear(r);
	return 0;
}

/* Creates the schema, or checks it, holding the schema lock. */
static int
pg_schema_locked(PGconn *c, char **cause)
{
	char	sql[64];
	int	version, rc;

	if ((rc = pg_schema_version(c, &version, cause)) != 0)
		return rc;
	if (version > PG_SCHEMA_VERSION)
		return xcause(cause, "postgresql schema version %d is newer "
		    "than this profd's (%d): upgrade profd", version,
		    PG_SCHEMA_VERSION);
	if (version == PG_SCHEMA_VERSION)
		return 0;
	if ((rc = pg_conn_cmd(c, "BEGIN", cause, "begin")) != 0)
		return rc;
	for (; version < PG_SCHEMA_VERSION; version++) {
		if ((rc = pg_conn_cmd(c, pg_schema_steps[version], cause,
		    "migrate schema")) != 0)
			goto rollback;
	}
	snprintf(sql, sizeof sql, "INSERT INTO profd_schema VALUES (%d)",
	    PG_SCHEMA_VERSION);
	if ((rc = pg_conn_cmd(c, "DELETE FROM profd_schema", cause,
	    "set schema version")) != 0 ||
	    (rc = pg_conn_cmd(c, sql, cause, "set schema version")) != 0 ||
	    (rc = pg_conn_cmd(c, "COMMIT", cause, "commit schema")) != 0)
		goto rollback;
	return 0;
rollback:
	(void)pg_conn_cmd(c, "ROLLBACK", NULL, NULL);
	return rc;
}

/* Creates or migrates the schema, one collector at a time. */
int
pg_schema_migrate(PGconn *c, char **cause)
{
	char		 key[24];
	const char	*v[1] = { pg_conn_i64(key, PG_LOCK_SCHEMA) };
	int		 rc;

	rc = pg_conn_exec(c, "SELECT pg_advisory_lock($1::bigint)", 1, v,
	    NULL, NULL, NULL, cause, "lock schema");
	if (rc != 0)
		return rc;
	rc = pg_schema_locked(c, cause);
	(void)pg_conn_exec(c, "SELECT pg_advisory_unlock($1::bigint)", 1, v,
	    NULL, NULL, NULL, NULL, NULL);
	return rc;
}
