/*
 * Unit tests for the store (storage/store.h) on a throw-away data
 * directory: round trips, list semantics (service, type, inclusive time
 * window, AND of labels whatever the arrival order, limit, newest first,
 * both query plans), services and labels, restart, the startup check,
 * retention, concurrent puts and failed puts leaving nothing behind.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/embedded/meta_sqlite.h"
#include "storage/store.h"
#include "storage/store_free.h"
#include "storage/store_meta.h"
#include "test/lib/tap.h"

static char	 dir[] = "/tmp/test_storage.XXXXXX";
static char	 digits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUV";

/*
 * What the later tests build on: the round trip's blob, stored as idA (with
 * labels), and the out-of-order pair idB (newer) and idC.
 */
static uint8_t	*blob;
static size_t	 blen = 10000;
static char	 idA[STORE_ID_LEN + 1], idB[STORE_ID_LEN + 1];
static char	 idC[STORE_ID_LEN + 1];

/* Writes a 20-character id for n into id; ids of one tag share nothing. */
static void
make_id(char *id, int tag, int n)
{
	snprintf(id, STORE_ID_LEN + 1, "%c%c%c%017d", digits[n % 32],
	    digits[(n / 32) % 32], digits[tag % 32], n);
}

/* Stores a profile with up to 4 labels "k=v" given as pairs. */
static int
put(struct store *st, const char *id, const char *service, const char *type,
    int64_t t, const char *const *kv, size_t nlabels, const void *data,
    size_t len, char **cause)
{
	struct profile_meta	m;
	struct label		l[8];
	size_t			i;
	char			c = 'x';

	memset(&m, 0, sizeof m);
	snprintf(m.id, sizeof m.id, "%s", id);
	m.service = (char *)service;
	m.type = (char *)type;
	m.created_at = t;
	m.samples = 7;
	m.sample_types = (char *)"samples/count,cpu/nanoseconds";
	m.duration_ns = 10000000000LL;
	for (i = 0; i < nlabels; i++) {
		l[i].key = (char *)kv[2 * i];
		l[i].value = (char *)kv[2 * i + 1];
	}
	m.labels = l;
	m.nlabels = nlabels;
	if (data == NULL) {
		data = &c;
		len = 1;
	}
	return store_put(st, &m, data, len, cause);
}

/* Lists and returns the count; ids joined by ',' into ids (if not NULL). */
static ssize_t
list(struct store *st, const char *service, const char *type, int64_t from,
    int64_t to, const char *const *kv, size_t nlabels, size_t limit,
    char *ids, size_t idslen)
{
	struct store_query	 q;
	struct label		 l[8];
	struct profile_meta	*out = NULL;
	size_t			 n = 0, i;
	char			*cause = NULL;

	memset(&q, 0, sizeof q);
	q.service = service;
	q.type = type;
	q.from = from;
	q.to = to;
	for (i = 0; i < nlabels; i++) {
		l[i].key = (char *)kv[2 * i];
		l[i].value = (char *)kv[2 * i + 1];
	}
	q.labels = l;
	q.nlabels = nlabels;
	q.limit = limit;
	if (store_list(st, &q, &out, &n, &cause) != 0) {
		printf("# list: %s\n", cause);
		free(cause);
		return -1;
	}
	if (ids != NULL) {
		ids[0] = '\0';
		for (i = 0; i < n; i++) {
			if (i > 0)
				strncat(ids, ",", idslen - strlen(ids) - 1);
			strncat(ids, out[i].id, idslen - strlen(ids) - 1);
		}
	}
	store_meta_free_array(out, n);
	return (ssize_t)n;
}

/* Path of blob id. */
static void
blob_path(const char *id, char *path, size_t len)
{
	snprintf(path, len, "%s/blobs/%.2s/%s", dir, id, id);
}

/* 1 if path exists. */
static int
exists(const char *path)
{
	struct stat	sb;

	return stat(path, &sb) == 0;
}

