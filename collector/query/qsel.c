/*
 * The vocabulary of Pyroscope's query API: label selectors, profile type
 * ids and windows (see qsel.h). Selectors follow Prometheus: names of
 * letters, digits, '_' (and '.', which profd's labels may hold), the
 * operators = != =~ !~, values in double or single quotes (Go's escapes)
 * or backquotes (raw), regexes anchored at both ends. Regexes are POSIX
 * extended, bounded in length and without back-references, since they
 * run against every candidate.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "collector/api/params.h"
#include "collector/query/qsel.h"
#include "common/utf8.h"
#include "common/xmalloc.h"

#define QSEL_MS		1000000LL
#define QSEL_HOUR_MS	3600000LL
/* Milliseconds that still fit in nanoseconds: year 2262. */
#define QSEL_MAX_MS	(INT64_MAX / QSEL_MS)

/* Pyroscope's NAME of each profd type, and the period listed. */
static const struct {
	const char	*type;
	const char	*name;
	const char	*period_type;	/* NULL: the sample type itself */
	const char	*period_unit;
} qsel_types[] = {
	{ "cpu", "process_cpu", "cpu", "nanoseconds" },
	{ "heap", "memory", "space", "bytes" },
	{ "mutex", "mutex", "contentions", "count" },
	{ "block", "block", "contentions", "count" },
	{ "goroutine", "goroutines", "goroutine", "count" },
	{ "threadcreate", "threadcreate", "threadcreate", "count" },
	{ "other", "other", NULL, NULL },
};
#define QSEL_NTYPES	(sizeof qsel_types / sizeof qsel_types[0])

/* The parser's position in a selector. */
struct qsel_in {
	const char	*s;
	size_t		 at, len;
};

/* Skips blanks. */
static void
qsel_skip(struct qsel_in *in)
{
	while (in->at < in->len && isspace((unsigned char)in->s[in->at]))
		in->at++;
}

/* Sets *cause to msg at the parser's position; returns -1. */
static int
qsel_fail(struct qsel_in *in, char **cause, const char *msg)
{
	return xcause(cause, "label selector: %s at offset %zu", msg, in->at);
}

