/*
 * Catalogue endpoints: the services, label keys and values stored, and
 * the daemon's version.
 */
#ifndef PROFD_API_INFO_H
#define PROFD_API_INFO_H

struct env;
struct evhttp_request;
struct params;

/* GET /api/0/services */
void	api_info_services(struct env *, struct evhttp_request *,
	    const struct params *);
/* GET /api/0/labels[?service=S][&key=K] */
void	api_info_labels(struct env *, struct evhttp_request *,
	    const struct params *);
/* GET /api/0/version */
void	api_info_version(struct env *, struct evhttp_request *,
	    const struct params *);

#endif
