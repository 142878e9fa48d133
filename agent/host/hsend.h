/*
 * Where the host agent's profiles go: uploaded to the collector by a
 * thread of their own (agent/core/upload.c's client: the token, TLS,
 * retries with backoff, one bounded queue for every service, the oldest
 * profile dropped when full), or written to a directory (a dry run).
 * The sampling loop never waits on the network.
 */
#ifndef PROFD_AGENT_HSEND_H
#define PROFD_AGENT_HSEND_H

#include <stddef.h>
#include <stdint.h>

#include "agent/core/upload.h"

struct hsend;

struct hsend_config {
	const char		*collector;	/* URL, or NULL with output_dir */
	const char		*output_dir;	/* or NULL */
	const char		*labels;	/* every profile's, or NULL */
	const char		*token;		/* or NULL */
	struct upload_tls	 tls;
	size_t			 queue_max;	/* profiles waiting, at most */
	int			 verbose;
};

struct hsend_stats {
	uint64_t	sent;		/* accepted, or written */
	uint64_t	rejected;	/* 4xx */
	uint64_t	dropped;	/* pushed out of the full queue */
	uint64_t	failures;	/* attempts that failed (retried) */
	uint64_t	queued;		/* waiting now */
};

/* Starts the sender. NULL with *cause if the URL or TLS is not usable. */
struct hsend	*hsend_new(const struct hsend_config *, char **cause);
/* Sends (or writes) a gzipped profile of service with more labels. */
void		 hsend_push(struct hsend *, const char *service,
		    const char *labels, uint8_t *data, size_t len);
/*
 * Sends what waits until deadline_ms (monotonic), then stops and frees;
 * the final counters into *final (may be NULL).
 */
void		 hsend_stop(struct hsend *, int64_t deadline_ms,
		    struct hsend_stats *final);
void		 hsend_stats(struct hsend *, struct hsend_stats *);

#endif
