/*
 * Value parsers for settings and query parameters: integers in a range,
 * byte sizes, durations and times. Pure functions, unit-tested; each
 * returns 0, or -1 with *cause (a new string) saying what is wrong.
 */
#ifndef PROFD_PARSE_H
#define PROFD_PARSE_H

#include <stdint.h>

/* Parses a Go-style duration ("90s", "1h30m", "7d") into ns. */
int	parse_duration(const char *s, int64_t *out, char **cause);
/*
 * Parses a time into ns since the epoch: 2006-01-02T15:04:05 (UTC), RFC
 * 3339, Unix seconds, or now, now-1h, now+15m (relative to now_ns).
 */
int	parse_time(const char *s, int64_t now_ns, int64_t *out, char **cause);
/* Parses a decimal integer in [min, max]. */
int	parse_int(const char *s, int64_t min, int64_t max, int64_t *out,
	    char **cause);
/* Parses a size with optional K/M/G suffix (powers of 1024). */
int	parse_size(const char *s, uint64_t *out, char **cause);

#endif