/* Counts files named .tmp.* under blobs/ (a failed put must leave none). */
static int	temp_count;
/* nftw() callback of count_temps(). */
static int
count_temp_cb(const char *path, const struct stat *sb, int flag,
    struct FTW *ftw)
{
	if (flag == FTW_F && strncmp(path + ftw->base, ".tmp.", 5) == 0)
		temp_count++;
	return 0;
}
/* Runs count_temp_cb over blobs/; returns the count. */
static int
count_temps(void)
{
	char	path[512];

	temp_count = 0;
	snprintf(path, sizeof path, "%s/blobs", dir);
	nftw(path, count_temp_cb, 16, FTW_PHYS);
	return temp_count;
}

/* rm -rf helper. */
static int
rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(path);
}

/* Joins the strings for comparison. */
static void
join(char **v, size_t n, char *buf, size_t len)
{
	size_t	i;

	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		if (i > 0)
			strncat(buf, ",", len - strlen(buf) - 1);
		strncat(buf, v[i], len - strlen(buf) - 1);
	}
}

struct conc_arg {
	struct store	*st;
	int		 thread;
	int		 failures;
};

#define CONC_THREADS	8
#define CONC_PUTS	200

/* Worker of the concurrency test: 200 puts with distinct ids. */
static void *
conc_worker(void *arg)
{
	struct conc_arg	*a = arg;
	char		 id[STORE_ID_LEN + 1], *cause = NULL;
	char		 buf[256];
	char		 val[16];
	int		 i;

	for (i = 0; i < CONC_PUTS; i++) {
		const char *kv[] = { "thread", val };

		snprintf(val, sizeof val, "t%d", a->thread);
		make_id(id, 20 + a->thread, a->thread * CONC_PUTS + i);
		memset(buf, i & 0xff, sizeof buf);
		if (put(a->st, id, "conc", "heap", 1000000 + i, kv, 1, buf,
		    sizeof buf, &cause) != 0) {
			printf("# put %s: %s\n", id, cause);
			free(cause);
			cause = NULL;
			a->failures++;
		}
	}
	return NULL;
}

/* Opens the empty directory; NULL if that fails. */
static struct store *
test_open(void)
{
	struct store		*st;
	struct store_recovery	 rec;
	char			*cause = NULL, path[512];

	memset(&rec, 0xff, sizeof rec);
	st = store_open(dir, 64, &rec, &cause);
	ok(st != NULL, "open a new store (%s)", cause ? cause : "ok");
	if (st == NULL)
		return NULL;
	ok(rec.orphan_blobs_removed == 0 && rec.missing_blobs == 0 &&
	    rec.temp_files_removed == 0, "empty store: nothing to recover");
	snprintf(path, sizeof path, "%s/meta.db", dir);
	ok(exists(path), "meta.db created");
	return st;
}

