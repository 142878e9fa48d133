/*
 * merge_files: merges pprof files with merge_run, the way the daemon does,
 * for the end-to-end comparison with `go tool pprof -proto` and for the
 * merge benchmark.
 *
 *   merge_files [-j WORKERS] [-m BYTES] [-v] OUT FILE...
 *   merge_files -R START,STEP,COUNT OUTDIR FILE...
 *
 * -j runs the merge with a worker pool of that many threads (default: no
 * pool, one thread). -m draws the merge's memory from a budget of BYTES
 * (K/M/G suffixes; default: a budget without limit, which only counts); a
 * merge it stops exits 3 after printing "merge_files: CODE CAUSE". -v
 * prints what the result holds to stderr: "profiles=N samples=S
 * locations=L functions=F mappings=M bytes=B budget_peak=P" (P: the most
 * bytes the budget counted at once).
 * -R writes COUNT copies of the FILEs (cycling) as OUTDIR/NNNNN.pb.gz, copy
 * k with time_nanos START + k * STEP and nothing else changed (for the
 * benchmark, which needs distinct timestamps).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "merge/merge_run.h"
#include "common/budget.h"
#include "common/parse.h"
#include "common/pool.h"
#include "common/xmalloc.h"
#include "proto/pprof.h"
#include "test/lib/merge_testlib.h"

/* Reads file i of the argument list. */
static int
merge_files_fetch(void *arg, size_t i, uint8_t **buf, size_t *len,
    char **cause)
{
	char **files = arg;
	FILE *f = fopen(files[i], "rb");
	size_t cap = 0, n;
	uint8_t *b = NULL;

	if (f == NULL)
		return xcause(cause, "%s: %s", files[i], strerror(errno));
	*len = 0;
	for (;;) {
		if (*len == cap)
			b = xreallocarray(b, cap = cap ? cap * 2 : 65536, 1);
		if ((n = fread(b + *len, 1, cap - *len, f)) == 0)
			break;
		*len += n;
	}
	fclose(f);
	*buf = b;
	return 0;
}

/* -R: writes count re-timestamped copies of files into dir. */
static int
merge_files_retime(const char *spec, const char *dir, char **files,
    size_t nfiles)
{
	long long start, step, count, k;
	Perftools__Profiles__Profile *p;
	uint8_t *buf, *out;
	size_t len, outlen;
	char *cause = NULL, *path;
	FILE *f;

	if (sscanf(spec, "%lld,%lld,%lld", &start, &step, &count) != 3 ||
	    nfiles == 0)
		return 2;
	for (k = 0; k < count; k++) {
		if (merge_files_fetch(files, (size_t)k % nfiles, &buf, &len,
		    &cause) != 0 || (p = pprof_load(buf, len, SIZE_MAX, NULL,
		    &cause)) == NULL || (p->time_nanos = start + k * step,
		    pprof_encode_gzip(p, &out, &outlen, &cause)) != 0) {
			fprintf(stderr, "merge_files: %s\n", cause);
			return 1;
		}
		path = xasprintf("%s/%05lld.pb.gz", dir, k);
		if ((f = fopen(path, "wb")) == NULL ||
		    fwrite(out, 1, outlen, f) != outlen || fclose(f) != 0) {
			fprintf(stderr, "merge_files: %s: %s\n", path,
			    strerror(errno));
			return 1;
		}
		free(path);
		free(out);
		free(buf);
		pprof_free(p, NULL);
	}
	return 0;
}

int
main(int argc, char **argv)
{
	const char *retime = NULL;
	struct event_base *base = NULL;
	struct budget *budget;
	uint64_t limit = 0;
	struct pool *pool = NULL;
	struct merge_run_skips skips;
	uint8_t *out = NULL;
	size_t outlen = 0;
	char *cause = NULL;
	int c, workers = 0, verbose = 0, code = 0, rc;
	FILE *f;

	while ((c = getopt(argc, argv, "j:m:R:v")) != -1) {
		switch (c) {
		case 'm':
			if (parse_size(optarg, &limit, &cause) != 0) {
				fprintf(stderr, "merge_files: -m: %s\n", cause);
				return 2;
			}
			break;
		case 'R':
			retime = optarg;
			break;
		case 'j':
			workers = atoi(optarg);
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			goto usage;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 2)
		goto usage;
	if (retime != NULL) {
		if ((rc = merge_files_retime(retime, argv[0], argv + 1,
		    (size_t)argc - 1)) == 2)
			goto usage;
		return rc;
	}
	if (workers > 0) {
		evthread_use_pthreads();
		base = event_base_new();
		pool = pool_new(base, workers, 1024);
	}
	budget = budget_new((size_t)limit);
	rc = merge_run(pool, budget, (size_t)argc - 1, merge_files_fetch,
	    argv + 1, 0, NULL, &out, &outlen, &skips, &code, &cause);
	pool_free(pool);
	if (base != NULL)
		event_base_free(base);
	if (skips.damaged > 0) {
		/* a file tool: a file that does not merge is an error */
		fprintf(stderr, "merge_files: %zu files left out, first: %s\n",
		    skips.damaged, skips.first);
		free(skips.first);
		free(out);
		free(cause);
		return 1;
	}
	if (rc != 0) {
		fprintf(stderr, "merge_files: %d %s\n", code, cause);
		free(cause);
		budget_free(budget);
		return code == 413 || code == 503 ? 3 : 1;
	}
	if ((f = fopen(argv[0], "wb")) == NULL ||
	    fwrite(out, 1, outlen, f) != outlen || fclose(f) != 0) {
		fprintf(stderr, "merge_files: %s: %s\n", argv[0],
		    strerror(errno));
		return 1;
	}
	if (verbose) {
		Perftools__Profiles__Profile *p = tl_decode_gz(out, outlen);

		if (p == NULL) {
			fprintf(stderr, "merge_files: result does not decode\n");
			return 1;
		}
		fprintf(stderr, "profiles=%d samples=%zu locations=%zu "
		    "functions=%zu mappings=%zu bytes=%zu budget_peak=%zu\n",
		    argc - 1, p->n_sample, p->n_location, p->n_function,
		    p->n_mapping, outlen, budget_peak(budget));
		perftools__profiles__profile__free_unpacked(p, NULL);
	}
	free(out);
	budget_free(budget);
	return 0;
usage:
	fprintf(stderr, "usage: merge_files [-j workers] [-m bytes] [-v] OUT "
	    "FILE...\n"
	    "       merge_files -R start,step,count OUTDIR FILE...\n");
	return 2;
}
