/*
 * Pyroscope's ingest vocabulary. Its SDKs name what they send
 * "APP.TYPE{k1=v1,k2=v2}": the application (profd's service), the
 * profile type, and labels whose values are sent as they are (no
 * escaping: a value cannot hold ',' or '}'). Types map onto profd's
 * (README, "Pushing profiles from other languages"). Timestamps are
 * integers whose number of digits gives their unit, as Pyroscope reads
 * them.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/api/params.h"
#include "collector/api/pyro_name.h"
#include "common/xmalloc.h"
#include "storage/store.h"

/* Pyroscope's types; the folded counts' sample type and unit. */
static const struct pyro_name_type pyro_name_types[] = {
	{ "cpu", "cpu", "samples", "count", "cpu" },
	{ "itimer", "cpu", "samples", "count", "cpu" },
	{ "wall", "other", "samples", "count", "wall" },
	{ "alloc_objects", "heap", "alloc_objects", "count", NULL },
	{ "alloc_space", "heap", "alloc_space", "bytes", NULL },
	{ "inuse_objects", "heap", "inuse_objects", "count", NULL },
	{ "inuse_space", "heap", "inuse_space", "bytes", NULL },
	{ "lock_count", "mutex", "contentions", "count", NULL },
	{ "lock_samples", "mutex", "contentions", "count", NULL },
	{ "lock_duration", "mutex", "delay", "nanoseconds", NULL },
	{ "lock_nanoseconds", "mutex", "delay", "nanoseconds", NULL },
	{ "mutex_count", "mutex", "contentions", "count", NULL },
	{ "mutex_duration", "mutex", "delay", "nanoseconds", NULL },
	{ "block_count", "block", "contentions", "count", NULL },
	{ "block_duration", "block", "delay", "nanoseconds", NULL },
	{ "goroutines", "goroutine", "goroutine", "count", NULL },
	{ "goroutine", "goroutine", "goroutine", "count", NULL },
	{ "exceptions", "other", "exceptions", "count", NULL },
};

/* Pyroscope's units parameter to a pprof unit. */
static const char *const pyro_name_units[][2] = {
	{ "samples", "count" }, { "objects", "count" },
	{ "goroutines", "count" }, { "lock_samples", "count" },
	{ "bytes", "bytes" }, { "lock_nanoseconds", "nanoseconds" },
	{ "nanoseconds", "nanoseconds" },
};

/* The entry of a Pyroscope type name, or NULL. */
const struct pyro_name_type *
pyro_name_type(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof pyro_name_types / sizeof pyro_name_types[0];
	    i++)
		if (strcmp(name, pyro_name_types[i].name) == 0)
			return &pyro_name_types[i];
	return NULL;
}

/* The pprof unit of a units parameter, or NULL. */
const char *
pyro_name_unit(const char *units)
{
	size_t i;

	for (i = 0; i < sizeof pyro_name_units / sizeof pyro_name_units[0];
	    i++)
		if (strcmp(units, pyro_name_units[i][0]) == 0)
			return pyro_name_units[i][1];
	return NULL;
}

/* True if the comma-separated list holds a type whose name is t. */
static int
pyro_name_has(const char *types, const char *t)
{
	size_t n = strlen(t);
	const char *s;

	for (s = types; (s = strstr(s, t)) != NULL; s += n)
		if ((s == types || s[-1] == ',') && s[n] == '/')
			return 1;
	return 0;
}

/* profd's type for a pprof's sample types (a bare name's). */
const char *
pyro_name_type_of_samples(const char *st)
{
	if (st == NULL)
		return "other";
	if (pyro_name_has(st, "wall"))
		return "other";
	if (pyro_name_has(st, "cpu"))
		return "cpu";
	if (pyro_name_has(st, "alloc_space") || pyro_name_has(st,
	    "inuse_space") || pyro_name_has(st, "alloc_objects") ||
	    pyro_name_has(st, "inuse_objects") || pyro_name_has(st, "space"))
		return "heap";
	if (pyro_name_has(st, "contentions") || pyro_name_has(st, "delay"))
		return "mutex";
	if (pyro_name_has(st, "goroutine") || pyro_name_has(st, "goroutines"))
		return "goroutine";
	return "other";
}

/* True for a character of an application name. */
static int
pyro_name_app_char(int c)
{
	return isalnum(c) || c == '_' || c == '.' || c == '-' || c == '/';
}

/* Appends s[0..n) percent-encoded to buf (4n + 1 bytes). */
static char *
pyro_name_escape(char *buf, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (isalnum(c) || c == '_' || c == '.' || c == '-')
			*buf++ = (char)c;
		else {
			*buf++ = '%';
			*buf++ = hex[c >> 4];
			*buf++ = hex[c & 15];
		}
	}
	return buf;
}

