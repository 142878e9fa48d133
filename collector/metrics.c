/*
 * Metrics: request counts by route and code, latency and merge-time
 * histograms, upload accounting, store totals, retention progress, and the
 * text exposition format.
 *
 * A request's route and start time wait in a small hash keyed by the
 * request pointer from metrics_request_start until metrics_request_end
 * (libevent 2.1 has no per-request user pointer). Entries whose reply never
 * goes through reply.c (libevent answered on its own, or the connection was
 * freed at shutdown) are replaced when the pointer is reused and freed
 * with the table.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/build_info.h"
#include "collector/metrics.h"
#include "common/clock.h"
#include "common/xmalloc.h"
#include "storage/store.h"

#define METRICS_NPENDING	1024	/* hash buckets, a power of two */
#define METRICS_MIN_CODE	100
#define METRICS_NCODES		500	/* 100..599 */

static const char *metrics_routes[METRICS_NROUTES] = {
	"upload", "list", "get", "get_merged", "merge", "services", "labels",
	"version", "metrics", "healthz", "flamegraph", "top", "diff",
	"sample_types", "timeline", "ui", "poll", "query", "render", "other",
};

/* Upper bounds in seconds; +Inf is implied. */
static const double metrics_latency_le[] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
	10, 30, 60,
};
#define METRICS_NLATENCY \
	(sizeof metrics_latency_le / sizeof metrics_latency_le[0])
static const double metrics_merge_le[] = {
	0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120,
};
#define METRICS_NMERGE	(sizeof metrics_merge_le / sizeof metrics_merge_le[0])
_Static_assert(METRICS_NLATENCY < 16 && METRICS_NMERGE < 16,
    "struct metrics_hist has 16 buckets");

enum metrics_reason { REASON_BAD_REQUEST, REASON_TOO_LARGE, REASON_BUSY,
    REASON_STORAGE_ERROR, METRICS_NREASONS };
static const char *metrics_reasons[METRICS_NREASONS] = {
	"bad_request", "too_large", "busy", "storage_error",
};

struct metrics_hist {
	uint64_t	 bucket[16];	/* per bound, not cumulative; last +Inf */
	uint64_t	 count;
	double		 sum;		/* seconds */
};

struct metrics_pending {
	const void		*req;
	enum metrics_route	 route;
	int			 no_merge;	/* a HEAD: merges nothing */
	int64_t			 start_ns;
	struct metrics_pending	*next;
};

struct metrics {
	/* Loop thread only. */
	struct metrics_pending	*pending[METRICS_NPENDING];
	uint64_t		 requests[METRICS_NROUTES][METRICS_NCODES];
	struct metrics_hist	 latency[METRICS_NROUTES];
	struct metrics_hist	 merge;
	uint64_t		 uploads;
	uint64_t		 upload_bytes;
	uint64_t		 rejected[METRICS_NREASONS];
	uint64_t		 merges_refused;	/* --max-merges */
	uint64_t		 timeouts[2];	/* running, queued */
	struct metrics_pacing	 pacing;
	struct metrics_tls	 tls;
	int64_t			 start_time_ns;

	/* Written by workers. */
	_Atomic int64_t		 profiles;
	_Atomic int64_t		 bytes;
	_Atomic int		 totals_known;
	_Atomic uint64_t	 retention_deleted;
	_Atomic uint64_t	 merge_deleted;		/* inputs left out */
	_Atomic uint64_t	 merge_damaged;
	_Atomic uint64_t	 retention_sweeps;
	_Atomic uint64_t	 retention_failures;
	_Atomic int64_t		 retention_last_ns;	/* wall clock */
	_Atomic int64_t		 retention_last_duration_ns;
	/* Compaction (collector/compact.c) and the store's rollups. */
	_Atomic uint64_t	 compactions;
	_Atomic uint64_t	 compaction_failures;
	_Atomic uint64_t	 rollups_built;
	_Atomic int64_t		 compaction_last_ns;	/* duration */
	_Atomic int		 rollups_known;
	_Atomic int64_t		 rollups[STORE_ROLLUP_LEVELS];
	_Atomic int64_t		 rollup_bytes;
	_Atomic int64_t		 rollup_oldest_fresh;	/* ns, 0: none */
	_Atomic int64_t		 rollup_todo;
};

/* A new, zeroed set of metrics. */
struct metrics *
metrics_new(void)
{
	struct metrics *m = xcalloc(1, sizeof *m);

	m->start_time_ns = clock_now_ns();
	return m;
}

