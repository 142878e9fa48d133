/*
 * Counters and histograms for GET /metrics (Prometheus text format 0.0.4).
 *
 * Requests are counted where they start (the router, which knows the
 * route) and where they end (reply.c, which knows the status code): every
 * request of ours ends in exactly one reply, so the pair brackets it and
 * gives its latency. Both run on the loop thread, as does rendering, so
 * those counters take no lock. What workers report (store totals, retention
 * deletions) goes through atomics.
 */
#ifndef PROFD_METRICS_H
#define PROFD_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The route label of a request. */
enum metrics_route {
	METRICS_ROUTE_UPLOAD,		/* POST /api/0/profiles */
	METRICS_ROUTE_LIST,		/* GET /api/0/profiles */
	METRICS_ROUTE_GET,		/* GET /api/0/profiles/{id} */
	METRICS_ROUTE_GET_MERGED,	/* GET /api/0/profiles/{id}+{id} */
	METRICS_ROUTE_MERGE,		/* GET /api/0/profiles/merge */
	METRICS_ROUTE_SERVICES,
	METRICS_ROUTE_LABELS,
	METRICS_ROUTE_VERSION,
	METRICS_ROUTE_METRICS,
	METRICS_ROUTE_HEALTHZ,
	METRICS_ROUTE_FLAMEGRAPH,	/* GET /api/0/flamegraph */
	METRICS_ROUTE_TOP,		/* GET /api/0/top */
	METRICS_ROUTE_DIFF,		/* GET /api/0/diff */
	METRICS_ROUTE_SAMPLE_TYPES,	/* GET /api/0/sample_types */
	METRICS_ROUTE_TIMELINE,		/* GET /api/0/timeline */
	METRICS_ROUTE_UI,		/* GET /, /ui/... */
	METRICS_ROUTE_POLL,		/* /api/0/agents/poll */
	METRICS_ROUTE_QUERY,		/* POST /querier.v1.QuerierService/ */
	METRICS_ROUTE_RENDER,		/* GET /pyroscope/render(-diff) */
	METRICS_ROUTE_OTHER,		/* unknown paths, wrong methods */
	METRICS_NROUTES
};

/* Values read at scrape time by the caller (loop thread). */
struct metrics_gauges {
	int	queued;		/* jobs waiting for a worker */
	int	inflight;	/* jobs accepted and not completed */
	int	workers;
	int64_t	retention_ns;	/* 0: keep forever */
	/* The merge pool (--max-merges). */
	int	merge_queued;	/* merges and helper jobs waiting */
	int	merge_inflight;	/* merge pool jobs not completed */
	int	merge_workers;
	int	merges;		/* merge requests admitted, not finished */
	int	max_merges;
};

#define METRICS_PACING_TYPES	8	/* profile types (params.h) */

/* The pacing scheduler's figures (collector/pacing.c), loop thread. */
struct metrics_pacing {
	const char	*type[METRICS_PACING_TYPES];	/* names (static) */
	uint64_t	 grants[METRICS_PACING_TYPES];	/* windows granted */
	uint64_t	 cancelled;	/* slots given back before their end */
	int		 held;		/* polls held now */
	int		 instances;	/* agent instances tracked */
};

#define METRICS_TLS_REASONS	8

/* The listener's TLS figures (collector/http/tls.c), loop thread. */
struct metrics_tls {
	int		 on;		/* 0: plain HTTP, no TLS lines */
	uint64_t	 handshakes;	/* completed */
	const char	*reason[METRICS_TLS_REASONS];	/* names (static) */
	uint64_t	 fail[METRICS_TLS_REASONS];	/* failed, by reason */
	uint64_t	 reloads, reload_errors;	/* SIGHUP */
};

struct metrics;

struct metrics	*metrics_new(void);
void		 metrics_free(struct metrics *);

/* The label value of a route ("upload", "list", ...). */
const char	*metrics_route_name(enum metrics_route);

/*
 * Loop thread: a request arrived for route; body is the bytes of an upload
 * body (0 otherwise). The clock starts now.
 */
void	metrics_request_start(struct metrics *, const void *req,
	    enum metrics_route, size_t body);
/* Loop thread: the reply to req goes out with code; stops its clock. */
void	metrics_request_end(struct metrics *, const void *req, int code);
/* req (started) runs no merge: a HEAD of a merge route. */
void	metrics_request_no_merge(struct metrics *, const void *req);

/* Any thread: the store's totals, cached for scrapes. */
void	metrics_set_totals(struct metrics *, int64_t profiles, int64_t bytes);
/* Any thread: one retention sweep finished (ok or failed) in duration_ns. */
void	metrics_retention_sweep(struct metrics *, int failed,
	    int64_t duration_ns);
/* Any thread: a merge left out inputs (deleted since listed, damaged). */
void	metrics_merge_skipped(struct metrics *, uint64_t deleted,
	    uint64_t damaged);
/* Loop thread: a merge was refused at --max-merges. */
void	metrics_merge_refused(struct metrics *);
/* Loop thread: a request was answered at --request-timeout; queued: it
 * had not started. */
void	metrics_request_timeout(struct metrics *, int queued);
/* Loop thread: the pacing scheduler's figures now (copied). */
void	metrics_set_pacing(struct metrics *, const struct metrics_pacing *);
/* Loop thread: the TLS figures now (copied). */
void	metrics_set_tls(struct metrics *, const struct metrics_tls *);
/* Any thread: n profiles deleted by retention so far in a sweep. */
void	metrics_retention_deleted(struct metrics *, uint64_t n);

/* Loop thread: writes every metric in text format 0.0.4. */
struct store_rollup_stats;
/* Records a compaction job: a bucket compacted (rollups rows) or failed. */
void	metrics_compaction(struct metrics *, int failed, size_t rollups,
	    int64_t took_ns);
/* Keeps the store's rollup figures for the next render (a worker). */
void	metrics_set_rollups(struct metrics *,
	    const struct store_rollup_stats *);

void	metrics_render(struct metrics *, const struct metrics_gauges *,
	    FILE *out);
/* The same into a new string (*len: OUT its length). */
char	*metrics_render_string(struct metrics *, const struct metrics_gauges *,
	    size_t *len);

#endif
