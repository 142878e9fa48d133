/*
 * Value parsers shared by the config file, the flags and the HTTP query
 * parameters: decimal integers in a range, byte sizes (32M), Go-style
 * durations (90s, 1h30m, 7d) and times (profefe's 2006-01-02T15:04:05,
 * RFC 3339, Unix seconds, now-1h). Pure functions; each returns 0, or -1
 * with *cause set.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/parse.h"
#include "common/xmalloc.h"

#define PARSE_NS_PER_SEC	INT64_C(1000000000)

/* Parses a duration such as "1h30m", "15m", "7d", "1.5s". */
int
parse_duration(const char *s, int64_t *out, char **cause)
{
	static const struct { const char *unit; int64_t ns; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "\xc2\xb5s", 1000 },
		{ "ms", 1000000 }, { "s", PARSE_NS_PER_SEC },
		{ "m", 60 * PARSE_NS_PER_SEC }, { "h", 3600 * PARSE_NS_PER_SEC },
		{ "d", 86400 * PARSE_NS_PER_SEC }, { "w", 7 * 86400 * PARSE_NS_PER_SEC },
	};
	const char *p = s;
	long double total = 0, v, frac, scale;
	size_t i, ulen;
	int found;

	if (*p == '\0')
		return xcause(cause, "empty duration");
	if (strcmp(p, "0") == 0) {
		*out = 0;
		return 0;
	}
	while (*p != '\0') {
		if (!isdigit((unsigned char)*p) && *p != '.')
			return xcause(cause, "bad duration \"%.64s\"", s);
		v = 0;
		while (isdigit((unsigned char)*p))
			v = v * 10 + (*p++ - '0');
		if (*p == '.') {
			p++;
			frac = 0;
			scale = 1;
			while (isdigit((unsigned char)*p)) {
				frac = frac * 10 + (*p++ - '0');
				scale *= 10;
			}
			v += frac / scale;
		}
		found = 0;
		for (i = 0; i < sizeof units / sizeof units[0]; i++) {
			ulen = strlen(units[i].unit);
			if (strncmp(p, units[i].unit, ulen) == 0 &&
			    !(ulen == 1 && units[i].unit[0] == 'm' &&
			    p[1] == 's')) {
				total += v * units[i].ns;
				p += ulen;
				found = 1;
				break;
			}
		}
		if (!found)
			return xcause(cause, "bad duration \"%.64s\" "
			    "(want e.g. 30s, 15m, 1h, 7d)", s);
		if (total > (long double)INT64_MAX / 2)
			return xcause(cause, "duration \"%.64s\" too long", s);
	}
	*out = (int64_t)total;
	return 0;
}

/* Days in month m (1-12) of year y. */
static int
parse_mdays(int y, int m)
{
	static const int days[] = { 31,28,31,30,31,30,31,31,30,31,30,31 };

	if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return 29;
	return days[m - 1];
}

/* Reads exactly n digits. */
static int
parse_digits(const char **p, int n, int *out)
{
	int v = 0;

	while (n-- > 0) {
		if (!isdigit((unsigned char)**p))
			return -1;
		v = v * 10 + (*(*p)++ - '0');
	}
	*out = v;
	return 0;
}

