/*
 * The embedded backend: metadata in DATA_DIR/meta.db (meta_sqlite.c,
 * meta_query.c), bytes in DATA_DIR/blobs (blobs.c), checked against each
 * other at open (recover.c). This file holds the order of operations that
 * spans both: a put writes the blob, then queues the row for the group
 * commit, whose leader makes all the batch's blobs durable (one syncfs,
 * blobs_sync) and checks each (blobs_check) before committing their rows;
 * the blob is removed again if its row fails. A retention delete commits
 * the rows before unlinking the blobs. Either way a crash leaves at worst
 * orphan blobs, which the next open removes (or moves aside when there are
 * more than a crash can leave, see recover.c), never a row that points
 * nowhere. A missing meta.db beside existing blobs is refused, not
 * recreated: each blob carries its row in its header (blobmeta.c), and
 * store_rebuild (meta_rebuild.c) makes meta.db again from them. The data
 * directory is locked while open, so a rebuild or a second profd cannot
 * work on it at the same time.
 */
#include <sys/stat.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/xmalloc.h"
#include "storage/embedded/blobmeta.h"
#include "storage/embedded/blobs.h"
#include "storage/embedded/meta_rebuild.h"
#include "storage/embedded/meta_rollup.h"
#include "storage/embedded/meta_sqlite.h"
#include "storage/embedded/meta_timeline.h"
#include "storage/embedded/recover.h"
#include "storage/store_bucket.h"
#include "storage/store_free.h"
#include "storage/store_ops.h"

struct embedded {
	struct meta_sqlite	*meta;
	struct blobs		*blobs;
	struct blobs		*rollups;	/* DATA_DIR/rollups */
	pthread_mutex_t		 mu;		/* guards the fields below */
	int64_t			 next_rid;
	struct store_rollup_stats rst;		/* rows and bytes */
	int64_t			 late_maxpk;	/* the newest late profile */
	int64_t			 late_since;	/* ... seen since (mono ns) */
};

/* Closes the backend. */
static void
embedded_close(void *be)
{
	struct embedded	*e = be;

	if (e == NULL)
		return;
	meta_sqlite_close(e->meta);
	blobs_close(e->blobs);
	blobs_close(e->rollups);
	pthread_mutex_destroy(&e->mu);
	free(e);
}

/* Creates dir and its missing parents (mkdir -p). */
static int
embedded_mkdirs(const char *dir, char **cause)
{
	char	*p = xstrdup(dir), *slash = p;
	int	 ret = 0;

	for (;;) {
		slash = strchr(slash + 1, '/');
		if (slash != NULL)
			*slash = '\0';
		if (mkdir(p, 0755) == -1 && errno != EEXIST) {
			ret = xcause(cause, "create data directory %s: %s", p,
			    strerror(errno));
			break;
		}
		if (slash == NULL)
			break;
		*slash = '/';
	}
	free(p);
	return ret;
}

/* Group-commit barrier: the batch's blobs become durable. */
static int
embedded_barrier(void *blobs, char **cause)
{
	return blobs_sync(blobs, cause);
}

/* A blob waiting for its row: checked by the group commit's leader. */
struct embedded_blob {
	int		 fd;
	const char	*id;
};

/* Group-commit check of one row: its blob reached the disk. */
static int
embedded_check(void *arg, char **cause)
{
	struct embedded_blob *eb = arg;

	return blobs_check(eb->fd, eb->id, cause);
}

/* Names of the blobs under rollups/ (a scan at open). */
struct embedded_names {
	char	*v;		/* records of STORE_ID_LEN bytes, sorted */
	size_t	 n, cap;
};