/* Round trip of blob as idA; unknown ids; duplicate and invalid puts. */
static void
test_round_trip(struct store *st)
{
	struct profile_meta	 m;
	char			*cause = NULL, id[21], path[512];
	uint8_t			*got = NULL;
	size_t			 glen = 0, i;
	int			 rc;

	blob = malloc(blen);
	for (i = 0; i < blen; i++)
		blob[i] = (uint8_t)(i * 31 + (i >> 8));
	blob[0] = 0;
	make_id(idA, 1, 1);
	{
		const char *kv[] = { "host", "a", "env", "prod", "az", "1" };

		rc = put(st, idA, "api", "cpu", 5000, kv, 3, blob, blen,
		    &cause);
	}
	ok(rc == 0, "put (%s)", rc ? cause : "ok");
	rc = store_get(st, idA, &m, &cause);
	ok(rc == 0, "get finds it");
	ok(rc == 0 && strcmp(m.id, idA) == 0 && strcmp(m.service, "api") ==
	    0 && strcmp(m.type, "cpu") == 0 && m.created_at == 5000 &&
	    m.size == (int64_t)blen && m.samples == 7 &&
	    strcmp(m.sample_types, "samples/count,cpu/nanoseconds") == 0 &&
	    m.duration_ns == 10000000000LL, "get returns every field");
	ok(rc == 0 && m.nlabels == 3 && strcmp(m.labels[0].key, "az") == 0 &&
	    strcmp(m.labels[1].key, "env") == 0 &&
	    strcmp(m.labels[2].key, "host") == 0 &&
	    strcmp(m.labels[2].value, "a") == 0, "labels sorted by key");
	store_meta_clear(&m);
	rc = store_read_blob(st, idA, &got, &glen, &cause);
	ok(rc == 0 && glen == blen && memcmp(got, blob, blen) == 0,
	    "read_blob is byte-exact");
	free(got);
	blob_path(idA, path, sizeof path);
	ok(exists(path), "blob at blobs/xx/ID");
	ok(store_get(st, "AAAAAAAAAAAAAAAAAAAA", &m, &cause) == 1,
	    "get of an unknown id: not found");
	ok(store_read_blob(st, "AAAAAAAAAAAAAAAAAAAA", &got, &glen, &cause) ==
	    1, "read_blob of an unknown id: not found");
	ok(store_read_blob(st, "../../../../etc/pass", &got, &glen, &cause) ==
	    1, "read_blob of a path-like id: not found");

	/* Duplicate id: refused, the first one intact. */
	cause = NULL;
	rc = put(st, idA, "api", "cpu", 6000, NULL, 0, "zz", 2, &cause);
	ok(rc == -1 && cause != NULL && strstr(cause, idA) != NULL,
	    "a second put of one id fails (%s)", cause ? cause : "");
	free(cause);
	cause = NULL;
	rc = store_read_blob(st, idA, &got, &glen, &cause);
	ok(rc == 0 && glen == blen && memcmp(got, blob, blen) == 0,
	    "and leaves the first blob intact");
	free(got);
	rc = put(st, "", "api", "cpu", 1, NULL, 0, NULL, 0, &cause);
	ok(rc == -1 && cause != NULL, "invalid id refused (%s)", cause);
	free(cause);
	cause = NULL;
	make_id(id, 31, 9999);
	rc = put(st, id, NULL, "cpu", 1, NULL, 0, NULL, 0, &cause);
	ok(rc == -1 && cause != NULL && strstr(cause, "service"),
	    "missing service refused (%s)", cause);
	free(cause);
	cause = NULL;
	blob_path(id, path, sizeof path);
	ok(!exists(path), "and leaves no blob");
}

/* Out-of-order arrival: the newer with host=a first, then older. */
static void
test_out_of_order(struct store *st)
{
	const char	*a[] = { "host", "a" }, *b[] = { "host", "b" };
	char		*cause = NULL, ids[8192];

	make_id(idB, 2, 2);
	make_id(idC, 2, 3);
	ok(put(st, idB, "ooo", "cpu", 2000, a, 1, NULL, 0, &cause) ==
	    0 && put(st, idC, "ooo", "cpu", 1000, b, 1, NULL, 0,
	    &cause) == 0, "out-of-order puts");
	ok(list(st, "ooo", NULL, 0, 10000, a, 1, 0, ids, sizeof ids) ==
	    1 && strcmp(ids, idB) == 0, "host=a finds the newer one");
	ok(list(st, "ooo", NULL, 0, 10000, b, 1, 0, ids, sizeof ids) ==
	    1 && strcmp(ids, idC) == 0, "host=b finds the older one");
	ok(list(st, "ooo", "cpu", 0, 10000, NULL, 0, 0, ids,
	    sizeof ids) == 2, "both without labels");
}