/* The value of hex digit c, or -1. */
static int
qsel_hex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Appends code point cp as UTF-8 to buf at *n (room for 4 bytes). */
static void
qsel_utf8(char *buf, size_t *n, unsigned long cp)
{
	if (cp < 0x80)
		buf[(*n)++] = (char)cp;
	else if (cp < 0x800) {
		buf[(*n)++] = (char)(0xc0 | (cp >> 6));
		buf[(*n)++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		buf[(*n)++] = (char)(0xe0 | (cp >> 12));
		buf[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		buf[(*n)++] = (char)(0x80 | (cp & 0x3f));
	} else {
		buf[(*n)++] = (char)(0xf0 | (cp >> 18));
		buf[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
		buf[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		buf[(*n)++] = (char)(0x80 | (cp & 0x3f));
	}
}

/* Reads one escape after '\' into buf at *n; -1 if bad. */
static int
qsel_escape(struct qsel_in *in, char quote, char *buf, size_t *n)
{
	static const char from[] = "abfnrtv\\", to[] = "\a\b\f\n\r\t\v\\";
	const char *p;
	unsigned long cp = 0;
	int digits, d, c;

	if (in->at >= in->len)
		return -1;
	c = in->s[in->at++];
	if (c == quote) {
		buf[(*n)++] = (char)c;
		return 0;
	}
	if (c != '\0' && (p = strchr(from, c)) != NULL) {
		buf[(*n)++] = to[p - from];
		return 0;
	}
	digits = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
	if (digits == 0)
		return -1;
	while (digits-- > 0) {
		if (in->at >= in->len || (d = qsel_hex(in->s[in->at])) < 0)
			return -1;
		cp = cp * 16 + (unsigned long)d;
		in->at++;
	}
	if (c == 'x') {
		buf[(*n)++] = (char)cp;
		return 0;
	}
	if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return -1;
	qsel_utf8(buf, n, cp);
	return 0;
}

/* Reads a quoted string; a new string, or NULL with *cause. */
static char *
qsel_string(struct qsel_in *in, char **cause)
{
	char quote, *buf;
	size_t n = 0;

	if (in->at >= in->len || (in->s[in->at] != '"' &&
	    in->s[in->at] != '\'' && in->s[in->at] != '`')) {
		qsel_fail(in, cause, "expected a quoted value");
		return NULL;
	}
	quote = in->s[in->at++];
	buf = xmalloc(in->len * 4 + 1);
	for (;;) {
		if (in->at >= in->len) {
			qsel_fail(in, cause, "unterminated string");
			free(buf);
			return NULL;
		}
		if (in->s[in->at] == quote) {
			in->at++;
			break;
		}
		if (in->s[in->at] == '\\' && quote != '`') {
			in->at++;
			if (qsel_escape(in, quote, buf, &n) != 0) {
				qsel_fail(in, cause, "bad escape");
				free(buf);
				return NULL;
			}
			continue;
		}
		if (in->s[in->at] == '\n' && quote != '`') {
			qsel_fail(in, cause, "newline in string");
			free(buf);
			return NULL;
		}
		buf[n++] = in->s[in->at++];
	}
	buf[n] = '\0';
	if (strlen(buf) != n || !utf8_valid(buf, n)) {
		qsel_fail(in, cause, "value is not UTF-8 text");
		free(buf);
		return NULL;
	}
	return buf;
}

/* Whether c may start (first) or continue a label name. */
static int
qsel_name_char(int c, int first)
{
	return isalpha(c) || c == '_' || (!first && (isdigit(c) || c == '.'));
}

/* Whether a pattern holds a back-reference (\1 .. \9). */
static int
qsel_backref(const char *v)
{
	for (; *v != '\0'; v++) {
		if (*v == '\\' && v[1] != '\0') {
			if (v[1] >= '1' && v[1] <= '9')
				return 1;
			v++;
		}
	}
	return 0;
}

/* Compiles m's value as an anchored regex; -1 with *cause. */
static int
qsel_compile(struct qsel_matcher *m, char **cause)
{
	char *pat, msg[128];
	int rc;

	if (strlen(m->value) > QSEL_MAX_REGEX || qsel_backref(m->value))
		return xcause(cause, "label selector: regex of %s: at most %d "
		    "bytes, no back-references", m->name, QSEL_MAX_REGEX);
	pat = xasprintf("^(%s)$", m->value);
	rc = regcomp(&m->re, pat, REG_EXTENDED | REG_NOSUB);
	free(pat);
	if (rc != 0) {
		regerror(rc, &m->re, msg, sizeof msg);
		return xcause(cause, "label selector: bad regex for %s: %s",
		    m->name, msg);
	}
	return 0;
}

/* Reads one matcher into m; -1 with *cause. */
static int
qsel_matcher(struct qsel_in *in, struct qsel_matcher *m, char **cause)
{
	size_t start = in->at;

	if (in->at >= in->len || !qsel_name_char((unsigned char)
	    in->s[in->at], 1))
		return qsel_fail(in, cause, "expected a label name");
	while (in->at < in->len && qsel_name_char((unsigned char)
	    in->s[in->at], 0))
		in->at++;
	m->name = xstrndup(in->s + start, in->at - start);
	qsel_skip(in);
	if (in->at + 1 < in->len && in->s[in->at] == '=' &&
	    in->s[in->at + 1] == '~') {
		m->op = QSEL_RE;
		in->at += 2;
	} else if (in->at + 1 < in->len && in->s[in->at] == '!' &&
	    (in->s[in->at + 1] == '=' || in->s[in->at + 1] == '~')) {
		m->op = in->s[in->at + 1] == '=' ? QSEL_NE : QSEL_NRE;
		in->at += 2;
	} else if (in->at < in->len && in->s[in->at] == '=') {
		m->op = QSEL_EQ;
		in->at++;
	} else
		return qsel_fail(in, cause, "expected = != =~ or !~");
	qsel_skip(in);
	if ((m->value = qsel_string(in, cause)) == NULL)
		return -1;
	if (m->op == QSEL_RE || m->op == QSEL_NRE) {
		if (qsel_compile(m, cause) != 0) {
			m->op = QSEL_EQ;	/* nothing compiled to free */
			return -1;
		}
	}
	return 0;
}

/* Parses a selector; see qsel.h. */
int
qsel_parse(const char *text, struct qsel *out, char **cause)
{
	struct qsel_in in = { text, 0, text != NULL ? strlen(text) : 0 };
	struct qsel_matcher *m;

	memset(out, 0, sizeof *out);
	if (in.len > QSEL_MAX_TEXT)
		return xcause(cause, "label selector longer than %d bytes",
		    QSEL_MAX_TEXT);
	qsel_skip(&in);
	if (in.at == in.len)
		return 0;
	if (in.s[in.at] != '{')
		return qsel_fail(&in, cause, "expected '{'");
	in.at++;
	for (;;) {
		qsel_skip(&in);
		if (in.at < in.len && in.s[in.at] == '}')
			break;
		if (out->n == QSEL_MAX_MATCHERS) {
			qsel_clear(out);
			return xcause(cause, "label selector: more than %d "
			    "matchers", QSEL_MAX_MATCHERS);
		}
		out->m = xreallocarray(out->m, out->n + 1, sizeof *out->m);
		m = &out->m[out->n++];
		memset(m, 0, sizeof *m);
		if (qsel_matcher(&in, m, cause) != 0) {
			qsel_clear(out);
			return -1;
		}
		qsel_skip(&in);
		if (in.at < in.len && in.s[in.at] == ',') {
			in.at++;
			continue;
		}
		if (in.at < in.len && in.s[in.at] == '}')
			break;
		qsel_fail(&in, cause, "expected ',' or '}'");
		qsel_clear(out);
		return -1;
	}
	in.at++;
	qsel_skip(&in);
	if (in.at != in.len) {
		qsel_fail(&in, cause, "text after '}'");
		qsel_clear(out);
		return -1;
	}
	return 0;
}

/* Frees a selector. */
void
qsel_clear(struct qsel *s)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		if (s->m[i].op == QSEL_RE || s->m[i].op == QSEL_NRE)
			regfree(&s->m[i].re);
		free(s->m[i].name);
		free(s->m[i].value);
	}
	free(s->m);
	memset(s, 0, sizeof *s);
}

/* Whether one matcher holds for value. */
int
qsel_matcher_holds(const struct qsel_matcher *m, const char *value)
{
	switch (m->op) {
	case QSEL_EQ:
		return strcmp(value, m->value) == 0;
	case QSEL_NE:
		return strcmp(value, m->value) != 0;
	case QSEL_RE:
		return regexec(&m->re, value, 0, NULL, 0) == 0;
	case QSEL_NRE:
		return regexec(&m->re, value, 0, NULL, 0) != 0;
	}
	return 0;
}

/* Whether every matcher holds; see qsel.h. */
int
qsel_matches(const struct qsel *s, qsel_lookup_fn lookup, void *arg)
{
	const char *v;
	size_t i;

	for (i = 0; i < s->n; i++) {
		if ((v = lookup(arg, s->m[i].name)) == NULL)
			v = "";
		if (!qsel_matcher_holds(&s->m[i], v))
			return 0;
	}
	return 1;
}

/* Whether the matchers on name hold for value. */
int
qsel_holds_for(const struct qsel *s, const char *name, const char *value)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (strcmp(s->m[i].name, name) == 0 &&
		    !qsel_matcher_holds(&s->m[i], value))
			return 0;
	return 1;
}

/* Whether name is one of the names profd answers itself. */
static int
qsel_reserved(const char *name)
{
	return strcmp(name, QSEL_SERVICE) == 0 || strncmp(name, "__", 2) == 0;
}

/* The store's share of a selector; see qsel.h. */
int
qsel_store_labels(const struct qsel *s, struct label **out, size_t *n,
    size_t *rest, char **cause)
{
	size_t i;

	*out = NULL;
	*n = *rest = 0;
	for (i = 0; i < s->n; i++) {
		if (qsel_reserved(s->m[i].name))
			continue;
		if (s->m[i].op != QSEL_EQ || *s->m[i].value == '\0' ||
		    !params_label_key_valid(s->m[i].name)) {
			(*rest)++;
			continue;
		}
		if (params_labels_add(out, n, 0, s->m[i].name, s->m[i].value,
		    cause) != 0) {
			params_labels_free(*out, *n);
			*out = NULL;
			*n = 0;
			return -1;
		}
	}
	return 0;
}

/* The table entry of a profd type, or NULL. */
static int
qsel_type_index(const char *type)
{
	size_t i;

	for (i = 0; i < QSEL_NTYPES; i++)
		if (strcmp(qsel_types[i].type, type) == 0)
			return (int)i;
	return -1;
}

/* Parses a profile type id; see qsel.h. */
int
qsel_ptype_parse(const char *id, struct qsel_ptype *out, char **cause)
{
	char *part[5], *copy, *p;
	size_t i, n = 0;

	memset(out, 0, sizeof *out);
	if (id == NULL || *id == '\0')
		return xcause(cause, "profile_typeID is empty (want NAME:"
		    "SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT, e.g. "
		    "process_cpu:cpu:nanoseconds:cpu:nanoseconds)");
	if (strlen(id) > 512 || !utf8_valid(id, strlen(id)))
		return xcause(cause, "profile_typeID: too long or not UTF-8");
	copy = xstrdup(id);
	for (p = copy; n < 5; n++) {
		part[n] = p;
		if ((p = strchr(p, ':')) == NULL) {
			n++;
			break;
		}
		*p++ = '\0';
	}
	for (i = 0; i < n; i++)
		if (*part[i] == '\0')
			break;
	if (n != 5 || p != NULL || i != n) {
		free(copy);
		return xcause(cause, "profile_typeID %.200s: want five "
		    "non-empty parts NAME:SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:"
		    "PERIOD_UNIT", id);
	}
	for (i = 0; i < QSEL_NTYPES; i++)
		if (strcmp(part[0], qsel_types[i].name) == 0 ||
		    strcmp(part[0], qsel_types[i].type) == 0)
			break;
	if (i == QSEL_NTYPES && strcmp(part[0], "goroutine") == 0)
		i = (size_t)qsel_type_index("goroutine");
	if (i == QSEL_NTYPES) {
		xcause(cause, "profile_typeID %.200s: unknown profile name "
		    "%.64s (known: process_cpu, memory, mutex, block, "
		    "goroutines, threadcreate, other, or profd's type names)",
		    id, part[0]);
		free(copy);
		return -1;
	}
	out->id = xstrdup(id);
	out->name = xstrdup(part[0]);
	out->type = qsel_types[i].type;
	out->sample_type = xstrdup(part[1]);
	out->sample_unit = xstrdup(part[2]);
	free(copy);
	return 0;
}

/* Frees a parsed profile type id. */
void
qsel_ptype_clear(struct qsel_ptype *p)
{
	free(p->id);
	free(p->name);
	free(p->sample_type);
	free(p->sample_unit);
	memset(p, 0, sizeof *p);
}

/* Pyroscope's NAME of a profd type. */
const char *
qsel_ptype_name(const char *type)
{
	int i = qsel_type_index(type);

	return i < 0 ? type : qsel_types[i].name;
}

/* The period listed for a profd type's sample type. */
void
qsel_ptype_period(const char *type, const char *sample_type,
    const char *sample_unit, const char **ptype, const char **punit)
{
	int i = qsel_type_index(type);

	if (i < 0 || qsel_types[i].period_type == NULL) {
		*ptype = sample_type;
		*punit = sample_unit;
		return;
	}
	*ptype = qsel_types[i].period_type;
	*punit = qsel_types[i].period_unit;
}

/* The id of a profd type's sample type. */
char *
qsel_ptype_id(const char *type, const char *sample_type,
    const char *sample_unit)
{
	const char *pt, *pu;

	qsel_ptype_period(type, sample_type, sample_unit, &pt, &pu);
	return xasprintf("%s:%s:%s:%s:%s", qsel_ptype_name(type),
	    sample_type, sample_unit, pt, pu);
}

/* A request's window as nanoseconds; see qsel.h. */
int
qsel_window(int64_t start_ms, int64_t end_ms, int64_t now_ns,
    int64_t *from_ns, int64_t *to_ns, char **cause)
{
	if (end_ms == 0)
		end_ms = now_ns / QSEL_MS;
	if (start_ms == 0)
		start_ms = end_ms > QSEL_HOUR_MS ? end_ms - QSEL_HOUR_MS : 0;
	if (start_ms < 0 || end_ms < 0 || end_ms > QSEL_MAX_MS)
		return xcause(cause, "start and end are milliseconds since "
		    "the epoch, from 0 to %lld", (long long)QSEL_MAX_MS);
	if (start_ms > end_ms)
		return xcause(cause, "start (%lld) is after end (%lld)",
		    (long long)start_ms, (long long)end_ms);
	*from_ns = start_ms * QSEL_MS;
	*to_ns = end_ms * QSEL_MS + (QSEL_MS - 1);
	return 0;
}
