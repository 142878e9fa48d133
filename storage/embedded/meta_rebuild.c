/*
 * Rebuilding meta.db from the blobs (profd --rebuild-meta). Every blob
 * carries its row in its header (blobs.c, blobmeta.c), written and made
 * durable with the bytes, so every acknowledged upload can be rebuilt.
 *
 * The rules, for an operator who lost meta.db:
 * - Never replace metadata: a meta.db holding rows is refused (move it
 *   aside to rebuild anyway). A missing or empty one is rebuilt. WAL and
 *   shared-memory files left without their database are renamed aside
 *   (meta.db-wal.stale.N), never applied to the new database.
 * - Never half-done: rows go into DATA_DIR/meta.db.rebuild, which is
 *   renamed to meta.db only once complete and durable; an interrupted
 *   rebuild leaves no meta.db, and the next one starts over.
 * - Never delete a blob. Blobs in orphans/ (moved aside by a start that
 *   found more blobs without rows than a crash can leave) whose metadata
 *   reads are moved back into blobs/ and rebuilt; blobs in blobs/ that
 *   cannot be rebuilt are moved into orphans/, so the start after the
 *   rebuild finds exactly the blobs it has rows for.
 * - Blobs without a header (written before headers existed) go to the
 *   caller's legacy callback, which makes what it can of the pprof bytes.
 * - Everything left out is logged with its reason and counted.
 * The data directory is locked (blobs_lock) so that no profd serves it
 * meanwhile.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/xmalloc.h"
#include "storage/embedded/blobmeta.h"
#include "storage/embedded/blobs.h"
#include "storage/embedded/meta_rebuild.h"
#include "storage/embedded/meta_sqlite.h"
#include "storage/store_meta.h"

#define META_REBUILD_BATCH	1000	/* rows per transaction */
#define META_REBUILD_LOG_MAX	200	/* skipped blobs named in the log */

/* Why a blob was left out. */
enum meta_rebuild_skip {
	META_REBUILD_OK,
	META_REBUILD_DAMAGED,
	META_REBUILD_BAD_META,
	META_REBUILD_WRONG_ID,
	META_REBUILD_LEGACY,
	META_REBUILD_UNREADABLE
};

/* A list of ids (records of STORE_ID_LEN bytes) found in one tree. */
struct meta_rebuild_ids {
	char	*v;
	size_t	 n, cap;
};

struct meta_rebuild {
	const char		*data_dir;
	struct blobs		*blobs;
	struct blobs		*orphans;	/* NULL: no orphans/ */
	char			*orphans_dir;
	struct meta_sqlite	*ms;		/* the new database */
	store_legacy_cb		 legacy;
	void			*legacy_arg;
	struct profile_meta	 rows[META_REBUILD_BATCH];
	size_t			 nrows;
	size_t			 logged;
	struct store_rebuild	*rep;
};

/* blobs_scan callback: notes the name of every blob. */
static int
meta_rebuild_scan_cb(enum blobs_entry kind, const char *name,
    const char *path, void *arg)
{
	struct meta_rebuild_ids	*ids = arg;

	(void)path;
	if (kind != BLOBS_ENTRY_BLOB)
		return 0;
	if (ids->n == ids->cap) {
		ids->cap = ids->cap ? ids->cap * 2 : 1024;
		ids->v = xreallocarray(ids->v, ids->cap, STORE_ID_LEN);
	}
	memcpy(ids->v + ids->n * STORE_ID_LEN, name, STORE_ID_LEN);
	ids->n++;
	return 0;
}

/* qsort comparison of two id records. */
static int
meta_rebuild_cmp(const void *a, const void *b)
{
	return memcmp(a, b, STORE_ID_LEN);
}