/* Frees the metrics and any requests still pending. */
void
metrics_free(struct metrics *m)
{
	struct metrics_pending *p, *next;
	size_t i;

	if (m == NULL)
		return;
	for (i = 0; i < METRICS_NPENDING; i++) {
		for (p = m->pending[i]; p != NULL; p = next) {
			next = p->next;
			free(p);
		}
	}
	free(m);
}

/* The label value of a route. */
const char *
metrics_route_name(enum metrics_route r)
{
	if ((int)r < 0 || r >= METRICS_NROUTES)
		return "other";
	return metrics_routes[r];
}

/* The hash bucket of a request pointer. */
static struct metrics_pending **
metrics_slot(struct metrics *m, const void *req)
{
	uint64_t h = (uint64_t)(uintptr_t)req;

	h = (h >> 4) * UINT64_C(0x9e3779b97f4a7c15);
	return &m->pending[(h >> 40) & (METRICS_NPENDING - 1)];
}

/* Finds and unlinks the pending entry of req, or returns NULL. */
static struct metrics_pending *
metrics_take(struct metrics *m, const void *req)
{
	struct metrics_pending **pp, *p;

	for (pp = metrics_slot(m, req); (p = *pp) != NULL; pp = &p->next) {
		if (p->req == req) {
			*pp = p->next;
			return p;
		}
	}
	return NULL;
}

/* Adds one observation to a histogram with the given bounds. */
static void
metrics_observe(struct metrics_hist *h, const double *le, size_t nle,
    double seconds)
{
	size_t i;

	for (i = 0; i < nle && seconds > le[i]; i++)
		;
	h->bucket[i]++;
	h->count++;
	h->sum += seconds;
}

/* Starts the clock of a request. */
void
metrics_request_start(struct metrics *m, const void *req,
    enum metrics_route route, size_t body)
{
	struct metrics_pending *p, **slot;

	if (m == NULL)
		return;
	if ((p = metrics_take(m, req)) == NULL)
		p = xmalloc(sizeof *p);	/* else a stale entry: reuse it */
	p->req = req;
	p->route = route;
	p->no_merge = 0;
	p->start_ns = clock_mono_ns();
	slot = metrics_slot(m, req);
	p->next = *slot;
	*slot = p;
	if (route == METRICS_ROUTE_UPLOAD)
		m->upload_bytes += body;
}

/*
 * Says that req, started, runs no merge (a HEAD of a merge route): its 200
 * is not a merge duration.
 */
void
metrics_request_no_merge(struct metrics *m, const void *req)
{
	struct metrics_pending *p;

	if (m == NULL)
		return;
	for (p = *metrics_slot(m, req); p != NULL; p = p->next) {
		if (p->req == req)
			p->no_merge = 1;
	}
}

/* Counts the reply to req and its latency. */
void
metrics_request_end(struct metrics *m, const void *req, int code)
{
	struct metrics_pending *p;
	enum metrics_route route = METRICS_ROUTE_OTHER;
	double seconds = -1;
	int no_merge = 0;

	if (m == NULL)
		return;
	if ((p = metrics_take(m, req)) != NULL) {
		route = p->route;
		no_merge = p->no_merge;
		seconds = (clock_mono_ns() - p->start_ns) / 1e9;
		free(p);
	}
	if (code < METRICS_MIN_CODE || code >= METRICS_MIN_CODE + METRICS_NCODES)
		code = 500;
	m->requests[route][code - METRICS_MIN_CODE]++;
	if (seconds >= 0)
		metrics_observe(&m->latency[route], metrics_latency_le,
		    METRICS_NLATENCY, seconds);
	if (seconds >= 0 && code == 200 && !no_merge &&
	    (route == METRICS_ROUTE_MERGE || route == METRICS_ROUTE_GET_MERGED))
		metrics_observe(&m->merge, metrics_merge_le, METRICS_NMERGE,
		    seconds);
	if (route != METRICS_ROUTE_UPLOAD)
		return;
	switch (code) {
	case 200:
		m->uploads++;
		break;
	case 400:
		m->rejected[REASON_BAD_REQUEST]++;
		break;
	case 413:
		m->rejected[REASON_TOO_LARGE]++;
		break;
	case 503:
		m->rejected[REASON_BUSY]++;
		break;
	case 500:
	case 507:
		m->rejected[REASON_STORAGE_ERROR]++;
		break;
	}
}

