/*
 * Unit tests of the legacy gperftools CPU profile converter
 * (proto/gperf.c) on hand-made profiles: the four word encodings, records
 * and the end record, zero-count records dropped, addresses moved back
 * onto their calls, the signal handler's frame and the unwinder's
 * duplicated leaf dropped, identical stacks summed, executable mappings
 * only, the main binary first, a fake mapping for what no mapping holds,
 * and refusals. test/e2e/gperf_api.sh checks real profiles against
 * go tool pprof.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/budget.h"
#include "proto/gperf.h"
#include "proto/pprof.h"
#include "test/lib/tap.h"

#define MAPS	"00400000-00401000 r-xp 00000000 08:01 12 /usr/bin/app\n" \
		"7f0000000000-7f0000100000 r-xp 00010000 08:01 9 /lib/libc.so.6\n" \
		"7f0000100000-7f0000200000 r--p 00110000 08:01 9 /lib/libc.so.6\n"

static uint8_t	 buf[4 << 20];
static size_t	 blen;

/* Appends a word of size bytes, big-endian or not. */
static void
word(uint64_t v, size_t size, int big)
{
	size_t	k;

	for (k = 0; k < size; k++)
		buf[blen++] = (uint8_t)(v >> (8 * (big ? size - 1 - k : k)));
}

/* Starts a profile of period 10 ms. */
static void
start(size_t size, int big)
{
	blen = 0;
	word(0, size, big);
	word(3, size, big);
	word(0, size, big);
	word(10000, size, big);
	word(0, size, big);
}

/* Appends a record: count, then n addresses (leaf first). */
static void
rec(size_t size, int big, uint64_t count, size_t n, const uint64_t *a)
{
	size_t	i;

	word(count, size, big);
	word(n, size, big);
	for (i = 0; i < n; i++)
		word(a[i], size, big);
}

/* Ends the records and appends the maps text. */
static void
finish(size_t size, int big, const char *maps)
{
	word(0, size, big);
	word(1, size, big);
	word(0, size, big);
	memcpy(buf + blen, maps, strlen(maps));
	blen += strlen(maps);
}

/* Converts buf; the decoded profile, or NULL with *cause. */
static pprof_profile_t *
convert(char **cause)
{
	uint8_t		*out;
	size_t		 len;
	pprof_profile_t	*p;

	if (gperf_to_pprof(buf, blen, NULL, &out, &len, cause) != 0)
		return NULL;
	p = pprof_load(out, len, 1 << 26, NULL, cause);
	free(out);
	return p;
}

/* The address of frame i of sample s. */
static uint64_t
addr(const pprof_profile_t *p, size_t s, size_t i)
{
	uint64_t	id = p->sample[s]->location_id[i];
	size_t		k;

	for (k = 0; k < p->n_location; k++)
		if (p->location[k]->id == id)
			return p->location[k]->address;
	return 0;
}

/* The file of mapping i. */
static const char *
mapfile(const pprof_profile_t *p, size_t i)
{
	return p->string_table[p->mapping[i]->filename];
}

