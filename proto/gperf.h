/*
 * Legacy gperftools CPU profiles (gperf.c): the binary format that
 * CPUPROFILE= writes, turned into the pprof `go tool pprof -proto` makes
 * of it.
 */
#ifndef PROFD_GPERF_H
#define PROFD_GPERF_H

#include <stddef.h>
#include <stdint.h>

struct budget_acct;

/* gperf_to_pprof's failures. */
#define GPERF_EINVAL	(-1)	/* not a well-formed profile: *cause */
#define GPERF_ENOMEM	(-2)	/* the account refused memory */

/*
 * True if raw starts like a legacy CPU profile: header words 0 (count),
 * 3 (header words), 0 (version), the period (us) and 0, in 32- or 64-bit
 * words of either byte order. A protobuf never starts with a 0 byte.
 */
int	gperf_detect(const uint8_t *raw, size_t len);

/*
 * Converts len bytes of a legacy CPU profile (not gzipped) into a gzipped
 * pprof: samples/count and cpu/nanoseconds, the period in ns, the
 * executable mappings its addresses fall in, addresses unsymbolized; what
 * go tool pprof -proto -symbolize=none writes. Returns 0 with *out (free
 * with budget_dealloc(acct, *out, *outlen)), or a GPERF_E* with *cause.
 * Everything it holds is charged to acct (may be NULL): about 40 bytes a
 * distinct address and 12 a frame, beside the input.
 */
int	gperf_to_pprof(const uint8_t *raw, size_t len, struct budget_acct *acct,
	    uint8_t **out, size_t *outlen, char **cause);

#endif
