/*
 * POST (or GET) /api/0/agents/poll: agents ask the collector when to
 * profile (collector-directed pacing). The route checks the parameters,
 * hands the poll to the scheduler (collector/pacing.c) and holds the
 * request until the scheduler answers it: a window to profile now, or
 * poll again later. See README, "Collector-directed pacing".
 */
#ifndef PROFD_API_PACING_H
#define PROFD_API_PACING_H

struct api_pacing;
struct env;
struct evhttp_request;
struct params;

/* The scheduler and its timer on env's loop, at env->cfg's rate. */
struct api_pacing	*api_pacing_new(struct env *);
/* Shutdown: answers every held poll 503. */
void			 api_pacing_stop(struct api_pacing *);
/* Frees it (before evhttp_free); held polls get no answer. */
void			 api_pacing_free(struct api_pacing *);

/* POST|GET /api/0/agents/poll */
void	api_pacing_poll(struct env *, struct evhttp_request *,
	    const struct params *);

#endif
