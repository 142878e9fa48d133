/*
 * Differential tests of the wire scanner (proto/pprof_scan.c) against the
 * protobuf-c path it replaced in pprof_check(): inflate, pprof_decode,
 * pprof_validate, pprof_summarize. Both must give the same verdict, the same
 * cause and the same summary for every file of $PROFD_CORPUS and for
 * thousands of seeded mutations of real raw profiles. Then prints the check
 * time of both paths (median of many runs) for the bench/pool CPU profiles
 * and go/allocheavy/cpu_B_03. The hand-made wire-format cases are in
 * test_pprof_scan_wire.c; the wire writer and the comparison of the two
 * paths in test/lib/scan_testlib.h.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test/lib/readfile.h"
#include "test/lib/scan_testlib.h"
#include "test/lib/tap.h"

/* Every file of MANIFEST.tsv and bad/MANIFEST.tsv. */
static void
test_corpus(const char *corpus)
{
	const char	*manifests[] = { "MANIFEST.tsv", "bad/MANIFEST.tsv" };
	char		 path[4096], line[8192], *tab, *d, *cause;
	uint8_t		*body;
	size_t		 len, i;
	FILE		*f;
	int		 code, files = 0, accepted = 0;

	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof path, "%s/%s", corpus, manifests[i]);
		if ((f = fopen(path, "r")) == NULL) {
			ok(0, "open %s: %s", path, strerror(errno));
			continue;
		}
		if (fgets(line, sizeof line, f) == NULL)
			line[0] = '\0';
		while (fgets(line, sizeof line, f) != NULL) {
			if ((tab = strchr(line, '\t')) == NULL)
				continue;
			*tab = '\0';
			snprintf(path, sizeof path, "%s/%s", corpus, line);
			if ((body = read_file(path, &len)) == NULL) {
				ok(0, "read %s: %s", path, strerror(errno));
				continue;
			}
			d = both(body, len, MAX_INFLATED, &code, &cause, NULL);
			ok(d == NULL, "%s: both paths say %s%s%s", line,
			    code == 0 ? "ok" : cause, d ? ": " : "",
			    d ? d : "");
			files++;
			accepted += code == 0;
			free(d);
			free(cause);
			free(body);
		}
		fclose(f);
	}
	printf("# corpus: %d files, %d accepted\n", files, accepted);
}

/* A seeded xorshift64* generator. */
static uint64_t
rnd(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 2685821657736338717ULL;
}

/* A random number below n (n > 0). */
static size_t
rnd_below(uint64_t *state, size_t n)
{
	return (size_t)(rnd(state) % n);
}

/* Offsets of the top-level fields of a valid raw profile. */
static size_t
top_fields(const uint8_t *p, size_t len, size_t *off, size_t max)
{
	size_t		 pos = 0, n = 0, i;
	uint64_t	 key, v;
	unsigned	 shift;

	while (pos < len && n < max) {
		off[n++] = pos;
		for (key = 0, shift = 0; pos < len; shift += 7) {
			key |= (uint64_t)(p[pos] & 0x7f) << shift;
			if ((p[pos++] & 0x80) == 0)
				break;
		}
		for (v = 0, shift = 0, i = 0; pos < len && (key & 7) != 1 &&
		    (key & 7) != 5; shift += 7, i++) {
			v |= (uint64_t)(p[pos] & 0x7f) << shift;
			if ((p[pos++] & 0x80) == 0)
				break;
		}
		if ((key & 7) == 2)
			pos += v;
		else if ((key & 7) == 1)
			pos += 8;
		else if ((key & 7) == 5)
			pos += 4;
	}
	off[n] = len;
	return n;
}

/* Inserts n bytes at pos of b. */
static void
insert(struct buf *b, size_t pos, const uint8_t *p, size_t n)
{
	put(b, p, n);
	memmove(b->p + pos + n, b->p + pos, b->len - n - pos);
	memmove(b->p + pos, p, n);
}

