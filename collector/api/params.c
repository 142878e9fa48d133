/*
 * Parameter parsing for the HTTP API. Query strings are split on '&' and
 * '=' before decoding so a label value may carry an encoded ',' or '='.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/api/params.h"
#include "collector/ids.h"
#include "common/parse.h"
#include "common/utf8.h"
#include "common/xmalloc.h"

#define PARAMS_NS_PER_SEC	INT64_C(1000000000)

static int	params_labels_split(const char *, size_t, struct label **,
		    size_t *, char **);

/* Value of one hex digit, or -1. */
static int
params_hex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decodes s[0..len); '+' becomes a space; NUL bytes are refused. */
char *
params_decode(const char *s, size_t len, char **cause)
{
	char *out = xmalloc(len + 1);
	size_t i, o = 0;
	int hi, lo;

	for (i = 0; i < len; i++) {
		if (s[i] == '%') {
			if (len - i < 3) {
				free(out);
				xcause(cause, "truncated percent-encoding");
				return NULL;
			}
			hi = params_hex((unsigned char)s[i + 1]);
			lo = params_hex((unsigned char)s[i + 2]);
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
				free(out);
				xcause(cause, "bad percent-encoding \"%.3s\"",
				    s + i);
				return NULL;
			}
			out[o++] = (char)(hi << 4 | lo);
			i += 2;
		} else if (s[i] == '+')
			out[o++] = ' ';
		else
			out[o++] = s[i];
	}
	out[o] = '\0';
	return out;
}

/* Splits query into keys (decoded) and raw values. */
int
params_parse(const char *query, struct params *p, char **cause)
{
	const char *s, *amp, *eq;
	size_t len;
	char *key, *why = NULL;

	memset(p, 0, sizeof *p);
	if (query == NULL)
		return 0;
	for (s = query; *s != '\0'; s = *amp ? amp + 1 : amp) {
		amp = strchr(s, '&');
		if (amp == NULL)
			amp = s + strlen(s);
		if (amp == s)
			continue;
		eq = memchr(s, '=', amp - s);
		len = eq != NULL ? (size_t)(eq - s) : (size_t)(amp - s);
		if ((key = params_decode(s, len, &why)) == NULL) {
			xcause(cause, "bad query string: %s", why);
			free(why);
			params_clear(p);
			return -1;
		}
		p->keys = xreallocarray(p->keys, p->n + 1, sizeof *p->keys);
		p->raw = xreallocarray(p->raw, p->n + 1, sizeof *p->raw);
		p->keys[p->n] = key;
		p->raw[p->n] = eq != NULL ? xstrndup(eq + 1, amp - eq - 1) :
		    xstrdup("");
		p->n++;
	}
	return 0;
}

/* Frees the split query. */
void
params_clear(struct params *p)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		free(p->keys[i]);
		free(p->raw[i]);
	}
	free(p->keys);
	free(p->raw);
	memset(p, 0, sizeof *p);
}

/* Raw value of the first occurrence of key. */
const char *
params_raw(const struct params *p, const char *key)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		if (strcmp(p->keys[i], key) == 0)
			return p->raw[i];
	}
	return NULL;
}

/*
 * Decoded value of key: 1 present, 0 absent, -1 bad percent-encoding or
 * not UTF-8.
 */
int
params_get(const struct params *p, const char *key, char **out, char **cause)
{
	const char *raw = params_raw(p, key);
	char *why = NULL;

	*out = NULL;
	if (raw == NULL)
		return 0;
	if ((*out = params_decode(raw, strlen(raw), &why)) == NULL) {
		xcause(cause, "parameter %s: %s", key, why);
		free(why);
		return -1;
	}
	if (!utf8_valid(*out, strlen(*out))) {
		xcause(cause, "parameter %s: not valid UTF-8", key);
		free(*out);
		*out = NULL;
		return -1;
	}
	return 1;
}

