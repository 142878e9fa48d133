/*
 * pprof helpers: bounded gunzip, decode, validation, summary, encode+gzip.
 * Everything an upload or a merge needs to turn bytes into a checked
 * perftools.profiles.Profile and back. Pure functions, safe on any thread.
 */
#ifndef PROFD_PPROF_H
#define PROFD_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile pprof_profile_t;

/* Return codes: 0 ok; PPROF_EINVAL bad input (HTTP 400); PPROF_ETOOBIG over
 * a size limit (HTTP 413); PPROF_ENOMEM a memory budget or malloc refused
 * (the budget_acct says which); PPROF_ECANCELED the caller's cancel flag
 * was set. */
#define PPROF_EINVAL	(-1)
#define PPROF_ETOOBIG	(-2)
#define PPROF_ENOMEM	(-3)
#define PPROF_ECANCELED	(-4)

struct budget_acct;

/* True if buf starts with the gzip magic bytes. */
int	pprof_is_gzip(const uint8_t *buf, size_t len);

/*
 * Inflates a gzip body (one or more members) into a new buffer, refusing to
 * produce more than max bytes; a body that is not gzip is copied as is.
 * Trailing bytes after the last gzip member are an error.
 * *out: OUT new buffer (caller frees). *cause: OUT reason on error.
 */
int	pprof_inflate(const uint8_t *in, size_t len, size_t max, uint8_t **out,
	    size_t *outlen, char **cause);
/*
 * pprof_inflate with every byte of the buffer charged to acct, which may
 * refuse (PPROF_ENOMEM). *out holds exactly *outlen bytes (one if 0):
 * free it with budget_dealloc(acct, *out, *outlen).
 */
int	pprof_inflate_acct(const uint8_t *in, size_t len, size_t max,
	    struct budget_acct *acct, uint8_t **out, size_t *outlen,
	    char **cause);

/*
 * Decodes a raw (inflated) protobuf. alloc may be NULL (malloc), or a
 * common/arena.h arena's arena_allocator() to free it all at once.
 * Returns NULL and sets *cause if the bytes are not a Profile message.
 * Free with pprof_free(p, alloc).
 */
pprof_profile_t	*pprof_decode(const uint8_t *raw, size_t len,
		    ProtobufCAllocator *alloc, char **cause);
void		 pprof_free(pprof_profile_t *, ProtobufCAllocator *alloc);

/*
 * Checks the references inside a decoded profile: string indices, ids of
 * locations, functions and mappings, value counts against sample types.
 * Returns 0 or PPROF_EINVAL with *cause naming the first problem.
 */
int	pprof_validate(const pprof_profile_t *, char **cause);

/* The most sample types a profile's totals are kept for. */
#define PPROF_TOTALS_MAX_TYPES	16

/* What profd records about an uploaded profile. */
struct pprof_summary {
	int64_t	 samples;	/* number of Sample messages */
	char	*sample_types;	/* "samples/count,cpu/nanoseconds" */
	/*
	 * The sum of each sample type's values over all samples, in
	 * sample_types' order, then ";K" if default_sample_type names type
	 * K: "12,120000000" or "3,96,1,32;3". Sums wrap as Go's int64 do.
	 * "" for a profile of more than PPROF_TOTALS_MAX_TYPES sample types
	 * (real ones have up to 8; a tiny gzipped upload can name 20,000,
	 * which timelines would store once per type and label).
	 */
	char	*totals;
	int64_t	 time_nanos;
	int64_t	 duration_nanos;
};

/* Fills *sum from a validated profile. */
void	pprof_summarize(const pprof_profile_t *, struct pprof_summary *sum);
void	pprof_summary_free(struct pprof_summary *);

/*
 * The whole upload check: inflate (max inflated bytes), decode, validate,
 * summarize. Returns 0, PPROF_EINVAL or PPROF_ETOOBIG with *cause set.
 */
int	pprof_check(const uint8_t *body, size_t len, size_t max_inflated,
	    struct pprof_summary *sum, char **cause);

/*
 * pprof_check's checks of raw (inflated) bytes, without the summary; the
 * scanner's scratch is charged to acct (may be NULL) and *cancel (may be
 * NULL) read every few thousand fields. Returns 0, PPROF_EINVAL,
 * PPROF_ENOMEM or PPROF_ECANCELED with *cause set.
 */
int	pprof_check_raw(const uint8_t *raw, size_t len, struct budget_acct *acct,
	    const volatile int *cancel, char **cause);

/*
 * Reads a stored blob (gzipped or raw) into a decoded, validated profile.
 * Returns NULL with *cause set on failure.
 */
pprof_profile_t	*pprof_load(const uint8_t *body, size_t len,
		    size_t max_inflated, ProtobufCAllocator *alloc, char **cause);

/* Serializes and gzips a profile. *out: OUT new buffer (caller frees). */
int	pprof_encode_gzip(const pprof_profile_t *, uint8_t **out,
	    size_t *outlen, char **cause);

#endif
