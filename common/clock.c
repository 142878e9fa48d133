/*
 * The one clock of the daemon: wall-clock time in nanoseconds since the
 * epoch (profile times, ids, retention cutoffs), monotonic time for
 * timeouts and durations, and the RFC 3339 form every reply shows times in.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"

#define CLOCK_NS_PER_SEC	INT64_C(1000000000)

/* Wall-clock now in ns since the epoch. */
int64_t
clock_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * CLOCK_NS_PER_SEC + ts.tv_nsec;
}

/* Monotonic now in ns (for timeouts and durations). */
int64_t
clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * CLOCK_NS_PER_SEC + ts.tv_nsec;
}

/* Formats ns as 2006-01-02T15:04:05.999999999Z, trailing zeros trimmed. */
void
clock_format(int64_t ns, char *buf, size_t len)
{
	time_t secs = (time_t)(ns / CLOCK_NS_PER_SEC);
	int64_t frac = ns % CLOCK_NS_PER_SEC;
	struct tm tm;
	char f[16];
	size_t n;
	int i;

	if (frac < 0) {
		frac += CLOCK_NS_PER_SEC;
		secs--;
	}
	gmtime_r(&secs, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	if (frac != 0) {
		snprintf(f, sizeof f, ".%09" PRId64, frac);
		for (i = (int)strlen(f) - 1; f[i] == '0'; i--)
			f[i] = '\0';
		snprintf(buf + n, len - n, "%sZ", f);
	} else
		snprintf(buf + n, len - n, "Z");
}
