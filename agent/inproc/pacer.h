/*
 * The agent's half of collector-directed pacing: a thread that long-polls
 * the collector's POST /api/0/agents/poll and hands the windows it is
 * granted to the agent thread (see pacer.c).
 */
#ifndef PROFD_AGENT_PACER_H
#define PROFD_AGENT_PACER_H

#include <stdint.h>

/* What the collector said about pacing (pacer_mode). */
#define PACER_UNKNOWN	0	/* the first poll has not been answered */
#define PACER_PACED	1	/* windows come from the collector */
#define PACER_OWN	2	/* no pacing there: the agent's own schedule */
#define PACER_AWAY	3	/* collector unreachable so far: own schedule,
				   polls go on */

/* A window granted by the collector. */
struct pacer_grant {
	char	type[16];	/* "cpu" or "heap" */
	int	duration_s;
};

/* Called from the pacer's thread when the mode changes or a grant comes. */
typedef void	pacer_notify_cb(void *arg);
/* Asked by the pacer's thread every 50 ms at most: 1 when the agent stops. */
typedef int	pacer_stopping_cb(void *arg);

struct pacer;

/*
 * A pacer for service at url (as the uploader's), offering types ("cpu"
 * or "cpu,heap") with windows of window_sec; NULL with *cause if the URL
 * is not usable. Nothing runs before pacer_start.
 */
struct upload_tls;
struct pacer	*pacer_new(const char *url, const char *service,
		    const char *labels, const char *token,
		    const struct upload_tls *tls, const char *types,
		    int window_sec, int verbose, pacer_notify_cb *notify,
		    pacer_stopping_cb *stopping, void *arg, char **cause);
/* Starts the polling thread; -1 if it cannot be created. */
int		 pacer_start(struct pacer *);
/* PACER_UNKNOWN, PACER_PACED, PACER_OWN or PACER_AWAY. */
int		 pacer_mode(struct pacer *);
/* Takes the grant waiting, if any: 1 and *g filled, else 0. */
int		 pacer_take(struct pacer *, struct pacer_grant *g);
/* Asks the thread to end (its poll cut within 50 ms), without waiting. */
void		 pacer_stop(struct pacer *);
/* Ends the thread (its poll cut within 50 ms) and frees everything. */
void		 pacer_free(struct pacer *);
/* The instance id sent to the collector (tests, logs). */
const char	*pacer_instance(const struct pacer *);

#endif