/* Key syntax: [A-Za-z_][A-Za-z0-9_.-]{0,63}. */
int
params_label_key_valid(const char *key)
{
	size_t i;

	if (!(isalpha((unsigned char)key[0]) || key[0] == '_'))
		return 0;
	for (i = 1; key[i] != '\0'; i++) {
		if (i >= PARAMS_MAX_KEY)
			return 0;
		if (!(isalnum((unsigned char)key[i]) || key[i] == '_' ||
		    key[i] == '.' || key[i] == '-'))
			return 0;
	}
	return 1;
}

/* qsort comparator: key, then value. */
static int
params_label_cmp(const void *a, const void *b)
{
	const struct label *la = a, *lb = b;
	int c = strcmp(la->key, lb->key);

	return c != 0 ? c : strcmp(la->value, lb->value);
}

/* Adds a label, keeping the array sorted; see the header. */
int
params_labels_add(struct label **l, size_t *n, size_t max, const char *key,
    const char *value, char **cause)
{
	size_t i;

	if (!utf8_valid(value, strlen(value)))
		return xcause(cause, "label %s: value is not valid UTF-8", key);
	if (strlen(value) > PARAMS_MAX_VALUE)
		return xcause(cause, "label %s: value longer than %d bytes",
		    key, PARAMS_MAX_VALUE);
	if (max > 0 && *n >= max)
		return xcause(cause, "more than %zu labels with %s", max, key);
	*l = xreallocarray(*l, *n + 1, sizeof **l);
	for (i = *n; i > 0 && strcmp((*l)[i - 1].key, key) > 0; i--)
		(*l)[i] = (*l)[i - 1];
	(*l)[i].key = xstrdup(key);
	(*l)[i].value = xstrdup(value);
	(*n)++;
	return 0;
}

/* Frees an array of labels. */
void
params_labels_free(struct label *l, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(l[i].key);
		free(l[i].value);
	}
	free(l);
}

/*
 * A labels value sent wholly percent-encoded, as `go tool pprof`, Go's
 * url.Values, urlencode and curl --data-urlencode do ("a%3D1%2Cb%3D2"):
 * it has no literal '=', so it cannot be a list as it is. Returns it
 * decoded once, with '%' and '+' escaped again, or NULL if raw is not such
 * a value.
 */
static char *
params_labels_whole(const char *raw)
{
	char *dec, *out, *o;
	const char *s;

	if (strchr(raw, '=') != NULL ||
	    (dec = params_decode(raw, strlen(raw), NULL)) == NULL)
		return NULL;
	if (strchr(dec, '=') == NULL) {
		free(dec);
		return NULL;
	}
	o = out = xmalloc(3 * strlen(dec) + 1);
	for (s = dec; *s != '\0'; s++) {
		if (*s == '%' || *s == '+')
			o += sprintf(o, "%%%02X", (unsigned char)*s);
		else
			*o++ = *s;
	}
	*o = '\0';
	free(dec);
	return out;
}

/* Parses "k1=v1,k2=v2" into a sorted array. */
int
params_labels(const char *raw, size_t max, struct label **out, size_t *n,
    char **cause)
{
	char *whole;
	int rc;

	if ((whole = params_labels_whole(raw)) != NULL) {
		rc = params_labels(whole, max, out, n, cause);
		free(whole);
		return rc;
	}
	return params_labels_split(raw, max, out, n, cause);
}

