/*
 * The postgresql backend's blob side: the uploaded bytes, as uploaded, in
 * the blobs table (bytea), written and deleted in the same transaction as
 * their rows, so a row never points at missing bytes and no bytes outlive
 * their row. The bytes travel as binary parameters (no hex or escaping),
 * many rows to one INSERT. Reached only through pg_blob_table, the seam
 * where an object store can take over the bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "storage/postgres/pg_int.h"

/* Rows per INSERT (two parameters each). */
#define PG_BLOB_ROWS	256

/* Inserts n blobs in statements of PG_BLOB_ROWS rows. */
static int
pg_blob_put(PGconn *c, const struct pg_put *const *puts, size_t n,
    char **cause)
{
	struct pg_args	 p = { 0 };
	char			*sql = NULL, *tmp;
	size_t			 i, j, k;
	int			 rc = 0;

	for (i = 0; i < n && rc == 0; i += k) {
		k = n - i < PG_BLOB_ROWS ? n - i : PG_BLOB_ROWS;
		sql = xstrdup("INSERT INTO blobs (id, data) VALUES ");
		for (j = 0; j < k; j++) {
			tmp = xasprintf("%s%s($%zu, $%zu)", sql, j ? ", " : "",
			    2 * j + 1, 2 * j + 2);
			free(sql);
			sql = tmp;
			pg_args_str(&p, puts[i + j]->m->id);
			pg_args_bin(&p, puts[i + j]->blob, puts[i + j]->len);
		}
		rc = pg_args_exec(c, sql, &p, NULL, cause, "write blobs");
		free(sql);
		pg_args_free(&p);
	}
	return rc;
}

/* Reads one blob: 0, 1 not found, or an error. */
static int
pg_blob_read(PGconn *c, const char *id, uint8_t **buf, size_t *len,
    char **cause)
{
	PGresult	*r;
	const char	*v[1] = { id };
	int		 rc;

	*buf = NULL;
	*len = 0;
	rc = pg_conn_exec_prepared_binary(c, "profd_blob_read",
	    "SELECT data FROM blobs WHERE id = $1", 1, v, &r, cause,
	    "read blob");
	if (rc != 0)
		return rc;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return 1;
	}
	*len = (size_t)PQgetlength(r, 0, 0);
	*buf = xmalloc(*len ? *len : 1);
	memcpy(*buf, PQgetvalue(r, 0, 0), *len);
	PQclear(r);
	return 0;
}

/* Deletes the blobs of an array literal of ids. */
static int
pg_blob_remove(PGconn *c, const char *ids_array, char **cause)
{
	const char	*v[1] = { ids_array };

	return pg_conn_exec(c, "DELETE FROM blobs WHERE id = ANY($1::text[])",
	    1, v, NULL, NULL, NULL, cause, "delete blobs");
}

const struct pg_blob_ops pg_blob_table = {
	.put = pg_blob_put,
	.read = pg_blob_read,
	.remove = pg_blob_remove,
};
