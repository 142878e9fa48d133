/*
 * Fuzz target for deltas of cumulative profiles (pprof_delta in
 * proto/pprof_delta.c), which /ingest applies to a pprof and its
 * prev_profile. The input is two profiles as for the merge target: a
 * 4-byte little-endian length n, n bytes of the later profile, then the
 * earlier one (shorter inputs are all the later one, against itself).
 * Properties: it answers or refuses with a cause; what it answers passes
 * the upload check and holds no more samples than the later profile; a
 * profile less itself has no sample left in the named types unless
 * another type keeps it; every byte charged to its budget comes back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/budget.h"
#include "proto/pprof.h"
#include "proto/pprof_delta.h"
#include "test/fuzz/fuzz.h"

#define FUZZ_DELTA_MAX	(4 * 1024 * 1024)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = { "alloc_objects", "alloc_space",
	    "samples", "cpu", "contentions", "delay" };
	static struct budget	*b;
	struct budget_acct	 acct;
	struct pprof_summary	 sum, before;
	const uint8_t		*cur = data, *prev = data;
	size_t			 curlen = size, prevlen = size, n, outlen;
	uint8_t			*out;
	char			*cause = NULL;
	int			 rc;

	if (b == NULL)
		b = budget_new(64 << 20);
	if (size >= 4) {
		n = (size_t)data[0] | (size_t)data[1] << 8 |
		    (size_t)data[2] << 16 | (size_t)data[3] << 24;
		if (n <= size - 4) {
			cur = data + 4;
			curlen = n;
			prev = data + 4 + n;
			prevlen = size - 4 - n;
		}
	}
	budget_acct_init(&acct, b);
	rc = pprof_delta(cur, curlen, prev, prevlen, names,
	    sizeof names / sizeof names[0], FUZZ_DELTA_MAX, &acct, &out,
	    &outlen, &cause);
	if (rc != 0)
		FUZZ_ASSERT(cause != NULL && *cause != '\0');
	else {
		memset(&sum, 0, sizeof sum);
		memset(&before, 0, sizeof before);
		if (pprof_check(out, outlen, 1 << 28, &sum, &cause) != 0) {
			fprintf(stderr, "the delta fails the check: %s\n",
			    cause);
			FUZZ_ASSERT(!"a delta passes the upload check");
		}
		FUZZ_ASSERT(pprof_check(cur, curlen, FUZZ_DELTA_MAX, &before,
		    &cause) == 0);
		FUZZ_ASSERT(sum.samples <= before.samples);
		pprof_summary_free(&sum);
		pprof_summary_free(&before);
		free(out);
	}
	FUZZ_ASSERT(budget_used(b) == 0);
	budget_acct_done(&acct);
	free(cause);
	return 0;
}
