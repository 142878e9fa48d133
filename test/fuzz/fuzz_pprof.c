/*
 * Fuzz target for the upload check (proto/pprof.c): pprof_check on the
 * input as it is and on the input wrapped in gzip, so mutations reach the
 * protobuf decoder and validator directly instead of dying on a gzip CRC.
 * Properties beyond "no crash, no leak": a non-gzip input gives the same
 * verdict raw and gzipped; an error always has a reason; an accepted profile
 * re-encodes (pprof_encode_gzip) into one that is accepted again with the
 * same summary; the scanner with its fast path and without it (exact
 * passes only) give the same verdict, cause and summary; the stream
 * reader the merge uses (proto/pprof_stream.c) accepts and refuses what
 * protobuf-c and pprof_validate do, with the same causes, and reads every
 * value protobuf-c decodes (test/lib/stream_testlib.h).
 */
#include <string.h>

#include <zlib.h>

#include "common/xmalloc.h"
#include "proto/pprof.h"
#include "proto/pprof_scan.h"
#include "test/fuzz/fuzz.h"
#include "test/lib/stream_testlib.h"

/* Inflated size cap: small, so gzip bombs are cut short quickly. */
#define FUZZ_PPROF_MAX	(4 * 1024 * 1024)

/* Gzips data into a new buffer; *outlen: OUT its size. */
static uint8_t *
fuzz_pprof_gzip(const uint8_t *data, size_t size, size_t *outlen)
{
	z_stream	 zs;
	uint8_t		*out;
	size_t		 cap;

	memset(&zs, 0, sizeof zs);
	FUZZ_ASSERT(deflateInit2(&zs, 1, Z_DEFLATED, 16 + MAX_WBITS, 8,
	    Z_DEFAULT_STRATEGY) == Z_OK);
	cap = deflateBound(&zs, size);
	out = xmalloc(cap);
	zs.next_in = (Bytef *)(uintptr_t)data;
	zs.avail_in = (uInt)size;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	FUZZ_ASSERT(deflate(&zs, Z_FINISH) == Z_STREAM_END);
	*outlen = cap - zs.avail_out;
	deflateEnd(&zs);
	return out;
}

/* Runs pprof_check and the properties every verdict must have. */
static int
fuzz_pprof_check(const uint8_t *data, size_t size, struct pprof_summary *sum)
{
	char	*cause = NULL;
	int	 rc;

	rc = pprof_check(data, size, FUZZ_PPROF_MAX, sum, &cause);
	FUZZ_ASSERT(rc == 0 || rc == PPROF_EINVAL || rc == PPROF_ETOOBIG);
	if (rc == 0)
		FUZZ_ASSERT(cause == NULL && sum->sample_types != NULL);
	else
		FUZZ_ASSERT(cause != NULL && *cause != '\0');
	free(cause);
	return rc;
}

/* An accepted body must survive load, re-encode and a second check. */
static void
fuzz_pprof_roundtrip(const uint8_t *data, size_t size,
    const struct pprof_summary *sum)
{
	pprof_profile_t		*p;
	struct pprof_summary	 again;
	uint8_t			*gz;
	size_t			 gzlen;
	char			*cause = NULL;

	p = pprof_load(data, size, FUZZ_PPROF_MAX, NULL, &cause);
	FUZZ_ASSERT(p != NULL && cause == NULL);
	FUZZ_ASSERT(pprof_encode_gzip(p, &gz, &gzlen, &cause) == 0);
	pprof_free(p, NULL);
	/* The re-encoding may be larger than the cap only if the input was. */
	if (pprof_check(gz, gzlen, SIZE_MAX / 2, &again, &cause) != 0) {
		fprintf(stderr, "re-encoded profile rejected: %s\n", cause);
		FUZZ_ASSERT(!"re-encoded profile accepted");
	}
	FUZZ_ASSERT(again.samples == sum->samples);
	FUZZ_ASSERT(again.time_nanos == sum->time_nanos);
	FUZZ_ASSERT(again.duration_nanos == sum->duration_nanos);
	FUZZ_ASSERT(strcmp(again.sample_types, sum->sample_types) == 0);
	FUZZ_ASSERT(strcmp(again.totals, sum->totals) == 0);
	pprof_summary_free(&again);
	free(gz);
}

/* The fast path must change nothing: same verdict, cause and summary. */
static void
fuzz_pprof_fast_vs_exact(const uint8_t *data, size_t size)
{
	struct pprof_summary	 a, b;
	char			*ca = NULL, *cb = NULL;
	int			 ra, rb;

	ra = pprof_scan(data, size, &a, &ca);
	rb = pprof_scan_exact(data, size, &b, &cb);
	if (ra != rb || (ra != 0 && strcmp(ca, cb) != 0)) {
		fprintf(stderr, "fast: %d %s / exact: %d %s\n", ra,
		    ca ? ca : "-", rb, cb ? cb : "-");
		FUZZ_ASSERT(!"fast path and exact passes agree");
	}
	if (ra == 0) {
		FUZZ_ASSERT(a.samples == b.samples);
		FUZZ_ASSERT(a.time_nanos == b.time_nanos);
		FUZZ_ASSERT(a.duration_nanos == b.duration_nanos);
		FUZZ_ASSERT(strcmp(a.sample_types, b.sample_types) == 0);
		FUZZ_ASSERT(strcmp(a.totals, b.totals) == 0);
		pprof_summary_free(&a);
		pprof_summary_free(&b);
	}
	free(ca);
	free(cb);
}

/* The stream reader must read raw bytes exactly as protobuf-c decodes them. */
static void
fuzz_pprof_stream(const uint8_t *data, size_t size)
{
	char	*d;
	int	 accepted;

	if ((d = stream_diff(data, size, &accepted)) != NULL) {
		fprintf(stderr, "stream reader: %s\n", d);
		FUZZ_ASSERT(!"the stream reader reads what protobuf-c decodes");
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pprof_summary	 sum_raw, sum_gz;
	uint8_t			*gz;
	size_t			 gzlen;
	int			 rc_raw, rc_gz;

	fuzz_pprof_fast_vs_exact(data, size);
	fuzz_pprof_stream(data, size);
	rc_raw = fuzz_pprof_check(data, size, &sum_raw);
	if (rc_raw == 0)
		fuzz_pprof_roundtrip(data, size, &sum_raw);

	gz = fuzz_pprof_gzip(data, size, &gzlen);
	rc_gz = fuzz_pprof_check(gz, gzlen, &sum_gz);
	if (rc_gz == 0)
		fuzz_pprof_roundtrip(gz, gzlen, &sum_gz);
	free(gz);

	/* Plain bytes and the same bytes gzipped get the same verdict. */
	if (size > 0 && !pprof_is_gzip(data, size)) {
		FUZZ_ASSERT(rc_raw == rc_gz);
		if (rc_raw == 0) {
			FUZZ_ASSERT(sum_raw.samples == sum_gz.samples);
			FUZZ_ASSERT(strcmp(sum_raw.sample_types,
			    sum_gz.sample_types) == 0);
		}
	}
	pprof_summary_free(&sum_raw);
	pprof_summary_free(&sum_gz);
	return 0;
}
