/*
 * Pyroscope's sample_type_config (pyro_config.c): the JSON its SDKs send
 * beside a pprof to say what each sample type is.
 */
#ifndef PROFD_PYRO_CONFIG_H
#define PROFD_PYRO_CONFIG_H

#include <stddef.h>

/* One sample type's settings. */
struct pyro_config_entry {
	char	*name;			/* the pprof's sample type */
	char	*display;		/* "display-name", or NULL */
	char	*units, *agg;		/* or NULL */
	int	 cumulative;
};

struct pyro_config {
	struct pyro_config_entry	*e;
	size_t				 n;
};

/* The largest sample_type_config taken, in bytes. */
#define PYRO_CONFIG_MAX		65536

/*
 * Parses len bytes of JSON ({"alloc_space": {"units": "bytes",
 * "aggregation": "sum", "display-name": "...", "cumulative": true}, ...})
 * into *c: 0, or -1 with *cause.
 */
int	pyro_config_parse(const char *json, size_t len, struct pyro_config *c,
	    char **cause);
void	pyro_config_clear(struct pyro_config *);
/*
 * profd's type named by the first display-name that is one of
 * Pyroscope's types (Go's SDK names its block and mutex profiles so:
 * "block_count", "mutex_count"), or NULL.
 */
const char *pyro_config_type(const struct pyro_config *);

#endif
