/*
 * Blob files: the uploaded bytes of each profile under
 * DATA_DIR/blobs/xx/ID (xx = the first two characters of ID), after a
 * header holding the profile's metadata (blobmeta.c), written durably
 * (created without replacing, then one syncfs for a whole group commit,
 * see blobs.c), scanned at startup by recover.c and read back by
 * meta_rebuild.c when meta.db must be rebuilt.
 */
#ifndef PROFD_BLOBS_H
#define PROFD_BLOBS_H

#include <stddef.h>
#include <stdint.h>

struct blobs;

/* Creates DATA_DIR/blobs if needed. */
struct blobs	*blobs_open(const char *data_dir, char **cause);
/*
 * Opens another tree laid out like blobs/ (DATA_DIR/orphans): NULL with
 * *cause if root does not exist (*cause may be NULL then: errno ENOENT).
 */
struct blobs	*blobs_open_dir(const char *root, char **cause);
void		 blobs_close(struct blobs *);
/* The tree's directory (DATA_DIR/blobs), for blobs_move's dest. */
const char	*blobs_root(const struct blobs *);
/*
 * Takes an exclusive lock on the tree for as long as it stays open, so
 * that two processes never work on one data directory: -1 if another
 * holds it.
 */
int		 blobs_lock(struct blobs *, char **cause);

/* 1 if id is STORE_ID_LEN characters of [0-9A-Za-z] (safe in a path). */
int	blobs_id_valid(const char *id);

/* The largest header blobs_create writes and blobs_read_meta reads. */
#define BLOBS_META_MAX	(1024 * 1024)

/*
 * Writes blob id: a header holding meta (meta_len bytes, at most
 * BLOBS_META_MAX), then the len bytes of buf, under its final name but
 * not yet durable, and leaves it open: *fd: OUT, for blobs_check, then
 * the caller closes it. Fails (nothing left behind) if the blob already
 * exists.
 */
int	blobs_create(struct blobs *, const char *id, const void *meta,
	    size_t meta_len, const void *buf, size_t len, int *fd,
	    char **cause);
/* Makes every blob created so far durable (data and names). */
int	blobs_sync(struct blobs *, char **cause);
/* After blobs_sync: -1 if the blob open as fd failed to reach the disk. */
int	blobs_check(int fd, const char *id, char **cause);
/*
 * Reads the bytes of a blob as uploaded (without its header; a blob of
 * an older version, which has none, whole): 0 ok, 1 no such blob, -1
 * error (also a damaged header or a size other than the header says).
 * *buf: OUT (free).
 */
int	blobs_read(struct blobs *, const char *id, uint8_t **buf, size_t *len,
	    char **cause);
/*
 * Reads only the header of a blob: 0 with *meta (free) and *meta_len set
 * and *len the size of the bytes after it; 2 for a blob without header
 * (an older version's: *len its size); 1 no such blob; -1 damaged or
 * unreadable (*cause says which: cut short, wrong checksum, ...).
 */
int	blobs_read_meta(struct blobs *, const char *id, uint8_t **meta,
	    size_t *meta_len, size_t *len, char **cause);
/* Unlinks a blob; sync also fsyncs its directory. A missing blob is ok. */
int	blobs_remove(struct blobs *, const char *id, int sync, char **cause);

/*
 * Moves blob id to dest/xx/id with rename(2) (dest and dest/xx are
 * created), never replacing a file there: 0 moved, -1 error (the blob is
 * left where it was). The move is made durable by the next blobs_sync.
 */
int	blobs_move(struct blobs *, const char *id, const char *dest,
	    char **cause);

enum blobs_entry {
	BLOBS_ENTRY_BLOB,	/* a finished blob; name is its id */
	BLOBS_ENTRY_TEMP,	/* a .tmp.* file of an older version's write */
	BLOBS_ENTRY_OTHER	/* not ours: left alone */
};

/*
 * Calls cb for every file under blobs/ with its kind, name and full path.
 * A callback returning -1 stops the scan (the scan then returns -1).
 */
int	blobs_scan(struct blobs *, int (*cb)(enum blobs_entry kind,
	    const char *name, const char *path, void *arg), void *arg,
	    char **cause);

#endif