/* List semantics: service, type, window edges, labels AND, limit, order. */
static void
test_list(struct store *st)
{
	const char *p[] = { "host", "h1", "env", "prod" };
	const char *d[] = { "host", "h1", "env", "dev" };
	const char *q1[] = { "host", "h1" };
	const char *q2[] = { "env", "prod", "host", "h1" };
	const char *no[] = { "host", "nope" };
	const char *nok[] = { "nokey", "x" };
	char e1[21], e2[21], e3[21], e4[21], e5[21], want[128];
	char *cause = NULL, ids[8192];
	int rc;

	make_id(e1, 3, 11);
	make_id(e2, 3, 12);
	make_id(e3, 3, 13);
	make_id(e4, 3, 14);
	make_id(e5, 3, 15);
	rc = put(st, e1, "web", "cpu", 100, p, 2, NULL, 0, &cause);
	rc |= put(st, e2, "web", "heap", 200, d, 2, NULL, 0, &cause);
	rc |= put(st, e3, "web", "cpu", 300, d, 2, NULL, 0, &cause);
	rc |= put(st, e4, "web", "cpu", 300, p, 2, NULL, 0, &cause);
	rc |= put(st, e5, "web2", "cpu", 200, p, 2, NULL, 0, &cause);
	ok(rc == 0, "five more puts");
	ok(list(st, "web", NULL, 0, 1000, NULL, 0, 0, ids,
	    sizeof ids) == 4, "by service: 4");
	/* e3 and e4 share created_at: id descending. */
	snprintf(want, sizeof want, "%s,%s,%s,%s",
	    strcmp(e3, e4) > 0 ? e3 : e4, strcmp(e3, e4) > 0 ? e4 : e3,
	    e2, e1);
	ok(strcmp(ids, want) == 0, "newest first, then id descending "
	    "(%s)", ids);
	ok(list(st, "web", "cpu", 0, 1000, NULL, 0, 0, NULL, 0) == 3,
	    "by service and type: 3");
	ok(list(st, "web", "cpu", 100, 300, NULL, 0, 0, NULL, 0) == 3,
	    "window [100,300] includes both ends");
	ok(list(st, "web", "cpu", 101, 299, NULL, 0, 0, NULL, 0) == 0,
	    "window [101,299] excludes them");
	ok(list(st, "web", "cpu", 300, 300, NULL, 0, 0, NULL, 0) == 2,
	    "window [300,300]");
	ok(list(st, "web", NULL, 300, 100, NULL, 0, 0, NULL, 0) == 0,
	    "from > to: empty");
	ok(list(st, "web", NULL, 0, 1000, q1, 1, 0, NULL, 0) == 4,
	    "host=h1: 4");
	ok(list(st, "web", NULL, 0, 1000, q2, 2, 0, ids, sizeof ids) ==
	    2 && strstr(ids, e1) && strstr(ids, e4),
	    "env=prod AND host=h1: exactly the two");
	ok(list(st, "web", "cpu", 0, 1000, q2, 2, 1, ids, sizeof ids) ==
	    1 && strcmp(ids, e4) == 0, "limit 1 gives the newest");
	ok(list(st, "web", NULL, 0, 1000, NULL, 0, 2, NULL, 0) == 2,
	    "limit 2");
	ok(list(st, "web", NULL, 0, 1000, no, 1, 0, NULL, 0) == 0,
	    "unknown value: empty");
	ok(list(st, "web", NULL, 0, 1000, nok, 1, 0, NULL, 0) == 0,
	    "unknown key: empty");
	ok(list(st, "nosuch", NULL, 0, 1000, NULL, 0, 0, NULL, 0) == 0,
	    "unknown service: empty");
}

/* The label walk plan: a rare label in a wide window. */
static void
test_label_plan(struct store *st)
{
	const char *rare[] = { "canary", "yes" };
	const char *both[] = { "canary", "yes", "zone", "z1" };
	const char *kv[] = { "canary", "yes", "zone", "z1" };
	const char *common[] = { "zone", "z1" };
	char want[256], rid[3][21], id[21], ids[8192], *cause = NULL;
	size_t i;
	int k = 0, rc;

	rc = 0;
	for (i = 0; i < 60; i++) {
		make_id(id, 4, 100 + (int)i);
		if (i % 20 == 5) {
			snprintf(rid[k++], 21, "%s", id);
			rc |= put(st, id, "plan", "cpu",
			    10000 + (int64_t)i, kv, 2, NULL, 0, &cause);
		} else
			rc |= put(st, id, "plan", "cpu",
			    10000 + (int64_t)i, common, 1, NULL, 0,
			    &cause);
	}
	ok(rc == 0, "60 puts, 3 of them canary");
	snprintf(want, sizeof want, "%s,%s,%s", rid[2], rid[1], rid[0]);
	ok(list(st, "plan", NULL, 0, 100000, rare, 1, 0, ids,
	    sizeof ids) == 3 && strcmp(ids, want) == 0,
	    "rare label over a wide window, newest first");
	ok(list(st, "plan", "cpu", 0, 100000, both, 2, 2, ids,
	    sizeof ids) == 2 && strncmp(ids, want, 2 * 20 + 1) == 0,
	    "rare AND common label with type, limit 2");
	ok(list(st, "plan", "cpu", 10025, 10044, rare, 1, 0, ids,
	    sizeof ids) == 1 && strcmp(ids, rid[1]) == 0,
	    "rare label, narrow window from its time");
	ok(list(st, "plan", "heap", 0, 100000, rare, 1, 0, NULL, 0) ==
	    0, "rare label, other type: empty");
	ok(list(st, "plan", NULL, 0, 100000, common, 1, 10, NULL, 0) ==
	    10, "common label, limit 10");
}