int
main(void)
{
	static const uint64_t a1[] = { 0x400100, 0x7f0000000500, 0x400200 };
	static const uint64_t a2[] = { 0x400101, 0x7f0000000500, 0x400200 };
	static const uint64_t a3[] = { 0x500000, 0x400200 };
	static const uint64_t a4[] = { 0x400100 };
	struct budget		*b = budget_new(1 << 20);
	struct budget_acct	 acct;
	pprof_profile_t		*p;
	char			*cause = NULL;
	size_t			 size, i;
	int			 big, same = 1;
	uint8_t			*out;
	size_t			 len;

	for (size = 4; size <= 8; size += 4)
		for (big = 0; big <= 1; big++) {
			start(size, big);
			finish(size, big, "");
			ok(gperf_detect(buf, blen), "%zu-bit %s words are "
			    "recognised", size * 8, big ? "big" : "little");
		}
	ok(!gperf_detect((const uint8_t *)"\x0a\x04", 2), "a pprof is not");

	start(8, 0);
	rec(8, 0, 3, 3, a1);
	rec(8, 0, 2, 3, a2);
	rec(8, 0, 1, 2, a3);
	rec(8, 0, 0, 1, a4);
	finish(8, 0, MAPS);
	p = convert(&cause);
	ok(p != NULL, "a hand-made profile converts (%s)", cause ? cause : "");
	if (p == NULL)
		return tap_done();
	ok(p->n_sample == 3, "a zero-count record is dropped (%zu samples)",
	    p->n_sample);
	ok(p->period == 10000000 && p->sample[0]->value[0] == 3 &&
	    p->sample[0]->value[1] == 30000000, "count, and count x period "
	    "(10 ms)");
	ok(addr(p, 0, 0) == 0x400100 && addr(p, 0, 1) == 0x7f00000004ff &&
	    addr(p, 0, 2) == 0x4001ff, "the leaf as is, callers one byte "
	    "back");
	ok(p->n_mapping == 3 && strcmp(mapfile(p, 0), "/usr/bin/app") == 0 &&
	    strcmp(mapfile(p, 1), "/lib/libc.so.6") == 0 &&
	    p->mapping[2]->memory_limit == UINT64_MAX, "mappings: the binary, "
	    "libc's executable part, and a fake one for 0x500000 (%zu)",
	    p->n_mapping);
	ok(p->mapping[1]->memory_start == 0x7f0000000000 &&
	    p->mapping[1]->file_offset == 0x10000, "libc's range and offset");
	pprof_free(p, NULL);

	/* The signal handler: a second frame (nearly) all samples share. */
	start(8, 0);
	for (i = 0; i < 40; i++) {
		uint64_t a[3] = { 0x400100 + i, 0x400f00, 0x400200 + i % 3 };

		rec(8, 0, 1, 3, a);
	}
	finish(8, 0, MAPS);
	p = convert(&cause);
	for (i = 0; p != NULL && i < p->n_sample; i++)
		same = same && p->sample[i]->n_location_id == 2 &&
		    addr(p, i, 1) != 0x400eff;
	ok(p != NULL && same, "the handler's frame, in every sample, is "
	    "dropped");
	pprof_free(p, NULL);

	/* A leaf the unwinder saw twice; stacks then equal are summed. */
	start(8, 0);
	{
		uint64_t d1[] = { 0x400300, 0x400300, 0x400400 };
		uint64_t d2[] = { 0x400300, 0x400400 };

		rec(8, 0, 2, 3, d1);
		rec(8, 0, 5, 2, d2);
		rec(8, 0, 1, 1, a4);
	}
	finish(8, 0, MAPS);
	p = convert(&cause);
	ok(p != NULL && p->n_sample == 2 && p->sample[0]->n_location_id == 2 &&
	    p->sample[0]->value[0] == 7, "a duplicated leaf is dropped and "
	    "the stacks it then equals summed (%zu samples)",
	    p ? p->n_sample : 0);
	pprof_free(p, NULL);

	/* Big-endian 32-bit words: the same samples. */
	start(4, 1);
	rec(4, 1, 3, 3, a1);
	rec(4, 1, 1, 2, a3);
	finish(4, 1, MAPS);
	p = convert(&cause);
	ok(p != NULL && p->n_sample == 2 && addr(p, 0, 0) == 0x400100 &&
	    addr(p, 0, 1) == 0x4ff, "32-bit big-endian words (addresses of "
	    "32 bits)");
	pprof_free(p, NULL);

	/* Refusals, and memory given back. */
	start(8, 0);
	rec(8, 0, 3, 3, a1);
	blen -= 4;
	p = convert(&cause);
	ok(p == NULL && cause && strstr(cause, "record 1"),
	    "a record cut short: %s", cause);
	free(cause);
	cause = NULL;
	i = (size_t)gperf_to_pprof((const uint8_t *)"\x0a\x04", 2, NULL, &out,
	    &len, &cause);
	ok((int)i == GPERF_EINVAL && cause, "no header: %s", cause);
	free(cause);
	cause = NULL;
	start(8, 0);
	for (i = 0; i < 20000; i++) {
		uint64_t a[2] = { 0x400000 + i * 16, 0x400000 + i * 16 + 8 };

		rec(8, 0, 1, 2, a);
	}
	finish(8, 0, MAPS);
	budget_acct_init(&acct, b);
	i = (size_t)gperf_to_pprof(buf, blen, &acct, &out, &len, &cause);
	ok((int)i == GPERF_ENOMEM && budget_used(b) == 0, "past its budget: "
	    "refused, every byte given back (%s)", cause);
	budget_acct_done(&acct);
	budget_free(b);
	free(cause);
	cause = NULL;
	/* Many mappings, many addresses in none: bounded work, refused. */
	{
		static char	 maps[30000 * 50];
		size_t		 at = 0;

		for (i = 0; i < 30000; i++)
			at += (size_t)snprintf(maps + at, sizeof maps - at,
			    "%zx-%zx r-xp 0 08:01 1 /l%zu\n",
			    (size_t)0x10000000 + i * 0x2000,
			    (size_t)0x10000000 + i * 0x2000 + 0x1000, i);
		start(8, 0);
		for (i = 0; i < 20000; i++) {
			uint64_t a[1] = { 0x900000000 + i * 16 };

			rec(8, 0, 1, 1, a);
		}
		finish(8, 0, maps);
		p = convert(&cause);
		ok(p == NULL && cause && strstr(cause, "lookups"),
		    "30,000 mappings x 20,000 addresses: refused (%s)", cause);
		free(cause);
		cause = NULL;
	}
	return tap_done();
}