/* Parses the labels between the braces (len bytes at s); see header. */
static int
pyro_name_labels(const char *s, size_t len, size_t max, struct pyro_name *out,
    char **cause)
{
	char *raw = xmalloc(len * 3 + 1), *w = raw, *why = NULL;
	const char *end = s + len, *comma, *eq, *k, *v, *ke, *ve;
	const char *dup;
	int rc = -1;

	for (; s < end; s = comma + 1) {
		if ((comma = memchr(s, ',', end - s)) == NULL)
			comma = end;
		for (k = s; k < comma && *k == ' '; k++)
			;
		if (k == comma)
			continue;		/* "a=1,,b=2", trailing ',' */
		if ((eq = memchr(k, '=', comma - k)) == NULL) {
			xcause(cause, "label \"%.*s\" has no '=' (want "
			    "key=value)", (int)(comma - k > 64 ? 64 :
			    comma - k), k);
			goto out;
		}
		for (ke = eq; ke > k && ke[-1] == ' '; ke--)
			;
		for (v = eq + 1; v < comma && *v == ' '; v++)
			;
		for (ve = comma; ve > v && ve[-1] == ' '; ve--)
			;
		if (w != raw)
			*w++ = ',';
		w = pyro_name_escape(w, k, ke - k);
		*w++ = '=';
		w = pyro_name_escape(w, v, ve - v);
		if (comma == end)
			break;
	}
	*w = '\0';
	if (params_labels(raw, max, &out->labels, &out->nlabels, &why) < 0) {
		xcause(cause, "%s", why);
		goto out;
	}
	if (params_labels_dup_key(out->labels, out->nlabels, &dup)) {
		xcause(cause, "label key \"%s\" given twice", dup);
		goto out;
	}
	rc = 0;
out:
	free(why);
	free(raw);
	return rc;
}

/* Parses APP.TYPE{labels}; see the header. */
int
pyro_name_parse(const char *name, size_t max, struct pyro_name *out,
    char **cause)
{
	const char *brace = strchr(name, '{'), *dot, *p;
	size_t applen, len = strlen(name);

	memset(out, 0, sizeof *out);
	applen = brace != NULL ? (size_t)(brace - name) : len;
	if (brace != NULL && name[len - 1] != '}')
		return xcause(cause, "name: the labels' '{' has no closing "
		    "'}' at the end (want APP.TYPE{k=v,...})");
	if (applen == 0)
		return xcause(cause, "name: no application name before the "
		    "labels");
	for (p = name; p < name + applen; p++)
		if (!pyro_name_app_char((unsigned char)*p))
			return xcause(cause, "name: application names are "
			    "made of [A-Za-z0-9_.-/], not '%c' (0x%02x)",
			    isprint((unsigned char)*p) ? *p : '?',
			    (unsigned char)*p);
	if (applen > PARAMS_MAX_VALUE)
		return xcause(cause, "name: application name longer than %d "
		    "bytes", PARAMS_MAX_VALUE);
	for (dot = name + applen; dot > name && dot[-1] != '.'; dot--)
		;
	if (dot > name) {
		char *suffix = xstrndup(dot, name + applen - dot);

		if ((out->type = pyro_name_type(suffix)) != NULL)
			applen = dot - 1 - name;
		free(suffix);
		if (applen == 0)
			return xcause(cause, "name: no application name "
			    "before the type");
	}
	out->app = xstrndup(name, applen);
	if (brace != NULL && pyro_name_labels(brace + 1, (size_t)(name + len -
	    1 - (brace + 1)), max, out, cause) < 0) {
		pyro_name_clear(out);
		return -1;
	}
	return 0;
}

/* Frees a parsed name. */
void
pyro_name_clear(struct pyro_name *n)
{
	free(n->app);
	params_labels_free(n->labels, n->nlabels);
	memset(n, 0, sizeof *n);
}

/* Reads a from/until timestamp; see the header. */
int
pyro_name_time(const char *s, int64_t *ns, char **cause)
{
	size_t n = strlen(s), i;
	int64_t v = 0, mult;
	int over = 0;
	struct tm tm;

	if (n == 0 || n > 19)
		return xcause(cause, "\"%.32s\" is not a Unix time (want up "
		    "to 19 digits)", s);
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return xcause(cause, "\"%.32s\" is not a Unix time "
			    "(want digits)", s);
		if (v > (INT64_MAX - (s[i] - '0')) / 10)
			over = 1;
		else
			v = v * 10 + (s[i] - '0');
	}
	if (n == 8) {
		memset(&tm, 0, sizeof tm);
		tm.tm_year = (int)(v / 10000) - 1900;
		tm.tm_mon = (int)(v / 100 % 100) - 1;
		tm.tm_mday = (int)(v % 100);
		/* (to 2261: later dates do not fit int64 nanoseconds) */
		if (tm.tm_year >= 70 && tm.tm_year <= 2261 - 1900 &&
		    tm.tm_mon >= 0 && tm.tm_mon < 12 &&
		    tm.tm_mday >= 1 && tm.tm_mday <= 31) {
			*ns = (int64_t)timegm(&tm) * 1000000000;
			return 0;
		}
	}
	mult = n >= 19 ? 1 : n >= 16 ? 1000 : n >= 13 ? 1000000 : 1000000000;
	if (over || v > INT64_MAX / mult)
		return xcause(cause, "\"%.32s\" is too far in the future",
		    s);
	*ns = v * mult;
	return 0;
}
