/*
 * The synthetic data shared by fill_meta and store_bench: ~50 services,
 * 7 profile types, 1-4 labels per profile from small value sets (plus a
 * rare canary label), times spread over 7 days, time-sortable ids.
 */
#ifndef PROFD_BENCH_GEN_H
#define PROFD_BENCH_GEN_H

#include <stdint.h>
#include <stdio.h>

#define BENCH_SERVICES	50
#define BENCH_HOSTS	200
#define BENCH_SPAN_NS	(7LL * 24 * 3600 * 1000000000LL)

__attribute__((unused)) static const char *bench_types[] = {
	"cpu", "heap", "goroutine", "mutex", "block", "threadcreate", "other"
};
/* Percent of profiles of each type. */
__attribute__((unused)) static const int bench_type_pct[] = { 35, 35, 10, 7, 7, 3, 3 };
__attribute__((unused)) static const char *bench_envs[] = { "prod", "staging", "dev" };
__attribute__((unused)) static const char *bench_regions[] = {
	"us-east-1", "us-west-2", "eu-west-1", "ap-south-1"
};

/* xorshift64*: fast, deterministic. */
static inline uint64_t
bench_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

/* Uniform double in [0, 1). */
static inline double
bench_unit(uint64_t *s)
{
	return (double)(bench_rand(s) >> 11) / 9007199254740992.0;
}

/* A service index, skewed: low indices are busier. */
static inline int
bench_service(uint64_t *s)
{
	double	u = bench_unit(s);

	return (int)(BENCH_SERVICES * u * u);
}

/* A type index by bench_type_pct. */
static inline int
bench_type(uint64_t *s)
{
	int	r = (int)(bench_rand(s) % 100), i;

	for (i = 0; i < 6; i++) {
		if (r < bench_type_pct[i])
			return i;
		r -= bench_type_pct[i];
	}
	return 6;
}

/* A 20-character base32hex id: 13 characters of time, 7 random. */
static inline void
bench_id(char *id, int64_t t, uint64_t *s)
{
	static const char	 d[] = "0123456789ABCDEFGHIJKLMNOPQRSTUV";
	uint64_t		 v = (uint64_t)t, r = bench_rand(s);
	int			 i;

	for (i = 12; i >= 0; i--) {
		id[i] = d[v & 31];
		v >>= 5;
	}
	for (i = 13; i < 20; i++) {
		id[i] = d[r & 31];
		r >>= 5;
	}
	id[20] = '\0';
}

#endif
