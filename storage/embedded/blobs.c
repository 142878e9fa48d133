/*
 * Blob files. A blob is written straight under its final name, created
 * with O_EXCL so an existing blob is never replaced, and is not durable
 * yet when blobs_create returns: its file stays open. Durability is
 * batched by the caller: the metadata group commit calls blobs_sync once
 * for the whole batch, one syncfs(2) on the blob file system, which writes
 * back every blob's data and names together (instead of an fsync per blob
 * and per directory). Then blobs_check on each open file reports a
 * write-back error of that very file (sync_file_range's wait reports the
 * file's own errors, which syncfs alone cannot promise when an earlier
 * sync consumed them), and only rows whose blobs pass are committed.
 *
 * So a blob file may be partial only while it has no row: nothing reads a
 * blob without a row, and the startup check (recover.c, through
 * blobs_scan) removes every blob without a row, and any .tmp.* file left
 * by versions that wrote through a temp file. This keeps the guarantee of
 * docs/DESIGN.md, "Write order" (a 200 means blob and row are durable; a
 * crash never leaves a half-visible profile) without the first design's
 * temp-file-and-rename step, which cost a second directory operation per
 * upload under the directory's lock.
 * syncfs also writes back other files' dirty data on the same file
 * system; the README suggests a data directory on its own file system
 * when other programs write heavily beside it.
 *
 * The file starts with a header that carries the profile's metadata, so
 * meta.db can be rebuilt from the blobs (docs/DESIGN.md, "Rebuilding
 * meta.db"); it is written by the same write(2) as the bytes and made
 * durable by the same sync, so a blob and its metadata are never apart:
 *
 *	0	8 bytes	magic "\x89PRFDB\r\n"
 *	8	u32	length M of the metadata (at most BLOBS_META_MAX)
 *	12	u32	CRC-32 of bytes 8..11, 16..23 and the metadata
 *	16	u64	length N of the uploaded bytes
 *	24	M bytes	the metadata (blobmeta.c)
 *	24+M	N bytes	the bytes as uploaded
 *
 * (integers little-endian). Reads return the N bytes and check that the
 * file is exactly 24 + M + N bytes, so a cut-short blob is an error, not
 * a shorter profile. Blobs written before the header existed start with
 * anything but the magic (gzip or protobuf bytes) and are read whole.
 */
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/xmalloc.h"
#include "storage/embedded/blobs.h"
#include "storage/store.h"

#define BLOBS_TEMP_PREFIX	".tmp."

#define BLOBS_MAGIC		"\x89" "PRFDB\r\n"
#define BLOBS_MAGIC_LEN		8
#define BLOBS_HEAD_LEN		24	/* magic, lengths and checksum */

/* Longest root that leaves room for "/xx/.tmp.ID.XXXXXX". */
#define BLOBS_ROOT_MAX	(PATH_MAX - 64)

struct blobs {
	char			*root;		/* DATA_DIR/blobs */
	int			 root_fd;	/* for syncfs */
};

/* Formats a path into buf (PATH_MAX bytes); roots are short enough. */
static void __attribute__((format(printf, 2, 3)))
blobs_pathf(char *buf, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(buf, PATH_MAX, fmt, ap);
	va_end(ap);
}

/* Opens the tree at root (taking root); create: mkdir it first. */
static struct blobs *
blobs_open_root(char *root, int create, char **cause)
{
	struct blobs	*b;

	if (strlen(root) > BLOBS_ROOT_MAX) {
		xcause(cause, "path too long: %s", root);
		free(root);
		return NULL;
	}
	if (create && mkdir(root, 0755) == -1 && errno != EEXIST) {
		xcause(cause, "create %s: %s", root, strerror(errno));
		free(root);
		return NULL;
	}
	b = xcalloc(1, sizeof *b);
	b->root = root;
	if ((b->root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) ==
	    -1) {
		int e = errno;

		if (e != ENOENT || create)
			xcause(cause, "open %s: %s", root, strerror(e));
		else if (cause != NULL)
			*cause = NULL;
		free(root);
		free(b);
		errno = e;
		return NULL;
	}
	return b;
}