/* Splits raw "k1=v1,k2=v2", decoding each key and value on its own. */
static int
params_labels_split(const char *raw, size_t max, struct label **out,
    size_t *n, char **cause)
{
	struct label *l = NULL;
	size_t nl = 0;
	const char *s, *comma, *eq;
	char *key = NULL, *value = NULL, *why = NULL;

	*out = NULL;
	*n = 0;
	for (s = raw; *s != '\0'; s = *comma ? comma + 1 : comma) {
		comma = strchr(s, ',');
		if (comma == NULL)
			comma = s + strlen(s);
		if (comma == s)
			continue;
		eq = memchr(s, '=', comma - s);
		if (eq == NULL) {
			xcause(cause, "label \"%.*s\" has no '=' (want key=value)",
			    (int)(comma - s > 64 ? 64 : comma - s), s);
			goto fail;
		}
		if ((key = params_decode(s, eq - s, &why)) == NULL ||
		    (value = params_decode(eq + 1, comma - eq - 1, &why)) == NULL) {
			xcause(cause, "label: %s", why);
			goto fail;
		}
		if (!utf8_valid(key, strlen(key))) {
			xcause(cause, "label key is not valid UTF-8");
			goto fail;
		}
		if (!params_label_key_valid(key)) {
			xcause(cause, "label key \"%.64s\" is not valid "
			    "(want [A-Za-z_][A-Za-z0-9_.-]{0,63})", key);
			goto fail;
		}
		if (!utf8_valid(value, strlen(value))) {
			xcause(cause, "label %s: value is not valid UTF-8", key);
			goto fail;
		}
		if (strlen(value) > PARAMS_MAX_VALUE) {
			xcause(cause, "label %s: value longer than %d bytes",
			    key, PARAMS_MAX_VALUE);
			goto fail;
		}
		if (nl >= max) {
			xcause(cause, "more than %zu labels", max);
			goto fail;
		}
		l = xreallocarray(l, nl + 1, sizeof *l);
		l[nl].key = key;
		l[nl].value = value;
		nl++;
		key = value = NULL;
	}
	if (nl > 1)
		qsort(l, nl, sizeof *l, params_label_cmp);
	*out = l;
	*n = nl;
	return 0;
fail:
	free(why);
	free(key);
	free(value);
	params_labels_free(l, nl);
	return -1;
}

/* True if the sorted array has a repeated key. */
int
params_labels_dup_key(const struct label *l, size_t n, const char **dup)
{
	size_t i;

	for (i = 1; i < n; i++) {
		if (strcmp(l[i - 1].key, l[i].key) == 0) {
			*dup = l[i].key;
			return 1;
		}
	}
	return 0;
}

/* The profile types profd accepts, in the order of their indices. */
static const char *const params_types[PARAMS_NTYPES] = { "cpu", "heap",
    "block", "mutex", "goroutine", "threadcreate", "other", "trace" };

/* The index of a profile type (0 to PARAMS_NTYPES - 1), or -1. */
int
params_type_index(const char *type)
{
	int i;

	for (i = 0; i < PARAMS_NTYPES; i++) {
		if (strcmp(type, params_types[i]) == 0)
			return i;
	}
	return -1;
}

/* The name of the profile type of index i (NULL out of range). */
const char *
params_type_name(int i)
{
	return i >= 0 && i < PARAMS_NTYPES ? params_types[i] : NULL;
}

/* The profile types profd accepts. */
int
params_type_valid(const char *type)
{
	return params_type_index(type) >= 0;
}

/* Service names: 1 to 256 bytes of UTF-8, no control characters. */
int
params_service_valid(const char *service)
{
	const unsigned char *p;
	size_t len = strlen(service);

	if (len == 0 || len > PARAMS_MAX_SERVICE ||
	    !utf8_valid(service, len))
		return 0;
	for (p = (const unsigned char *)service; *p != '\0'; p++) {
		if (*p < 0x20 || *p == 0x7f)
			return 0;
	}
	return 1;
}

/* Reads service (required) and type (required if need_type, else NULL
 * when absent or empty). *service, *type: OUT new strings. */
int
params_service_type(const struct params *p, int need_type, char **service,
    char **type, char **cause)
{
	*service = *type = NULL;
	if (params_get(p, "service", service, cause) < 0 ||
	    params_get(p, "type", type, cause) < 0)
		goto fail;
	if (*service == NULL || **service == '\0') {
		xcause(cause, "missing parameter: service");
		goto fail;
	}
	if (!params_service_valid(*service)) {
		xcause(cause, "bad service name (want 1 to %d bytes of UTF-8, "
		    "no control characters)", PARAMS_MAX_SERVICE);
		goto fail;
	}
	if (*type != NULL && **type == '\0') {
		free(*type);
		*type = NULL;
	}
	if (*type == NULL && need_type) {
		xcause(cause, "missing parameter: type");
		goto fail;
	}
	if (*type != NULL && !params_type_valid(*type)) {
		xcause(cause, "bad type \"%.32s\" (want cpu, heap, block, mutex,"
		    " goroutine, threadcreate, other or trace)", *type);
		goto fail;
	}
	return 0;
fail:
	free(*service);
	free(*type);
	*service = *type = NULL;
	return -1;
}

