/*
 * Folded stacks ("main;work;hash 42", root first) to pprof (folded.c).
 */
#ifndef PROFD_FOLDED_H
#define PROFD_FOLDED_H

#include <stddef.h>
#include <stdint.h>

struct folded_options {
	const char	*type, *unit;	/* the counts: "samples", "count" */
	const char	*type2, *unit2;	/* optional: count * period, the
					   profile's period type too */
	int64_t		 period;
	int		 lines;		/* a line is a stack, counting 1 */
	int64_t		 time_nanos, duration_nanos;
	size_t		 max_frames;	/* distinct frames; 0: no limit */
};

/*
 * Converts len bytes of folded text into a gzipped pprof: 0 with *out
 * (free) and *outlen, or -1 with *cause naming the line.
 */
int	folded_to_pprof(const char *text, size_t len,
	    const struct folded_options *o, uint8_t **out, size_t *outlen,
	    char **cause);

#endif
