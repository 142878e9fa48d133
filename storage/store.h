/*
 * The profile store: metadata (service, type, time, labels, summary) and
 * the uploaded bytes, behind one small interface so another backend can be
 * added later. The embedded backend keeps metadata in SQLite (WAL) and blobs
 * as files under DATA_DIR/blobs/xx/ID.
 *
 * Every function may be called from any worker thread at the same time; none
 * may be called from the event loop thread (they touch disk). What the
 * calls hand out is freed with store_meta.h's and store_free.h's helpers.
 */
#ifndef PROFD_STORE_H
#define PROFD_STORE_H

#include <stddef.h>
#include <stdint.h>

#define STORE_ID_LEN	20

struct label {
	char	*key;
	char	*value;
};

struct profile_meta {
	char		 id[STORE_ID_LEN + 1];
	char		*service;
	char		*type;
	int64_t		 created_at;	/* ns since the epoch, UTC */
	int64_t		 size;		/* bytes as uploaded */
	int64_t		 samples;
	char		*sample_types;	/* "samples/count,cpu/nanoseconds" */
	char		*totals;	/* pprof.h's summary totals; NULL:
					   not known yet (see store_set_totals) */
	int64_t		 duration_ns;
	struct label	*labels;	/* sorted by key, then value */
	size_t		 nlabels;
};

struct store_query {
	const char		*service;	/* required */
	const char		*type;		/* NULL: any type */
	int64_t			 from;		/* ns, inclusive */
	int64_t			 to;		/* ns, inclusive */
	const struct label	*labels;	/* AND over all pairs */
	size_t			 nlabels;
	size_t			 limit;		/* 0: no limit */
};

/*
 * A timeline: the sum of one sample type ("name/unit" as in
 * sample_types) over the profiles of a query, per time bucket. Bucket i
 * holds the profiles whose created_at, in whole seconds, lies in
 * [(b0 + i) * step, (b0 + i + 1) * step), clipped to the query's window.
 * The caller allocates value[n] and profiles[n] (zeroed); the store adds
 * into them, reading metadata only (per-profile totals, per-minute sums
 * kept at ingest), never blobs. Profiles whose totals are not known yet
 * are left out; *pending says how many the whole store still has.
 */
struct store_timeline {
	const char	*sample_type;
	int64_t		 step;		/* seconds, >= 1 */
	int64_t		 b0;
	size_t		 n;
	int64_t		*value;
	int64_t		*profiles;
	int64_t		 pending;	/* OUT */
};

/* Result of store_open's consistency check. */
struct store_recovery {
	size_t	orphan_blobs_removed;	/* blobs with no row, removed */
	size_t	orphan_blobs_moved;	/* blobs with no row, moved aside */
	size_t	missing_blobs;		/* rows with no blob (reported) */
	size_t	temp_files_removed;
};

struct store;

/*
 * How to open a store. location is a data directory (the embedded
 * backend) or a libpq URI, postgresql://... or postgres://... (the
 * postgresql backend, storage/postgres/postgres.c).
 */
struct store_options {
	const char	*location;
	size_t		 orphan_limit;	/* embedded: see store_open */
	size_t		 pool;		/* postgresql: connections (0: 8) */
};

/* Whether location names a PostgreSQL database rather than a directory. */
int	store_is_postgresql(const char *location);

/*
 * A call that failed because the backend cannot be reached right now (a
 * database restarting, a network cut) returns -1 like any failure, and
 * then store_unavailable() is true on the calling thread until its next
 * store call: the caller answers 503 with Retry-After, not 500.
 */
#define STORE_UNAVAILABLE	(-2)
int	store_unavailable(void);

/*
 * Opens (creating if needed) the store in data_dir, removes temp files and
 * reports rows with no blob. Blobs with no row are removed when there are
 * at most orphan_limit of them (the most a crash can leave, see
 * storage/embedded/recover.c), and moved aside into DATA_DIR/orphans/xx/ID
 * when there are more, never removed. Refuses to open (NULL, *cause says
 * why and what to do) when blob files exist but meta.db does not, or when
 * meta.db has no rows and more than orphan_limit blobs exist. *rec may be
 * NULL.
 */
struct store	*store_open(const char *data_dir, size_t orphan_limit,
		    struct store_recovery *rec, char **cause);
/* store_open with every option (the backend is chosen by location). */
struct store	*store_open_options(const struct store_options *,
		    struct store_recovery *rec, char **cause);
/* The backend's name: "embedded" or "postgresql". */
const char	*store_backend(const struct store *);
void		 store_close(struct store *);

/*
 * Stores the bytes and the metadata durably: the blob (with a copy of the
 * row in its header, for store_rebuild), then the row, group-committed
 * with concurrent puts. Returns 0 once both are on disk, -1 with *cause
 * otherwise (then nothing is left). The stored size is len (m->size is
 * not used); an existing id fails.
 */
