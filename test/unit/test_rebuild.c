/*
 * Unit tests for rebuilding meta.db from the blobs (store_rebuild,
 * storage/embedded/meta_rebuild.c) on throw-away data directories: a
 * store's rows come back exactly (labels, UTF-8, order); a meta.db with
 * rows is never replaced; hostile blobs (cut short, wrong checksum, a
 * header claiming 4 GiB, garbage after the magic, another id's header,
 * metadata that does not decode or disagrees with the size, no header at
 * all) are skipped with their reason and moved to orphans/, never deleted;
 * orphans come back; duplicates, leftovers of an interrupted rebuild,
 * stale WAL files and a locked directory are handled.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/xmalloc.h"
#include "storage/embedded/blobmeta.h"
#include "storage/embedded/blobs.h"
#include "storage/store.h"
#include "storage/store_meta.h"
#include "test/lib/tap.h"

#define NPUT	12

static char	 root[] = "/tmp/test_rebuild.XXXXXX";
static char	 ids[NPUT][STORE_ID_LEN + 1];

/* Writes an id "<tag><n>" padded to 20 characters. */
static void
make_id(char *id, const char *tag, int n)
{
	snprintf(id, STORE_ID_LEN + 1, "%s%0*d", tag,
	    (int)(STORE_ID_LEN - strlen(tag)), n);
}

/* Path of a file under dir. */
static char *
path_of(const char *dir, const char *tree, const char *id)
{
	return xasprintf("%s/%s/%.2s/%s", dir, tree, id, id);
}

/* 1 if path exists. */
static int
exists(const char *path)
{
	struct stat	sb;

	return lstat(path, &sb) == 0;
}

static size_t	nfiles;
/* nftw callback counting regular files. */
static int
count_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)p;
	(void)sb;
	(void)ftw;
	if (flag == FTW_F)
		nfiles++;
	return 0;
}
/* Regular files under dir/tree. */
static size_t
count_files(const char *dir, const char *tree)
{
	char	*p = xasprintf("%s/%s", dir, tree);

	nfiles = 0;
	nftw(p, count_cb, 16, FTW_PHYS);
	free(p);
	return nfiles;
}

/* rm -rf helper. */
static int
rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

/* Removes dir/meta.db and its WAL files. */
static void
rm_db(const char *dir)
{
	const char	*ext[] = { "", "-wal", "-shm" };
	char		*p;
	size_t		 i;

	for (i = 0; i < 3; i++) {
		p = xasprintf("%s/meta.db%s", dir, ext[i]);
		unlink(p);
		free(p);
	}
}

/* Stores NPUT profiles with labels (UTF-8 too) in a new store at dir. */
static int
fill(const char *dir)
{
	struct store		*st;
	struct profile_meta	 m;
	struct label		 l[3];
	char			*cause = NULL, body[64];
	int			 i, bad = 0;

	if ((st = store_open(dir, 64, NULL, &cause)) == NULL) {
		printf("# open: %s\n", cause);
		free(cause);
		return -1;
	}
	for (i = 0; i < NPUT; i++) {
		memset(&m, 0, sizeof m);
		make_id(ids[i], "p", i);
		memcpy(m.id, ids[i], sizeof m.id);
		m.service = (char *)(i % 2 ? "café" : "api");
		m.type = (char *)(i % 3 ? "cpu" : "heap");
		m.created_at = 1000000000LL * (i + 1);
		m.samples = i;
		m.sample_types = (char *)"samples/count,cpu/nanoseconds";
		m.duration_ns = 10 * i;
		l[0].key = (char *)"host";
		l[0].value = (char *)"h1";
		l[1].key = (char *)"région";
		l[1].value = (char *)(i % 2 ? "été" : "hiver");
		l[2].key = (char *)"zone";
		l[2].value = (char *)"";
		m.labels = l;
		m.nlabels = 1 + (size_t)(i % 3);
		snprintf(body, sizeof body, "profile body %d", i);
		if (store_put(st, &m, body, strlen(body), &cause) == -1) {
			printf("# put: %s\n", cause);
			free(cause);
			cause = NULL;
			bad++;
		}
	}
	store_close(st);
	return bad ? -1 : 0;
}

