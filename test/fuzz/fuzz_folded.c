/*
 * Fuzz target for the folded-stack converter (folded_to_pprof in
 * proto/folded.c), both modes. Properties: an input is converted or
 * refused with a cause; what is converted passes the upload check
 * (pprof_check) and holds at least one sample; in lines mode the tables
 * are charged to a small budget, and every byte is given back whether it
 * converts or is refused.
 */
#include <stdlib.h>
#include <string.h>

#include "common/budget.h"
#include "proto/folded.h"
#include "proto/pprof.h"
#include "test/fuzz/fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct folded_options	 o;
	struct pprof_summary	 sum;
	uint8_t			*out;
	size_t			 len;
	char			*cause = NULL;
	int			 lines;
	static struct budget	*b;
	struct budget_acct	 acct;

	if (b == NULL)
		b = budget_new(1 << 20);
	for (lines = 0; lines < 2; lines++) {
		budget_acct_init(&acct, b);
		memset(&o, 0, sizeof o);
		o.type = "samples";
		o.unit = "count";
		o.type2 = lines ? NULL : "cpu";
		o.unit2 = lines ? NULL : "nanoseconds";
		o.period = 10000000;
		o.lines = lines;
		o.max_frames = 100000;
		o.acct = lines ? &acct : NULL;
		if (folded_to_pprof((const char *)data, size, &o, &out, &len,
		    &cause) != 0) {
			FUZZ_ASSERT(cause != NULL && *cause != '\0');
			free(cause);
			cause = NULL;
			FUZZ_ASSERT(budget_used(b) == 0);
			budget_acct_done(&acct);
			continue;
		}
		memset(&sum, 0, sizeof sum);
		FUZZ_ASSERT(pprof_check(out, len, 1 << 28, &sum, &cause) == 0);
		FUZZ_ASSERT(sum.samples >= 1);
		pprof_summary_free(&sum);
		budget_dealloc(o.acct, out, len);
		FUZZ_ASSERT(budget_used(b) == 0);
		budget_acct_done(&acct);
	}
	return 0;
}
