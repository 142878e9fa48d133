/*
 * pprof's symbolization probe: `go tool pprof URL` on a profile whose
 * mappings carry addresses (a converted gperftools profile) posts the
 * addresses to /symbolz on the same host. profd holds no binaries, so it
 * answers as a server without symbols does, and pprof carries on with
 * addresses.
 */
#ifndef PROFD_API_SYMBOLZ_H
#define PROFD_API_SYMBOLZ_H

struct env;
struct evhttp_request;
struct params;

/* GET and POST /symbolz */
void	api_symbolz(struct env *, struct evhttp_request *,
	    const struct params *);

#endif
