/*
 * Compaction on the postgresql backend: the same rollups as the embedded
 * store's (docs/DESIGN.md, "Rollups"; storage/rollup_build.c decides
 * what each merges), their rows in rollups and rollup_buckets, their
 * bytes in blobs under their names, all written in one transaction.
 *
 * Of several collectors on one database, one compacts: the one whose
 * session (a connection of its own, outside the pool) holds the advisory
 * lock PG_LOCK_COMPACT. The others find nothing to do; if the leader
 * dies or loses its connection, the server drops its lock and the next
 * collector to ask takes over. Commits also check, under a transaction
 * lock, that their bucket is not done yet, so even two leaders (a
 * partition the server has not noticed yet) cannot write a bucket twice
 * (a lock of its own: the leader's session holds PG_LOCK_COMPACT).
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/xmalloc.h"
#include "storage/postgres/pg_int.h"
#include "storage/rollup_build.h"
#include "storage/rollup_ids.h"
#include "storage/store_bucket.h"

#define PG_ROLLUP_NS		INT64_C(1000000000)
#define PG_ROLLUP_LATE_BATCH	512	/* fresh profiles looked at once */

/* What a compaction reads: one connection, one service and type. */
struct pg_rollup_src {
	PGconn		*c;
	const char	*service, *type;
	int		 err;	/* the first error's code */
};

/* A read failed with rc: keeps its code (unavailable?), answers -1. */
static int
pg_rollup_fail(struct pg_rollup_src *src, int rc)
{
	if (src->err == 0)
		src->err = rc;
	return -1;
}

/* 1 if this collector leads compaction (taking the lead if free). */
int
pg_rollup_lead(struct pg *pg, char **cause)
{
	PGresult	*r;
	char		 key[24];
	const char	*v[1] = { pg_conn_i64(key, PG_LOCK_COMPACT) };
	int		 rc = 0;

	pthread_mutex_lock(&pg->lead_mu);
	if (pg->lead != NULL && !pg_pool_idle_ok(pg->lead)) {
		/* The session is gone, and the lock with it. */
		if (pg->leading)
			log_info("postgresql: lost the compaction lock "
			    "with its connection");
		PQfinish(pg->lead);
		pg->lead = NULL;
		pg->leading = 0;
	}
	if (pg->lead == NULL)
		rc = pg_pool_dial(pg->pool, &pg->lead, cause);
	if (rc == 0 && !pg->leading) {
		rc = pg_conn_exec(pg->lead, "SELECT pg_try_advisory_lock("
		    "$1::bigint)", 1, v, NULL, NULL, &r, cause,
		    "lock compaction");
		if (rc == 0) {
			pg->leading = PQgetvalue(r, 0, 0)[0] == 't';
			PQclear(r);
			if (pg->leading)
				log_info("postgresql: this collector "
				    "compacts");
		}
	}
	if (rc == 0)
		rc = pg->leading;
	pthread_mutex_unlock(&pg->lead_mu);
	return rc;
}

/* Gives the lead up (closing its session). */
void
pg_rollup_close(struct pg *pg)
{
	if (pg->lead != NULL)
		PQfinish(pg->lead);
	pg->lead = NULL;
	pg->leading = 0;
}

/* 1 if bucket (level, b) or a bucket around it is done. */
static int
pg_rollup_covered(PGconn *c, const char *service, const char *type,
    int level, int64_t b, char **cause)
{
	struct pg_args	 p = { 0 };
	PGresult	*r;
	char		*sql = xstrdup(""), *tmp;
	int		 l, rc, k;

	pg_args_str(&p, service);
	pg_args_str(&p, type);
	for (l = level; l < STORE_ROLLUP_LEVELS; l++) {
		k = pg_args_int(&p, b - b % store_bucket_step[l]);
		tmp = xasprintf("%s%s(level = %d AND bucket = $%d::bigint)",
		    sql, l > level ? " OR " : "", l, k);
		free(sql);
		sql = tmp;
	}
	tmp = xasprintf("SELECT 1 FROM rollup_buckets WHERE service = $1 AND "
	    "type = $2 AND done = 1 AND (%s) LIMIT 1", sql);
	rc = pg_args_exec(c, tmp, &p, &r, cause, "read rollup buckets");
	free(tmp);
	free(sql);
	pg_args_free(&p);
	if (rc != 0)
		return rc;
	rc = PQntuples(r) > 0;
	PQclear(r);
	return rc;
}