/* Caches the store's totals. */
void
metrics_set_totals(struct metrics *m, int64_t profiles, int64_t bytes)
{
	atomic_store(&m->profiles, profiles);
	atomic_store(&m->bytes, bytes);
	atomic_store(&m->totals_known, 1);
}

/* Counts a merge refused at the --max-merges cap. */
void
metrics_merge_refused(struct metrics *m)
{
	m->merges_refused++;
}

/* Counts a request answered by its --request-timeout. */
void
metrics_request_timeout(struct metrics *m, int queued)
{
	m->timeouts[queued ? 1 : 0]++;
}

/* Counts merge inputs left out: gone since listed, or damaged. */
void
metrics_merge_skipped(struct metrics *m, uint64_t deleted, uint64_t damaged)
{
	atomic_fetch_add(&m->merge_deleted, deleted);
	atomic_fetch_add(&m->merge_damaged, damaged);
}

/* Records a compaction job: a bucket compacted (rollups rows) or failed. */
void
metrics_compaction(struct metrics *m, int failed, size_t rollups,
    int64_t took_ns)
{
	if (failed) {
		atomic_fetch_add(&m->compaction_failures, 1);
		return;
	}
	atomic_fetch_add(&m->compactions, 1);
	atomic_fetch_add(&m->rollups_built, rollups);
	atomic_store(&m->compaction_last_ns, took_ns);
}

/* Keeps the store's rollup figures for the next render. */
void
metrics_set_rollups(struct metrics *m, const struct store_rollup_stats *st)
{
	int	i;

	for (i = 0; i < STORE_ROLLUP_LEVELS; i++)
		atomic_store(&m->rollups[i], st->rollups[i]);
	atomic_store(&m->rollup_bytes, st->bytes);
	atomic_store(&m->rollup_oldest_fresh, st->oldest_fresh);
	atomic_store(&m->rollup_todo, st->todo);
	atomic_store(&m->rollups_known, 1);
}

/* Keeps the pacing scheduler's figures for the next render. */
void
metrics_set_pacing(struct metrics *m, const struct metrics_pacing *pc)
{
	if (m != NULL)
		m->pacing = *pc;
}

/* Keeps the TLS figures for the next render. */
void
metrics_set_tls(struct metrics *m, const struct metrics_tls *t)
{
	if (m != NULL)
		m->tls = *t;
}

/* Counts profiles deleted by retention. */
void
metrics_retention_deleted(struct metrics *m, uint64_t n)
{
	atomic_fetch_add(&m->retention_deleted, n);
}

/* Records the end of a retention sweep. */
void
metrics_retention_sweep(struct metrics *m, int failed,
    int64_t duration_ns)
{
	atomic_fetch_add(&m->retention_sweeps, 1);
	if (failed)
		atomic_fetch_add(&m->retention_failures, 1);
	atomic_store(&m->retention_last_ns, clock_now_ns());
	atomic_store(&m->retention_last_duration_ns, duration_ns);
}

/* Writes "# HELP" and "# TYPE" lines. */
static void
metrics_head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Writes one histogram series (buckets, sum, count) for one label pair. */
static void
metrics_hist_write(FILE *f, const char *name, const char *label,
    const struct metrics_hist *h, const double *le, size_t nle)
{
	const char *sep = *label != '\0' ? "," : "";
	uint64_t cum = 0;
	size_t i;

	for (i = 0; i < nle; i++) {
		cum += h->bucket[i];
		fprintf(f, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, label, sep,
		    le[i], (unsigned long long)cum);
	}
	cum += h->bucket[nle];
	fprintf(f, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, label, sep,
	    (unsigned long long)cum);
	if (*label != '\0') {
		fprintf(f, "%s_sum{%s} %.9g\n", name, label, h->sum);
		fprintf(f, "%s_count{%s} %llu\n", name, label,
		    (unsigned long long)h->count);
	} else {
		fprintf(f, "%s_sum %.9g\n", name, h->sum);
		fprintf(f, "%s_count %llu\n", name,
		    (unsigned long long)h->count);
	}
}

