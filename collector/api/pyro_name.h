/*
 * Pyroscope's ingest vocabulary (pyro_name.c): the application name
 * "APP.TYPE{k1=v1,k2=v2}", the table from Pyroscope's profile types to
 * profd's, a bare name's type from a pprof's sample types, and the
 * from/until timestamps whose unit is their number of digits.
 */
#ifndef PROFD_PYRO_NAME_H
#define PROFD_PYRO_NAME_H

#include <stddef.h>
#include <stdint.h>

struct label;

/* One of Pyroscope's profile types, as profd stores it. */
struct pyro_name_type {
	const char	*name;		/* Pyroscope's: "alloc_space" */
	const char	*type;		/* profd's: "heap" */
	const char	*sample, *unit;	/* folded counts: "alloc_space",
					   "bytes" */
	const char	*timed;		/* folded: also count x 1e9 /
					   sampleRate as timed/nanoseconds
					   (NULL: not a sampled clock) */
};

/* A parsed name. */
struct pyro_name {
	char				*app;		/* the service */
	const struct pyro_name_type	*type;		/* NULL: no suffix */
	struct label			*labels;	/* sorted */
	size_t				 nlabels;
};

/*
 * Parses name (decoded from the query) into *out, at most max labels.
 * The suffix after the application's last '.' is the type when the table
 * knows it; otherwise it is part of the application's name. Returns 0,
 * or -1 with *cause.
 */
int	pyro_name_parse(const char *name, size_t max, struct pyro_name *out,
	    char **cause);
void	pyro_name_clear(struct pyro_name *);
/* The table's entry for Pyroscope's type name, or NULL. */
const struct pyro_name_type *pyro_name_type(const char *name);
/* profd's type for a pprof of these sample types ("samples/count,..."). */
const char *pyro_name_type_of_samples(const char *sample_types);
/*
 * The unit of a folded upload's counts for Pyroscope's units parameter
 * ("samples", "objects", "bytes", ...), or NULL if it is not one.
 */
const char *pyro_name_unit(const char *units);
/*
 * A from/until value in ns: digits whose count gives the unit (19 or more
 * ns, 16 us, 13 ms, fewer s; 8 that form a date are YYYYMMDD, UTC).
 * Returns 0, or -1 with *cause.
 */
int	pyro_name_time(const char *s, int64_t *ns, char **cause);

#endif