/* Services, label keys and values, totals. */
static void
test_services_labels(struct store *st)
{
	char	*cause = NULL, **v = NULL, buf[512];
	size_t	 n = 0;
	int64_t	 profiles, bytes;
	int	 rc;

	rc = store_services(st, &v, &n, &cause);
	join(v, n, buf, sizeof buf);
	ok(rc == 0 && strcmp(buf, "api,ooo,plan,web,web2") == 0,
	    "services sorted (%s)", buf);
	store_free_strings(v, n);
	rc = store_labels(st, NULL, NULL, &v, &n, &cause);
	join(v, n, buf, sizeof buf);
	ok(rc == 0 && strcmp(buf, "az,canary,env,host,zone") == 0,
	    "label keys (%s)", buf);
	store_free_strings(v, n);
	rc = store_labels(st, "web", NULL, &v, &n, &cause);
	join(v, n, buf, sizeof buf);
	ok(rc == 0 && strcmp(buf, "env,host") == 0, "keys of web (%s)", buf);
	store_free_strings(v, n);
	rc = store_labels(st, NULL, "host", &v, &n, &cause);
	join(v, n, buf, sizeof buf);
	ok(rc == 0 && strcmp(buf, "a,b,h1") == 0, "values of host (%s)", buf);
	store_free_strings(v, n);
	rc = store_labels(st, "ooo", "host", &v, &n, &cause);
	join(v, n, buf, sizeof buf);
	ok(rc == 0 && strcmp(buf, "a,b") == 0, "values of host in ooo (%s)",
	    buf);
	store_free_strings(v, n);
	rc = store_labels(st, "nosuch", NULL, &v, &n, &cause);
	ok(rc == 0 && n == 0, "keys of an unknown service: none");
	store_free_strings(v, n);
	rc = store_totals(st, &profiles, &bytes, &cause);
	ok(rc == 0 && profiles == 68 && bytes == (int64_t)blen + 67,
	    "totals: %lld profiles, %lld bytes", (long long)profiles,
	    (long long)bytes);
}

/* Restart keeps everything; returns the reopened store, NULL if none. */
static struct store *
test_restart(struct store *st)
{
	struct store_recovery	 rec;
	struct profile_meta	 m;
	char			*cause = NULL;
	uint8_t			*got = NULL;
	size_t			 glen = 0;
	int64_t			 profiles, bytes;
	int			 rc;

	store_close(st);
	st = store_open(dir, 64, &rec, &cause);
	ok(st != NULL && rec.orphan_blobs_removed == 0 &&
	    rec.missing_blobs == 0 && rec.temp_files_removed == 0,
	    "reopen: consistent");
	if (st == NULL)
		return NULL;
	rc = store_read_blob(st, idA, &got, &glen, &cause);
	ok(rc == 0 && glen == blen && memcmp(got, blob, blen) == 0,
	    "blob survives restart");
	free(got);
	ok(list(st, "web", NULL, 0, 1000, NULL, 0, 0, NULL, 0) == 4 &&
	    list(st, "plan", NULL, 0, 100000, NULL, 0, 0, NULL, 0) == 60,
	    "rows survive restart");
	rc = store_get(st, idA, &m, &cause);
	ok(rc == 0 && m.nlabels == 3, "labels survive restart");
	store_meta_clear(&m);
	rc = store_totals(st, &profiles, &bytes, &cause);
	ok(rc == 0 && profiles == 68, "totals after restart");
	return st;
}

