/*
 * Fuzz target for the legacy gperftools CPU profile converter
 * (gperf_to_pprof in proto/gperf.c). The input is a profile, or, when it
 * has no legacy header, the body of one after a 64-bit little-endian
 * header (so the fuzzer reaches the records and maps text at once).
 * Properties: it converts or refuses with a cause; what it converts
 * passes the upload check (pprof_check) with the two sample types; every
 * byte charged to its small budget is given back.
 */
#include <stdlib.h>
#include <string.h>

#include "common/budget.h"
#include "proto/gperf.h"
#include "proto/pprof.h"
#include "test/fuzz/fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct budget	*b;
	static const uint8_t	 head[40] = { [8] = 3, [24] = 0x10, [25] = 0x27 };
	struct budget_acct	 acct;
	struct pprof_summary	 sum;
	uint8_t			*in = NULL, *out;
	size_t			 len = size, outlen;
	char			*cause = NULL;
	int			 rc;

	if (b == NULL)
		b = budget_new(4 << 20);
	if (!gperf_detect(data, size)) {
		in = malloc(sizeof head + size + 1);
		memcpy(in, head, sizeof head);
		memcpy(in + sizeof head, data, size);
		len = sizeof head + size;
		data = in;
	}
	budget_acct_init(&acct, b);
	rc = gperf_to_pprof(data, len, &acct, &out, &outlen, &cause);
	if (rc != 0) {
		FUZZ_ASSERT(rc == GPERF_EINVAL || rc == GPERF_ENOMEM);
		FUZZ_ASSERT(cause != NULL && *cause != '\0');
	} else {
		memset(&sum, 0, sizeof sum);
		FUZZ_ASSERT(pprof_check(out, outlen, 1 << 28, &sum, &cause) ==
		    0);
		FUZZ_ASSERT(strcmp(sum.sample_types,
		    "samples/count,cpu/nanoseconds") == 0);
		pprof_summary_free(&sum);
		budget_dealloc(&acct, out, outlen);
	}
	FUZZ_ASSERT(budget_used(b) == 0);
	budget_acct_done(&acct);
	free(cause);
	free(in);
	return 0;
}