/* Every row and blob of fill() is back, field for field. */
static int
check_rows(const char *dir)
{
	struct store		*st;
	struct profile_meta	 m;
	char			*cause = NULL, body[64];
	uint8_t			*buf = NULL;
	size_t			 len;
	int			 i, bad = 0;

	if ((st = store_open(dir, 64, NULL, &cause)) == NULL) {
		printf("# open: %s\n", cause);
		free(cause);
		return 0;
	}
	for (i = 0; i < NPUT; i++) {
		snprintf(body, sizeof body, "profile body %d", i);
		if (store_get(st, ids[i], &m, &cause) != 0) {
			bad++;
			continue;
		}
		if (strcmp(m.service, i % 2 ? "café" : "api") != 0 ||
		    strcmp(m.type, i % 3 ? "cpu" : "heap") != 0 ||
		    m.created_at != 1000000000LL * (i + 1) ||
		    m.size != (int64_t)strlen(body) || m.samples != i ||
		    m.duration_ns != 10 * i ||
		    m.nlabels != 1 + (size_t)(i % 3) ||
		    strcmp(m.labels[0].key, "host") != 0 ||
		    (m.nlabels > 1 && strcmp(m.labels[1].value,
		    i % 2 ? "été" : "hiver") != 0))
			bad++;
		store_meta_clear(&m);
		if (store_read_blob(st, ids[i], &buf, &len, &cause) != 0 ||
		    len != strlen(body) || memcmp(buf, body, len) != 0)
			bad++;
		free(buf);
		buf = NULL;
	}
	store_close(st);
	return bad == 0;
}

/* Creates the directories above path (the tree and its xx/). */
static void
make_parents(const char *path)
{
	char	*dir = xstrdup(path), *slash;

	*strrchr(dir, '/') = '\0';
	slash = strrchr(dir, '/');
	*slash = '\0';
	mkdir(dir, 0755);
	*slash = '/';
	mkdir(dir, 0755);
	free(dir);
}

/* Copies keep bytes of file from to to (creating to's directories). */
static void
copy_file(const char *from, const char *to, size_t keep)
{
	char	 buf[65536];
	ssize_t	 n;
	int	 in, out;

	make_parents(to);
	in = open(from, O_RDONLY);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	n = read(in, buf, sizeof buf);
	if (n > 0)
		(void)!write(out, buf, (size_t)n < keep ? (size_t)n : keep);
	close(in);
	close(out);
}

/* Overwrites len bytes at off of path. */
static void
poke(const char *path, off_t off, const void *v, size_t len)
{
	int	fd = open(path, O_WRONLY);

	(void)!pwrite(fd, v, len, off);
	close(fd);
}