int	store_put(struct store *, const struct profile_meta *m,
	    const void *blob, size_t len, char **cause);

/*
 * Lists metas matching q, newest first (created_at, then id, descending).
 * *out: OUT new array (free with store_meta_free_array), *n: OUT count.
 */
int	store_list(struct store *, const struct store_query *q,
	    struct profile_meta **out, size_t *n, char **cause);

/*
 * Every profile, in pages: up to limit metas whose ids sort after `after`
 * ("" first), by id. *out: OUT (free with store_meta_free_array). For
 * copying a whole store (profd --copy-to).
 */
int	store_scan(struct store *, const char *after, size_t limit,
	    struct profile_meta **out, size_t *n, char **cause);

/* Fills tl (see struct store_timeline) for the profiles matching q. */
int	store_timeline(struct store *, const struct store_query *q,
	    struct store_timeline *tl, char **cause);

/*
 * Rows whose totals are not known (stored before totals existed, or
 * rebuilt from blobs): up to limit ids greater than after ("" first),
 * sorted. *out: OUT (free with store_free_strings).
 */
int	store_missing_totals(struct store *, const char *after, size_t limit,
	    char ***out, size_t *n, char **cause);

/*
 * Records the totals of n profiles (each computed from its blob, "" if
 * the blob cannot be read) in one transaction; rows that already have
 * totals, or are gone, are skipped.
 */
int	store_set_totals(struct store *, char *const *ids,
	    char *const *totals, size_t n, char **cause);

/* Looks one profile up: 0 found, 1 not found, -1 error. */
int	store_get(struct store *, const char *id, struct profile_meta *out,
	    char **cause);

/* Reads the stored bytes: 0 ok, 1 not found, -1 error. *buf: OUT (free). */
int	store_read_blob(struct store *, const char *id, uint8_t **buf,
	    size_t *len, char **cause);

/* Service names, sorted. *out: OUT (free with store_free_strings). */
int	store_services(struct store *, char ***out, size_t *n, char **cause);

/*
 * Label keys (key == NULL) or the values of one key, sorted, optionally
 * limited to one service (service may be NULL). *out: OUT (free with
 * store_free_strings).
 */
int	store_labels(struct store *, const char *service, const char *key,
	    char ***out, size_t *n, char **cause);

/*
 * Deletes up to batch profiles created before cutoff (rows and blobs
 * together). *deleted: OUT how many. Returns -1 on error.
 */
int	store_delete_before(struct store *, int64_t cutoff, size_t batch,
	    size_t *deleted, char **cause);

/* Totals for /metrics: number of profiles and bytes of blobs. */
int	store_totals(struct store *, int64_t *profiles, int64_t *bytes,
	    char **cause);

/*
 * Fills the row of a blob that carries no metadata (written by a version
 * before blob headers) from its bytes: m->id and m->size are set; the
 * callback sets everything else it can (service, type, created_at, ...).
 * Returns 0, or -1 with *cause to leave the blob out.
 */
typedef int (*store_legacy_cb)(const uint8_t *buf, size_t len,
    struct profile_meta *m, void *arg, char **cause);

/* What store_rebuild did: rows written, blobs left out and why. */
struct store_rebuild {
	size_t	rebuilt;		/* rows written, all kinds */
	size_t	from_orphans;		/* ... of blobs moved back from orphans/ */
	size_t	legacy;			/* ... of blobs without metadata */
	size_t	skipped;		/* blobs left out, the sum of: */
	size_t	skipped_damaged;	/* header cut short, bad checksum, size */
	size_t	skipped_bad_meta;	/* metadata that does not decode */
	size_t	skipped_wrong_id;	/* metadata of another id */
	size_t	skipped_legacy;		/* no metadata, legacy_cb refused it */
	size_t	skipped_duplicate;	/* in orphans/ and blobs/ both */
	size_t	skipped_unreadable;	/* I/O errors, moves that failed */
	size_t	moved_aside;		/* skipped blobs moved to orphans/ */
	size_t	bytes;			/* sum of the rows' sizes */
};

/*
 * Rebuilds DATA_DIR/meta.db from the metadata the blobs carry, taking
 * blobs/ and orphans/ (moving those it takes back into blobs/), then
 * exits; the store must not be open (the data directory is locked). A
 * meta.db holding rows is refused, never replaced; a new one is built
 * beside it and renamed into place only when complete. Blobs left out
 * are moved to orphans/, never deleted. Blobs without metadata go to
 * legacy (NULL: left out). *rep says what was done; see
 * storage/embedded/meta_rebuild.c.
 */