/* The rollup and compaction lines. */
static void
metrics_render_rollups(struct metrics *m, FILE *f)
{
	static const char *const level[STORE_ROLLUP_LEVELS] = { "minute",
	    "10min", "hour", "day" };
	int64_t	oldest;
	int	i;

	metrics_head(f, "profd_compactions_total", "counter",
	    "Buckets compacted into rollups.");
	fprintf(f, "profd_compactions_total %llu\n",
	    (unsigned long long)atomic_load(&m->compactions));
	metrics_head(f, "profd_compaction_failures_total", "counter",
	    "Compaction jobs that failed (retried later).");
	fprintf(f, "profd_compaction_failures_total %llu\n",
	    (unsigned long long)atomic_load(&m->compaction_failures));
	metrics_head(f, "profd_rollups_built_total", "counter",
	    "Rollups written by compaction.");
	fprintf(f, "profd_rollups_built_total %llu\n",
	    (unsigned long long)atomic_load(&m->rollups_built));
	metrics_head(f, "profd_compaction_last_duration_seconds", "gauge",
	    "How long the last compacted bucket took.");
	fprintf(f, "profd_compaction_last_duration_seconds %.6f\n",
	    atomic_load(&m->compaction_last_ns) / 1e9);
	if (!atomic_load(&m->rollups_known))
		return;
	metrics_head(f, "profd_rollups", "gauge",
	    "Rollups stored, by bucket size.");
	for (i = 0; i < STORE_ROLLUP_LEVELS; i++)
		fprintf(f, "profd_rollups{level=\"%s\"} %lld\n", level[i],
		    (long long)atomic_load(&m->rollups[i]));
	metrics_head(f, "profd_rollup_bytes", "gauge",
	    "Bytes of the rollups' blobs.");
	fprintf(f, "profd_rollup_bytes %lld\n",
	    (long long)atomic_load(&m->rollup_bytes));
	metrics_head(f, "profd_rollup_lag_seconds", "gauge",
	    "Age of the oldest profile not compacted yet (0: none).");
	oldest = atomic_load(&m->rollup_oldest_fresh);
	fprintf(f, "profd_rollup_lag_seconds %.3f\n", oldest == 0 ? 0.0 :
	    (clock_now_ns() - oldest) / 1e9);
	metrics_head(f, "profd_rollup_buckets_waiting", "gauge",
	    "Hours and days waiting to be compacted.");
	fprintf(f, "profd_rollup_buckets_waiting %lld\n",
	    (long long)atomic_load(&m->rollup_todo));
}

/* The pacing lines (collector/pacing.c). */
static void
metrics_render_pacing(struct metrics *m, FILE *f)
{
	const struct metrics_pacing *pc = &m->pacing;
	int i;

	metrics_head(f, "profd_pacing_grants_total", "counter",
	    "Profiling windows granted to polling agents, by type.");
	for (i = 0; i < METRICS_PACING_TYPES; i++) {
		if (pc->type[i] != NULL)
			fprintf(f, "profd_pacing_grants_total{type=\"%s\"} "
			    "%llu\n", pc->type[i],
			    (unsigned long long)pc->grants[i]);
	}
	metrics_head(f, "profd_pacing_cancelled_total", "counter",
	    "Windows given back before their end: the agent went away, or "
	    "never confirmed it was profiling.");
	fprintf(f, "profd_pacing_cancelled_total %llu\n",
	    (unsigned long long)pc->cancelled);
	metrics_head(f, "profd_pacing_polls_held", "gauge",
	    "Agent polls held open, waiting for a window or its end.");
	fprintf(f, "profd_pacing_polls_held %d\n", pc->held);
	metrics_head(f, "profd_pacing_instances", "gauge",
	    "Agent instances the pacing scheduler tracks.");
	fprintf(f, "profd_pacing_instances %d\n", pc->instances);
}

/* The TLS lines, when the listener serves HTTPS. */
static void
metrics_render_tls(struct metrics *m, FILE *f)
{
	const struct metrics_tls *t = &m->tls;
	int i;

	if (!t->on)
		return;
	metrics_head(f, "profd_tls_handshakes_total", "counter",
	    "TLS handshakes completed.");
	fprintf(f, "profd_tls_handshakes_total %llu\n",
	    (unsigned long long)t->handshakes);
	metrics_head(f, "profd_tls_handshake_failures_total", "counter",
	    "Connections whose TLS handshake never completed, by reason.");
	for (i = 0; i < METRICS_TLS_REASONS; i++) {
		if (t->reason[i] != NULL)
			fprintf(f, "profd_tls_handshake_failures_total"
			    "{reason=\"%s\"} %llu\n", t->reason[i],
			    (unsigned long long)t->fail[i]);
	}
	metrics_head(f, "profd_tls_reloads_total", "counter",
	    "Certificate reloads on SIGHUP, by result.");
	fprintf(f, "profd_tls_reloads_total{result=\"ok\"} %llu\n",
	    (unsigned long long)t->reloads);
	fprintf(f, "profd_tls_reloads_total{result=\"error\"} %llu\n",
	    (unsigned long long)t->reload_errors);
}

