/*
 * Deltas of cumulative profiles (pprof_delta.c): what a process did
 * between two profiles whose values only grow (Go's allocs, an old
 * Pyroscope SDK's heap with prev_profile).
 */
#ifndef PROFD_PPROF_DELTA_H
#define PROFD_PPROF_DELTA_H

#include <stddef.h>
#include <stdint.h>

struct budget_acct;

/*
 * cur minus prev (both pprof, gzipped or not, at most max_inflated bytes
 * inflated) for the sample types named in names[0..n) (by type name):
 * each sample of cur loses the values of prev's samples of the same
 * stack and labels (never below 0), other sample types keep cur's values,
 * and samples left all zero are dropped. Returns 0 with *out (gzipped,
 * free()) or a PPROF_E* code with *cause. Decoding is charged to acct:
 * the inflated bytes and PPROF_DELTA_DECODE_FACTOR times them.
 */
int	pprof_delta(const uint8_t *cur, size_t curlen, const uint8_t *prev,
	    size_t prevlen, const char *const *names, size_t n,
	    size_t max_inflated, struct budget_acct *acct, uint8_t **out,
	    size_t *outlen, char **cause);

/* Bytes reserved per inflated byte for protobuf-c's decoded profile. */
#define PPROF_DELTA_DECODE_FACTOR	8

#endif