/* Sets rolled = to for the fresh profiles of pks (an array literal). */
static int
pg_rollup_flag(PGconn *c, struct pg_args_array *pks, int to, char **cause)
{
	char		 v1[24];
	const char	*v[2];

	if (pks->n == 0)
		return 0;
	v[0] = pg_args_array_text(pks);
	v[1] = pg_conn_i64(v1, to);
	return pg_conn_exec(c, "UPDATE profiles SET rolled = $2::smallint "
	    "WHERE pk = ANY($1::bigint[]) AND rolled = -1", 2, v, NULL, NULL,
	    NULL, cause, "flag profiles");
}

/*
 * The oldest fresh profile older than before (ns) whose minute may be
 * compacted: 1 with *service, *type, *minute; 2 if it flagged late ones
 * (and traces, never rolled up) on the way and found none (look again);
 * 0 none.
 */
static int
pg_rollup_next_minute(PGconn *c, int64_t before, int64_t after,
    char **service, char **type, int64_t *minute, char **cause)
{
	struct pg_args_array	 late = { 0 }, never = { 0 };
	PGresult		*r;
	char			 a[24], b[24], d[24];
	const char		*v[4] = { pg_conn_i64(a, before),
	    pg_conn_i64(b, after - 1), pg_conn_i64(d, PG_ROLLUP_LATE_BATCH),
	    NULL };
	const char		*sv, *ty;
	char			*lsv = NULL, *lty = NULL;
	int64_t			 m, lm = 0;
	int			 i, n, rc, cov = 0, ret = 0;

	rc = pg_conn_exec(c, "SELECT pk, service, type, created_at FROM "
	    "profiles WHERE rolled <= 0 AND rolled = -1 AND created_at < "
	    "$1::bigint AND created_at > $2::bigint ORDER BY created_at, pk "
	    "LIMIT $3::bigint", 3, v, NULL, NULL, &r, cause,
	    "find profiles to roll up");
	if (rc != 0)
		return rc;
	n = PQntuples(r);
	for (i = 0; i < n && ret == 0; i++) {
		sv = PQgetvalue(r, i, 1);
		ty = PQgetvalue(r, i, 2);
		if (strcmp(ty, "trace") == 0) {
			pg_args_array_int(&never, pg_conn_int(r, i, 0));
			continue;
		}
		m = store_bucket_of(pg_conn_int(r, i, 3),
		    store_bucket_step[0]) * store_bucket_step[0];
		/* Rows come by time: one look per service, type, minute. */
		if (lsv == NULL || m != lm || strcmp(sv, lsv) != 0 ||
		    strcmp(ty, lty) != 0) {
			cov = pg_rollup_covered(c, sv, ty, 0, m, cause);
			if (cov < 0) {
				ret = cov;
				break;
			}
			free(lsv);
			free(lty);
			lsv = xstrdup(sv);
			lty = xstrdup(ty);
			lm = m;
		}
		if (cov) {
			pg_args_array_int(&late, pg_conn_int(r, i, 0));
			continue;
		}
		*service = xstrdup(sv);
		*type = xstrdup(ty);
		*minute = m;
		ret = 1;
	}
	PQclear(r);
	free(lsv);
	free(lty);
	if (ret >= 0 && (rc = pg_rollup_flag(c, &late, 0, cause)) == 0)
		rc = pg_rollup_flag(c, &never, 2, cause);
	if (ret >= 0 && rc != 0)
		ret = rc;
	if (ret == 0 && (late.n > 0 || never.n > 0))
		ret = 2;
	pg_args_array_free(&late);
	pg_args_array_free(&never);
	return ret;
}

/* The oldest waiting bucket of level that ended before `before` (s). */
static int
pg_rollup_next_todo(PGconn *c, int level, int64_t before, char **service,
    char **type, int64_t *bucket, char **cause)
{
	PGresult	*r;
	char		 a[24], b[24];
	const char	*v[2] = { pg_conn_i64(a, level),
	    pg_conn_i64(b, before - store_bucket_step[level]) };
	int		 rc;

	rc = pg_conn_exec(c, "SELECT service, type, bucket FROM "
	    "rollup_buckets WHERE done = 0 AND level = $1::smallint AND "
	    "bucket <= $2::bigint ORDER BY bucket LIMIT 1", 2, v, NULL, NULL,
	    &r, cause, "find rollup buckets");
	if (rc != 0)
		return rc;
	if ((rc = PQntuples(r) > 0)) {
		*service = pg_conn_str(r, 0, 0);
		*type = pg_conn_str(r, 0, 1);
		*bucket = pg_conn_int(r, 0, 2);
	}
	PQclear(r);
	return rc;
}

