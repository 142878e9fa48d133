/*
 * Time buckets of whole seconds, and the rollup levels' sizes (see
 * store_bucket.h).
 */
#include "storage/store_bucket.h"

/* The rollup levels' bucket sizes, seconds: a minute, ten, an hour, a day. */
const int64_t store_bucket_step[STORE_ROLLUP_LEVELS] = { 60, 600, 3600,
    86400 };

/* The bucket of time ns: its whole seconds over step, rounded down (also
 * below the epoch). */
int64_t
store_bucket_of(int64_t ns, int64_t step)
{
	int64_t	sec = ns / 1000000000 - (ns % 1000000000 < 0);

	return sec / step - (sec % step < 0);
}