/*
 * Startup check: orphan blob, temp file, missing blob (idC's). Returns the
 * reopened store, NULL if none.
 */
static struct store *
test_startup_check(struct store *st)
{
	struct store_recovery	 rec;
	struct profile_meta	 m;
	char			*cause = NULL, id[21], path[512], buf[512];
	char			 ids[8192];
	int			 fd;

	store_close(st);
	make_id(id, 5, 500);
	snprintf(path, sizeof path, "%s/blobs/%.2s", dir, id);
	mkdir(path, 0755);
	blob_path(id, path, sizeof path);
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	close(fd);
	snprintf(buf, sizeof buf, "%s/blobs/%.2s/.tmp.%s.abcdef", dir, idB,
	    idB);
	fd = open(buf, O_CREAT | O_WRONLY, 0644);
	close(fd);
	blob_path(idC, ids, sizeof ids);
	unlink(ids);
	st = store_open(dir, 64, &rec, &cause);
	ok(st != NULL, "reopen after tampering");
	if (st == NULL)
		return NULL;
	ok(rec.orphan_blobs_removed == 1 && !exists(path),
	    "orphan blob removed");
	ok(rec.temp_files_removed == 1 && !exists(buf), "temp file removed");
	ok(rec.missing_blobs == 1, "missing blob reported");
	ok(store_get(st, idC, &m, &cause) == 0, "its row is kept");
	store_meta_clear(&m);
	return st;
}

/* Failed puts (row refused, blob dir unwritable) leave nothing behind. */
static void
test_failed_puts(struct store *st)
{
	struct profile_meta	 m;
	char			*cause = NULL, id[21], path[512];
	char			 ids[8192];
	int			 rc, fd;

	/* A row that fails after its blob was written: blob removed. */
	blob_path(idC, ids, sizeof ids);
	rc = put(st, idC, "ooo", "cpu", 1000, NULL, 0, "new", 3, &cause);
	ok(rc == -1 && cause != NULL && strstr(cause, "UNIQUE") != NULL,
	    "put whose row fails: error (%s)", cause ? cause : "");
	free(cause);
	cause = NULL;
	ok(!exists(ids) && count_temps() == 0,
	    "and its blob is removed again");

	/* A put whose blob directory cannot be written. */
	make_id(id, 6, 600);
	snprintf(path, sizeof path, "%s/blobs/%.2s", dir, id);
	if (exists(path)) {
		/* pick another first character pair not used yet */
		make_id(id, 6, 31 * 32 + 29);
		snprintf(path, sizeof path, "%s/blobs/%.2s", dir, id);
	}
	fd = open(path, O_CREAT | O_WRONLY, 0644);	/* a file, not a dir */
	close(fd);
	rc = put(st, id, "bad", "cpu", 1, NULL, 0, "xyz", 3, &cause);
	ok(rc == -1 && cause != NULL && strstr(cause, "write blob") != NULL,
	    "put into an unwritable blob dir fails (%s)", cause ? cause : "");
	free(cause);
	cause = NULL;
	ok(store_get(st, id, &m, &cause) == 1 &&
	    list(st, "bad", NULL, 0, 10, NULL, 0, 0, NULL, 0) == 0,
	    "and stores no row");
	ok(count_temps() == 0, "and leaves no temp file");
	unlink(path);
	if (geteuid() != 0) {
		mkdir(path, 0555);
		rc = put(st, id, "bad", "cpu", 1, NULL, 0, "xyz", 3, &cause);
		ok(rc == -1 && cause != NULL && strstr(cause, "Permission"),
		    "read-only blob dir: fails (%s)", cause ? cause : "");
		free(cause);
		cause = NULL;
		ok(store_get(st, id, &m, &cause) == 1 && count_temps() == 0,
		    "read-only blob dir: nothing left");
		rmdir(path);
	}
}

