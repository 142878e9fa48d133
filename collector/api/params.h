/*
 * Request parameters: the query string split and percent-decoded, and the
 * parsers for profd's parameter syntax: labels (k1=v1,k2=v2), profile
 * types, service names, and the arguments of a list or merge query (times
 * and limits through common/parse.h). Pure functions, unit-tested.
 */
#ifndef PROFD_PARAMS_H
#define PROFD_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "storage/store.h"

#define PARAMS_MAX_KEY		64
#define PARAMS_MAX_VALUE	512
#define PARAMS_MAX_SERVICE	256

struct params {
	size_t	  n;
	char	**keys;		/* decoded */
	char	**raw;		/* as sent, still percent-encoded */
};

/* Splits a query string (may be NULL). Returns -1 on bad encoding. */
int	params_parse(const char *query, struct params *p, char **cause);
void	params_clear(struct params *p);
/* Raw value of the first key, or NULL. */
const char *params_raw(const struct params *p, const char *key);
/*
 * Decoded value of key: returns 1 and *out (new string) if present, 0 if
 * absent, -1 if its percent-encoding is bad or it is not valid UTF-8.
 */
int	params_get(const struct params *p, const char *key, char **out,
	    char **cause);
/* Percent-decodes s[0..len) ('+' is a space); NULL and *cause on error. */
char	*params_decode(const char *s, size_t len, char **cause);

/*
 * Parses raw "k1=v1,k2=v2" (each key and value percent-encoded on its own)
 * into a new array sorted by key then value. Checks key syntax, values
 * (valid UTF-8, length) and count (max). Returns -1 with *cause on error.
 */
int	params_labels(const char *raw, size_t max, struct label **out,
	    size_t *n, char **cause);
/* True if two labels of a sorted array share a key. Sets *dup to it. */
int	params_labels_dup_key(const struct label *, size_t n, const char **dup);
int	params_label_key_valid(const char *key);
/*
 * Adds key=value to a sorted label array, keeping it sorted (after any
 * equal key). Refuses (-1, *cause) a value not UTF-8 or too long, or a
 * label past max (0: no limit).
 */
int	params_labels_add(struct label **l, size_t *n, size_t max,
	    const char *key, const char *value, char **cause);
void	params_labels_free(struct label *, size_t n);

/* True for cpu heap block mutex goroutine threadcreate other trace. */
int	params_type_valid(const char *type);
/* Those types by index, in that order: the index of one (-1: none), the
 * name of an index (NULL: none). */
#define PARAMS_NTYPES	8
int	params_type_index(const char *type);
const char *params_type_name(int i);
/* True for a non-empty service name of printable UTF-8. */
int	params_service_valid(const char *service);

/* Reads and checks service (required) and type (required if need_type). */
int	params_service_type(const struct params *p, int need_type,
	    char **service, char **type, char **cause);

/* The decoded arguments of a list or merge query. */
struct params_query {
	char			*service;
	char			*type;
	struct label		*labels;
	size_t			 nlabels;
	struct store_query	 q;	/* points into the fields above */
};

/*
 * Reads service (required), type (required if need_type), from, to,
 * labels and limit (default_limit when absent, capped at max_limit).
 */
int	params_query_parse(const struct params *p, int64_t now_ns, int need_type,
	    size_t default_limit, size_t max_limit, struct params_query *qa,
	    char **cause);
void	params_query_clear(struct params_query *qa);

/*
 * Splits "ID1+ID2 ID3,ID4" (+, space or comma between) into checked ids
 * appended to *ids (*n of them), at most max; -1 with *cause.
 */
int	params_ids(const char *list, size_t max, char ***ids, size_t *n,
	    char **cause);

#endif