/* Opens the blob store, creating DATA_DIR/blobs. */
struct blobs *
blobs_open(const char *data_dir, char **cause)
{
	return blobs_open_root(xasprintf("%s/blobs", data_dir), 1, cause);
}

/* Opens an existing tree laid out like blobs/ (orphans/). */
struct blobs *
blobs_open_dir(const char *root, char **cause)
{
	return blobs_open_root(xstrdup(root), 0, cause);
}

/* The tree's directory. */
const char *
blobs_root(const struct blobs *b)
{
	return b->root;
}

/* Locks the tree against a second process (flock on its directory). */
int
blobs_lock(struct blobs *b, char **cause)
{
	if (flock(b->root_fd, LOCK_EX | LOCK_NB) == -1) {
		if (errno == EWOULDBLOCK)
			return xcause(cause, "%s is in use by another profd "
			    "(stop it first)", b->root);
		return xcause(cause, "lock %s: %s", b->root, strerror(errno));
	}
	return 0;
}

/* Frees the blob store handle. */
void
blobs_close(struct blobs *b)
{
	if (b == NULL)
		return;
	close(b->root_fd);
	free(b->root);
	free(b);
}

/* Checks that id is STORE_ID_LEN characters of [0-9A-Za-z]. */
int
blobs_id_valid(const char *id)
{
	size_t	i;

	if (id == NULL)
		return 0;
	for (i = 0; i < STORE_ID_LEN; i++) {
		char c = id[i];

		if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') ||
		    (c >= 'a' && c <= 'z')))
			return 0;
	}
	return id[STORE_ID_LEN] == '\0';
}

/* Moves blob id under dest/xx/ without replacing anything there. */
int
blobs_move(struct blobs *b, const char *id, const char *dest, char **cause)
{
	char		from[PATH_MAX], dir[PATH_MAX], to[PATH_MAX];
	struct stat	sb;

	if (!blobs_id_valid(id))
		return xcause(cause, "move blob: invalid id");
	if (strlen(dest) > BLOBS_ROOT_MAX)
		return xcause(cause, "move blob %s: path too long: %s", id,
		    dest);
	blobs_pathf(from, "%s/%.2s/%s", b->root, id, id);
	blobs_pathf(dir, "%s/%.2s", dest, id);
	blobs_pathf(to, "%s/%s", dir, id);
	if ((mkdir(dest, 0755) == -1 && errno != EEXIST) ||
	    (mkdir(dir, 0755) == -1 && errno != EEXIST))
		return xcause(cause, "move blob %s: create %s: %s", id, dir,
		    strerror(errno));
	if (lstat(to, &sb) == 0)
		return xcause(cause, "move blob %s: %s already exists", id, to);
	if (errno != ENOENT)
		return xcause(cause, "move blob %s: %s: %s", id, to,
		    strerror(errno));
	if (rename(from, to) == -1)
		return xcause(cause, "move blob %s to %s: %s", id, to,
		    strerror(errno));
	return 0;
}

/* Formats the directory of blob id into dir (PATH_MAX bytes). */
static void
blobs_dir(struct blobs *b, const char *id, char *dir)
{
	blobs_pathf(dir, "%s/%.2s", b->root, id);
}

/* fsyncs a directory so the names in it are durable. */
static int
blobs_sync_dir(const char *dir, char **cause)
{
	int	fd;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return xcause(cause, "open %s: %s", dir, strerror(errno));
	if (fsync(fd) == -1) {
		int e = errno;

		close(fd);
		return xcause(cause, "fsync %s: %s", dir, strerror(e));
	}
	close(fd);
	return 0;
}

/* Makes every blob created so far durable: one syncfs (see the top). */
int
blobs_sync(struct blobs *b, char **cause)
{
	if (syncfs(b->root_fd) == -1)
		return xcause(cause, "syncfs %s: %s", b->root,
		    strerror(errno));
	return 0;
}

/* Reports a write-back error of the blob open as fd, after blobs_sync. */
int
blobs_check(int fd, const char *id, char **cause)
{
	if (sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE |
	    SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) == -1)
		return xcause(cause, "write blob %s: %s", id,
		    strerror(errno));
	return 0;
}