/* Writes a whole file (creating its directories). */
static void
write_file(const char *path, const void *v, size_t len)
{
	int	fd;

	make_parents(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	(void)!write(fd, v, len);
	close(fd);
}

/* store_legacy_cb of the tests: every legacy blob becomes "legacy". */
static int
legacy_cb(const uint8_t *buf, size_t len, struct profile_meta *m, void *arg,
    char **cause)
{
	(void)arg;
	if (len > 0 && buf[0] == '!')
		return xcause(cause, "not a profile");
	m->service = xstrdup("legacy");
	m->type = xstrdup("other");
	m->created_at = 42;
	return 0;
}

/* A full rebuild after meta.db is removed; then the refusal. */
static void
test_rebuild(const char *dir)
{
	struct store_rebuild	 rep;
	struct store		*st;
	char			*cause = NULL;
	int			 rc;

	ok(fill(dir) == 0, "%d profiles stored", NPUT);
	rm_db(dir);
	st = store_open(dir, 64, NULL, &cause);
	ok(st == NULL && cause != NULL && strstr(cause, "--rebuild-meta") !=
	    NULL, "open without meta.db refused, naming --rebuild-meta");
	free(cause);
	cause = NULL;
	rc = store_rebuild(dir, NULL, NULL, &rep, &cause);
	ok(rc == 0 && rep.rebuilt == NPUT && rep.skipped == 0 &&
	    rep.from_orphans == 0, "rebuild: %zu rows, %zu skipped%s%s",
	    rep.rebuilt, rep.skipped, cause ? ": " : "", cause ? cause : "");
	free(cause);
	cause = NULL;
	ok(check_rows(dir), "every row, label and blob is back as it was");
	rc = store_rebuild(dir, NULL, NULL, &rep, &cause);
	ok(rc == -1 && cause != NULL && strstr(cause, "holds 12 profiles") !=
	    NULL, "a meta.db with rows is refused (%s)", cause ? cause : "");
	free(cause);
	cause = NULL;
	ok(check_rows(dir), "and left as it was");
	st = store_open(dir, 64, NULL, &cause);
	ok(st != NULL, "the store opens");
	rc = store_rebuild(dir, NULL, NULL, &rep, &cause);
	ok(rc == -1 && cause != NULL && strstr(cause, "in use") != NULL,
	    "no rebuild while a store is open on it (%s)", cause ? cause : "");
	free(cause);
	store_close(st);
}

/* Plants hostile blobs; returns how many files it made. */
static size_t
plant(const char *dir)
{
	struct blobs		*b;
	struct profile_meta	 m;
	uint8_t			*meta;
	size_t			 mlen, made = 0;
	char			 id[STORE_ID_LEN + 1], *p, *src, *cause = NULL;
	uint32_t		 huge = 0xffffffffu;
	int			 fd;

	src = path_of(dir, "blobs", ids[0]);
	/* cut short, wrong checksum, 4 GiB header, garbage after magic */
	make_id(id, "d", 1);
	p = path_of(dir, "blobs", id);
	copy_file(src, p, 30);
	free(p);
	make_id(id, "d", 2);
	p = path_of(dir, "blobs", id);
	copy_file(src, p, SIZE_MAX);
	poke(p, 12, "\xde\xad", 2);
	free(p);
	make_id(id, "d", 3);
	p = path_of(dir, "blobs", id);
	copy_file(src, p, SIZE_MAX);
	poke(p, 8, &huge, 4);
	free(p);
	make_id(id, "d", 4);
	p = path_of(dir, "blobs", id);
	write_file(p, "\x89PRFDB\r\ngarbage garbage garbage", 31);
	free(p);
	/* another id's header */
	make_id(id, "w", 1);
	p = path_of(dir, "blobs", id);
	copy_file(src, p, SIZE_MAX);
	free(p);
	free(src);
	made += 5;

	b = blobs_open(dir, &cause);
	/* intact header, metadata that does not decode */
	make_id(id, "m", 1);
	if (blobs_create(b, id, "\x01junk", 5, "body", 4, &fd, &cause) == 0)
		close(fd);
	/* metadata that says another size */
	memset(&m, 0, sizeof m);
	make_id(id, "m", 2);
	memcpy(m.id, id, sizeof m.id);
	m.service = (char *)"s";
	m.type = (char *)"cpu";
	m.sample_types = (char *)"";
	m.size = 99;
	blobmeta_encode(&m, &meta, &mlen);
	if (blobs_create(b, id, meta, mlen, "body", 4, &fd, &cause) == 0)
		close(fd);
	free(meta);
	blobs_sync(b, &cause);
	blobs_close(b);
	made += 2;

	/* no header: one the legacy callback takes, one it refuses */
	make_id(id, "l", 1);
	p = path_of(dir, "blobs", id);
	write_file(p, "\x1f\x8b legacy", 9);
	free(p);
	make_id(id, "l", 2);
	p = path_of(dir, "blobs", id);
	write_file(p, "! not a profile", 15);
	free(p);
	made += 2;

	/* orphans: one good (moved back), one duplicate of blobs/ */
	src = path_of(dir, "blobs", ids[1]);
	p = path_of(dir, "orphans", ids[1]);
	copy_file(src, p, SIZE_MAX);
	free(p);
	make_id(id, "o", 1);
	p = path_of(dir, "orphans", id);
	copy_file(src, p, SIZE_MAX);	/* ids[1]'s header: wrong id */
	free(p);
	free(src);
	src = path_of(dir, "blobs", ids[3]);
	p = path_of(dir, "orphans", ids[3]);
	copy_file(src, p, SIZE_MAX);	/* makes orphans/xx */
	rename(src, p);			/* ids[3] lives in orphans/ only */
	free(p);
	free(src);
	made += 2;
	return made;
}

/* Hostile blobs, orphans, duplicates, leftovers, stale WAL files. */
static void
test_hostile(const char *dir)
{
	struct store_rebuild	 rep;
	struct store		*st;
	size_t			 before, after, planted;
	char			*cause = NULL, *p, id[STORE_ID_LEN + 1];
	int			 rc;

	planted = plant(dir);
	rm_db(dir);
	before = count_files(dir, "blobs") + count_files(dir, "orphans");
	printf("# %zu hostile files planted, %zu files in all\n", planted,
	    before);
	p = xasprintf("%s/meta.db.rebuild", dir);
	write_file(p, "left by an interrupted rebuild", 30);
	free(p);
	p = xasprintf("%s/meta.db-wal", dir);
	write_file(p, "stale wal", 9);
	free(p);

	rc = store_rebuild(dir, legacy_cb, NULL, &rep, &cause);
	ok(rc == 0, "rebuild beside hostile blobs%s%s", cause ? ": " : "",
	    cause ? cause : "");
	free(cause);
	cause = NULL;
	ok(rep.rebuilt == NPUT + 1 && rep.from_orphans == 1 &&
	    rep.legacy == 1, "rebuilt %zu (%zu from orphans/, %zu legacy)",
	    rep.rebuilt, rep.from_orphans, rep.legacy);
	ok(rep.skipped_damaged == 4, "4 damaged (%zu)", rep.skipped_damaged);
	ok(rep.skipped_bad_meta == 2, "2 with bad metadata (%zu)",
	    rep.skipped_bad_meta);
	ok(rep.skipped_wrong_id == 2, "2 with another id's metadata (%zu)",
	    rep.skipped_wrong_id);
	ok(rep.skipped_legacy == 1, "1 legacy refused (%zu)",
	    rep.skipped_legacy);
	ok(rep.skipped_duplicate == 1, "1 duplicate (%zu)",
	    rep.skipped_duplicate);
	ok(rep.skipped == 10 && rep.moved_aside == 8,
	    "10 skipped, the 8 from blobs/ moved to orphans/ (%zu, %zu)",
	    rep.skipped, rep.moved_aside);
	after = count_files(dir, "blobs") + count_files(dir, "orphans");
	ok(before == after, "no file deleted (%zu before, %zu after)",
	    before, after);
	ok(count_files(dir, "blobs") == NPUT + 1, "blobs/ holds exactly the "
	    "rebuilt blobs");
	make_id(id, "d", 2);
	p = path_of(dir, "orphans", id);
	ok(exists(p), "a damaged blob is in orphans/");
	free(p);
	p = xasprintf("%s/meta.db-wal.stale.1", dir);
	ok(exists(p), "a WAL without its database was set aside, not applied");
	free(p);
	p = xasprintf("%s/meta.db.rebuild", dir);
	ok(!exists(p), "an interrupted rebuild's database was discarded");
	free(p);
	ok(check_rows(dir), "every row of the store is back");
	st = store_open(dir, 64, NULL, &cause);
	ok(st != NULL, "the store opens after the rebuild");
	store_close(st);
	free(cause);
}

/* Nothing to rebuild from: refused; no directory made. */
static void
test_nothing(void)
{
	struct store_rebuild	 rep;
	char			*dir = xasprintf("%s/empty", root), *cause = NULL;
	char			*p = xasprintf("%s/blobs", dir);
	int			 rc;

	mkdir(dir, 0755);
	rc = store_rebuild(dir, NULL, NULL, &rep, &cause);
	ok(rc == -1 && cause && strstr(cause, "nothing to rebuild") != NULL,
	    "a directory without blobs/ or orphans/ is refused (%s)",
	    cause ? cause : "");
	ok(!exists(p), "and gets no blobs/");
	free(cause);
	free(p);
	free(dir);
}

int
main(void)
{
	char	*dir;

	if (mkdtemp(root) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	log_set_level(LOG_LEVEL_ERROR);
	dir = xasprintf("%s/data", root);
	test_rebuild(dir);
	test_hostile(dir);
	test_nothing();
	free(dir);
	nftw(root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	return tap_done();
}
