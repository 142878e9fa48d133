/*
 * Unit tests of the parallel merge driver (merge/merge_run.c) on corpus
 * files: sequential and pooled runs agree with merge_add, several merges at
 * once on a pool whose every worker is inside merge_run do not deadlock,
 * each failure maps to its HTTP code (404, 422, 500, 499), and merges draw
 * their memory from a budget (413, 503, helpers giving inputs back).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <zlib.h>

#include "common/budget.h"

#include "merge/merge.h"
#include "merge/merge_run.h"
#include "common/pool.h"
#include "test/lib/tap.h"
#include "test/lib/merge_testlib.h"

static const char *corpus;

struct files {
	char		**paths;
	size_t		  n;
	size_t		  fail_at;	/* fetch of this index fails */
	size_t		  gone_at;	/* this index and above are deleted */
	size_t		  cancel_at;	/* fetch of this index sets cancel */
	volatile int	  cancel;
};

/* Reads file i (the merge_fetch_cb). */
static int
files_fetch(void *arg, size_t i, uint8_t **buf, size_t *len, char **cause)
{
	struct files *fs = arg;
	FILE *f;
	size_t cap = 0, n;
	uint8_t *b = NULL;

	if (i == fs->fail_at)
		return xcause(cause, "blob %zu is gone", i);
	if (i >= fs->gone_at)
		return 1;
	if (i == fs->cancel_at)
		fs->cancel = 1;
	if ((f = fopen(fs->paths[i], "rb")) == NULL)
		return xcause(cause, "%s: %s", fs->paths[i], strerror(errno));
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

/* A file list from corpus-relative names (NULL-terminated). */
static struct files *
files_new(const char **rel)
{
	struct files *fs = xcalloc(1, sizeof *fs);

	while (rel[fs->n] != NULL)
		fs->n++;
	fs->paths = xcalloc(fs->n, sizeof *fs->paths);
	for (size_t i = 0; i < fs->n; i++)
		fs->paths[i] = xasprintf("%s/%s", corpus, rel[i]);
	fs->fail_at = fs->cancel_at = fs->gone_at = (size_t)-1;
	return fs;
}

/* The bench pool's first n files. */
static struct files *
files_pool(size_t n)
{
	struct files *fs = xcalloc(1, sizeof *fs);

	fs->n = n;
	fs->paths = xcalloc(n, sizeof *fs->paths);
	for (size_t i = 0; i < n; i++)
		fs->paths[i] = xasprintf("%s/bench/pool/cpu_%c_%02zu.pb.gz",
		    corpus, i % 2 ? 'B' : 'A', i / 2 % 50 + 1);
	fs->fail_at = fs->cancel_at = fs->gone_at = (size_t)-1;
	return fs;
}

static void
files_free(struct files *fs)
{
	for (size_t i = 0; i < fs->n; i++)
		free(fs->paths[i]);
	free(fs->paths);
	free(fs);
}

/* What the last run() left out. */
static struct merge_run_skips last_skips;

/* Runs merge_run; returns the canonical text of the result or NULL. */
static char *
run(struct pool *pool, struct files *fs, int *code, char **cause)
{
	uint8_t *out = NULL;
	size_t len = 0;
	Perftools__Profiles__Profile *p;
	char *c;

	*code = 0;
	free(last_skips.first);
	if (merge_run(pool, NULL, fs->n, files_fetch, fs, 0, &fs->cancel, &out, &len,
	    &last_skips, code, cause) != 0)
		return NULL;
	p = tl_decode_gz(out, len);
	free(out);
	if (p == NULL)
		return xstrdup("(undecodable)");
	c = tl_canon(p, 0);
	perftools__profiles__profile__free_unpacked(p, NULL);
	return c;
}

/* The canonical text of the same files merged with merge_add. */
static char *
reference(struct files *fs)
{
	struct merge *m = merge_new(NULL);
	char *c;

	for (size_t i = 0; i < fs->n; i++) {
		Perftools__Profiles__Profile *p = tl_load(fs->paths[i]);

		if (p == NULL || merge_add(m, p, NULL) != 0)
			printf("# reference: %s failed\n", fs->paths[i]);
		if (p != NULL)
			perftools__profiles__profile__free_unpacked(p, NULL);
	}
	c = tl_canon(merge_result(m), 0);
	merge_free(m);
	return c;
}

/* A merge request as the daemon would queue it. */
struct req {
	struct pool_job	 job;
	struct pool	*pool;
	struct files	*fs;
	char		*canon;
	int		 code;
	int		*finished;
	pthread_mutex_t	*lock;
	pthread_cond_t	*cond;
};

static void
req_work(struct pool_job *job)
{
	struct req *r = (struct req *)job;
	char *cause = NULL;

	r->canon = run(r->pool, r->fs, &r->code, &cause);
	free(cause);
	pthread_mutex_lock(r->lock);
	(*r->finished)++;
	pthread_cond_signal(r->cond);
	pthread_mutex_unlock(r->lock);
}

static void
req_done(struct pool_job *job)
{
	(void)job;
}

static void
test_agree(struct pool *pool)
{
	struct files *fs = files_pool(40);
	char *want = reference(fs), *seq, *par, *cause = NULL;
	int code;

	seq = run(NULL, fs, &code, &cause);
	ok(seq != NULL && code == 200, "sequential run: 200");
	ok(seq != NULL && strcmp(seq, want) == 0,
	    "sequential run == merge_add of the same files");
	par = run(pool, fs, &code, &cause);
	ok(par != NULL && code == 200, "pooled run: 200");
	ok(par != NULL && strcmp(par, want) == 0,
	    "pooled run == merge_add of the same files");
	free(want);
	free(seq);
	free(par);
	files_free(fs);
}

static void
test_no_deadlock(struct pool *pool)
{
	enum { NREQ = 4 };
	/* Static: the pool runs their done() as late as pool_free. */
	static struct req reqs[NREQ];
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
	struct files *fs = files_pool(60);
	char *want = reference(fs);
	struct timespec until;
	int finished = 0, i, same = 1;

	for (i = 0; i < NREQ; i++) {
		memset(&reqs[i], 0, sizeof reqs[i]);
		reqs[i].job.work = req_work;
		reqs[i].job.done = req_done;
		reqs[i].pool = pool;
		reqs[i].fs = fs;
		reqs[i].finished = &finished;
		reqs[i].lock = &lock;
		reqs[i].cond = &cond;
		pool_submit(pool, &reqs[i].job);
	}
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 30;
	pthread_mutex_lock(&lock);
	while (finished < NREQ &&
	    pthread_cond_timedwait(&cond, &lock, &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&lock);
	ok(finished == NREQ, "%d merges at once on 2 workers all finish "
	    "(%d did)", NREQ, finished);
	if (finished < NREQ) {
		printf("Bail out! pool deadlocked\n");
		exit(1);
	}
	for (i = 0; i < NREQ; i++) {
		if (reqs[i].code != 200 || reqs[i].canon == NULL ||
		    strcmp(reqs[i].canon, want) != 0)
			same = 0;
		free(reqs[i].canon);
	}
	ok(same, "each of them == merge_add of the same files");
	free(want);
	files_free(fs);
}

static void
test_errors(struct pool *pool)
{
	const char *mixed[] = { "go/cpuburn/cpu_A_01.pb.gz",
	    "go/cpuburn/cpu_B_01.pb.gz", "go/cpuburn/heap_A_01.pb.gz",
	    "go/cpuburn/cpu_A_02.pb.gz", NULL };
	const char *bad[] = { "go/cpuburn/cpu_A_01.pb.gz",
	    "bad/truncated_gzip.pb.gz", "go/cpuburn/cpu_A_02.pb.gz", NULL };
	const char *junk[] = { "go/cpuburn/cpu_A_01.pb.gz",
	    "bad/gzip_trailing_garbage.pb.gz", NULL };
	const char *garbage[] = { "bad/gzip_of_random_bytes.pb.gz", NULL };
	const char *refs[] = { "bad/unknown_location_id.pb.gz", NULL };
	const char *odd[] = { "go/cpuburn/cpu_A_01.pb.gz",
	    "bad/uncompressed_valid.pb", "bad/two_gzip_members_valid.pb.gz",
	    "bad/zero_samples.pb.gz", NULL };
	const char *bomb[] = { "bad/gzip_bomb_256MiB_zeros.pb.gz", NULL };
	struct pool *pools[2] = { NULL, pool };
	struct files *fs;
	char *c, *cause = NULL;
	int code, k;

	for (k = 0; k < 2; k++) {
		const char *how = k ? "pooled" : "sequential";

		fs = files_new(mixed);
		c = run(pools[k], fs, &code, &cause);
		ok(c == NULL && code == 422 && cause != NULL && strstr(cause,
		    "sample types differ: samples/count,cpu/nanoseconds vs "
		    "alloc_objects/count") != NULL, "%s: cpu + heap is 422 (%s)",
		    how, cause ? cause : "");
		free(cause);
		cause = NULL;
		free(c);
		files_free(fs);

		fs = files_new(bad);
		c = run(pools[k], fs, &code, &cause);
		ok(c != NULL && code == 200 && last_skips.damaged == 1 &&
		    last_skips.first != NULL &&
		    strstr(last_skips.first, "profile 1") != NULL,
		    "%s: a truncated blob is left out, naming it, and the rest "
		    "merges (%s)", how, last_skips.first ? last_skips.first :
		    (cause ? cause : ""));
		free(c);
		free(cause);
		cause = NULL;
		files_free(fs);

		fs = files_pool(20);
		fs->fail_at = 13;
		c = run(pools[k], fs, &code, &cause);
		ok(c != NULL && code == 200 && last_skips.damaged == 1 &&
		    last_skips.first != NULL &&
		    strstr(last_skips.first, "blob 13 is gone") != NULL,
		    "%s: a failed fetch is left out and the other 19 merge (%s)",
		    how, last_skips.first ? last_skips.first :
		    (cause ? cause : ""));
		free(c);
		free(cause);
		cause = NULL;
		files_free(fs);

		fs = files_pool(20);
		fs->fail_at = 0;
		fs->gone_at = 15;
		c = run(pools[k], fs, &code, &cause);
		ok(c != NULL && code == 200 && last_skips.damaged == 1 &&
		    last_skips.deleted == 5, "%s: a damaged first input and 5 "
		    "deleted ones are left out; the other 14 merge (%d, %zu "
		    "damaged, %zu deleted)", how, code, last_skips.damaged,
		    last_skips.deleted);
		free(c);
		free(cause);
		cause = NULL;
		files_free(fs);

		fs = files_pool(10);
		fs->gone_at = 0;
		c = run(pools[k], fs, &code, &cause);
		ok(c == NULL && code == 404 && last_skips.deleted == 10,
		    "%s: every input deleted during the merge is 404 (%s)", how,
		    cause ? cause : "");
		free(cause);
		cause = NULL;
		files_free(fs);

		fs = files_pool(100);
		fs->cancel_at = 5;
		c = run(pools[k], fs, &code, &cause);
		ok(c == NULL && code == 499, "%s: cancel stops the merge (%d)",
		    how, code);
		free(cause);
		cause = NULL;
		files_free(fs);
	}

	fs = files_new(junk);
	c = run(NULL, fs, &code, &cause);
	ok(c != NULL && code == 200 && last_skips.damaged == 1 &&
	    last_skips.first != NULL &&
	    strstr(last_skips.first, "trailing") != NULL,
	    "trailing garbage is left out (%s)", last_skips.first ?
	    last_skips.first : (cause ? cause : ""));
	free(c);
	free(cause);
	cause = NULL;
	files_free(fs);

	fs = files_new(garbage);
	c = run(NULL, fs, &code, &cause);
	ok(c == NULL && code == 500 && cause != NULL &&
	    strstr(cause, "no profile could be read") != NULL,
	    "a random payload alone is 500: no profile could be read (%s)",
	    cause ? cause : "");
	free(cause);
	cause = NULL;
	files_free(fs);

	fs = files_new(refs);
	c = run(NULL, fs, &code, &cause);
	ok(c == NULL && code == 500 && cause != NULL &&
	    strstr(cause, "location id 42") != NULL,
	    "dangling location id is 500 (%s)", cause ? cause : "");
	free(cause);
	cause = NULL;
	files_free(fs);

	fs = files_new(bomb);
	code = merge_run(NULL, NULL, fs->n, files_fetch, fs, 1 << 20, NULL,
	    (uint8_t **)&c, &(size_t){ 0 }, NULL, &k, &cause);
	ok(code == -1 && k == 500 && cause != NULL &&
	    strstr(cause, "exceeds 1048576") != NULL,
	    "inflated size is capped (%s)", cause ? cause : "");
	free(cause);
	cause = NULL;
	files_free(fs);

	fs = files_new(odd);
	c = run(pool, fs, &code, &cause);
	ok(c != NULL && code == 200, "raw, multi-member gzip and zero-sample "
	    "profiles merge (%s)", cause ? cause : "");
	free(c);
	free(cause);
	cause = NULL;
	files_free(fs);

	code = 0;
	ok(merge_run(pool, NULL, 0, files_fetch, NULL, 0, NULL, (uint8_t **)&c,
	    &(size_t){ 0 }, NULL, &code, &cause) == -1 && code == 404,
	    "no inputs is 404");
	free(cause);
}

/*
 * Writes the tiny-sample bomb (test/fuzz/gen_sample_bomb.py) of n samples,
 * gzipped, to path: one sample type, n samples of value 1, no locations.
 */
static int
write_bomb(const char *path, size_t n)
{
	static const uint8_t head[] = { 0x0a, 0x04, 0x08, 0x01, 0x10, 0x02,
	    0x32, 0x00, 0x32, 0x07, 's', 'a', 'm', 'p', 'l', 'e', 's', 0x32,
	    0x05, 'c', 'o', 'u', 'n', 't' };
	static const uint8_t sample[] = { 0x12, 0x03, 0x12, 0x01, 0x01 };
	size_t len = sizeof head + n * sizeof sample, i;
	uint8_t *raw = xmalloc(len), *gz = xmalloc(len);
	z_stream zs;
	FILE *f;
	int rc;

	memcpy(raw, head, sizeof head);
	for (i = 0; i < n; i++)
		memcpy(raw + sizeof head + i * sizeof sample, sample,
		    sizeof sample);
	memset(&zs, 0, sizeof zs);
	deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
	zs.next_in = raw;
	zs.avail_in = (uInt)len;
	zs.next_out = gz;
	zs.avail_out = (uInt)len;
	rc = deflate(&zs, Z_FINISH) == Z_STREAM_END ? 0 : -1;
	if (rc == 0 && ((f = fopen(path, "wb")) == NULL ||
	    fwrite(gz, 1, zs.total_out, f) != zs.total_out || fclose(f) != 0))
		rc = -1;
	deflateEnd(&zs);
	free(raw);
	free(gz);
	return rc;
}

/* A merge_run with a budget; returns the HTTP code, *sum the first value. */
static int
run_budget(struct pool *pool, struct budget *b, struct files *fs,
    int64_t *sum, char **cause)
{
	Perftools__Profiles__Profile *p;
	uint8_t *out = NULL;
	size_t len = 0;
	int code = 0;

	*sum = 0;
	if (merge_run(pool, b, fs->n, files_fetch, fs, 0, NULL, &out, &len,
	    NULL, &code, cause) != 0)
		return code;
	if ((p = tl_decode_gz(out, len)) != NULL) {
		if (p->n_sample == 1 && p->sample[0]->n_value == 1)
			*sum = p->sample[0]->value[0];
		perftools__profiles__profile__free_unpacked(p, NULL);
	}
	free(out);
	return code;
}

/*
 * --merge-memory: every byte comes from the budget and goes back to it; a
 * merge that alone needs more is 413, one the others crowd out is 503;
 * helpers crowded out by their own run give their inputs back instead of
 * failing it.
 */
static void
test_budget(struct pool *pool)
{
	char dir[] = "/tmp/test_merge_run.XXXXXX", *paths[3];
	struct files bombs, *fs;
	struct budget *b;
	struct budget_acct other;
	char *cause = NULL;
	int64_t sum;
	size_t i;
	int code;

	if (mkdtemp(dir) == NULL) {
		ok(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	for (i = 0; i < 3; i++) {
		paths[i] = xasprintf("%s/bomb%zu.pb.gz", dir, i);
		if (write_bomb(paths[i], 400000) != 0)
			ok(0, "write %s", paths[i]);
	}
	memset(&bombs, 0, sizeof bombs);
	bombs.paths = paths;
	bombs.n = 3;
	bombs.fail_at = bombs.cancel_at = bombs.gone_at = (size_t)-1;

	/* Counting only: everything comes back. */
	b = budget_new(0);
	fs = files_pool(40);
	code = run_budget(pool, b, fs, &sum, &cause);
	ok(code == 200 && budget_used(b) == 0 && budget_peak(b) > 0,
	    "40 CPU profiles: %zu bytes at most, all given back", budget_peak(b));
	budget_free(b);

	/* Too small for even one input: 413. */
	b = budget_new(64 * 1024);
	code = run_budget(pool, b, fs, &sum, &cause);
	ok(code == 413 && cause != NULL &&
	    strstr(cause, "needs more than the memory budget") != NULL &&
	    budget_used(b) == 0, "a 64 KiB budget: 413 (%s)",
	    cause ? cause : "");
	free(cause);
	cause = NULL;
	budget_free(b);
	files_free(fs);

	/* Each bomb inflates to 2 MB: 3 MB fits one at a time, not two. */
	b = budget_new(3 * 1024 * 1024);
	code = run_budget(pool, b, &bombs, &sum, &cause);
	ok(code == 200 && sum == 1200000 && budget_peak(b) <= 3 * 1024 * 1024,
	    "3 bombs on 2 workers in 3 MiB: one at a time (%d, sum %lld, "
	    "peak %zu) %s", code, (long long)sum, budget_peak(b),
	    cause ? cause : "");
	ok(budget_used(b) == 0, "... all given back");
	free(cause);
	cause = NULL;

	/* Another task holds 2 MB: this merge fits alone, so 503. */
	budget_acct_init(&other, b);
	ok(budget_reserve(&other, 2 * 1024 * 1024) == 0,
	    "another task holds 2 MiB");
	code = run_budget(pool, b, &bombs, &sum, &cause);
	ok(code == 503 && cause != NULL &&
	    strstr(cause, "other merges hold") != NULL,
	    "crowded out: 503 (%s)", cause ? cause : "");
	free(cause);
	cause = NULL;
	budget_acct_done(&other);
	code = run_budget(NULL, b, &bombs, &sum, &cause);
	ok(code == 200 && sum == 1200000, "once it is given back: 200");
	free(cause);
	cause = NULL;
	ok(budget_used(b) == 0, "... all given back");
	budget_free(b);

	for (i = 0; i < 3; i++) {
		unlink(paths[i]);
		free(paths[i]);
	}
	rmdir(dir);
}

int
main(void)
{
	struct event_base *base;
	struct pool *pool;

	corpus = getenv("PROFD_CORPUS");
	if (corpus == NULL)
		corpus = "test/corpus";
	evthread_use_pthreads();
	base = event_base_new();
	pool = pool_new(base, 2, 64);
	test_agree(pool);
	test_no_deadlock(pool);
	test_errors(pool);
	test_budget(pool);
	free(last_skips.first);
	pool_free(pool);
	event_base_free(base);
	libevent_global_shutdown();
	return tap_done();
}
