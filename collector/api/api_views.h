/*
 * The UI's query endpoints: flame graph, top table, diff and sample
 * types of a selection of stored profiles (see api_views.c).
 */
#ifndef PROFD_API_VIEWS_H
#define PROFD_API_VIEWS_H

struct env;
struct evhttp_request;
struct params;

/* GET /api/0/flamegraph */
void	api_views_flamegraph(struct env *, struct evhttp_request *,
	    const struct params *);
/* GET /api/0/top */
void	api_views_top(struct env *, struct evhttp_request *,
	    const struct params *);
/* GET /api/0/diff */
void	api_views_diff(struct env *, struct evhttp_request *,
	    const struct params *);
/* GET /api/0/sample_types */
void	api_views_sample_types(struct env *, struct evhttp_request *,
	    const struct params *);

#endif
