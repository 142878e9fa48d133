/*
 * Pyroscope's query service over Connect: POST
 * /querier.v1.QuerierService/{Method} dispatched to the method's
 * handler; the methods profd does not serve answer Connect's
 * unimplemented. See docs/DESIGN.md, "Pyroscope's query API".
 */
#ifndef PROFD_QSERVICE_H
#define PROFD_QSERVICE_H

struct env;
struct evhttp_request;
struct params;

/* POST /querier.v1.QuerierService/{Method} */
void	qservice_post(struct env *, struct evhttp_request *,
	    const struct params *);

#endif
