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
 */
#include <sys/stat.h>
#include <sys/types.h>

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
#include "storage/blobs.h"
#include "storage/store.h"

#define BLOBS_TEMP_PREFIX	".tmp."

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

/* Opens the blob store, creating DATA_DIR/blobs. */
struct blobs *
blobs_open(const char *data_dir, char **cause)
{
	struct blobs	*b;
	char		*root;

	root = xasprintf("%s/blobs", data_dir);
	if (strlen(root) > BLOBS_ROOT_MAX) {
		xcause(cause, "data directory path too long: %s", data_dir);
		free(root);
		return NULL;
	}
	if (mkdir(root, 0755) == -1 && errno != EEXIST) {
		xcause(cause, "create %s: %s", root, strerror(errno));
		free(root);
		return NULL;
	}
	b = xcalloc(1, sizeof *b);
	b->root = root;
	if ((b->root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) ==
	    -1) {
		xcause(cause, "open %s: %s", root, strerror(errno));
		free(root);
		free(b);
		return NULL;
	}
	return b;
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

/* Writes blob id under its name, not yet durable; *fdp: OUT its open fd. */
int
blobs_create(struct blobs *b, const char *id, const void *buf, size_t len,
    int *fdp, char **cause)
{
	char		 dir[PATH_MAX], path[PATH_MAX];
	const uint8_t	*p = buf;
	char		*why = NULL;
	int		 fd;
	ssize_t		 w;

	*fdp = -1;
	if (!blobs_id_valid(id))
		return xcause(cause, "write blob: invalid id");
	blobs_dir(b, id, dir);
	blobs_pathf(path, "%s/%s", dir, id);
	if ((fd = blobs_open_new(b, dir, path, &why)) == -1)
		goto fail;
	while (len > 0) {
		if ((w = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			why = xasprintf("write %s: %s", path, strerror(errno));
			close(fd);
			unlink(path);
			goto fail;
		}
		p += w;
		len -= (size_t)w;
	}
	*fdp = fd;
	return 0;

fail:
	xcause(cause, "write blob %s: %s", id, why);
	free(why);
	return -1;
}

/* Reads a whole blob into a new buffer. */
int
blobs_read(struct blobs *b, const char *id, uint8_t **buf, size_t *len,
    char **cause)
{
	char		 path[PATH_MAX];
	struct stat	 st;
	uint8_t		*data = NULL;
	size_t		 size, got = 0;
	ssize_t		 r;
	int		 fd;

	*buf = NULL;
	*len = 0;
	if (!blobs_id_valid(id))
		return 1;
	blobs_pathf(path, "%s/%.2s/%s", b->root, id, id);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 1;
		return xcause(cause, "read blob %s: open %s: %s", id, path,
		    strerror(errno));
	}
	if (fstat(fd, &st) == -1) {
		xcause(cause, "read blob %s: fstat: %s", id, strerror(errno));
		goto fail;
	}
	size = (size_t)st.st_size;
	data = xmalloc(size);
	while (got < size) {
		if ((r = read(fd, data + got, size - got)) == -1) {
			if (errno == EINTR)
				continue;
			xcause(cause, "read blob %s: %s", id, strerror(errno));
			goto fail;
		}
		if (r == 0) {
			xcause(cause, "read blob %s: short read (%zu of %zu "
			    "bytes)", id, got, size);
			goto fail;
		}
		got += (size_t)r;
	}
	close(fd);
	*buf = data;
	*len = size;
	return 0;

fail:
	free(data);
	close(fd);
	return -1;
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
