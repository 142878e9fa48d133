/*
 * Rollup blob names and label-id sets as text: see rollup_ids.h.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "storage/rollup_ids.h"

/*
 * The blob name of rollup rid: two capitals (rid mod 676, so the blobs
 * spread over that many directories) and 18 digits. Profile ids are
 * lower case: the two never meet.
 */
void
rollup_ids_name(int64_t rid, char out[STORE_ID_LEN + 1])
{
	snprintf(out, STORE_ID_LEN + 1, "%c%c%018" PRId64,
	    'A' + (int)(rid % 26), 'A' + (int)(rid / 26 % 26), rid);
}

/* rid of a rollup blob name; 0 if it is not one. */
int64_t
rollup_ids_rid(const char *name)
{
	int64_t	 v = 0;
	size_t	 i;
	char	 check[STORE_ID_LEN + 1];

	if (name == NULL || strlen(name) != STORE_ID_LEN ||
	    name[0] < 'A' || name[0] > 'Z')
		return 0;
	for (i = 2; i < STORE_ID_LEN; i++) {
		if (name[i] < '0' || name[i] > '9')
			return 0;
		v = v * 10 + (name[i] - '0');
	}
	rollup_ids_name(v, check);
	return v > 0 && strcmp(check, name) == 0 ? v : 0;
}

/* qsort: int64. */
int
rollup_ids_cmp(const void *a, const void *b)
{
	int64_t	x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Parses "3,17,40" into a new sorted array; returns the count. */
size_t
rollup_ids_parse(const char *s, int64_t **v)
{
	size_t	 n = 0;
	char	*end;

	*v = NULL;
	while (s != NULL && *s != '\0') {
		*v = xreallocarray(*v, n + 1, sizeof **v);
		(*v)[n++] = strtoll(s, &end, 10);
		if (end == s)
			break;
		s = *end == ',' ? end + 1 : end;
	}
	if (n > 0)
		qsort(*v, n, sizeof **v, rollup_ids_cmp);
	return n;
}

/* 1 if every id of want is in the set s. */
int
rollup_ids_cover(const char *s, const int64_t *want, size_t nwant)
{
	int64_t	*v;
	size_t	 n = rollup_ids_parse(s, &v), i;
	int	 ok = 1;

	for (i = 0; i < nwant && ok; i++)
		ok = n > 0 && bsearch(&want[i], v, n, sizeof *v,
		    rollup_ids_cmp) != NULL;
	free(v);
	return ok;
}

/* Formats a sorted id set as text. */
char *
rollup_ids_format(const int64_t *v, size_t n)
{
	char	*s = xcalloc(1, n * 21 + 1);
	size_t	 i, at = 0;

	for (i = 0; i < n; i++)
		at += (size_t)sprintf(s + at, "%s%" PRId64, i ? "," : "", v[i]);
	return s;
}

/* 1 if id is in the sorted set v. */
int
rollup_ids_has(const int64_t *v, size_t n, int64_t id)
{
	return n > 0 && bsearch(&id, v, n, sizeof *v,
	    rollup_ids_cmp) != NULL;
}
