/*
 * Startup consistency check. A put writes its blob before its row, so a
 * crash can leave a blob with no row, partial or whole (or a .tmp.* file
 * of an older version); a retention batch commits its rows before it
 * unlinks the blobs, so a crash there leaves that batch's blobs. Temp files
 * are removed. A row with no blob should not happen (the row is written
 * last and deleted first) unless files were lost outside profd; such rows
 * are counted and logged, not deleted, so an operator can look.
 *
 * Blobs with no row are only removed when a crash explains them: the
 * caller passes the most a crash can leave (orphan_limit; profd passes
 * 64 + --io-threads + RETENTION_BATCH, see collector/server.c). More than
 * that means the metadata was lost or replaced, not a crash: the blobs are
 * then moved aside into DATA_DIR/orphans/xx/ID (rename, never unlink) and
 * the move is logged. If meta.db has no rows at all and there are more
 * blobs than that, or meta.db did not exist and there is any blob
 * (recover_check_new, before meta.db is created), the store refuses to
 * open, naming the remedies: profd --rebuild-meta (meta_rebuild.c), which
 * rebuilds meta.db from the metadata in the blob headers, restoring
 * meta.db from a backup, or moving the blobs aside. An
 * empty meta.db with only a few blobs is a crash before the first commit:
 * those are moved aside too, since no row says they were ever accepted.
 *
 * It must stay fast at millions of rows: the ids are streamed once from
 * the id index into one sorted buffer, the blob directories are listed
 * once, and each file name is looked up by binary search, marking a bitmap
 * of the ids that have a blob.
 */
#include <sys/types.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/xmalloc.h"
#include "storage/embedded/recover.h"

#define RECOVER_LOG_MAX	10	/* missing blobs named in the log */

#define RECOVER_REMEDY	"run profd --rebuild-meta --data-dir %s (with " \
	"the same --config, if any) to rebuild meta.db from the metadata the " \
	"blobs carry, then start profd again; or restore meta.db (with its " \
	"-wal file) from a backup; or move %s/blobs aside to start empty"

struct recover_state {
	const char		*ids;	/* n sorted records of STORE_ID_LEN */
	size_t			 n;
	uint8_t			*seen;	/* bitmap over ids */
	char			*orphans;	/* norphans ids of STORE_ID_LEN */
	size_t			 norphans, orphans_cap;
	char			**temps;	/* paths of temp files */
	size_t			 ntemps, temps_cap;
	size_t			 nblobs;	/* blob files seen */
};

