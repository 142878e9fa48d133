/*
 * The daemon's clock: wall-clock and monotonic nanoseconds, and times
 * formatted as RFC 3339 UTC (Go's RFC3339Nano style).
 */
#ifndef PROFD_CLOCK_H
#define PROFD_CLOCK_H

#include <stddef.h>
#include <stdint.h>

/* Wall-clock now in ns since the epoch. */
int64_t	clock_now_ns(void);
/* Monotonic now in ns. */
int64_t	clock_mono_ns(void);
/* Formats ns since the epoch as 2006-01-02T15:04:05.999999999Z. */
void	clock_format(int64_t ns, char *buf, size_t len);

#endif