/* Deletes the waiting mark of an hour or day that cannot be compacted. */
static int
pg_rollup_drop_todo(PGconn *c, const char *service, const char *type,
    int level, int64_t bucket, char **cause)
{
	char		 a[24], b[24];
	const char	*v[4] = { service, type, pg_conn_i64(a, level),
	    pg_conn_i64(b, bucket) };

	return pg_conn_exec(c, "DELETE FROM rollup_buckets WHERE service = $1 "
	    "AND type = $2 AND level = $3::smallint AND bucket = $4::bigint "
	    "AND done = 0", 4, v, NULL, NULL, NULL, cause,
	    "drop rollup bucket");
}

/* rollup_build_src.raw: the profiles of [b0, b1) s with their labels. */
static int
pg_rollup_take_raw(void *arg, struct rollup_build *b, int64_t b0, int64_t b1,
    char **cause)
{
	struct pg_rollup_src	*src = arg;
	PGresult		*r;
	char			 a[24], z[24];
	const char		*v[4] = { src->service, src->type,
	    pg_conn_i64(a, b0 * PG_ROLLUP_NS), pg_conn_i64(z, b1 * PG_ROLLUP_NS) };
	int64_t			*labels;
	size_t			 nl;
	int			 i, rc;

	rc = pg_conn_exec(src->c, "SELECT p.pk, p.id, p.rolled, "
	    "p.sample_types, (SELECT string_agg(pl.label_id::text, ',') FROM "
	    "profile_labels AS pl WHERE pl.profile_pk = p.pk) FROM profiles "
	    "AS p WHERE p.service = $1 AND p.type = $2 AND p.created_at >= "
	    "$3::bigint AND p.created_at < $4::bigint ORDER BY p.created_at, "
	    "p.id", 4, v, NULL, NULL, &r, cause, "read profiles to roll up");
	if (rc != 0)
		return pg_rollup_fail(src, rc);
	for (i = 0; i < PQntuples(r); i++) {
		nl = rollup_ids_parse(PQgetvalue(r, i, 4), &labels);
		rollup_build_profile(b, pg_conn_int(r, i, 0),
		    (int)pg_conn_int(r, i, 2), PQgetvalue(r, i, 1),
		    PQgetvalue(r, i, 3), labels, nl);
		free(labels);
	}
	PQclear(r);
	return 0;
}

/* The done buckets of a level in [b0, b1); see pg_int.h. */
int
pg_rollup_done_in(PGconn *c, const char *service, const char *type,
    int level, int64_t b0, int64_t b1, int64_t **out, size_t *n,
    char **cause)
{
	PGresult	*r;
	char		 l[24], a[24], z[24];
	const char	*v[5] = { service, type, pg_conn_i64(l, level),
	    pg_conn_i64(a, b0), pg_conn_i64(z, b1) };
	int		 i, rc;

	*out = NULL;
	*n = 0;
	rc = pg_conn_exec(c, "SELECT bucket FROM rollup_buckets WHERE "
	    "service = $1 AND type = $2 AND level = $3::smallint AND bucket "
	    ">= $4::bigint AND bucket < $5::bigint AND done = 1 ORDER BY "
	    "bucket", 5, v, NULL, NULL, &r, cause, "read rollup buckets");
	if (rc != 0)
		return rc;
	*out = xcalloc((size_t)PQntuples(r) + 1, sizeof **out);
	for (i = 0; i < PQntuples(r); i++)
		(*out)[(*n)++] = pg_conn_int(r, i, 0);
	PQclear(r);
	return 0;
}

/* rollup_build_src.done: the done buckets of a level in [b0, b1). */
static int
pg_rollup_done(void *arg, int level, int64_t b0, int64_t b1, int64_t **out,
    size_t *n, char **cause)
{
	struct pg_rollup_src	*src = arg;
	int			 rc;

	rc = pg_rollup_done_in(src->c, src->service, src->type, level, b0, b1,
	    out, n, cause);
	return rc != 0 ? pg_rollup_fail(src, rc) : 0;
}

