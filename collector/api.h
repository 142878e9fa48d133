/*
 * The /api/0 handlers. Each runs on the loop thread: it checks the
 * parameters, answers 400 at once when they are bad, and otherwise hands
 * the work to the pool as an httpjob.
 */
#ifndef PROFD_API_H
#define PROFD_API_H

#include <jansson.h>

#include "storage/store.h"

struct server;
struct evhttp_request;
struct params;

/* POST /api/0/profiles */
void	api_upload(struct server *, struct evhttp_request *,
	    const struct params *);
/* GET /api/0/profiles */
void	api_list(struct server *, struct evhttp_request *,
	    const struct params *);
/* GET /api/0/profiles/{id} and /api/0/profiles/{id1}+{id2}+... */
void	api_get(struct server *, struct evhttp_request *, const char *ids);
/* GET /api/0/profiles/merge */
void	api_merge(struct server *, struct evhttp_request *,
	    const struct params *);
/* Merges the profiles named in ids ("id1+id2+..."). */
void	api_merge_ids(struct server *, struct evhttp_request *,
	    const char *ids);
/* GET /api/0/services */
void	api_services(struct server *, struct evhttp_request *,
	    const struct params *);
/* GET /api/0/labels */
void	api_labels(struct server *, struct evhttp_request *,
	    const struct params *);
/* GET /api/0/version */
void	api_version(struct server *, struct evhttp_request *,
	    const struct params *);

/* META JSON of a stored profile (new reference). */
json_t	*api_meta_json(const struct profile_meta *);

#endif
