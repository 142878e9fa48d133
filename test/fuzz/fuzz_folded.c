/*
 * Fuzz target for the folded-stack converter (folded_to_pprof in
 * proto/folded.c), both modes. Properties: an input is converted or
 * refused with a cause; what is converted passes the upload check
 * (pprof_check) and holds at least one sample.
 */
#include <stdlib.h>
#include <string.h>

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

	for (lines = 0; lines < 2; lines++) {
		memset(&o, 0, sizeof o);
		o.type = "samples";
		o.unit = "count";
		o.type2 = lines ? NULL : "cpu";
		o.unit2 = lines ? NULL : "nanoseconds";
		o.period = 10000000;
		o.lines = lines;
		o.max_frames = 100000;
		if (folded_to_pprof((const char *)data, size, &o, &out, &len,
		    &cause) != 0) {
			FUZZ_ASSERT(cause != NULL && *cause != '\0');
			free(cause);
			cause = NULL;
			continue;
		}
		memset(&sum, 0, sizeof sum);
		FUZZ_ASSERT(pprof_check(out, len, 1 << 28, &sum, &cause) == 0);
		FUZZ_ASSERT(sum.samples >= 1);
		pprof_summary_free(&sum);
		free(out);
	}
	return 0;
}