/* Applies one random mutation to b; orig's top-level fields are off[]. */
static void
mutate(struct buf *b, uint64_t *st, const uint8_t *orig, const size_t *off,
    size_t nf)
{
	uint8_t		junk[16];
	size_t		pos, n, i, k;
	struct buf	t = { NULL, 0, 0 };

	pos = b->len != 0 ? rnd_below(st, b->len) : 0;
	switch (rnd_below(st, 11)) {
	case 0:		/* a random byte */
		if (b->len != 0)
			b->p[pos] = (uint8_t)rnd(st);
		break;
	case 1:		/* a flipped bit */
		if (b->len != 0)
			b->p[pos] ^= (uint8_t)(1 << rnd_below(st, 8));
		break;
	case 2:		/* truncated */
		b->len = pos;
		break;
	case 3:		/* varint junk inserted */
		n = 1 + rnd_below(st, 12);
		for (i = 0; i < n; i++)
			junk[i] = (uint8_t)(rnd(st) | (i + 1 < n ? 0x80 : 0));
		insert(b, pos, junk, n);
		break;
	case 4:		/* a top-level field duplicated somewhere */
	case 5:
		if (nf == 0)
			break;
		k = rnd_below(st, nf);
		i = off[rnd_below(st, nf + 1)];
		if (i <= b->len)
			insert(b, i, orig + off[k], off[k + 1] - off[k]);
		break;
	case 6:		/* a top-level field removed */
		if (nf == 0)
			break;
		k = rnd_below(st, nf);
		if (off[k + 1] <= b->len) {
			memmove(b->p + off[k], b->p + off[k + 1],
			    b->len - off[k + 1]);
			b->len -= off[k + 1] - off[k];
		}
		break;
	case 7:		/* a random small field at a top-level boundary */
		put_tag(&t, (uint32_t)rnd_below(st, 17),
		    (unsigned)rnd_below(st, 8));
		n = rnd_below(st, 4);
		for (i = 0; i < n; i++)
			put_varint(&t, rnd_below(st, 300));
		i = nf != 0 ? off[rnd_below(st, nf + 1)] : 0;
		if (i <= b->len)
			insert(b, i, t.p, t.len);
		free(t.p);
		break;
	case 8:		/* a byte range removed */
		n = 1 + rnd_below(st, 8);
		if (pos + n <= b->len) {
			memmove(b->p + pos, b->p + pos + n, b->len - pos - n);
			b->len -= n;
		}
		break;
	case 9:		/* a byte nudged: indices and ids change */
		if (b->len != 0)
			b->p[pos] += rnd_below(st, 2) ? 1 : 0xff;
		break;
	default:	/* a small value dropped in */
		if (b->len != 0)
			b->p[pos] = (uint8_t)rnd_below(st, 12);
		break;
	}
}

/* Mutates the raw form of a corpus file rounds times; both must agree. */
static void
test_mutations(const char *corpus, const char *file, int rounds,
    uint64_t seed)
{
	char		 path[4096], *d, *cause, *first = NULL;
	uint8_t		*body, *raw;
	size_t		 len, rawlen, *off, nf;
	struct buf	 b = { NULL, 0, 0 };
	uint64_t	 st = seed;
	int		 r, m, code, bad = 0, accepted = 0, decode = 0;

	snprintf(path, sizeof path, "%s/%s", corpus, file);
	if ((body = read_file(path, &len)) == NULL ||
	    pprof_inflate(body, len, MAX_INFLATED, &raw, &rawlen,
	    &cause) != 0) {
		ok(0, "mutations: cannot read %s", file);
		free(body);
		return;
	}
	free(body);
	off = malloc((rawlen + 1) * sizeof *off);
	nf = top_fields(raw, rawlen, off, rawlen);
	for (r = 0; r < rounds; r++) {
		b.len = 0;
		put(&b, raw, rawlen);
		for (m = 1 + (int)rnd_below(&st, 3); m > 0; m--)
			mutate(&b, &st, raw, off, nf);
		d = both(b.p, b.len, MAX_INFLATED, &code, &cause, NULL);
		if (d != NULL) {
			if (bad++ == 0)
				first = d;
			else
				free(d);
		}
		accepted += code == 0;
		decode += code != 0 && cause != NULL &&
		    strncmp(cause, "not a pprof", 11) == 0;
		free(cause);
	}
	ok(bad == 0, "mutations of %s: %d rounds, %d accepted, %d refused "
	    "at the wire, %d refused by validation, %d disagreements%s%s",
	    file, rounds, accepted, decode, rounds - accepted - decode, bad,
	    first ? ": " : "", first ? first : "");
	free(first);
	free(b.p);
	free(off);
	free(raw);
}

/*
 * CPU time of this thread in seconds: the machine is shared, and wall time
 * would count the other processes' turns.
 */
