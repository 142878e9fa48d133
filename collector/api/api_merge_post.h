/*
 * POST /api/0/profiles/merge: merges a list of ids sent in the body, for
 * lists too long for a URL. See api_merge_post.c.
 */
#ifndef PROFD_API_MERGE_POST_H
#define PROFD_API_MERGE_POST_H

struct env;
struct evhttp_request;
struct params;

void	api_merge_post(struct env *, struct evhttp_request *,
	    const struct params *);

#endif
