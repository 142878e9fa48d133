/*
 * GET /api/0/timeline: a sample type summed per time bucket over a
 * selection, from metadata alone (see api_timeline.c).
 */
#ifndef PROFD_API_TIMELINE_H
#define PROFD_API_TIMELINE_H

struct env;
struct evhttp_request;
struct params;

/* GET /api/0/timeline */
void	api_timeline(struct env *, struct evhttp_request *,
	    const struct params *);

#endif