/* Parses 2006-01-02[T15:04:05[.frac]][Z|+hh:mm|-hh:mm]. */
static int
parse_time_calendar(const char *s, int64_t *out)
{
	const char *p = s;
	struct tm tm;
	int y, mo, d, h = 0, mi = 0, sec = 0, oh, om, sign;
	int64_t frac = 0, scale = PARSE_NS_PER_SEC, offset = 0;
	time_t t;

	if (parse_digits(&p, 4, &y) < 0 || *p++ != '-' ||
	    parse_digits(&p, 2, &mo) < 0 || *p++ != '-' ||
	    parse_digits(&p, 2, &d) < 0)
		return -1;
	if (*p == 'T' || *p == 't' || *p == ' ') {
		p++;
		if (parse_digits(&p, 2, &h) < 0 || *p++ != ':' ||
		    parse_digits(&p, 2, &mi) < 0 || *p++ != ':' ||
		    parse_digits(&p, 2, &sec) < 0)
			return -1;
		if (*p == '.') {
			p++;
			if (!isdigit((unsigned char)*p))
				return -1;
			while (isdigit((unsigned char)*p)) {
				if (scale > 1) {
					scale /= 10;
					frac += (*p - '0') * scale;
				}
				p++;
			}
		}
		if (*p == 'Z' || *p == 'z')
			p++;
		else if (*p == '+' || *p == '-') {
			sign = *p++ == '-' ? -1 : 1;
			if (parse_digits(&p, 2, &oh) < 0 || *p++ != ':' ||
			    parse_digits(&p, 2, &om) < 0 || oh > 23 || om > 59)
				return -1;
			offset = sign * (oh * 3600 + om * 60) * PARSE_NS_PER_SEC;
		}
	}
	if (*p != '\0' || y < 1970 || y > 2261 || mo < 1 || mo > 12 ||
	    d < 1 || d > parse_mdays(y, mo) || h > 23 || mi > 59 || sec > 60)
		return -1;
	memset(&tm, 0, sizeof tm);
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	t = timegm(&tm);
	*out = (int64_t)t * PARSE_NS_PER_SEC + frac - offset;
	return 0;
}

/* Parses any of profd's time formats. */
int
parse_time(const char *s, int64_t now_ns, int64_t *out, char **cause)
{
	int64_t d, secs;
	const char *p;
	char *why = NULL;
	long double v;

	if (strncmp(s, "now", 3) == 0) {
		if (s[3] == '\0') {
			*out = now_ns;
			return 0;
		}
		if ((s[3] == '-' || s[3] == '+' || s[3] == ' ') &&
		    parse_duration(s + 4, &d, &why) == 0) {
			*out = s[3] == '-' ? now_ns - d : now_ns + d;
			return 0;
		}
		free(why);
		return xcause(cause, "bad time \"%.64s\" (want now, now-1h, "
		    "now-15m, ...)", s);
	}
	for (p = s; isdigit((unsigned char)*p); p++)
		;
	if (p != s && (*p == '\0' || *p == '.') && p - s <= 11) {
		/* Unix seconds, optionally with a fraction */
		v = strtold(s, (char **)&p);
		if (*p == '\0') {
			/* 11 digits can overflow int64 nanoseconds */
			if (v >= (long double)(INT64_MAX / PARSE_NS_PER_SEC))
				return xcause(cause, "time \"%.64s\" out of "
				    "range (Unix seconds past 2262)", s);
			secs = (int64_t)v;
			*out = secs * PARSE_NS_PER_SEC +
			    (int64_t)((v - secs) * PARSE_NS_PER_SEC);
			return 0;
		}
	}
	if (parse_time_calendar(s, out) == 0)
		return 0;
	return xcause(cause, "bad time \"%.64s\" (want 2006-01-02T15:04:05, "
	    "RFC 3339, Unix seconds or now-1h)", s);
}

/* Parses a decimal integer within [min, max]. */
int
parse_int(const char *s, int64_t min, int64_t max, int64_t *out,
    char **cause)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno != 0 || isspace((unsigned char)*s))
		return xcause(cause, "\"%.64s\" is not a number", s);
	if (v < min || v > max)
		return xcause(cause, "%lld is out of range [%" PRId64 ", %"
		    PRId64 "]", v, min, max);
	*out = v;
	return 0;
}

/* Parses a byte size: digits with an optional K, M or G suffix. */
int
parse_size(const char *s, uint64_t *out, char **cause)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s || errno != 0 || *s == '-')
		return xcause(cause, "bad size \"%.64s\"", s);
	switch (*end) {
	case 'k': case 'K': mul = 1024; end++; break;
	case 'm': case 'M': mul = 1024 * 1024; end++; break;
	case 'g': case 'G': mul = 1024 * 1024 * 1024; end++; break;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B' && mul != 1)
		end++;
	if (*end != '\0' || v > UINT64_MAX / mul)
		return xcause(cause, "bad size \"%.64s\" (want e.g. 32M)", s);
	*out = v * mul;
	return 0;
}
