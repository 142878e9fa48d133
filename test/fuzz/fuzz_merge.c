/*
 * Fuzz target for the merge engine (merge/merge.c). The input is two
 * profiles: a 4-byte little-endian length n, then n bytes of profile A,
 * then profile B (shorter inputs are all A). Each is decoded and validated
 * by pprof_load as a stored blob would be, then merged twice: A and B into
 * one merge, and A and B into merges of their own joined by merge_combine
 * (the parallel path). Properties: a validated profile is refused only for
 * a sample type mismatch; every merged result is itself a valid profile;
 * both paths keep the same number of samples; the result's bytes written
 * straight from the merge (merge_result_raw) are exactly what protobuf-c
 * packs from merge_result's Profile.
 */
#include <string.h>

#include "common/arena.h"
#include "merge/merge.h"
#include "common/xmalloc.h"
#include "proto/pprof.h"
#include "test/fuzz/fuzz.h"

#define FUZZ_MERGE_MAX	(4 * 1024 * 1024)

/* Adds p to m; a refusal of a validated profile must be a type mismatch. */
static int
fuzz_merge_add(struct merge *m, const pprof_profile_t *p)
{
	char	*cause = NULL;

	if (merge_add(m, p, &cause) == 0) {
		FUZZ_ASSERT(cause == NULL);
		return 0;
	}
	if (!merge_mismatch(m)) {
		fprintf(stderr, "merge_add refused a valid profile: %s\n",
		    cause);
		FUZZ_ASSERT(!"merge_add accepts every validated profile");
	}
	FUZZ_ASSERT(cause != NULL);
	free(cause);
	return -1;
}

/* merge_result_raw must write what protobuf-c packs from merge_result. */
static void
fuzz_merge_raw(struct merge *m)
{
	const pprof_profile_t	*p = merge_result(m);
	uint8_t			*raw, *packed;
	size_t			 len, plen;

	FUZZ_ASSERT(p != NULL);
	FUZZ_ASSERT(merge_result_raw(m, &raw, &len, NULL) == 0);
	plen = perftools__profiles__profile__get_packed_size(p);
	packed = xmalloc(plen);
	perftools__profiles__profile__pack(p, packed);
	FUZZ_ASSERT(plen == len && memcmp(raw, packed, len) == 0);
	free(packed);
	free(raw);
}

/* Serializes m's result and checks it decodes; returns its sample count. */
static size_t
fuzz_merge_result(struct merge *m)
{
	struct arena		*arena = arena_new(0);
	pprof_profile_t		*p;
	uint8_t			*gz;
	size_t			 len, n;
	char			*cause = NULL;

	fuzz_merge_raw(m);

	FUZZ_ASSERT(merge_result_gzip(m, &gz, &len, &cause) == 0);
	p = pprof_load(gz, len, SIZE_MAX / 2, arena_allocator(arena), &cause);
	if (p == NULL) {
		fprintf(stderr, "merged profile invalid: %s\n", cause);
		FUZZ_ASSERT(!"merged profile is valid");
	}
	FUZZ_ASSERT(p->n_sample <= merge_samples(m));
	n = p->n_sample;
	arena_free(arena);
	free(gz);
	return n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct arena	*arena = arena_new(64 * 1024);
	ProtobufCAllocator *al = arena_allocator(arena);
	pprof_profile_t	*p[2] = { NULL, NULL };
	const uint8_t	*part[2];
	size_t		 len[2], i, n_seq = 0, n_par = 0;
	struct merge	*seq, *one[2];
	char		*cause = NULL;
	int		 ok_seq = 1, ok_par = 1;
	uint32_t	 split;

	if (size >= 4) {
		split = (uint32_t)data[0] | (uint32_t)data[1] << 8 |
		    (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24;
		data += 4;
		size -= 4;
		if (split > size)
			split = (uint32_t)size;
	} else
		split = (uint32_t)size;
	part[0] = data;
	len[0] = split;
	part[1] = data + split;
	len[1] = size - split;

	for (i = 0; i < 2; i++) {
		p[i] = pprof_load(part[i], len[i], FUZZ_MERGE_MAX, al, &cause);
		FUZZ_ASSERT((p[i] == NULL) == (cause != NULL));
		free(cause);
		cause = NULL;
	}
	if (p[0] == NULL && p[1] == NULL)
		goto out;

	/* One merge fed both inputs, as a single-worker merge does. */
	seq = merge_new(NULL);
	for (i = 0; i < 2; i++)
		if (p[i] != NULL && fuzz_merge_add(seq, p[i]) != 0)
			ok_seq = 0;
	if (ok_seq)
		n_seq = fuzz_merge_result(seq);

	/* A merge per input joined by merge_combine, as parallel shares are. */
	for (i = 0; i < 2; i++) {
		one[i] = merge_new(NULL);
		if (p[i] != NULL && fuzz_merge_add(one[i], p[i]) != 0)
			FUZZ_ASSERT(!"a lone input never mismatches");
	}
	if (merge_combine(one[0], one[1], &cause) != 0) {
		FUZZ_ASSERT(merge_mismatch(one[0]) && cause != NULL);
		free(cause);
		ok_par = 0;
	} else
		n_par = fuzz_merge_result(one[0]);
	FUZZ_ASSERT(ok_seq == ok_par);
	if (ok_seq)
		FUZZ_ASSERT(n_seq == n_par);

	merge_free(seq);
	merge_free(one[0]);
	merge_free(one[1]);
out:
	arena_free(arena);
	return 0;
}