/* Writes every metric. */
void
metrics_render(struct metrics *m, const struct metrics_gauges *g, FILE *f)
{
	char label[64];
	size_t r, c;
	int64_t last;

	metrics_head(f, "profd_build_info", "gauge",
	    "Version and commit of the running profd.");
	fprintf(f, "profd_build_info{version=\"%s\",commit=\"%s\"} 1\n",
	    PACKAGE_VERSION, PROFD_COMMIT);
	metrics_head(f, "profd_start_time_seconds", "gauge",
	    "Start time of the process since the Unix epoch in seconds.");
	fprintf(f, "profd_start_time_seconds %.3f\n", m->start_time_ns / 1e9);

	metrics_head(f, "profd_http_requests_total", "counter",
	    "HTTP requests answered, by route and status code.");
	for (r = 0; r < METRICS_NROUTES; r++) {
		for (c = 0; c < METRICS_NCODES; c++) {
			if (m->requests[r][c] == 0)
				continue;
			fprintf(f, "profd_http_requests_total{route=\"%s\","
			    "code=\"%zu\"} %llu\n", metrics_routes[r],
			    c + METRICS_MIN_CODE,
			    (unsigned long long)m->requests[r][c]);
		}
	}
	metrics_head(f, "profd_http_request_duration_seconds", "histogram",
	    "Time from a request's arrival to its reply, by route.");
	for (r = 0; r < METRICS_NROUTES; r++) {
		if (m->latency[r].count == 0)
			continue;
		snprintf(label, sizeof label, "route=\"%s\"",
		    metrics_routes[r]);
		metrics_hist_write(f, "profd_http_request_duration_seconds",
		    label, &m->latency[r], metrics_latency_le,
		    METRICS_NLATENCY);
	}

	metrics_head(f, "profd_uploads_total", "counter",
	    "Profiles uploaded and stored.");
	fprintf(f, "profd_uploads_total %llu\n",
	    (unsigned long long)m->uploads);
	metrics_head(f, "profd_upload_received_bytes_total", "counter",
	    "Bytes of upload bodies received, stored or not.");
	fprintf(f, "profd_upload_received_bytes_total %llu\n",
	    (unsigned long long)m->upload_bytes);
	metrics_head(f, "profd_uploads_rejected_total", "counter",
	    "Uploads refused, by reason.");
	for (r = 0; r < METRICS_NREASONS; r++)
		fprintf(f, "profd_uploads_rejected_total{reason=\"%s\"} %llu\n",
		    metrics_reasons[r], (unsigned long long)m->rejected[r]);

	metrics_head(f, "profd_merge_duration_seconds", "histogram",
	    "Time from a merge request's arrival to its merged reply.");
	metrics_hist_write(f, "profd_merge_duration_seconds", "", &m->merge,
	    metrics_merge_le, METRICS_NMERGE);

	if (atomic_load(&m->totals_known)) {
		metrics_head(f, "profd_profiles_stored", "gauge",
		    "Profiles in the store.");
		fprintf(f, "profd_profiles_stored %lld\n",
		    (long long)atomic_load(&m->profiles));
		metrics_head(f, "profd_stored_bytes", "gauge",
		    "Bytes of stored profiles (as uploaded).");
		fprintf(f, "profd_stored_bytes %lld\n",
		    (long long)atomic_load(&m->bytes));
	}

	metrics_head(f, "profd_worker_queue_depth", "gauge",
	    "Jobs waiting for a worker.");
	fprintf(f, "profd_worker_queue_depth %d\n", g->queued);
	metrics_head(f, "profd_worker_jobs_inflight", "gauge",
	    "Jobs accepted and not yet completed.");
	fprintf(f, "profd_worker_jobs_inflight %d\n", g->inflight);
	metrics_head(f, "profd_workers", "gauge", "Worker threads.");
	fprintf(f, "profd_workers %d\n", g->workers);
	metrics_head(f, "profd_merge_queue_depth", "gauge",
	    "Merge pool jobs (merges and their helpers) waiting for a "
	    "merge worker.");
	fprintf(f, "profd_merge_queue_depth %d\n", g->merge_queued);
	metrics_head(f, "profd_merge_jobs_inflight", "gauge",
	    "Merge pool jobs accepted and not yet completed.");
	fprintf(f, "profd_merge_jobs_inflight %d\n", g->merge_inflight);
	metrics_head(f, "profd_merge_workers", "gauge",
	    "Merge worker threads.");
	fprintf(f, "profd_merge_workers %d\n", g->merge_workers);
	metrics_head(f, "profd_merges_running", "gauge",
	    "Merge requests admitted and not finished (at most "
	    "profd_merges_max).");
	fprintf(f, "profd_merges_running %d\n", g->merges);
	metrics_head(f, "profd_merges_max", "gauge",
	    "Configured --max-merges.");
	fprintf(f, "profd_merges_max %d\n", g->max_merges);
	metrics_head(f, "profd_merges_refused_total", "counter",
	    "Merge requests refused with 503 at --max-merges.");
	fprintf(f, "profd_merges_refused_total %llu\n",
	    (unsigned long long)m->merges_refused);
	metrics_head(f, "profd_request_timeouts_total", "counter",
	    "Requests answered at --request-timeout, by whether their work "
	    "had started (running: cancelled) or was still queued.");
	fprintf(f, "profd_request_timeouts_total{state=\"running\"} %llu\n",
	    (unsigned long long)m->timeouts[0]);
	fprintf(f, "profd_request_timeouts_total{state=\"queued\"} %llu\n",
	    (unsigned long long)m->timeouts[1]);

	metrics_head(f, "profd_merge_inputs_skipped_total", "counter",
	    "Merge inputs left out: deleted since listed, or damaged "
	    "(unreadable or undecodable).");
	fprintf(f, "profd_merge_inputs_skipped_total{reason=\"deleted\"} "
	    "%llu\n", (unsigned long long)atomic_load(&m->merge_deleted));
	fprintf(f, "profd_merge_inputs_skipped_total{reason=\"damaged\"} "
	    "%llu\n", (unsigned long long)atomic_load(&m->merge_damaged));
	metrics_render_rollups(m, f);
	metrics_render_pacing(m, f);
	metrics_render_tls(m, f);
	metrics_head(f, "profd_retention_seconds", "gauge",
	    "Configured retention; 0 keeps profiles forever.");
	fprintf(f, "profd_retention_seconds %lld\n",
	    (long long)(g->retention_ns / 1000000000));
	metrics_head(f, "profd_retention_deleted_profiles_total", "counter",
	    "Profiles deleted by the retention sweep.");
	fprintf(f, "profd_retention_deleted_profiles_total %llu\n",
	    (unsigned long long)atomic_load(&m->retention_deleted));
	metrics_head(f, "profd_retention_sweeps_total", "counter",
	    "Retention sweeps finished.");
	fprintf(f, "profd_retention_sweeps_total %llu\n",
	    (unsigned long long)atomic_load(&m->retention_sweeps));
	metrics_head(f, "profd_retention_sweep_failures_total", "counter",
	    "Retention sweeps stopped by a storage error.");
	fprintf(f, "profd_retention_sweep_failures_total %llu\n",
	    (unsigned long long)atomic_load(&m->retention_failures));
	if ((last = atomic_load(&m->retention_last_ns)) != 0) {
		metrics_head(f, "profd_retention_last_sweep_timestamp_seconds",
		    "gauge", "When the last retention sweep finished.");
		fprintf(f, "profd_retention_last_sweep_timestamp_seconds "
		    "%.3f\n", last / 1e9);
		metrics_head(f, "profd_retention_last_sweep_duration_seconds",
		    "gauge", "How long the last retention sweep took.");
		fprintf(f, "profd_retention_last_sweep_duration_seconds %.6f\n",
		    atomic_load(&m->retention_last_duration_ns) / 1e9);
	}
}

/* Renders into a new string. */
char *
metrics_render_string(struct metrics *m, const struct metrics_gauges *g,
    size_t *len)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f;

	if ((f = open_memstream(&buf, &size)) == NULL) {
		/* Only fails without memory, like xmalloc. */
		fprintf(stderr, "%s: open_memstream failed\n", __func__);
		abort();
	}
	metrics_render(m, g, f);
	fclose(f);
	*len = size;
	return buf;
}
