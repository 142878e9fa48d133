/*
 * Grafana Pyroscope's ingest API (api_ingest.c): what its SDKs post.
 */
#ifndef PROFD_API_INGEST_H
#define PROFD_API_INGEST_H

struct env;
struct evhttp_request;
struct params;

/* POST /ingest (and /pyroscope/ingest) */
void	api_ingest(struct env *, struct evhttp_request *,
	    const struct params *);

#endif