/* Retention: batches of deletes before a cutoff, rows and blobs. */
static void
test_retention(struct store *st)
{
	struct profile_meta	 m;
	char			*cause = NULL, **v = NULL, buf[512];
	char			 id[21], path[512];
	size_t			 n = 0, deleted;
	int64_t			 profiles, bytes;
	int			 rc;

	rc = store_delete_before(st, 10030, 7, &deleted, &cause);
	ok(rc == 0 && deleted == 7, "delete_before: first batch of 7");
	make_id(id, 3, 11);	/* the oldest, at 100 */
	blob_path(id, path, sizeof path);
	ok(!exists(path) && store_get(st, id, &m, &cause) == 1,
	    "oldest profile's row and blob gone");
	blob_path(idA, path, sizeof path);
	ok(exists(path) && store_get(st, idA, &m, &cause) == 0,
	    "the 8th oldest is still there");
	store_meta_clear(&m);
	do {
		rc = store_delete_before(st, 10030, 7, &deleted, &cause);
	} while (rc == 0 && deleted > 0);
	ok(rc == 0, "delete_before until done");
	ok(!exists(path) && store_get(st, idA, &m, &cause) == 1,
	    "then it is gone too");
	ok(list(st, "web", NULL, 0, 100000, NULL, 0, 0, NULL, 0) == 0 &&
	    list(st, "plan", NULL, 0, 100000, NULL, 0, 0, NULL, 0) == 30,
	    "rows before the cutoff gone, later ones kept");
	make_id(id, 4, 100 + 29);
	blob_path(id, path, sizeof path);
	ok(!exists(path), "blob of the last deleted one gone");
	make_id(id, 4, 100 + 30);
	blob_path(id, path, sizeof path);
	ok(exists(path), "blob of the first kept one there");
	rc = store_services(st, &v, &n, &cause);
	join(v, n, buf, sizeof buf);
	ok(rc == 0 && strcmp(buf, "plan") == 0, "services after retention "
	    "(%s)", buf);
	store_free_strings(v, n);
	rc = store_labels(st, NULL, NULL, &v, &n, &cause);
	join(v, n, buf, sizeof buf);
	ok(rc == 0 && strcmp(buf, "canary,zone") == 0,
	    "label keys after retention (%s)", buf);
	store_free_strings(v, n);
	rc = store_totals(st, &profiles, &bytes, &cause);
	ok(rc == 0 && profiles == 30 && bytes == 30, "totals after retention");
}

/* Concurrent puts: 8 threads, each id once, every blob right. */
static void
test_concurrent(struct store *st)
{
	pthread_t		 t[CONC_THREADS];
	struct conc_arg		 a[CONC_THREADS];
	struct store_query	 q;
	struct profile_meta	*out = NULL;
	char			*cause = NULL, id[21];
	uint8_t			*got = NULL;
	size_t			 glen = 0, n, i;
	int64_t			 profiles, bytes;
	int			 rc, failures = 0, dup = 0, bad = 0;

	for (i = 0; i < CONC_THREADS; i++) {
		a[i].st = st;
		a[i].thread = (int)i;
		a[i].failures = 0;
		pthread_create(&t[i], NULL, conc_worker, &a[i]);
	}
	for (i = 0; i < CONC_THREADS; i++) {
		pthread_join(t[i], NULL);
		failures += a[i].failures;
	}
	ok(failures == 0, "8 threads x 200 puts: no failure");
	memset(&q, 0, sizeof q);
	q.service = "conc";
	q.from = 0;
	q.to = INT64_MAX;
	n = 0;
	rc = store_list(st, &q, &out, &n, &cause);
	ok(rc == 0 && n == CONC_THREADS * CONC_PUTS,
	    "all %d listed (%zu)", CONC_THREADS * CONC_PUTS, n);
	for (i = 0; rc == 0 && i < n; i++) {
		if (i > 0 && strcmp(out[i - 1].id, out[i].id) == 0)
			dup++;
		if (i > 0 && out[i - 1].created_at < out[i].created_at)
			bad++;
	}
	store_meta_free_array(out, n);
	ok(dup == 0 && bad == 0, "each exactly once, in order");
	for (i = 0; i < CONC_THREADS * CONC_PUTS; i++) {
		make_id(id, 20 + (int)i / CONC_PUTS, (int)i);
		if (store_read_blob(st, id, &got, &glen, &cause) != 0 ||
		    glen != 256 || got[0] != (uint8_t)(i % CONC_PUTS))
			bad++;
		free(got);
		got = NULL;
	}
	ok(bad == 0, "every blob readable and right");
	rc = store_totals(st, &profiles, &bytes, &cause);
	ok(rc == 0 && profiles == 30 + CONC_THREADS * CONC_PUTS,
	    "totals count them");
}