/* Frees what params_query_parse filled. */
void
params_query_clear(struct params_query *qa)
{
	free(qa->service);
	free(qa->type);
	params_labels_free(qa->labels, qa->nlabels);
	memset(qa, 0, sizeof *qa);
}

/* Reads the list/merge parameters into qa. */
int
params_query_parse(const struct params *p, int64_t now_ns, int need_type,
    size_t default_limit, size_t max_limit, struct params_query *qa,
    char **cause)
{
	char *from = NULL, *to = NULL, *limit = NULL, *why = NULL;
	const char *raw;
	int64_t v;
	int rc = -1;

	memset(qa, 0, sizeof *qa);
	if (params_service_type(p, need_type, &qa->service, &qa->type,
	    cause) < 0 ||
	    params_get(p, "from", &from, cause) < 0 ||
	    params_get(p, "to", &to, cause) < 0 ||
	    params_get(p, "limit", &limit, cause) < 0)
		goto out;
	qa->q.to = now_ns;
	if (to != NULL && *to != '\0' &&
	    parse_time(to, now_ns, &qa->q.to, &why) < 0) {
		xcause(cause, "parameter to: %s", why);
		goto out;
	}
	qa->q.from = qa->q.to - INT64_C(3600) * PARAMS_NS_PER_SEC;
	if (from != NULL && *from != '\0' &&
	    parse_time(from, now_ns, &qa->q.from, &why) < 0) {
		xcause(cause, "parameter from: %s", why);
		goto out;
	}
	if (qa->q.from > qa->q.to) {
		xcause(cause, "parameter from is after to");
		goto out;
	}
	qa->q.limit = default_limit;
	if (limit != NULL && *limit != '\0') {
		if (parse_int(limit, 1, (int64_t)max_limit, &v, &why) < 0) {
			xcause(cause, "parameter limit: %s", why);
			goto out;
		}
		qa->q.limit = (size_t)v;
	}
	if ((raw = params_raw(p, "labels")) != NULL &&
	    params_labels(raw, 64, &qa->labels, &qa->nlabels, &why) < 0) {
		xcause(cause, "parameter labels: %s", why);
		goto out;
	}
	qa->q.service = qa->service;
	qa->q.type = qa->type;
	qa->q.labels = qa->labels;
	qa->q.nlabels = qa->nlabels;
	rc = 0;
out:
	free(why);
	free(from);
	free(to);
	free(limit);
	if (rc != 0)
		params_query_clear(qa);
	return rc;
}


/* Splits "ID1+ID2 ID3,ID4" into checked ids, at most max; -1 with *cause. */
int
params_ids(const char *list, size_t max, char ***ids, size_t *n,
    char **cause)
{
	const char *p = list, *end;
	size_t len;

	while (*p != '\0') {
		while (*p == '+' || *p == ' ' || *p == ',')
			p++;
		if (*p == '\0')
			break;
		end = p + strcspn(p, "+ ,");
		len = (size_t)(end - p);
		if (!ids_valid(p, len))
			return xcause(cause, "malformed profile id \"%.*s\" "
			    "(want 20 characters of [0-9a-v])",
			    (int)(len > 64 ? 64 : len), p);
		if (*n >= max)
			return xcause(cause, "more than %zu profiles "
			    "(--max-merge-profiles)", max);
		*ids = xreallocarray(*ids, *n + 1, sizeof **ids);
		(*ids)[(*n)++] = xstrndup(p, len);
		p = end;
	}
	if (*n == 0)
		return xcause(cause, "parameter ids names no profile");
	return 0;
}