/* Lists the blobs of tree t, sorted (t may be NULL: none). */
static int
meta_rebuild_list(struct blobs *t, struct meta_rebuild_ids *ids,
    char **cause)
{
	memset(ids, 0, sizeof *ids);
	if (t == NULL)
		return 0;
	if (blobs_scan(t, meta_rebuild_scan_cb, ids, cause) == -1)
		return -1;
	if (ids->n > 0)
		qsort(ids->v, ids->n, STORE_ID_LEN, meta_rebuild_cmp);
	return 0;
}

/* 1 if path exists (or cannot be checked), 0 if it does not. */
static int
meta_rebuild_exists(const char *path)
{
	struct stat	sb;

	return lstat(path, &sb) == 0 || errno != ENOENT;
}

/* Renames path to path.stale.N (a free N) if it exists. */
static int
meta_rebuild_set_aside(const char *path, char **cause)
{
	char	*to = NULL;
	int	 i;

	if (!meta_rebuild_exists(path))
		return 0;
	for (i = 1; i < 1000; i++) {
		free(to);
		to = xasprintf("%s.stale.%d", path, i);
		if (!meta_rebuild_exists(to))
			break;
	}
	if (rename(path, to) == -1) {
		xcause(cause, "move %s aside: %s", path, strerror(errno));
		free(to);
		return -1;
	}
	log_warn("%s: %s belongs to no database; renamed to %s", __func__,
	    path, to);
	free(to);
	return 0;
}

/*
 * Checks that DATA_DIR/meta.db may be rebuilt: missing, or readable and
 * without rows; then sets aside WAL files that have no database.
 */
static int
meta_rebuild_check_db(const char *data_dir, char **cause)
{
	char			*path, *why = NULL, *side;
	int64_t			 rows = 0;
	int			 ret = -1;
	const char		*ext[] = { "-wal", "-shm" };
	size_t			 i;

	path = xasprintf("%s/meta.db", data_dir);
	if (meta_rebuild_exists(path)) {
		if (meta_sqlite_count_file(path, &rows, &why) == -1) {
			xcause(cause, "cannot read %s (%s): move it aside "
			    "(with its -wal and -shm files) and run "
			    "--rebuild-meta again", path, why);
			goto out;
		}
		if (rows > 0) {
			xcause(cause, "%s holds %lld profiles: --rebuild-meta "
			    "never replaces metadata; to rebuild from the "
			    "blobs anyway, move meta.db, meta.db-wal and "
			    "meta.db-shm aside first", path, (long long)rows);
			goto out;
		}
	}
	for (i = 0; i < 2; i++) {
		side = xasprintf("%s%s", path, ext[i]);
		ret = meta_rebuild_set_aside(side, cause);
		free(side);
		if (ret == -1)
			goto out;
	}
	ret = 0;
out:
	free(why);
	free(path);
	return ret;
}

/* Logs one blob left out (the first META_REBUILD_LOG_MAX of them). */
static void
meta_rebuild_log_skip(struct meta_rebuild *r, const char *tree,
    const char *id, const char *why, const char *fate)
{
	if (r->logged++ < META_REBUILD_LOG_MAX)
		log_warn("%s: %s/%.2s/%s: skipped: %s; %s", __func__, tree, id,
		    id, why, fate);
	else if (r->logged == META_REBUILD_LOG_MAX + 1)
		log_warn("%s: more blobs skipped; only the counts follow",
		    __func__);
}

/* Counts a blob left out under its reason. */
static void
meta_rebuild_count_skip(struct store_rebuild *rep, enum meta_rebuild_skip k)
{
	rep->skipped++;
	switch (k) {
	case META_REBUILD_DAMAGED:
		rep->skipped_damaged++;
		break;
	case META_REBUILD_BAD_META:
		rep->skipped_bad_meta++;
		break;
	case META_REBUILD_WRONG_ID:
		rep->skipped_wrong_id++;
		break;
	case META_REBUILD_LEGACY:
		rep->skipped_legacy++;
		break;
	case META_REBUILD_OK:
	case META_REBUILD_UNREADABLE:
		rep->skipped_unreadable++;
		break;
	}
}