/* Bulk insert (fill_meta's path), into a nested new directory. */
static void
test_bulk(void)
{
	struct store		*st;
	struct store_recovery	 rec;
	struct meta_sqlite	*ms;
	struct profile_meta	 rows[3];
	struct label		 l[2] = { { (char *)"env", (char *)"prod" },
				    { (char *)"host", (char *)"h" } };
	char			 sub[600], buf[512];
	char			*cause = NULL, **v = NULL;
	const char		*prod[] = { "env", "prod" };
	const char		*hosth[] = { "host", "h" };
	size_t			 n = 0, i;
	int			 rc;

	snprintf(sub, sizeof sub, "%s/bulk/data", dir);
	st = store_open(sub, 64, &rec, &cause);
	ok(st != NULL, "open creates missing parent directories");
	store_close(st);
	snprintf(sub, sizeof sub, "%s/bulk/data/meta.db", dir);
	ms = meta_sqlite_open(sub, &cause);
	memset(rows, 0, sizeof rows);
	for (i = 0; i < 3; i++) {
		make_id(rows[i].id, 7, 700 + (int)i);
		rows[i].service = (char *)"bulk";
		rows[i].type = (char *)"cpu";
		rows[i].created_at = 10 + (int64_t)i;
		rows[i].labels = l;
		rows[i].nlabels = i == 1 ? 1 : 2;
	}
	ok(ms != NULL && meta_sqlite_insert_many(ms, rows, 3,
	    &cause) == 0, "insert_many of 3 rows");
	make_id(rows[2].id, 7, 700);	/* duplicate of rows[0] */
	make_id(rows[0].id, 7, 800);
	rc = meta_sqlite_insert_many(ms, rows, 3, &cause);
	ok(rc == -1 && cause != NULL, "insert_many with a duplicate "
	    "fails (%s)", cause ? cause : "");
	free(cause);
	cause = NULL;
	meta_sqlite_close(ms);
	snprintf(sub, sizeof sub, "%s/bulk/data", dir);
	st = store_open(sub, 64, &rec, &cause);
	ok(st != NULL && rec.missing_blobs == 3,
	    "bulk rows have no blobs: 3 reported");
	ok(list(st, "bulk", NULL, 0, 100, NULL, 0, 0, NULL, 0) == 3,
	    "only the first batch stored");
	ok(list(st, "bulk", NULL, 0, 100, prod, 1, 0, NULL, 0) == 3 &&
	    list(st, "bulk", NULL, 0, 100, hosth, 1, 0, NULL, 0) == 2,
	    "env=prod finds all 3, host=h the 2 carrying it");
	rc = store_labels(st, "bulk", NULL, &v, &n, &cause);
	join(v, n, buf, sizeof buf);
	ok(rc == 0 && strcmp(buf, "env,host") == 0,
	    "keys of bulk (%s)", buf);
	store_free_strings(v, n);
	store_close(st);
}

/* Runs the tests in order on one store; the later ones build on the rest. */
int
main(void)
{
	struct store	*st;

	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	if ((st = test_open()) == NULL)
		return tap_done();
	test_round_trip(st);
	test_out_of_order(st);
	test_list(st);
	test_label_plan(st);
	test_services_labels(st);
	if ((st = test_restart(st)) == NULL)
		return tap_done();
	if ((st = test_startup_check(st)) == NULL)
		return tap_done();
	test_failed_puts(st);
	test_retention(st);
	test_concurrent(st);
	store_close(st);
	test_bulk();

	free(blob);
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	return tap_done();
}
