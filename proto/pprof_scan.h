/*
 * pprof wire scanner: checks a raw perftools.profiles.Profile protobuf and
 * summarizes it without decoding it into objects. Accepts and rejects
 * exactly what pprof_decode() + pprof_validate() do, with the same causes,
 * and fills the summary pprof_summarize() would. The upload path uses it
 * through pprof_check(); merges still decode with protobuf-c.
 */
#ifndef PROFD_PPROF_SCAN_H
#define PROFD_PPROF_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "proto/pprof.h"

struct budget_acct;

/*
 * Checks raw (inflated) protobuf bytes; sum may be NULL. The legacy
 * gperftools check of pprof_decode() is the caller's (pprof_check does it).
 * Returns 0 or PPROF_EINVAL with *cause naming the first problem.
 * *sum: OUT on success, free with pprof_summary_free().
 */
int	pprof_scan(const uint8_t *raw, size_t len, struct pprof_summary *sum,
	    char **cause);
/*
 * pprof_scan without the summary, its scratch (for profiles off the fast
 * path: about 8 bytes per string, mapping, function and location) charged
 * to acct (may be NULL), reading *cancel (may be NULL) every few thousand
 * fields. Returns 0, PPROF_EINVAL, PPROF_ENOMEM when acct refused the
 * scratch (the account says why), or PPROF_ECANCELED once *cancel is set.
 */
int	pprof_scan_acct(const uint8_t *raw, size_t len, struct budget_acct *acct,
	    const volatile int *cancel, char **cause);
/*
 * pprof_scan without its fast path: the exact passes alone. Same results
 * by design; tests and the fuzzer compare the two.
 */
int	pprof_scan_exact(const uint8_t *raw, size_t len,
	    struct pprof_summary *sum, char **cause);

#endif