/* rollup_build_src.rows: the rows of a level in [b0, b1). */
static int
pg_rollup_take_rows(void *arg, struct rollup_build *b, int level,
    int64_t b0, int64_t b1, char **cause)
{
	struct pg_rollup_src	*src = arg;
	PGresult		*r;
	char			 l[24], a[24], z[24];
	const char		*v[5] = { src->service, src->type,
	    pg_conn_i64(l, level), pg_conn_i64(a, b0), pg_conn_i64(z, b1) };
	int			 i, rc;

	rc = pg_conn_exec(src->c, "SELECT rid, bucket, label_id, "
	    "sample_types, profiles, profile, common, uniform FROM rollups "
	    "WHERE service = $1 AND type = $2 AND level = $3::smallint AND "
	    "bucket >= $4::bigint AND bucket < $5::bigint ORDER BY bucket, rid",
	    5, v, NULL, NULL, &r, cause, "read rollups");
	if (rc != 0)
		return pg_rollup_fail(src, rc);
	for (i = 0; i < PQntuples(r); i++)
		rollup_build_row(b, pg_conn_int(r, i, 1), pg_conn_int(r, i, 0),
		    PQgetisnull(r, i, 5) ? NULL : PQgetvalue(r, i, 5),
		    pg_conn_int(r, i, 2), PQgetvalue(r, i, 3),
		    pg_conn_int(r, i, 4), PQgetvalue(r, i, 6),
		    (int)pg_conn_int(r, i, 7));
	PQclear(r);
	return 0;
}

