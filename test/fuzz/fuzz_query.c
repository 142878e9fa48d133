/*
 * Fuzz target for the query-string parsers (collector/params.c): the input,
 * cut at its first NUL, is a query string. It goes through params_parse and
 * params_query_parse (list and merge flavours), and every parameter's value
 * also through each value parser: labels, times, durations, integers and
 * sizes. Properties: an error has a reason; parsed queries have from <= to,
 * a limit within bounds and labels sorted by key then value.
 */
#include <string.h>

#include "collector/api/params.h"
#include "collector/ids.h"
#include "common/clock.h"
#include "common/parse.h"
#include "common/xmalloc.h"
#include "test/fuzz/fuzz.h"

/* A fixed "now" (2026-11-20T00:00:00Z) so runs replay exactly. */
#define FUZZ_QUERY_NOW	INT64_C(1795132800000000000)

/* Checks a parsed label array: valid keys, bounded values, sorted. */
static void
fuzz_query_labels_ok(const struct label *l, size_t n)
{
	size_t	i;
	int	c;

	for (i = 0; i < n; i++) {
		FUZZ_ASSERT(params_label_key_valid(l[i].key));
		FUZZ_ASSERT(strlen(l[i].value) <= PARAMS_MAX_VALUE);
		if (i == 0)
			continue;
		c = strcmp(l[i - 1].key, l[i].key);
		FUZZ_ASSERT(c < 0 || (c == 0 &&
		    strcmp(l[i - 1].value, l[i].value) <= 0));
	}
}

/* Runs every value parser on one raw parameter value. */
/* params_ids: every id it hands back is a valid one, at most 8 of them. */
static void
fuzz_query_ids(const char *v)
{
	char	**ids = NULL, *cause = NULL;
	size_t	  n = 0, i;

	if (params_ids(v, 8, &ids, &n, &cause) == 0) {
		FUZZ_ASSERT(cause == NULL && n >= 1 && n <= 8);
		for (i = 0; i < n; i++)
			FUZZ_ASSERT(ids_valid(ids[i], strlen(ids[i])));
	} else
		FUZZ_ASSERT(cause != NULL && n <= 8);
	for (i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
	free(cause);
}

static void
fuzz_query_value(const char *raw)
{
	struct label	*l;
	const char	*dup;
	char		*v, *cause = NULL, buf[64];
	size_t		 n;
	int64_t		 i64;
	uint64_t	 u64;

	if (params_labels(raw, 64, &l, &n, &cause) == 0) {
		FUZZ_ASSERT(cause == NULL && n <= 64);
		fuzz_query_labels_ok(l, n);
		(void)params_labels_dup_key(l, n, &dup);
		params_labels_free(l, n);
	} else {
		FUZZ_ASSERT(cause != NULL);
		free(cause);
		cause = NULL;
	}
	if ((v = params_decode(raw, strlen(raw), &cause)) == NULL) {
		FUZZ_ASSERT(cause != NULL);
		free(cause);
		return;
	}
	if (parse_time(v, FUZZ_QUERY_NOW, &i64, &cause) == 0)
		clock_format(i64, buf, sizeof buf);
	free(cause);
	cause = NULL;
	if (parse_duration(v, &i64, &cause) == 0)
		FUZZ_ASSERT(i64 >= 0);
	free(cause);
	cause = NULL;
	if (parse_int(v, INT64_MIN, INT64_MAX, &i64, &cause) != 0)
		FUZZ_ASSERT(cause != NULL);
	free(cause);
	cause = NULL;
	if (parse_size(v, &u64, &cause) != 0)
		FUZZ_ASSERT(cause != NULL);
	free(cause);
	(void)params_type_valid(v);
	(void)params_service_valid(v);
	(void)params_label_key_valid(v);
	fuzz_query_ids(v);
	free(v);
}

/* params_query_parse and the properties of what it returns. */
static void
fuzz_query_args(const struct params *p, int need_type)
{
	struct params_query	 qa;
	char			*cause = NULL, buf[64];

	if (params_query_parse(p, FUZZ_QUERY_NOW, need_type, 100, 1000, &qa,
	    &cause) != 0) {
		FUZZ_ASSERT(cause != NULL && *cause != '\0');
		free(cause);
		return;
	}
	FUZZ_ASSERT(cause == NULL);
	FUZZ_ASSERT(qa.q.from <= qa.q.to);
	FUZZ_ASSERT(qa.q.limit >= 1 && qa.q.limit <= 1000);
	FUZZ_ASSERT(params_service_valid(qa.q.service));
	FUZZ_ASSERT(!need_type || qa.q.type != NULL);
	FUZZ_ASSERT(qa.q.type == NULL || params_type_valid(qa.q.type));
	fuzz_query_labels_ok(qa.q.labels, qa.q.nlabels);
	clock_format(qa.q.from, buf, sizeof buf);
	clock_format(qa.q.to, buf, sizeof buf);
	params_query_clear(&qa);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct params	 p;
	char		*q, *cause = NULL, *v;
	size_t		 i;
	int		 rc;

	q = xmalloc(size + 1);
	memcpy(q, data, size);
	q[size] = '\0';
	if (params_parse(q, &p, &cause) != 0) {
		FUZZ_ASSERT(cause != NULL && p.n == 0);
		free(cause);
		free(q);
		return 0;
	}
	fuzz_query_args(&p, 0);
	fuzz_query_args(&p, 1);
	for (i = 0; i < p.n; i++) {
		FUZZ_ASSERT(params_raw(&p, p.keys[i]) != NULL);
		rc = params_get(&p, p.keys[i], &v, &cause);
		FUZZ_ASSERT(rc == 1 ? v != NULL : cause != NULL);
		free(v);
		free(cause);
		cause = NULL;
		fuzz_query_value(p.raw[i]);
	}
	params_clear(&p);
	free(q);
	return 0;
}