/* Makes a row for a blob without header through the legacy callback. */
static enum meta_rebuild_skip
meta_rebuild_legacy(struct meta_rebuild *r, struct blobs *t, const char *id,
    struct profile_meta *row, char **why)
{
	uint8_t	*buf = NULL;
	size_t	 len = 0;
	int	 rc;

	if (r->legacy == NULL) {
		*why = xstrdup("no metadata (written by an older profd)");
		return META_REBUILD_LEGACY;
	}
	if ((rc = blobs_read(t, id, &buf, &len, why)) != 0) {
		if (rc == 1)
			*why = xstrdup("disappeared during the rebuild");
		return META_REBUILD_UNREADABLE;
	}
	memset(row, 0, sizeof *row);
	memcpy(row->id, id, STORE_ID_LEN + 1);
	row->size = (int64_t)len;
	rc = r->legacy(buf, len, row, r->legacy_arg, why);
	free(buf);
	if (rc == -1 || row->service == NULL || row->type == NULL) {
		store_meta_clear(row);
		if (rc != -1)
			*why = xstrdup("no service or type for it");
		return META_REBUILD_LEGACY;
	}
	if (row->sample_types == NULL)
		row->sample_types = xstrdup("");
	return META_REBUILD_OK;
}

/* Reads the row of blob id in tree t into *row, or says why not. */
static enum meta_rebuild_skip
meta_rebuild_read(struct meta_rebuild *r, struct blobs *t, const char *id,
    struct profile_meta *row, char **why)
{
	uint8_t	*meta = NULL;
	size_t	 meta_len, len;
	char	*w = NULL;
	int	 rc;

	rc = blobs_read_meta(t, id, &meta, &meta_len, &len, &w);
	if (rc == 1) {
		*why = xstrdup("disappeared during the rebuild");
		return META_REBUILD_UNREADABLE;
	}
	if (rc == -1) {
		*why = xasprintf("damaged: %s", w);
		free(w);
		return META_REBUILD_DAMAGED;
	}
	if (rc == 2) {
		rc = meta_rebuild_legacy(r, t, id, row, why);
		if (rc == META_REBUILD_OK)
			r->rep->legacy++;
		return rc;
	}
	rc = blobmeta_decode(meta, meta_len, row, why);
	free(meta);
	if (rc == -1)
		return META_REBUILD_BAD_META;
	if (strcmp(row->id, id) != 0) {
		*why = xasprintf("its metadata is that of profile %s",
		    row->id);
		store_meta_clear(row);
		return META_REBUILD_WRONG_ID;
	}
	if (row->size != (int64_t)len) {
		*why = xasprintf("its metadata says %lld bytes, it holds %zu",
		    (long long)row->size, len);
		store_meta_clear(row);
		return META_REBUILD_BAD_META;
	}
	return META_REBUILD_OK;
}

/* Writes the queued rows in one transaction and frees them. */
static int
meta_rebuild_flush(struct meta_rebuild *r, char **cause)
{
	size_t	i;
	int	rc;

	if (r->nrows == 0)
		return 0;
	rc = meta_sqlite_insert_many(r->ms, r->rows, r->nrows, cause);
	for (i = 0; i < r->nrows; i++)
		store_meta_clear(&r->rows[i]);
	r->nrows = 0;
	return rc;
}

/* Queues a row (taking its members); flushes a full batch. */
static int
meta_rebuild_add(struct meta_rebuild *r, struct profile_meta *row,
    char **cause)
{
	r->rep->rebuilt++;
	r->rep->bytes += (size_t)row->size;
	r->rows[r->nrows++] = *row;
	memset(row, 0, sizeof *row);
	if (r->nrows == META_REBUILD_BATCH)
		return meta_rebuild_flush(r, cause);
	return 0;
}

/*
 * Rebuilds one id: from blobs/ if in_blobs (a copy in orphans/ too is
 * left there), else from orphans/, moving it back. Returns -1 only when
 * the new database fails.
 */
