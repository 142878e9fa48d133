/*
 * Startup consistency check. A put writes its blob before its row, so a
 * crash can leave a blob with no row, partial or whole (or a .tmp.* file
 * of an older version); all are removed here. A row with no blob should not happen (the row is written
 * last and deleted first) unless files were lost outside profd; such rows
 * are counted and logged, not deleted, so an operator can look.
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
#include "storage/recover.h"

#define RECOVER_LOG_MAX	10	/* missing blobs named in the log */

struct recover_state {
	const char		*ids;	/* n sorted records of STORE_ID_LEN */
	size_t			 n;
	uint8_t			*seen;	/* bitmap over ids */
	struct store_recovery	*rec;
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

/* Handles one file under blobs/. */
static int
recover_entry_cb(enum blobs_entry kind, const char *name, const char *path,
    void *arg)
{
	struct recover_state	*st = arg;
	ssize_t			 i;

	switch (kind) {
	case BLOBS_ENTRY_TEMP:
		st->rec->temp_files_removed += recover_unlink(path,
		    "temp file");
		break;
	case BLOBS_ENTRY_BLOB:
		if ((i = recover_find(st, name)) >= 0)
			st->seen[i / 8] |= (uint8_t)(1u << (i % 8));
		else
			st->rec->orphan_blobs_removed += recover_unlink(path,
			    "orphan blob");
		break;
	case BLOBS_ENTRY_OTHER:
		log_warn("%s: %s is not a blob; left alone", __func__, path);
		break;
	}
	return 0;
}

/* Runs the check; see the top of the file. */
int
recover_run(struct meta_sqlite *ms, struct blobs *b,
    struct store_recovery *rec, char **cause)
{
	struct recover_state	 st;
	char			*ids = NULL;
	size_t			 n = 0, i, logged = 0;
	int			 ret = -1;

	memset(rec, 0, sizeof *rec);
	if (meta_sqlite_ids(ms, &ids, &n, cause) == -1)
		return -1;
	st.ids = ids;
	st.n = n;
	st.seen = xcalloc(n / 8 + 1, 1);
	st.rec = rec;
	if (blobs_scan(b, recover_entry_cb, &st, cause) == -1)
		goto out;
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
	free(st.seen);
	free(ids);
	return ret;
}