int	store_rebuild(const char *data_dir, store_legacy_cb legacy, void *arg,
	    struct store_rebuild *rep, char **cause);

/*
 * Rollups (docs/DESIGN.md, "Rollups"): merged profiles per bucket of
 * store_bucket_step[level] seconds (a minute, ten, an hour, a day), one per
 * group (every profile of a service and type, or those carrying one
 * label pair) and set of sample types, built in the background by
 * compaction and used by time-window merges in place of the profiles
 * they hold.
 */
#define STORE_ROLLUP_LEVELS	4

/*
 * One input of a time-window merge: a stored profile, or a rollup (an id
 * of two capitals and 18 digits, read with store_read_blob like a
 * profile).
 */
struct store_piece {
	char	 id[STORE_ID_LEN + 1];
	char	*sample_types;
	int64_t	 profiles;	/* how many stored profiles it holds */
};

struct store_plan {
	struct store_piece	*p;
	size_t			 n;
	int64_t			 profiles;	/* sum over the pieces */
	size_t			 rollups;	/* pieces that are rollups */
};

/*
 * The pieces whose merge equals the merge of every profile q selects
 * (q->limit is ignored): the coarsest rollups that fit inside the window,
 * the profiles no rollup holds, and each profile exactly once. Without a
 * type, only profiles. Read in one snapshot of the metadata. *out: OUT
 * (free with store_free_plan).
 */
int	store_plan(struct store *, const struct store_query *q,
	    struct store_plan *out, char **cause);

/*
 * One rollup a compaction builds: the merge of pieces (profiles or
 * rollups). A rollup of at most STORE_ROLLUP_REFS stored profiles is
 * recorded as their ids (refs), without bytes of its own.
 */
#define STORE_ROLLUP_REFS	16
struct store_rollup {
	char		**pieces;
	size_t		  npieces;
	int64_t		  profiles;
	int		  refs;		/* recorded as the pieces' ids */
	char		 *sample_types;
	/* Set by the caller before store_compact_commit (unless refs). */
	uint8_t		 *bytes;	/* the merge, gzipped pprof */
	size_t		  len;
	/* The backend's own. */
	int64_t		  label_id;
	char		 *common;
	int		  uniform;
	int64_t		  rid;
};

/* A compaction: the rollups of one bucket of one service and type. */
struct store_compaction {
	char			*service;
	char			*type;
	int			 level;
	int64_t			 bucket;	/* its start, seconds */
	struct store_rollup	*r;
	size_t			 n;
	int64_t			*mark;		/* the backend's own */
	size_t			 nmark;
};

/*
 * The next compaction due at now_ns: the oldest minute holding profiles
 * that are in no rollup yet and older than delay_ns, else the oldest hour,
 * then day, whose end is older than delay_ns and whose parts are done.
 * With after_ns > 0, only a minute starting at or after it (for batching
 * minutes not committed yet). Profiles that arrived after their bucket
 * was compacted ("late") are flagged to stay out of rollups: merges
 * always read them as they are. 0 with *out NULL: nothing to do. *out:
 * OUT (free with store_free_compaction).
 */
int	store_compact_next(struct store *, int64_t now_ns, int64_t delay_ns,
	    int64_t after_ns, struct store_compaction **out, char **cause);
/*
 * Writes the rollups' bytes of n compactions durably (one sync), then in
 * one transaction their rows, the buckets' done marks and the marks of
 * the profiles they took in: a crash leaves all of it or none (a blob
 * without a row is removed at the next open).
 */
int	store_compact_commit(struct store *, struct store_compaction **c,
	    size_t n, char **cause);
/*
 * Gives a compaction up for good (it cannot be merged): its bucket is
 * left to merges of what it holds, its new profiles flagged to stay out
 * of rollups.
 */
int	store_compact_abandon(struct store *, struct store_compaction *,
	    char **cause);
/*
 * Heals late profiles: once none has arrived for quiet_ns, the minutes of
 * one day that hold late profiles are reopened, so compaction takes them
 * into rollups again (a history imported while compaction ran would
 * otherwise be merged profile by profile for good). *minutes: OUT how
 * many were reopened (0: nothing to do yet).
 */
int	store_compact_heal(struct store *, int64_t quiet_ns, size_t *minutes,
	    char **cause);

/* Rollup figures for /metrics. */
struct store_rollup_stats {
	int64_t	rollups[STORE_ROLLUP_LEVELS];	/* rows, by level */
	int64_t	bytes;				/* their blobs */
	int64_t	oldest_fresh;	/* ns: oldest profile not yet compacted
				   (0: none) */
	int64_t	todo;		/* hours and days waiting */
};
int	store_rollup_stats(struct store *, struct store_rollup_stats *,
	    char **cause);

#endif
