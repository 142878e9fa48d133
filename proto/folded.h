/*
 * Folded stacks ("main;work;hash 42", root first) to pprof (folded.c).
 */
#ifndef PROFD_FOLDED_H
#define PROFD_FOLDED_H

#include <stddef.h>
#include <stdint.h>

struct budget_acct;

/* folded_to_pprof's failures. */
#define FOLDED_EINVAL	(-1)	/* bad input: *cause names the line */
#define FOLDED_ENOMEM	(-2)	/* the account refused memory */
#define FOLDED_ETOOBIG	(-3)	/* more distinct frames than max_frames */

struct folded_options {
	const char	*type, *unit;	/* the counts: "samples", "count" */
	const char	*type2, *unit2;	/* optional: count * period, the
					   profile's period type too */
	int64_t		 period;
	int		 lines;		/* a line is a stack, counting 1 */
	int64_t		 time_nanos, duration_nanos;
	size_t		 max_frames;	/* distinct frames; 0: no limit */
	struct budget_acct *acct;	/* charged for the tables and the
					   output; NULL: not accounted */
};

/*
 * Converts len bytes of folded text into a gzipped pprof: 0 with *out
 * (free with budget_dealloc(o->acct, *out, *outlen)) and *outlen, or a
 * FOLDED_E* with *cause naming the line. Memory beside the text: about
 * 64 bytes a distinct frame and 8 an occurrence in a distinct stack.
 */
int	folded_to_pprof(const char *text, size_t len,
	    const struct folded_options *o, uint8_t **out, size_t *outlen,
	    char **cause);

#endif