/* Finds the next bucket to compact: 1 with its key, 0 none. */
static int
pg_rollup_find(PGconn *c, int64_t before, int64_t after_ns, char **service,
    char **type, int *level, int64_t *bucket, char **cause)
{
	int	rc, l;

	do {
		rc = pg_rollup_next_minute(c, before, after_ns > 0 ? after_ns :
		    INT64_MIN + 1, service, type, bucket, cause);
	} while (rc == 2);
	*level = 0;
	if (rc != 0 || after_ns > 0)
		return rc;	/* a minute, an error, or a batch ends */
	for (l = 1; l < STORE_ROLLUP_LEVELS; l++) {
		for (;;) {
			rc = pg_rollup_next_todo(c, l, store_bucket_of(
			    before, 1), service, type, bucket, cause);
			if (rc != 1)
				break;
			if ((rc = pg_rollup_covered(c, *service, *type, l,
			    *bucket, cause)) == 0) {
				*level = l;
				return 1;
			}
			if (rc == 1)
				rc = pg_rollup_drop_todo(c, *service, *type, l,
				    *bucket, cause);
			free(*service);
			free(*type);
			*service = *type = NULL;
			if (rc != 0)
				return rc;
		}
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* store_compact_next: nothing unless this collector leads. */
int
pg_rollup_next(struct pg *pg, int64_t now_ns, int64_t delay_ns,
    int64_t after_ns, struct store_compaction **out, char **cause)
{
	struct pg_rollup_src	 src;
	struct rollup_build_src	 ops = { &src, pg_rollup_take_raw,
		    pg_rollup_done, pg_rollup_take_rows };
	struct rollup_build	*b;
	PGconn			*c;
	char			*service = NULL, *type = NULL;
	int64_t			 bucket = 0;
	int			 level = 0, rc;

	*out = NULL;
	if ((rc = pg_rollup_lead(pg, cause)) != 1)
		return rc;
	if ((rc = pg_pool_get(pg->pool, &c, cause)) != 0)
		return rc;
	rc = pg_rollup_find(c, now_ns - delay_ns, after_ns, &service, &type,
	    &level, &bucket, cause);
	if (rc == 1) {
		memset(&src, 0, sizeof src);
		src.c = c;
		src.service = service;
		src.type = type;
		b = rollup_build_new();
		/* One snapshot: the done marks and rows read agree. */
		rc = pg_conn_cmd(c, "BEGIN ISOLATION LEVEL REPEATABLE READ "
		    "READ ONLY", cause, "begin");
		if (rc == 0)
			rc = rollup_build_collect(b, &ops, level, bucket,
			    bucket + store_bucket_step[level], cause);
		if (rc != 0 && src.err != 0)
			rc = src.err;
		(void)pg_conn_cmd(c, "COMMIT", NULL, NULL);
		if (rc == 0)
			*out = rollup_build_finish(b, service, type, level,
			    bucket);
		else
			rollup_build_free(b);
	}
	pg_pool_put(pg->pool, c);
	free(service);
	free(type);
	return rc < 0 ? rc : 0;
}

/* Inserts the rows (and blobs) of one compaction, in the open tx. */
static int
pg_rollup_write(PGconn *c, struct store_compaction *cp, char **cause)
{
	struct pg_args_array	 rid = { 0 }, lab = { 0 }, st = { 0 },
				 prof = { 0 }, size = { 0 }, refs = { 0 },
				 com = { 0 }, uni = { 0 }, marks = { 0 };
	struct pg_put		*puts, **pp;
	struct profile_meta	*metas;
	PGresult		*r;
	char			 l[24], b[24], n[24], by[24], *ref;
	const char		*v[12];
	int64_t			 bytes = 0;
	size_t			 i, j, nput = 0;
	int			 rc;

	rc = pg_rollup_covered(c, cp->service, cp->type, cp->level,
	    cp->bucket, cause);
	if (rc != 0)
		return rc == 1 ? xcause(cause, "bucket already compacted") : rc;
	v[0] = pg_conn_i64(n, (int64_t)cp->n);
	rc = pg_conn_exec(c, "SELECT nextval('rollup_rid') FROM "
	    "generate_series(1, $1::bigint)", 1, v, NULL, NULL, &r, cause,
	    "number rollups");
	if (rc != 0)
		return rc;
	for (i = 0; i < cp->n; i++)
		cp->r[i].rid = pg_conn_int(r, (int)i, 0);
	PQclear(r);
	puts = xcalloc(cp->n + 1, sizeof *puts);
	pp = xcalloc(cp->n + 1, sizeof *pp);
	metas = xcalloc(cp->n + 1, sizeof *metas);
	for (i = 0; i < cp->n; i++) {
		struct store_rollup *ru = &cp->r[i];

		pg_args_array_int(&rid, ru->rid);
		pg_args_array_int(&lab, ru->label_id);
		pg_args_array_str(&st, ru->sample_types);
		pg_args_array_int(&prof, ru->profiles);
		pg_args_array_int(&size, ru->refs ? 0 : (int64_t)ru->len);
		pg_args_array_str(&com, ru->common);
		pg_args_array_int(&uni, ru->uniform);
		if (ru->refs) {
			ref = xcalloc(ru->npieces + 1, STORE_ID_LEN + 1);
			for (j = 0; j < ru->npieces; j++) {
				if (j > 0)
					strcat(ref, " ");
				strncat(ref, ru->pieces[j], STORE_ID_LEN);
			}
			pg_args_array_str(&refs, ref);
			free(ref);
			continue;
		}
		pg_args_array_str(&refs, NULL);
		if (ru->bytes == NULL) {
			rc = xcause(cause, "rollup of %s %s: not merged",
			    cp->service, cp->type);
			goto out;
		}
		rollup_ids_name(ru->rid, metas[nput].id);
		puts[nput].m = &metas[nput];
		puts[nput].blob = ru->bytes;
		puts[nput].len = ru->len;
		pp[nput] = &puts[nput];
		nput++;
		bytes += (int64_t)ru->len;
	}
	if (nput > 0 && (rc = pg_blob_table.put(c,
	    (const struct pg_put *const *)pp, nput, cause)) != 0)
		goto out;
	v[0] = cp->service;
	v[1] = cp->type;
	v[2] = pg_conn_i64(l, cp->level);
	v[3] = pg_conn_i64(b, cp->bucket);
	v[4] = pg_args_array_text(&rid);
	v[5] = pg_args_array_text(&lab);
	v[6] = pg_args_array_text(&st);
	v[7] = pg_args_array_text(&prof);
	v[8] = pg_args_array_text(&size);
	v[9] = pg_args_array_text(&refs);
	v[10] = pg_args_array_text(&com);
	v[11] = pg_args_array_text(&uni);
	if (cp->n > 0 && (rc = pg_conn_exec(c, "INSERT INTO rollups (rid, "
	    "service, type, level, bucket, label_id, sample_types, profiles, "
	    "size, profile, common, uniform) SELECT u.rid, $1, $2, "
	    "$3::smallint, $4::bigint, u.label_id, u.st, u.profiles, u.size, "
	    "u.profile, u.common, u.uniform FROM unnest($5::bigint[], "
	    "$6::bigint[], $7::text[], $8::bigint[], $9::bigint[], "
	    "$10::text[], $11::text[], $12::smallint[]) AS u (rid, label_id, "
	    "st, profiles, size, profile, common, uniform)", 12, v, NULL, NULL,
	    NULL, cause, "insert rollups")) != 0)
		goto out;
	for (i = 0; i < cp->nmark; i++)
		pg_args_array_int(&marks, cp->mark[i]);
	if ((rc = pg_rollup_flag(c, &marks, 1, cause)) != 0)
		goto out;
	/* The bucket is done; the parent waits for its end. */
	v[4] = cp->level + 1 < STORE_ROLLUP_LEVELS ? pg_conn_i64(n,
	    cp->bucket - cp->bucket % store_bucket_step[cp->level + 1]) : NULL;
	v[5] = pg_conn_i64(by, cp->level + 1);
	if ((rc = pg_conn_exec(c, "INSERT INTO rollup_buckets (service, type, "
	    "level, bucket, done) SELECT $1, $2, $3::smallint, $4::bigint, 1 "
	    "UNION ALL SELECT $1, $2, $6::smallint, $5::bigint, 0 WHERE "
	    "$5::bigint IS NOT NULL ON CONFLICT (service, type, level, bucket) "
	    "DO UPDATE SET done = greatest(rollup_buckets.done, excluded.done)",
	    6, v, NULL, NULL, NULL, cause, "mark rollup bucket")) != 0)
		goto out;
	v[0] = pg_conn_i64(l, cp->level);
	v[1] = pg_conn_i64(n, (int64_t)cp->n);
	v[2] = pg_conn_i64(by, bytes);
	rc = pg_conn_exec(c, "UPDATE profd_rollup_totals SET rows = rows + "
	    "$2::bigint, bytes = bytes + $3::bigint WHERE level = "
	    "$1::smallint", 3, v, NULL, NULL, NULL, cause, "count rollups");
out:
	pg_args_array_free(&rid);
	pg_args_array_free(&lab);
	pg_args_array_free(&st);
	pg_args_array_free(&prof);
	pg_args_array_free(&size);
	pg_args_array_free(&refs);
	pg_args_array_free(&com);
	pg_args_array_free(&uni);
	pg_args_array_free(&marks);
	free(puts);
	free(pp);
	free(metas);
	return rc;
}

/* store_compact_commit: rows, bytes and marks of n, all or none. */
int
pg_rollup_commit(struct pg *pg, struct store_compaction **cs, size_t ncs,
    char **cause)
{
	PGconn		*c;
	char		 key[24];
	const char	*v[1] = { pg_conn_i64(key, PG_LOCK_COMMIT) };
	size_t		 k, i;
	int		 rc;

	if ((rc = pg_pool_get(pg->pool, &c, cause)) != 0)
		return rc;
	rc = pg_conn_cmd(c, "BEGIN", cause, "begin");
	if (rc == 0)
		rc = pg_conn_exec(c, "SELECT pg_advisory_xact_lock($1::bigint)",
		    1, v, NULL, NULL, NULL, cause, "lock compaction commit");
	for (k = 0; k < ncs && rc == 0; k++)
		rc = pg_rollup_write(c, cs[k], cause);
	if (rc == 0)
		rc = pg_conn_cmd(c, "COMMIT", cause, "commit rollups");
	if (rc != 0) {
		(void)pg_conn_cmd(c, "ROLLBACK", NULL, NULL);
		for (k = 0; k < ncs; k++)
			for (i = 0; i < cs[k]->n; i++)
				cs[k]->r[i].rid = 0;
	}
	pg_pool_put(pg->pool, c);
	return rc;
}

/* store_compact_abandon. */
int
pg_rollup_abandon(struct pg *pg, struct store_compaction *cp, char **cause)
{
	struct pg_args_array	 marks = { 0 };
	PGconn			*c;
	size_t			 i;
	int			 rc;

	if ((rc = pg_pool_get(pg->pool, &c, cause)) != 0)
		return rc;
	if (cp->level > 0)
		rc = pg_rollup_drop_todo(c, cp->service, cp->type, cp->level,
		    cp->bucket, cause);
	else {
		for (i = 0; i < cp->nmark; i++)
			pg_args_array_int(&marks, cp->mark[i]);
		rc = pg_rollup_flag(c, &marks, 0, cause);
		pg_args_array_free(&marks);
	}
	pg_pool_put(pg->pool, c);
	return rc;
}
