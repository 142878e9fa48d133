/*
 * The merging methods of Pyroscope's query API (Connect, POST
 * /querier.v1.QuerierService/NAME): SelectMergeStacktraces (flame graph,
 * tree or pprof), SelectMergeProfile (pprof) and Diff. They run on the
 * merge pool, watched, under profd's merge limits.
 */
#ifndef PROFD_QMERGE_H
#define PROFD_QMERGE_H

struct env;
struct evhttp_request;

void	qmerge_stacktraces(struct env *, struct evhttp_request *);
void	qmerge_profile(struct env *, struct evhttp_request *);
void	qmerge_diff(struct env *, struct evhttp_request *);

#endif