static int
meta_rebuild_one(struct meta_rebuild *r, const char *id, int in_blobs,
    int in_orphans, char **cause)
{
	struct profile_meta	 row;
	enum meta_rebuild_skip	 k;
	struct blobs		*t = in_blobs ? r->blobs : r->orphans;
	const char		*tree = in_blobs ? "blobs" : "orphans";
	char			*why = NULL, *fate = NULL;

	memset(&row, 0, sizeof row);
	if (in_blobs && in_orphans) {
		r->rep->skipped++;
		r->rep->skipped_duplicate++;
		meta_rebuild_log_skip(r, "orphans", id, "blobs/ holds a blob "
		    "of the same id", "left in orphans/");
	}
	k = meta_rebuild_read(r, t, id, &row, &why);
	if (k == META_REBUILD_OK && !in_blobs &&
	    blobs_move(r->orphans, id, blobs_root(r->blobs), &why) == -1) {
		store_meta_clear(&row);
		k = META_REBUILD_UNREADABLE;
	} else if (k == META_REBUILD_OK && !in_blobs)
		r->rep->from_orphans++;
	if (k == META_REBUILD_OK)
		return meta_rebuild_add(r, &row, cause);

	meta_rebuild_count_skip(r->rep, k);
	if (!in_blobs)
		fate = xstrdup("left in orphans/");
	else if (in_orphans)
		fate = xstrdup("left in place (orphans/ has the same id)");
	else if (blobs_move(r->blobs, id, r->orphans_dir, &fate) == 0) {
		r->rep->moved_aside++;
		fate = xstrdup("moved to orphans/");
	} else {
		char *f = xasprintf("left in place (%s)", fate);

		free(fate);
		fate = f;
	}
	meta_rebuild_log_skip(r, tree, id, why, fate);
	free(why);
	free(fate);
	return 0;
}

/* Walks blobs/ and orphans/ in id order, rebuilding each id once. */
static int
meta_rebuild_walk(struct meta_rebuild *r, const struct meta_rebuild_ids *a,
    const struct meta_rebuild_ids *o, char **cause)
{
	char	id[STORE_ID_LEN + 1];
	size_t	i = 0, j = 0;
	int	c;

	id[STORE_ID_LEN] = '\0';
	while (i < a->n || j < o->n) {
		if (i == a->n)
			c = 1;
		else if (j == o->n)
			c = -1;
		else
			c = memcmp(a->v + i * STORE_ID_LEN,
			    o->v + j * STORE_ID_LEN, STORE_ID_LEN);
		memcpy(id, c <= 0 ? a->v + i * STORE_ID_LEN :
		    o->v + j * STORE_ID_LEN, STORE_ID_LEN);
		if (meta_rebuild_one(r, id, c <= 0, c >= 0, cause) == -1)
			return -1;
		if (c <= 0)
			i++;
		if (c >= 0)
			j++;
	}
	return meta_rebuild_flush(r, cause);
}

