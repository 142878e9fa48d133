/*
 * Runs pprof_check over the shared corpus ($PROFD_CORPUS): every good
 * profile of MANIFEST.tsv must pass with the manifest's sample count and
 * sample types (except the legacy gperftools file, which must be refused
 * with a clear reason), and every file of bad/MANIFEST.tsv must get its
 * verdict. Prints the time taken as a TAP comment.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/pprof.h"
#include "test/lib/tap.h"
#include "test/lib/readfile.h"

#define MAX_INFLATED	((size_t)256 * 1024 * 1024)
#define LEGACY_FILE	"gperftools/cworker.cpu.prof"
#define BOMB_FILE	"bad/gzip_bomb_256MiB_zeros.pb.gz"

/* Splits a TSV line in place into at most max fields; returns the count. */
static size_t
split_tsv(char *line, char **fields, size_t max)
{
	size_t	n = 0;
	char	*p = line;

	line[strcspn(line, "\r\n")] = '\0';
	while (n < max) {
		fields[n++] = p;
		if ((p = strchr(p, '\t')) == NULL)
			break;
		*p++ = '\0';
	}
	return n;
}

/* Monotonic time in seconds. */
static double
now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Checks one file; *secs accumulates the time spent in pprof_check. */
static int
check_file(const char *corpus, const char *file, size_t max,
    struct pprof_summary *sum, char **cause, double *secs)
{
	char	 path[4096];
	uint8_t	*body;
	size_t	 len;
	double	 t0;
	int	 ret;

	snprintf(path, sizeof path, "%s/%s", corpus, file);
	if ((body = read_file(path, &len)) == NULL) {
		*cause = strdup(strerror(errno));
		memset(sum, 0, sizeof *sum);
		return 1;
	}
	t0 = now();
	ret = pprof_check(body, len, max, sum, cause);
	*secs += now() - t0;
	free(body);
	return ret;
}

/* The good profiles of MANIFEST.tsv; returns the number of files. */
static int
test_good(const char *corpus, double *secs)
{
	char			 path[4096], line[8192], *fl[20];
	FILE			*f;
	struct pprof_summary	 sum;
	char			*cause;
	const char		*want_types;
	long long		 want_samples;
	int			 ret, files = 0;

	snprintf(path, sizeof path, "%s/MANIFEST.tsv", corpus);
	if ((f = fopen(path, "r")) == NULL) {
		ok(0, "open %s: %s", path, strerror(errno));
		return 0;
	}
	if (fgets(line, sizeof line, f) == NULL)	/* the header */
		line[0] = '\0';
	while (fgets(line, sizeof line, f) != NULL) {
		if (split_tsv(line, fl, 20) < 5)
			continue;
		files++;
		cause = NULL;
		ret = check_file(corpus, fl[0], MAX_INFLATED, &sum, &cause,
		    secs);
		if (strcmp(fl[0], LEGACY_FILE) == 0) {
			ok(ret == PPROF_EINVAL && cause != NULL &&
			    strstr(cause, "legacy gperftools") != NULL,
			    "%s is refused: %s", fl[0], cause);
		} else {
			want_types = strcmp(fl[3], "-") == 0 ? "" : fl[3];
			want_samples = strtoll(fl[4], NULL, 10);
			ok(ret == 0 && sum.samples == want_samples &&
			    sum.sample_types != NULL &&
			    strcmp(sum.sample_types, want_types) == 0,
			    "%s: %" PRId64 " samples, %s%s%s", fl[0],
			    sum.samples, sum.sample_types ? sum.sample_types :
			    "-", cause ? ": " : "", cause ? cause : "");
		}
		pprof_summary_free(&sum);
		free(cause);
	}
	fclose(f);
	return files;
}

/* The files of bad/MANIFEST.tsv; returns the number of files. */
static int
test_bad(const char *corpus, double *secs)
{
	char			 path[4096], line[8192], *fl[8];
	FILE			*f;
	struct pprof_summary	 sum;
	char			*cause;
	int			 ret, files = 0, want_ok, pass;

	snprintf(path, sizeof path, "%s/bad/MANIFEST.tsv", corpus);
	if ((f = fopen(path, "r")) == NULL) {
		ok(0, "open %s: %s", path, strerror(errno));
		return 0;
	}
	if (fgets(line, sizeof line, f) == NULL)
		line[0] = '\0';
	while (fgets(line, sizeof line, f) != NULL) {
		if (split_tsv(line, fl, 8) < 2)
			continue;
		files++;
		cause = NULL;
		/* "valid (edge case)" passes; "invalid", "debatable" do not. */
		want_ok = strncmp(fl[1], "valid", 5) == 0;
		ret = check_file(corpus, fl[0], MAX_INFLATED, &sum, &cause,
		    secs);
		if (want_ok)
			pass = ret == 0;
		else if (strcmp(fl[0], BOMB_FILE) == 0)
			pass = ret == PPROF_EINVAL || ret == PPROF_ETOOBIG;
		else
			pass = ret == PPROF_EINVAL;
		ok(pass && (ret == 0 || cause != NULL), "%s (%s): %s", fl[0],
		    fl[1], ret == 0 ? "accepted" : cause);
		pprof_summary_free(&sum);
		free(cause);
	}
	fclose(f);

	cause = NULL;
	ret = check_file(corpus, BOMB_FILE, 16 * 1024 * 1024, &sum, &cause,
	    secs);
	ok(ret == PPROF_ETOOBIG && cause != NULL &&
	    strcmp(cause, "inflated profile exceeds 16777216 bytes") == 0,
	    "%s with a 16 MiB cap: %s", BOMB_FILE, cause);
	free(cause);
	return files;
}

int
main(void)
{
	const char	*corpus = getenv("PROFD_CORPUS");
	char		 path[4096];
	FILE		*f;
	double		 good_secs = 0, bad_secs = 0;
	int		 good, bad;

	if (corpus != NULL) {
		snprintf(path, sizeof path, "%s/MANIFEST.tsv", corpus);
		if ((f = fopen(path, "r")) != NULL)
			fclose(f);
		else
			corpus = NULL;
	}
	if (corpus == NULL) {
		printf("1..0 # SKIP PROFD_CORPUS is not set or has no "
		    "MANIFEST.tsv\n");
		return 0;
	}
	good = test_good(corpus, &good_secs);
	bad = test_bad(corpus, &bad_secs);
	printf("# pprof_check: %d good files in %.3f s, %d bad files "
	    "(+ the bomb at 16 MiB) in %.3f s\n", good, good_secs, bad,
	    bad_secs);
	return tap_done();
}
