/*
 * The operations endpoints, outside /api/0 and open without auth:
 * GET /metrics (Prometheus text format) and GET /healthz.
 */
#ifndef PROFD_API_OPS_H
#define PROFD_API_OPS_H

#define API_OPS_HEALTHZ_TIMEOUT_MS	5000	/* for the store check */

struct env;
struct evhttp_request;
struct params;

/* GET /metrics */
void	api_ops_metrics(struct env *, struct evhttp_request *,
	    const struct params *);
/* GET /healthz: 200 "ok" while serving, 503 when the store fails. */
void	api_ops_healthz(struct env *, struct evhttp_request *,
	    const struct params *);

#endif