static double
now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Orders doubles. */
static int
dbl_cmp(const void *a, const void *b)
{
	double	x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median of n times. */
static double
median(double *t, size_t n)
{
	qsort(t, n, sizeof *t, dbl_cmp);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/*
 * Median time of one check of body: mode 0 the scanner path, 1 the old
 * path, 2 the inflate alone.
 */
static double
time_check(const uint8_t *body, size_t len, int mode, int runs)
{
	struct pprof_summary	 sum;
	double			*t, t0, med;
	uint8_t			*raw;
	size_t			 rawlen;
	int			 i;

	t = calloc((size_t)runs, sizeof *t);
	for (i = 0; i < runs; i++) {
		t0 = now();
		if (mode == 0)
			(void)pprof_check(body, len, MAX_INFLATED, &sum, NULL);
		else if (mode == 1)
			(void)slow_check(body, len, MAX_INFLATED, &sum, NULL);
		else {
			(void)pprof_inflate(body, len, MAX_INFLATED, &raw,
			    &rawlen, NULL);
			free(raw);
			memset(&sum, 0, sizeof sum);
		}
		t[i] = now() - t0;
		pprof_summary_free(&sum);
	}
	med = median(t, (size_t)runs);
	free(t);
	return med;
}

/* Prints the check times of one set of files (medians, microseconds). */
static void
bench(const char *corpus, const char *label, const char *prefix, int from,
    int to, int runs)
{
	char	 name[256], path[4096];
	uint8_t	*body;
	size_t	 len, bytes = 0;
	double	 fast[100], slow[100], infl[100], f, s, z;
	int	 i, n = 0;

	for (i = from; i <= to && n < 100; i++) {
		snprintf(name, sizeof name, "%s_%02d.pb.gz", prefix, i);
		snprintf(path, sizeof path, "%s/%s", corpus, name);
		if ((body = read_file(path, &len)) == NULL)
			continue;
		bytes += len;
		fast[n] = time_check(body, len, 0, runs);
		slow[n] = time_check(body, len, 1, runs);
		infl[n] = time_check(body, len, 2, runs);
		n++;
		free(body);
	}
	if (n == 0) {
		ok(0, "bench: no files for %s", label);
		return;
	}
	f = median(fast, (size_t)n) * 1e6;
	s = median(slow, (size_t)n) * 1e6;
	z = median(infl, (size_t)n) * 1e6;
	printf("# bench %s (%d files, %zu bytes gzipped each on average, "
	    "median of %d runs, CPU time): check %.1f us with protobuf-c, "
	    "%.1f us with the scanner (%.2fx); gunzip alone %.1f us, so "
	    "past gunzip %.1f us vs %.1f us (%.1fx); %.0f checks/s/core\n",
	    label, n,
	    bytes / (size_t)n, runs, s, f, s / f, z, s - z, f - z,
	    (s - z) / (f - z > 0 ? f - z : 1e-9), 1e6 / f);
	ok(1, "bench %s measured", label);
}

/* The corpus, its mutations, then the timings; all need $PROFD_CORPUS. */
int
main(void)
{
	const char	*corpus = getenv("PROFD_CORPUS");

	if (corpus == NULL || *corpus == '\0') {
		ok(0, "PROFD_CORPUS is not set");
		return tap_done();
	}
	test_corpus(corpus);
	test_mutations(corpus, "bad/minimal_handmade_valid.pb.gz", 3000, 1);
	test_mutations(corpus, "go/cpuburn/mutex_A_01.pb.gz", 2000, 2);
	test_mutations(corpus, "go/goroutines/goroutine_A_01.pb.gz", 600, 3);
	test_mutations(corpus, "go/contention/block_A_02.pb.gz", 1500, 4);
	test_mutations(corpus, "bench/pool/cpu_A_01.pb.gz", 600, 5);
	test_mutations(corpus, "go/allocheavy/cpu_B_03.pb.gz", 300, 6);
	test_mutations(corpus, "go/allocheavy/allocs_A_01.pb.gz", 600, 7);
	test_mutations(corpus, "go/bigstacks/goroutine_A_01.pb.gz", 600, 8);
	bench(corpus, "bench/pool/cpu_A", "bench/pool/cpu_A", 1,
	    50, 15);
	bench(corpus, "bench/pool/cpu_B", "bench/pool/cpu_B", 1,
	    50, 15);
	bench(corpus, "go/allocheavy/cpu_B_03",
	    "go/allocheavy/cpu_B", 3, 3, 301);
	return tap_done();
}