/* fsyncs a file or directory by path. */
static int
meta_rebuild_fsync(const char *path, int dir, char **cause)
{
	int	fd;

	fd = open(path, (dir ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_CLOEXEC);
	if (fd == -1)
		return xcause(cause, "open %s: %s", path, strerror(errno));
	if (fsync(fd) == -1) {
		int e = errno;

		close(fd);
		return xcause(cause, "fsync %s: %s", path, strerror(e));
	}
	close(fd);
	return 0;
}

/*
 * Closes the new database (SQLite checkpoints it into its file and drops
 * the WAL) and renames it to meta.db, durably.
 */
static int
meta_rebuild_install(struct meta_rebuild *r, const char *tmp, char **cause)
{
	char	*wal = xasprintf("%s-wal", tmp);
	char	*db = xasprintf("%s/meta.db", r->data_dir);
	int	 ret = -1;

	meta_sqlite_close(r->ms);
	r->ms = NULL;
	if (meta_rebuild_exists(wal)) {
		xcause(cause, "%s was not checkpointed into %s; meta.db left "
		    "as it was", wal, tmp);
		goto out;
	}
	if (meta_rebuild_fsync(tmp, 0, cause) == -1)
		goto out;
	if (rename(tmp, db) == -1) {
		xcause(cause, "rename %s to %s: %s", tmp, db, strerror(errno));
		goto out;
	}
	ret = meta_rebuild_fsync(r->data_dir, 1, cause);
out:
	free(wal);
	free(db);
	return ret;
}

/* Removes what an interrupted rebuild left of its own database. */
static void
meta_rebuild_clean_tmp(const char *tmp)
{
	const char	*ext[] = { "", "-wal", "-shm", "-journal" };
	char		*p;
	size_t		 i;

	for (i = 0; i < sizeof ext / sizeof ext[0]; i++) {
		p = xasprintf("%s%s", tmp, ext[i]);
		if (unlink(p) == 0)
			log_info("%s: removed %s, left by an interrupted "
			    "rebuild", __func__, p);
		free(p);
	}
}

/* Opens blobs/ (locked) and orphans/; refuses a directory with neither. */
static int
meta_rebuild_open(struct meta_rebuild *r, char **cause)
{
	char	*bdir = xasprintf("%s/blobs", r->data_dir);
	int	 none;

	r->orphans_dir = xasprintf("%s/orphans", r->data_dir);
	none = !meta_rebuild_exists(bdir) &&
	    !meta_rebuild_exists(r->orphans_dir);
	free(bdir);
	if (none)
		return xcause(cause, "%s has neither blobs/ nor orphans/: "
		    "nothing to rebuild from (is --data-dir right?)",
		    r->data_dir);
	if ((r->blobs = blobs_open(r->data_dir, cause)) == NULL ||
	    blobs_lock(r->blobs, cause) == -1)
		return -1;
	r->orphans = blobs_open_dir(r->orphans_dir, cause);
	if (r->orphans == NULL && errno != ENOENT)
		return -1;
	return 0;
}

/* Rebuilds meta.db; see the top of the file. */
int
meta_rebuild_run(const char *data_dir, store_legacy_cb legacy, void *arg,
    struct store_rebuild *rep, char **cause)
{
	struct meta_rebuild	*r;
	struct meta_rebuild_ids	 a, o;
	char			*tmp = xasprintf("%s/meta.db.rebuild", data_dir);
	int			 ret = -1;

	memset(rep, 0, sizeof *rep);
	memset(&a, 0, sizeof a);
	memset(&o, 0, sizeof o);
	r = xcalloc(1, sizeof *r);
	r->data_dir = data_dir;
	r->legacy = legacy;
	r->legacy_arg = arg;
	r->rep = rep;
	if (meta_rebuild_open(r, cause) == -1 ||
	    meta_rebuild_check_db(data_dir, cause) == -1)
		goto out;
	meta_rebuild_clean_tmp(tmp);
	if (meta_rebuild_list(r->blobs, &a, cause) == -1 ||
	    meta_rebuild_list(r->orphans, &o, cause) == -1)
		goto out;
	log_info("%s: %s: %zu blobs in blobs/, %zu in orphans/", __func__,
	    data_dir, a.n, o.n);
	if ((r->ms = meta_sqlite_open(tmp, cause)) == NULL ||
	    meta_rebuild_walk(r, &a, &o, cause) == -1)
		goto out;
	/* The moves between blobs/ and orphans/ before the rows. */
	if (blobs_sync(r->blobs, cause) == -1 ||
	    meta_rebuild_install(r, tmp, cause) == -1)
		goto out;
	ret = 0;
out:
	while (r->nrows > 0)
		store_meta_clear(&r->rows[--r->nrows]);
	meta_sqlite_close(r->ms);
	blobs_close(r->orphans);
	blobs_close(r->blobs);
	free(r->orphans_dir);
	free(r);
	free(a.v);
	free(o.v);
	free(tmp);
	return ret;
}