/* Finds id among the sorted ids; returns its index or -1. */
static ssize_t
recover_find(const struct recover_state *st, const char *id)
{
	size_t	lo = 0, hi = st->n, mid;
	int	c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = memcmp(st->ids + mid * STORE_ID_LEN, id, STORE_ID_LEN);
		if (c == 0)
			return (ssize_t)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* Removes a leftover file; failures are logged, not fatal. */
static int
recover_unlink(const char *path, const char *what)
{
	if (unlink(path) == -1 && errno != ENOENT) {
		log_warn("%s: remove %s %s: %s", __func__, what, path,
		    strerror(errno));
		return 0;
	}
	log_info("%s: removed %s %s", __func__, what, path);
	return 1;
}

/*
 * Notes one file under blobs/; nothing is changed until the whole scan is
 * done, so that a refusal leaves everything in place.
 */
static int
recover_entry_cb(enum blobs_entry kind, const char *name, const char *path,
    void *arg)
{
	struct recover_state	*st = arg;
	ssize_t			 i;

	switch (kind) {
	case BLOBS_ENTRY_TEMP:
		if (st->ntemps == st->temps_cap) {
			st->temps_cap = st->temps_cap ? st->temps_cap * 2 : 16;
			st->temps = xreallocarray(st->temps, st->temps_cap,
			    sizeof *st->temps);
		}
		st->temps[st->ntemps++] = xstrdup(path);
		break;
	case BLOBS_ENTRY_BLOB:
		st->nblobs++;
		if ((i = recover_find(st, name)) >= 0) {
			st->seen[i / 8] |= (uint8_t)(1u << (i % 8));
			break;
		}
		if (st->norphans == st->orphans_cap) {
			st->orphans_cap = st->orphans_cap ?
			    st->orphans_cap * 2 : 256;
			st->orphans = xreallocarray(st->orphans,
			    st->orphans_cap, STORE_ID_LEN);
		}
		memcpy(st->orphans + st->norphans * STORE_ID_LEN, name,
		    STORE_ID_LEN);
		st->norphans++;
		break;
	case BLOBS_ENTRY_OTHER:
		log_warn("%s: %s is not a blob; left alone", __func__, path);
		break;
	}
	return 0;
}

/* Removes one orphan blob (a crash's); returns 1 if it went. */
static int
recover_remove_orphan(struct blobs *b, const char *name)
{
	char	id[STORE_ID_LEN + 1], *why = NULL;

	memcpy(id, name, STORE_ID_LEN);
	id[STORE_ID_LEN] = '\0';
	if (blobs_remove(b, id, 0, &why) == -1) {
		log_warn("%s: %s", __func__, why);
		free(why);
		return 0;
	}
	log_info("%s: removed orphan blob %s", __func__, id);
	return 1;
}

/* Counts the blob files of a store whose meta.db is about to be created. */
static int
recover_count_cb(enum blobs_entry kind, const char *name, const char *path,
    void *arg)
{
	(void)name;
	(void)path;
	if (kind == BLOBS_ENTRY_BLOB)
		(*(size_t *)arg)++;
	return 0;
}

/* Refuses a new meta.db beside existing blobs; see the top of the file. */
int
recover_check_new(struct blobs *b, const char *data_dir, char **cause)
{
	size_t	n = 0;

	if (blobs_scan(b, recover_count_cb, &n, cause) == -1)
		return -1;
	if (n == 0)
		return 0;
	return xcause(cause, "refusing to start: %s/meta.db does not exist "
	    "but %s/blobs holds %zu profile blobs, which a new database would "
	    "not know; " RECOVER_REMEDY, data_dir, data_dir, n, data_dir,
	    data_dir);
}

/* Moves the orphans into DATA_DIR/orphans; failures leave them in place. */
static void
recover_move_orphans(struct recover_state *st, struct blobs *b,
    const char *data_dir, struct store_recovery *rec)
{
	char	*dest = xasprintf("%s/orphans", data_dir), *why = NULL;
	char	 id[STORE_ID_LEN + 1];
	size_t	 i;

	for (i = 0; i < st->norphans; i++) {
		memcpy(id, st->orphans + i * STORE_ID_LEN, STORE_ID_LEN);
		id[STORE_ID_LEN] = '\0';
		if (blobs_move(b, id, dest, &why) == -1) {
			log_warn("%s: %s; left in place", __func__, why);
			free(why);
			why = NULL;
			continue;
		}
		rec->orphan_blobs_moved++;
	}
	if (rec->orphan_blobs_moved > 0 && blobs_sync(b, &why) == -1) {
		log_warn("%s: %s", __func__, why);
		free(why);
	}
	log_warn("%s: %zu blobs with no row in meta.db (more than a crash "
	    "leaves): moved %zu of them to %s/xx/ID, nothing deleted; "
	    "profd --rebuild-meta (on a missing or empty meta.db) brings "
	    "them back with their rows", __func__, st->norphans,
	    rec->orphan_blobs_moved, dest);
	free(dest);
}

/* Runs the check; see the top of the file. */
int
recover_run(struct meta_sqlite *ms, struct blobs *b, const char *data_dir,
    size_t orphan_limit, struct store_recovery *rec, char **cause)
{
	struct recover_state	 st;
	char			*ids = NULL;
	size_t			 n = 0, i, logged = 0;
	int			 ret = -1;

	memset(rec, 0, sizeof *rec);
	memset(&st, 0, sizeof st);
	if (meta_sqlite_ids(ms, &ids, &n, cause) == -1)
		return -1;
	st.ids = ids;
	st.n = n;
	st.seen = xcalloc(n / 8 + 1, 1);
	if (blobs_scan(b, recover_entry_cb, &st, cause) == -1)
		goto out;
	if (n == 0 && st.norphans > orphan_limit) {
		xcause(cause, "refusing to start: %s/meta.db has no profiles "
		    "but %s/blobs holds %zu profile blobs, more than a crash "
		    "can leave (%zu); " RECOVER_REMEDY, data_dir, data_dir,
		    st.norphans, orphan_limit, data_dir, data_dir);
		goto out;
	}
	for (i = 0; i < st.ntemps; i++)
		rec->temp_files_removed += recover_unlink(st.temps[i],
		    "temp file");
	if (st.norphans > orphan_limit || (n == 0 && st.norphans > 0))
		recover_move_orphans(&st, b, data_dir, rec);
	else {
		for (i = 0; i < st.norphans; i++)
			rec->orphan_blobs_removed += recover_remove_orphan(b,
			    st.orphans + i * STORE_ID_LEN);
	}
	for (i = 0; i < n; i++) {
		if (st.seen[i / 8] & (1u << (i % 8)))
			continue;
		rec->missing_blobs++;
		if (logged++ < RECOVER_LOG_MAX)
			log_warn("%s: profile %.*s has no blob", __func__,
			    STORE_ID_LEN, ids + i * STORE_ID_LEN);
	}
	if (rec->missing_blobs > RECOVER_LOG_MAX)
		log_warn("%s: %zu profiles have no blob", __func__,
		    rec->missing_blobs);
	ret = 0;
out:
	for (i = 0; i < st.ntemps; i++)
		free(st.temps[i]);
	free(st.temps);
	free(st.orphans);
	free(st.seen);
	free(ids);
	return ret;
}
