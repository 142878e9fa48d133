/*
 * Single profiles: upload, list and download. Each handler runs on the
 * loop thread: it checks the parameters, answers 400 at once when they are
 * bad, and otherwise hands the work to the pool as an httpjob.
 */
#ifndef PROFD_API_PROFILES_H
#define PROFD_API_PROFILES_H

struct env;
struct evhttp_request;
struct params;

/* POST /api/0/profiles */
void	api_profiles_upload(struct env *, struct evhttp_request *,
	    const struct params *);
/* GET /api/0/profiles */
void	api_profiles_list(struct env *, struct evhttp_request *,
	    const struct params *);
/* GET /api/0/profiles/{id} */
void	api_profiles_get(struct env *, struct evhttp_request *,
	    const char *id);

#endif
