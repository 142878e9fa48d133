/*
 * Pyroscope's listing methods (Connect, POST
 * /querier.v1.QuerierService/NAME): ProfileTypes, LabelNames,
 * LabelValues, Series. Each takes its request's body and queues the
 * work on the CPU pool.
 */
#ifndef PROFD_QLABELS_H
#define PROFD_QLABELS_H

struct env;
struct evhttp_request;

void	qlabels_profile_types(struct env *, struct evhttp_request *);
void	qlabels_label_names(struct env *, struct evhttp_request *);
void	qlabels_label_values(struct env *, struct evhttp_request *);
void	qlabels_series_method(struct env *, struct evhttp_request *);

#endif
