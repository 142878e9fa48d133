/*
 * Statement arguments for the postgresql backend (pg_args.c): parameter
 * lists and array literals. Not for use outside storage/postgres/.
 */
#ifndef PROFD_PG_ARGS_H
#define PROFD_PG_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "storage/postgres/pg_conn.h"

/*
 * A growing list of parameters (and the text of its integers), for
 * statements built with a variable number of them.
 */
struct pg_args {
	const char	**v;
	int		 *len;
	int		 *fmt;
	char		**own;		/* strings to free */
	size_t		  n, cap, nown, capown;
};
/* Appends a string parameter (not copied; NULL: SQL NULL); its number. */
int	pg_args_str(struct pg_args *, const char *);
/* Appends an integer parameter; its number. */
int	pg_args_int(struct pg_args *, int64_t);
/* Appends a binary parameter (not copied); its number. */
int	pg_args_bin(struct pg_args *, const void *, size_t);
void	pg_args_free(struct pg_args *);
/* pg_conn_exec with the parameters of p. */
int	pg_args_exec(PGconn *, const char *sql, const struct pg_args *,
	    PGresult **res, char **cause, const char *what);

/*
 * An array literal built element by element ("{1,2}", "{\"a\",NULL}"),
 * so a whole batch of rows goes in one parameter per column (unnest).
 */
struct pg_args_array {
	char	*buf;
	size_t	 len, cap, n;
};
/* Appends a string element (NULL: SQL NULL). */
void	pg_args_array_str(struct pg_args_array *, const char *);
/* Appends an integer element. */
void	pg_args_array_int(struct pg_args_array *, int64_t);
/* The literal so far ("{}" when empty); valid until the next append. */
const char	*pg_args_array_text(struct pg_args_array *);
void	pg_args_array_free(struct pg_args_array *);

#endif