/* blobs_scan callback: collects rollup blob names, removes temp files. */
static int
embedded_names_cb(enum blobs_entry kind, const char *name, const char *path,
    void *arg)
{
	struct embedded_names	*nm = arg;

	if (kind == BLOBS_ENTRY_TEMP) {
		if (unlink(path) == -1)
			log_warn("%s: unlink %s: %s", __func__, path,
			    strerror(errno));
		return 0;
	}
	if (kind != BLOBS_ENTRY_BLOB || strlen(name) != STORE_ID_LEN)
		return 0;
	if (nm->n == nm->cap) {
		nm->cap = nm->cap ? nm->cap * 2 : 256;
		nm->v = xreallocarray(nm->v, nm->cap, STORE_ID_LEN);
	}
	memcpy(nm->v + nm->n * STORE_ID_LEN, name, STORE_ID_LEN);
	nm->n++;
	return 0;
}

/* qsort/bsearch: name records. */
static int
embedded_names_cmp(const void *a, const void *b)
{
	return memcmp(a, b, STORE_ID_LEN);
}

/* meta_rollup_recover's test: is there a blob of this name? */
static int
embedded_names_has(void *arg, const char *name)
{
	struct embedded_names	*nm = arg;

	return nm->n > 0 && bsearch(name, nm->v, nm->n, STORE_ID_LEN,
	    embedded_names_cmp) != NULL;
}

