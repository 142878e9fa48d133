/*
 * Fuzz target for the merge's memory budget (--merge-memory). The input is
 * two profiles as for fuzz_merge (a 4-byte little-endian length n, n bytes
 * of profile A, then profile B; gzipped or raw), merged by merge_run as
 * the daemon merges stored blobs (A, B, then A again), every byte drawn
 * from a budget of FUZZ_MERGE_MEM_BUDGET. Properties: the bytes the budget
 * counts never pass it (its peak); all of them come back after the run;
 * the run answers 200, 413 (the merge alone needs more), 422 (sample types
 * differ) or 500 (nothing readable), never 503 (nobody else holds the
 * budget) and never aborts; a 200 result is a valid profile. And in builds
 * without AddressSanitizer or ThreadSanitizer (whose shadow memory and
 * quarantine inflate RSS), the process's peak RSS (VmHWM) never rises more
 * than the budget plus FUZZ_MERGE_MEM_SLACK over its level at the first
 * input: what the budget does not count (the run's own structures, zlib's
 * and libdeflate's state, the input's copy) is small and fixed.
 * Seeds: the tiny-sample bomb (gen_sample_bomb.py, over the budget once
 * inflated) and the label-sort bomb (gen_label_bomb.py) in
 * test/fuzz/seeds/merge_mem/.
 */
#include <stdio.h>
#include <string.h>

#include "common/budget.h"
#include "common/log.h"
#include "common/xmalloc.h"
#include "merge/merge_run.h"
#include "proto/pprof.h"
#include "test/fuzz/fuzz.h"

#define FUZZ_MERGE_MEM_BUDGET	((size_t)4 * 1024 * 1024)
#define FUZZ_MERGE_MEM_SLACK	((size_t)16 * 1024 * 1024)
#define FUZZ_MERGE_MEM_INFLATED	((size_t)64 * 1024 * 1024)

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FUZZ_MERGE_MEM_RSS	0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FUZZ_MERGE_MEM_RSS	0
#endif
#endif
#ifndef FUZZ_MERGE_MEM_RSS
#define FUZZ_MERGE_MEM_RSS	1
#endif

/* The two profiles of the input. */
struct fuzz_merge_mem_in {
	const uint8_t	*part[2];
	size_t		 len[2];
};

/* merge_run's fetch: inputs 0 and 2 are A, 1 is B, each a fresh copy. */
static int
fuzz_merge_mem_fetch(void *arg, size_t i, uint8_t **buf, size_t *len,
    char **cause)
{
	struct fuzz_merge_mem_in *in = arg;
	size_t k = i == 1;

	*len = in->len[k];
	*buf = xmalloc(*len ? *len : 1);
	if (*len > 0)
		memcpy(*buf, in->part[k], *len);
	return 0;
}

/* The process's peak RSS in bytes (0 if unknown). */
static size_t
fuzz_merge_mem_hwm(void)
{
	char line[256];
	size_t kb = 0;
	FILE *f;

	if ((f = fopen("/proc/self/status", "r")) == NULL)
		return 0;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "VmHWM: %zu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static size_t base;
	struct fuzz_merge_mem_in in;
	struct budget *b;
	pprof_profile_t *p;
	uint8_t *out = NULL;
	size_t outlen = 0, hwm;
	char *cause = NULL;
	uint32_t split;
	int code = 0, rc;

	if (base == 0) {
		log_set_level(LOG_LEVEL_ERROR);	/* skipped inputs are normal */
		base = FUZZ_MERGE_MEM_RSS ? fuzz_merge_mem_hwm() : 1;
	}
	split = (uint32_t)size;
	if (size >= 4) {
		split = (uint32_t)data[0] | (uint32_t)data[1] << 8 |
		    (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24;
		data += 4;
		size -= 4;
		if (split > size)
			split = (uint32_t)size;
	}
	in.part[0] = data;
	in.len[0] = split;
	in.part[1] = data + split;
	in.len[1] = size - split;

	b = budget_new(FUZZ_MERGE_MEM_BUDGET);
	rc = merge_run(NULL, b, 3, fuzz_merge_mem_fetch, &in,
	    FUZZ_MERGE_MEM_INFLATED, NULL, &out, &outlen, NULL, &code, &cause);
	if (budget_peak(b) > FUZZ_MERGE_MEM_BUDGET) {
		fprintf(stderr, "budget peak %zu > %zu\n", budget_peak(b),
		    FUZZ_MERGE_MEM_BUDGET);
		FUZZ_ASSERT(!"the budget never counts more than its limit");
	}
	FUZZ_ASSERT(budget_used(b) == 0);
	if (rc != 0) {
		if (code != 413 && code != 422 && code != 500)
			fprintf(stderr, "merge_run: %d %s\n", code, cause);
		FUZZ_ASSERT(code == 413 || code == 422 || code == 500);
		FUZZ_ASSERT(cause != NULL && out == NULL);
	} else {
		FUZZ_ASSERT(code == 200 && cause == NULL);
		p = pprof_load(out, outlen, SIZE_MAX / 2, NULL, &cause);
		if (p == NULL)
			fprintf(stderr, "merged profile invalid: %s\n", cause);
		FUZZ_ASSERT(p != NULL);
		pprof_free(p, NULL);
	}
	free(out);
	free(cause);
	budget_free(b);
	if (FUZZ_MERGE_MEM_RSS && base > 1 && (hwm = fuzz_merge_mem_hwm()) >
	    base + FUZZ_MERGE_MEM_BUDGET + FUZZ_MERGE_MEM_SLACK) {
		fprintf(stderr, "peak RSS %zu > %zu + budget %zu + %zu\n", hwm,
		    base, FUZZ_MERGE_MEM_BUDGET, FUZZ_MERGE_MEM_SLACK);
		FUZZ_ASSERT(!"peak RSS stays within the budget and a slack");
	}
	return 0;
}
