/*
 * Unit tests for collector/ids.c: format, time order, uniqueness, the
 * time read back out of an id.
 */
#include <stdlib.h>
#include <string.h>

#include "collector/ids.h"
#include "test/lib/tap.h"

/* qsort comparator for id strings. */
static int
cmp(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

int
main(void)
{
	static char ids[10000][IDS_LEN + 1];
	char a[IDS_LEN + 1], b[IDS_LEN + 1];
	size_t i, dups = 0;
	int bad = 0;

	ids_new(1700000000000, a);
	ok(strlen(a) == IDS_LEN, "id is 20 characters");
	ok(ids_valid(a, strlen(a)), "new id is valid");
	ids_new(1700000000001, b);
	ok(strcmp(a, b) < 0, "later id sorts after");
	ok(!ids_valid("ABCDEFGHIJKLMNOPQRST", 20), "upper case rejected");
	ok(!ids_valid("0123456789abcdefghiw", 20), "'w' rejected");
	ok(!ids_valid("0123456789", 10), "short id rejected");
	ok(!ids_valid("../../../etc/passwd12", 20), "path rejected");
	for (i = 0; i < 10000; i++) {
		ids_new(1700000000000, ids[i]);
		bad |= !ids_valid(ids[i], strlen(ids[i]));
	}
	ok(!bad, "10,000 ids valid");
	qsort(ids, 10000, sizeof ids[0], cmp);
	for (i = 1; i < 10000; i++)
		dups += strcmp(ids[i - 1], ids[i]) == 0;
	ok(dups == 0, "10,000 ids in one millisecond are distinct");
	ok(strncmp(ids[0], ids[9999], 9) == 0,
	    "same millisecond shares the time prefix");
	ok(ids_time_ms(a) == 1700000000000 && ids_time_ms(b) == 1700000000001,
	    "ids_time_ms reads the time back");
	ids_new(0xffffffffffffLL, a);
	ok(ids_time_ms(a) == 0xffffffffffffLL, "... also the largest 48 bits");
	ok(ids_time_ms("ABCDEFGHIJKLMNOPQRST") == -1 && ids_time_ms("01") == -1,
	    "... and -1 for what is not an id");
	return tap_done();
}