/* Creates blob file path (never replacing one), creating dir if needed. */
static int
blobs_open_new(struct blobs *b, const char *dir, const char *path,
    char **cause)
{
	int	fd;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd == -1 && errno == ENOENT) {
		if (mkdir(dir, 0755) == -1 && errno != EEXIST)
			return xcause(cause, "create %s: %s", dir,
			    strerror(errno));
		if (blobs_sync_dir(b->root, cause) == -1)
			return -1;
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	}
	if (fd == -1) {
		if (errno == EEXIST)
			return xcause(cause, "already exists");
		return xcause(cause, "create %s: %s", path, strerror(errno));
	}
	return fd;
}

/* CRC-32 (IEEE 802.3, as zlib's crc32) of n bytes, continuing crc. */
static uint32_t
blobs_crc32(uint32_t crc, const uint8_t *p, size_t n)
{
	int	k;

	crc = ~crc;
	while (n-- > 0) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
	}
	return ~crc;
}

/* Stores v little-endian in n bytes at p. */
static void
blobs_put_le(uint8_t *p, uint64_t v, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Reads n little-endian bytes at p. */
static uint64_t
blobs_get_le(const uint8_t *p, size_t n)
{
	uint64_t	v = 0;
	size_t		i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* The header's checksum: both lengths, then the metadata. */
static uint32_t
blobs_head_crc(const uint8_t *head, const uint8_t *meta, size_t meta_len)
{
	uint32_t	crc;

	crc = blobs_crc32(0, head + 8, 4);
	crc = blobs_crc32(crc, head + 16, 8);
	return blobs_crc32(crc, meta, meta_len);
}

/* Writes every byte of iov[0..n) (adjusting it), retrying short writes. */
static int
blobs_writev_all(int fd, struct iovec *iov, int n)
{
	ssize_t	w;

	while (n > 0) {
		if ((w = writev(fd, iov, n)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/*
 * Writes blob id (header with meta, then buf) under its name, not yet
 * durable; *fdp: OUT its open fd.
 */
int
blobs_create(struct blobs *b, const char *id, const void *meta,
    size_t meta_len, const void *buf, size_t len, int *fdp, char **cause)
{
	char		 dir[PATH_MAX], path[PATH_MAX];
	uint8_t		 head[BLOBS_HEAD_LEN];
	struct iovec	 iov[3];
	char		*why = NULL;
	int		 fd;

	*fdp = -1;
	if (!blobs_id_valid(id))
		return xcause(cause, "write blob: invalid id");
	if (meta_len > BLOBS_META_MAX)
		return xcause(cause, "write blob %s: %zu bytes of metadata, "
		    "more than %d", id, meta_len, BLOBS_META_MAX);
	memcpy(head, BLOBS_MAGIC, BLOBS_MAGIC_LEN);
	blobs_put_le(head + 8, meta_len, 4);
	blobs_put_le(head + 16, len, 8);
	blobs_put_le(head + 12, blobs_head_crc(head, meta, meta_len), 4);
	iov[0].iov_base = head;
	iov[0].iov_len = sizeof head;
	iov[1].iov_base = (void *)(uintptr_t)meta;
	iov[1].iov_len = meta_len;
	iov[2].iov_base = (void *)(uintptr_t)buf;
	iov[2].iov_len = len;

	blobs_dir(b, id, dir);
	blobs_pathf(path, "%s/%s", dir, id);
	if ((fd = blobs_open_new(b, dir, path, &why)) == -1)
		goto fail;
	if (blobs_writev_all(fd, iov, 3) == -1) {
		why = xasprintf("write %s: %s", path, strerror(errno));
		close(fd);
		unlink(path);
		goto fail;
	}
	*fdp = fd;
	return 0;

fail:
	xcause(cause, "write blob %s: %s", id, why);
	free(why);
	return -1;
}

/* Reads up to len bytes at off; *got: OUT how many (short at the end). */
static int
blobs_pread(int fd, void *buf, size_t len, off_t off, size_t *got)
{
	ssize_t	r;

	*got = 0;
	while (*got < len) {
		r = pread(fd, (uint8_t *)buf + *got, len - *got,
		    off + (off_t)*got);
		if (r == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			break;
		*got += (size_t)r;
	}
	return 0;
}

/*
 * Reads and checks the header of the blob open as fd (size bytes): 0 with
 * *meta (free; NULL if meta is NULL, the check still done), *meta_len,
 * *off and *len of the uploaded bytes; 2 for a blob without header (*off
 * 0, *len its size); -1 damaged or unreadable, *why says which.
 */
static int
blobs_read_head(int fd, uint64_t size, uint8_t **meta, size_t *meta_len,
    uint64_t *off, uint64_t *len, char **why)
{
	uint8_t		 head[BLOBS_HEAD_LEN], *m = NULL;
	uint64_t	 mlen, want;
	size_t		 got;

	*off = 0;
	*len = size;
	if (blobs_pread(fd, head, sizeof head, 0, &got) == -1)
		return xcause(why, "read: %s", strerror(errno));
	if (got < BLOBS_MAGIC_LEN || memcmp(head, BLOBS_MAGIC,
	    BLOBS_MAGIC_LEN) != 0)
		return 2;
	if (got < sizeof head)
		return xcause(why, "header cut short (%zu of %d bytes)", got,
		    BLOBS_HEAD_LEN);
	mlen = blobs_get_le(head + 8, 4);
	*len = blobs_get_le(head + 16, 8);
	if (mlen > BLOBS_META_MAX)
		return xcause(why, "header claims %llu bytes of metadata, "
		    "more than %d", (unsigned long long)mlen, BLOBS_META_MAX);
	if (*len > size)
		return xcause(why, "cut short: its header says %llu bytes of "
		    "profile, the file has %llu", (unsigned long long)*len,
		    (unsigned long long)size);
	want = BLOBS_HEAD_LEN + mlen + *len;
	if (want != size)
		return xcause(why, "%s: the file has %llu bytes, its header "
		    "says %llu", want > size ? "cut short" : "too long",
		    (unsigned long long)size, (unsigned long long)want);
	m = xmalloc(mlen + 1);
	if (blobs_pread(fd, m, mlen, BLOBS_HEAD_LEN, &got) == -1 ||
	    got != mlen) {
		free(m);
		return xcause(why, "read header: %s", got != mlen ?
		    "cut short" : strerror(errno));
	}
	if (blobs_head_crc(head, m, mlen) != blobs_get_le(head + 12, 4)) {
		free(m);
		return xcause(why, "header checksum mismatch");
	}
	*off = BLOBS_HEAD_LEN + mlen;
	*meta_len = mlen;
	if (meta != NULL)
		*meta = m;
	else
		free(m);
	return 0;
}

/* Opens blob id for reading: fd, or -1 with errno (ENOENT: none). */
static int
blobs_open_read(struct blobs *b, const char *id, struct stat *st,
    char **cause)
{
	char	path[PATH_MAX];
	int	fd;

	blobs_pathf(path, "%s/%.2s/%s", b->root, id, id);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		if (errno == ENOENT || errno == ENOTDIR) {
			errno = ENOENT;
			return -1;
		}
		xcause(cause, "read blob %s: open %s: %s", id, path,
		    strerror(errno));
		errno = EIO;
		return -1;
	}
	if (fstat(fd, st) == -1) {
		xcause(cause, "read blob %s: fstat: %s", id, strerror(errno));
		close(fd);
		errno = EIO;
		return -1;
	}
	return fd;
}

/* Reads the uploaded bytes of a blob into a new buffer. */
int
blobs_read(struct blobs *b, const char *id, uint8_t **buf, size_t *len,
    char **cause)
{
	struct stat	 st;
	uint8_t		*data = NULL;
	uint64_t	 off, n;
	size_t		 mlen, got;
	char		*why = NULL;
	int		 fd;

	*buf = NULL;
	*len = 0;
	if (!blobs_id_valid(id))
		return 1;
	if ((fd = blobs_open_read(b, id, &st, cause)) == -1)
		return errno == ENOENT ? 1 : -1;
	if (blobs_read_head(fd, (uint64_t)st.st_size, NULL, &mlen, &off, &n,
	    &why) == -1) {
		xcause(cause, "read blob %s: damaged: %s", id, why);
		goto fail;
	}
	data = xmalloc(n > 0 ? n : 1);
	if (blobs_pread(fd, data, n, (off_t)off, &got) == -1) {
		xcause(cause, "read blob %s: %s", id, strerror(errno));
		goto fail;
	}
	if (got != n) {
		xcause(cause, "read blob %s: short read (%zu of %llu bytes)",
		    id, got, (unsigned long long)n);
		goto fail;
	}
	close(fd);
	*buf = data;
	*len = n;
	return 0;

fail:
	free(why);
	free(data);
	close(fd);
	return -1;
}

/* Reads only the header (the metadata) of a blob. */
int
blobs_read_meta(struct blobs *b, const char *id, uint8_t **meta,
    size_t *meta_len, size_t *len, char **cause)
{
	struct stat	 st;
	uint64_t	 off, n;
	char		*why = NULL;
	int		 fd, rc;

	*meta = NULL;
	*meta_len = 0;
	*len = 0;
	if (!blobs_id_valid(id))
		return 1;
	if ((fd = blobs_open_read(b, id, &st, cause)) == -1)
		return errno == ENOENT ? 1 : -1;
	rc = blobs_read_head(fd, (uint64_t)st.st_size, meta, meta_len, &off,
	    &n, &why);
	close(fd);
	if (rc == -1) {
		xcause(cause, "%s", why);
		free(why);
		return -1;
	}
	*len = n;
	return rc;
}

/* Removes blob id; with sync, the removal is made durable. */
int
blobs_remove(struct blobs *b, const char *id, int sync, char **cause)
{
	char	dir[PATH_MAX], path[PATH_MAX];
	char	*why = NULL;

	if (!blobs_id_valid(id))
		return 0;
	blobs_dir(b, id, dir);
	blobs_pathf(path, "%s/%s", dir, id);
	if (unlink(path) == -1) {
		if (errno == ENOENT)
			return 0;
		return xcause(cause, "remove blob %s: %s", id,
		    strerror(errno));
	}
	if (sync && blobs_sync_dir(dir, &why) == -1) {
		xcause(cause, "remove blob %s: %s", id, why);
		free(why);
		return -1;
	}
	return 0;
}

/* Classifies one file name found in blobs/xx. */
static enum blobs_entry
blobs_classify(const char *xx, const char *name)
{
	if (strncmp(name, BLOBS_TEMP_PREFIX, strlen(BLOBS_TEMP_PREFIX)) == 0)
		return BLOBS_ENTRY_TEMP;
	if (blobs_id_valid(name) && strncmp(name, xx, 2) == 0)
		return BLOBS_ENTRY_BLOB;
	return BLOBS_ENTRY_OTHER;
}

/* Scans blobs/xx/ * and calls cb for each regular file. */
int
blobs_scan(struct blobs *b, int (*cb)(enum blobs_entry, const char *,
    const char *, void *), void *arg, char **cause)
{
	DIR		*top, *sub;
	struct dirent	*de, *fe;
	char		 dir[PATH_MAX], path[PATH_MAX];
	int		 ret = 0;

	if ((top = opendir(b->root)) == NULL)
		return xcause(cause, "scan %s: %s", b->root, strerror(errno));
	while (ret == 0 && (de = readdir(top)) != NULL) {
		if (de->d_name[0] == '.' || strlen(de->d_name) != 2)
			continue;
		blobs_pathf(dir, "%s/%s", b->root, de->d_name);
		if ((sub = opendir(dir)) == NULL) {
			if (errno == ENOTDIR)
				continue;
			ret = xcause(cause, "scan %s: %s", dir,
			    strerror(errno));
			break;
		}
		while ((fe = readdir(sub)) != NULL) {
			if (strcmp(fe->d_name, ".") == 0 ||
			    strcmp(fe->d_name, "..") == 0)
				continue;
			if (fe->d_type != DT_REG && fe->d_type != DT_UNKNOWN)
				continue;
			blobs_pathf(path, "%s/%s", dir, fe->d_name);
			if (cb(blobs_classify(de->d_name, fe->d_name),
			    fe->d_name, path, arg) == -1) {
				ret = xcause(cause, "scan %s: stopped at %s",
				    dir, fe->d_name);
				break;
			}
		}
		closedir(sub);
	}
	closedir(top);
	return ret;
}