/* qsort/bsearch: int64. */
static int
embedded_cmp_i64(const void *a, const void *b)
{
	int64_t	x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/*
 * Checks rollups against their blobs at open: rows whose blob is missing
 * are dropped with their bucket (merges read its parts), blobs without a
 * row (a compaction cut short) are removed.
 */
static int
embedded_rollup_recover(struct embedded *e, char **cause)
{
	struct embedded_names	 nm = { NULL, 0, 0 };
	int64_t			*rids = NULL, rid, maxrid = 0;
	size_t			 nrids = 0, dropped = 0, removed = 0, i;
	char			 name[STORE_ID_LEN + 1], *why = NULL;
	int			 ret = -1;

	if (blobs_scan(e->rollups, embedded_names_cb, &nm, cause) == -1)
		goto out;
	if (nm.n > 0)
		qsort(nm.v, nm.n, STORE_ID_LEN, embedded_names_cmp);
	if (meta_rollup_maint_recover(e->meta, embedded_names_has, &nm, &rids,
	    &nrids, &maxrid, &e->rst, &dropped, cause) == -1)
		goto out;
	for (i = 0; i < nm.n; i++) {
		memcpy(name, nm.v + i * STORE_ID_LEN, STORE_ID_LEN);
		name[STORE_ID_LEN] = '\0';
		rid = rollup_ids_rid(name);
		if (rid > 0 && nrids > 0 && bsearch(&rid, rids, nrids,
		    sizeof *rids, embedded_cmp_i64) != NULL)
			continue;
		if (rid > maxrid)
			maxrid = rid;
		if (blobs_remove(e->rollups, name, 0, &why) == -1) {
			log_warn("%s: %s", __func__, why);
			free(why);
			why = NULL;
		} else
			removed++;
	}
	e->next_rid = maxrid + 1;
	if (dropped > 0 || removed > 0)
		log_warn("%s: dropped %zu rollups whose blob is missing, "
		    "removed %zu rollup blobs without a row", __func__, dropped,
		    removed);
	ret = 0;
out:
	free(nm.v);
	free(rids);
	return ret;
}

/* Opens data_dir (creating it), then runs the consistency check. */
static void *
embedded_open(const struct store_options *o, struct store_recovery *rec,
    char **cause)
{
	const char		*data_dir = o->location;
	size_t			 orphan_limit = o->orphan_limit;
	struct embedded		*e;
	struct store_recovery	 r;
	struct stat		 sb;
	char			*path;

	if (embedded_mkdirs(data_dir, cause) == -1)
		return NULL;
	e = xcalloc(1, sizeof *e);
	pthread_mutex_init(&e->mu, NULL);
	if ((e->blobs = blobs_open(data_dir, cause)) == NULL ||
	    blobs_lock(e->blobs, cause) == -1)
		goto fail;
	path = xasprintf("%s/rollups", data_dir);
	if (embedded_mkdirs(path, cause) == 0)
		e->rollups = blobs_open_dir(path, cause);
	free(path);
	if (e->rollups == NULL)
		goto fail;
	path = xasprintf("%s/meta.db", data_dir);
	if (stat(path, &sb) == -1 && errno == ENOENT &&
	    recover_check_new(e->blobs, data_dir, cause) == -1) {
		free(path);
		goto fail;
	}
	e->meta = meta_sqlite_open(path, cause);
	free(path);
	if (e->meta == NULL)
		goto fail;
	if (recover_run(e->meta, e->blobs, data_dir, orphan_limit, &r,
	    cause) == -1 || embedded_rollup_recover(e, cause) == -1)
		goto fail;
	meta_sqlite_set_barrier(e->meta, embedded_barrier, e->blobs);
	if (r.orphan_blobs_removed || r.orphan_blobs_moved ||
	    r.temp_files_removed || r.missing_blobs)
		log_warn("%s: %s: removed %zu orphan blobs and %zu temp files, "
		    "moved %zu orphan blobs to %s/orphans; %zu profiles have "
		    "no blob", __func__, data_dir, r.orphan_blobs_removed,
		    r.temp_files_removed, r.orphan_blobs_moved, data_dir,
		    r.missing_blobs);
	if (rec != NULL)
		*rec = r;
	return e;

fail:
	embedded_close(e);
	return NULL;
}

/* Blob first, then the row; undoes the blob if the row fails. */
static int
embedded_put(void *be, const struct profile_meta *m, const void *blob,
    size_t len, char **cause)
{
	struct embedded		*e = be;
	struct profile_meta	 row;
	struct embedded_blob	 eb;
	char			*why = NULL, *why2 = NULL;
	uint8_t			*meta = NULL;
	size_t			 meta_len = 0;
	int			 rc;

	if (m == NULL || !blobs_id_valid(m->id))
		return xcause(cause, "store profile: invalid id");
	if (m->service == NULL || *m->service == '\0')
		return xcause(cause, "store profile %s: no service", m->id);
	if (m->type == NULL || *m->type == '\0')
		return xcause(cause, "store profile %s: no type", m->id);
	if (m->nlabels > 0 && m->labels == NULL)
		return xcause(cause, "store profile %s: no labels", m->id);
	if (blob == NULL && len > 0)
		return xcause(cause, "store profile %s: no bytes", m->id);

	row = *m;
	row.size = (int64_t)len;	/* the blob is the bytes as uploaded */
	blobmeta_encode(&row, &meta, &meta_len);
	rc = blobs_create(e->blobs, m->id, meta, meta_len, blob, len, &eb.fd,
	    cause);
	free(meta);
	if (rc == -1)
		return -1;
	eb.id = m->id;
	rc = meta_sqlite_insert_checked(e->meta, &row, embedded_check, &eb,
	    &why);
	close(eb.fd);
	if (rc == 0)
		return 0;
	if (blobs_remove(e->blobs, m->id, 1, &why2) == -1) {
		log_error("%s: %s (after: %s)", __func__, why2, why);
		free(why2);
	}
	xcause(cause, "store profile %s: %s", m->id, why);
	free(why);
	return -1;
}

/* Lists metas. */
static int
embedded_list(void *be, const struct store_query *q,
    struct profile_meta **out, size_t *n, char **cause)
{
	struct embedded	*e = be;

	return meta_query_list(e->meta, q, out, n, cause);
}

/* A timeline from the metadata. */
static int
embedded_timeline(void *be, const struct store_query *q,
    struct store_timeline *tl, char **cause)
{
	struct embedded	*e = be;

	return meta_timeline_query(meta_sqlite_readers(e->meta), q, tl,
	    cause);
}

/* Rows without totals. */
static int
embedded_missing_totals(void *be, const char *after, size_t limit,
    char ***out, size_t *n, char **cause)
{
	struct embedded	*e = be;

	return meta_maint_missing_totals(e->meta, after, limit, out, n, cause);
}

/* Totals computed by the backfill. */
static int
embedded_set_totals(void *be, char *const *ids, char *const *totals,
    size_t n, char **cause)
{
	struct embedded	*e = be;

	return meta_maint_set_totals(e->meta, ids, totals, n, cause);
}

/* Looks one profile up. */
static int
embedded_get(void *be, const char *id, struct profile_meta *out,
    char **cause)
{
	struct embedded	*e = be;

	if (!blobs_id_valid(id)) {
		memset(out, 0, sizeof *out);
		return 1;
	}
	return meta_query_get(e->meta, id, out, cause);
}

/* Reads the bytes of one profile. */
static int
embedded_read_blob(void *be, const char *id, uint8_t **buf, size_t *len,
    char **cause)
{
	struct embedded	*e = be;

	if (rollup_ids_rid(id) > 0)
		return blobs_read(e->rollups, id, buf, len, cause);
	return blobs_read(e->blobs, id, buf, len, cause);
}

/* Service names. */
static int
embedded_services(void *be, char ***out, size_t *n, char **cause)
{
	struct embedded	*e = be;

	return meta_query_services(e->meta, out, n, cause);
}

/* Label keys or values. */
static int
embedded_labels(void *be, const char *service, const char *key,
    char ***out, size_t *n, char **cause)
{
	struct embedded	*e = be;

	return meta_query_labels(e->meta, service, key, out, n, cause);
}

/*
 * Rollup rows are gone (committed): removes their blobs (names, freed
 * here) and takes rows (by level) and bytes off the figures.
 */
static void
embedded_rollup_forget(struct embedded *e, char **names, size_t nnames,
    const int64_t *rows, int64_t bytes)
{
	char	*why = NULL;
	size_t	 i;

	for (i = 0; i < nnames; i++) {
		if (blobs_remove(e->rollups, names[i], 0, &why) == -1) {
			log_warn("%s: %s", __func__, why);
			free(why);
			why = NULL;
		}
	}
	store_free_strings(names, nnames);
	pthread_mutex_lock(&e->mu);
	for (i = 0; i < STORE_ROLLUP_LEVELS; i++)
		e->rst.rollups[i] -= rows[i];
	e->rst.bytes -= bytes;
	pthread_mutex_unlock(&e->mu);
}

/* Retention of rollups: every row of buckets before cutoff, in batches. */
static int
embedded_rollup_delete_before(struct embedded *e, int64_t cutoff,
    size_t batch, char **cause)
{
	char	**names = NULL;
	size_t	  nnames = 0, n = 0;
	int64_t	  bytes = 0, rows[STORE_ROLLUP_LEVELS];

	do {
		memset(rows, 0, sizeof rows);
		if (meta_rollup_maint_delete_before(e->meta, cutoff, batch, &names,
		    &nnames, &bytes, rows, &n, cause) == -1)
			return -1;
		embedded_rollup_forget(e, names, nnames, rows, bytes);
	} while (n == batch && batch > 0);
	return 0;
}

/* Rows first (committed), then blobs; a blob left over is an orphan. */
static int
embedded_delete_before(void *be, int64_t cutoff, size_t batch,
    size_t *deleted, char **cause)
{
	struct embedded	*e = be;
	char		**ids = NULL, *why = NULL;
	size_t		  n = 0, i;

	*deleted = 0;
	/* Rollups first: one left over would count what was deleted. */
	if (embedded_rollup_delete_before(e, cutoff, batch, cause) == -1 ||
	    meta_maint_delete_before(e->meta, cutoff, batch, &ids, &n,
	    cause) == -1)
		return -1;
	for (i = 0; i < n; i++) {
		if (blobs_remove(e->blobs, ids[i], 0, &why) == -1) {
			/* The row is gone; the next open removes the file. */
			log_warn("%s: %s", __func__, why);
			free(why);
			why = NULL;
		}
	}
	store_free_strings(ids, n);
	*deleted = n;
	return 0;
}

/* Totals for /metrics. */
static int
embedded_totals(void *be, int64_t *profiles, int64_t *bytes, char **cause)
{
	struct embedded	*e = be;

	return meta_sqlite_totals(e->meta, profiles, bytes, cause);
}

/* The pieces of a time-window merge. */
static int
embedded_plan(void *be, const struct store_query *q, struct store_plan *out,
    char **cause)
{
	struct embedded	*e = be;

	return meta_plan_query(meta_sqlite_readers(e->meta), q, out, cause);
}

/* The next compaction. */
static int
embedded_compact_next(void *be, int64_t now_ns, int64_t delay_ns,
    int64_t after_ns, struct store_compaction **out, char **cause)
{
	struct embedded	*e = be;

	return meta_compact_next(e->meta, now_ns, delay_ns, after_ns, out,
	    cause);
}

/* Removes the blobs of c's rollups (those not written are not there). */
static void
embedded_compact_unwrite(struct embedded *e, struct store_compaction *c)
{
	char	name[STORE_ID_LEN + 1], *why = NULL;
	size_t	i;

	for (i = 0; i < c->n; i++) {
		if (c->r[i].refs || c->r[i].rid == 0)
			continue;
		rollup_ids_name(c->r[i].rid, name);
		if (blobs_remove(e->rollups, name, 0, &why) == -1) {
			log_warn("%s: %s", __func__, why);
			free(why);
			why = NULL;
		}
	}
}

/* Writes one rollup's blob (not yet durable); *fd: OUT. */
static int
embedded_compact_write(struct embedded *e, const struct store_compaction *c,
    const struct store_rollup *r, int *fd, char **cause)
{
	struct profile_meta	 m;
	char			 name[STORE_ID_LEN + 1];
	uint8_t			*meta;
	size_t			 meta_len;
	int			 rc;

	if (r->bytes == NULL)
		return xcause(cause, "rollup of %s %s: not merged", c->service,
		    c->type);
	rollup_ids_name(r->rid, name);
	memset(&m, 0, sizeof m);
	snprintf(m.id, sizeof m.id, "%s", name);
	m.service = c->service;
	m.type = c->type;
	m.created_at = c->bucket * INT64_C(1000000000);
	m.size = (int64_t)r->len;
	m.samples = r->profiles;
	m.sample_types = r->sample_types;
	m.duration_ns = store_bucket_step[c->level] * INT64_C(1000000000);
	blobmeta_encode(&m, &meta, &meta_len);
	rc = blobs_create(e->rollups, name, meta, meta_len, r->bytes, r->len,
	    fd, cause);
	free(meta);
	return rc;
}

/* Blobs first (one sync for all), then the rows in one transaction. */
static int
embedded_compact_commit(void *be, struct store_compaction **cs, size_t ncs,
    char **cause)
{
	struct embedded		*e = be;
	struct store_compaction	*c;
	char			 name[STORE_ID_LEN + 1];
	size_t			 i, k, nfd = 0, total = 0;
	int64_t			 bytes = 0;
	int			*fds, ret = -1;

	for (k = 0; k < ncs; k++)
		total += cs[k]->n;
	fds = xcalloc(total + 1, sizeof *fds);
	for (i = 0; i <= total; i++)
		fds[i] = -1;
	pthread_mutex_lock(&e->mu);
	for (k = 0; k < ncs; k++) {
		for (i = 0; i < cs[k]->n; i++)
			cs[k]->r[i].rid = e->next_rid++;
	}
	pthread_mutex_unlock(&e->mu);
	for (k = 0; k < ncs; k++) {
		c = cs[k];
		for (i = 0; i < c->n; i++, nfd++) {
			if (c->r[i].refs)
				continue;
			if (embedded_compact_write(e, c, &c->r[i], &fds[nfd],
			    cause) == -1)
				goto fail;
			bytes += (int64_t)c->r[i].len;
		}
	}
	if (blobs_sync(e->rollups, cause) == -1)
		goto fail;
	for (k = 0, nfd = 0; k < ncs; k++) {
		for (i = 0; i < cs[k]->n; i++, nfd++) {
			if (fds[nfd] < 0)
				continue;
			rollup_ids_name(cs[k]->r[i].rid, name);
			if (blobs_check(fds[nfd], name, cause) == -1)
				goto fail;
		}
	}
	if (meta_compact_commit(e->meta, cs, ncs, cause) == -1)
		goto fail;
	pthread_mutex_lock(&e->mu);
	for (k = 0; k < ncs; k++)
		e->rst.rollups[cs[k]->level] += (int64_t)cs[k]->n;
	e->rst.bytes += bytes;
	pthread_mutex_unlock(&e->mu);
	ret = 0;
	goto out;
fail:
	for (k = 0; k < ncs; k++) {
		embedded_compact_unwrite(e, cs[k]);
		for (i = 0; i < cs[k]->n; i++)
			cs[k]->r[i].rid = 0;
	}
out:
	for (i = 0; i < total; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
	}
	free(fds);
	return ret;
}

/* Gives a compaction up. */
static int
embedded_compact_abandon(void *be, struct store_compaction *c,
    char **cause)
{
	struct embedded	*e = be;

	return meta_compact_abandon(e->meta, c, cause);
}

/* Heals late profiles once none has arrived for quiet_ns. */
static int
embedded_compact_heal(void *be, int64_t quiet_ns, size_t *minutes,
    char **cause)
{
	struct embedded			*e = be;
	struct store_rollup_stats	 gone;
	int64_t				 count, maxpk, now = clock_mono_ns();
	char				**names = NULL;
	size_t				  nnames = 0;
	int				  quiet;

	*minutes = 0;
	if (meta_rollup_maint_late(e->meta, &count, &maxpk, cause) == -1)
		return -1;
	pthread_mutex_lock(&e->mu);
	if (count > 0 && maxpk != e->late_maxpk) {
		e->late_maxpk = maxpk;
		e->late_since = now;
	}
	quiet = count > 0 && now - e->late_since >= quiet_ns;
	pthread_mutex_unlock(&e->mu);
	if (!quiet)
		return 0;
	if (meta_rollup_maint_heal(e->meta, &names, &nnames, minutes, &gone,
	    cause) == -1)
		return -1;
	embedded_rollup_forget(e, names, nnames, gone.rollups, gone.bytes);
	return 0;
}

/* Rollup figures: rows and bytes kept here, the queue read. */
static int
embedded_rollup_stats(void *be, struct store_rollup_stats *st, char **cause)
{
	struct embedded	*e = be;

	pthread_mutex_lock(&e->mu);
	*st = e->rst;
	pthread_mutex_unlock(&e->mu);
	return meta_rollup_maint_queue(e->meta, st, cause);
}

/* Rows by id, paged. */
static int
embedded_scan(void *be, const char *after, size_t limit,
    struct profile_meta **out, size_t *n, char **cause)
{
	struct embedded	*e = be;

	return meta_query_scan(e->meta, after, limit, out, n, cause);
}

const struct store_ops embedded_store_ops = {
	.name = "embedded",
	.open = embedded_open,
	.close = embedded_close,
	.put = embedded_put,
	.list = embedded_list,
	.scan = embedded_scan,
	.timeline = embedded_timeline,
	.missing_totals = embedded_missing_totals,
	.set_totals = embedded_set_totals,
	.get = embedded_get,
	.read_blob = embedded_read_blob,
	.services = embedded_services,
	.labels = embedded_labels,
	.delete_before = embedded_delete_before,
	.totals = embedded_totals,
	.plan = embedded_plan,
	.compact_next = embedded_compact_next,
	.compact_commit = embedded_compact_commit,
	.compact_abandon = embedded_compact_abandon,
	.compact_heal = embedded_compact_heal,
	.rollup_stats = embedded_rollup_stats,
	.rebuild = meta_rebuild_run,
};
