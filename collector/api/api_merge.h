/*
 * Merged downloads: by query (service, type, time range, labels) or by a
 * list of ids. Both run as watched jobs on the merge pool, at most
 * --max-merges at once, so a client that goes away cancels the merge.
 */
#ifndef PROFD_API_MERGE_H
#define PROFD_API_MERGE_H

struct env;
struct evhttp_request;
struct params;

/* GET /api/0/profiles/merge */
void	api_merge_query(struct env *, struct evhttp_request *,
	    const struct params *);
/* GET /api/0/profiles/{id1}+{id2}+...: merges those profiles. */
void	api_merge_ids(struct env *, struct evhttp_request *,
	    const char *ids);

#endif
