/*
 * Profile uploads to the collector with libevent's HTTP client, from the
 * agent's event loop: a bounded queue, capped exponential backoff.
 */
#ifndef PROFD_AGENT_UPLOAD_H
#define PROFD_AGENT_UPLOAD_H

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct upload;

struct upload_stats {
	uint64_t	sent;		/* accepted by the collector (2xx) */
	uint64_t	rejected;	/* 4xx: dropped, not retried */
	uint64_t	dropped;	/* pushed out of a full queue */
	uint64_t	failures;	/* 5xx or connection errors */
};

/*
 * Prepares uploads to url (http://host[:port][/prefix]) for the service
 * and labels ("k=v,k=v", may be NULL). Returns NULL with *cause set if the
 * URL is not usable.
 */
struct upload	*upload_new(struct event_base *, const char *url,
		    const char *service, const char *labels, const char *token,
		    size_t queue_max, int verbose, char **cause);
/* Queues a gzipped profile (takes ownership of data) and sends soon. */
void		 upload_push(struct upload *, uint8_t *data, size_t len);
/*
 * Sends now, skipping any backoff wait (used when stopping); after this, a
 * failed attempt ends all trying (upload_idle becomes true).
 */
void		 upload_flush(struct upload *);
/* True when nothing is queued or in flight, or flushing gave up. */
int		 upload_idle(const struct upload *);
void		 upload_stats(const struct upload *, struct upload_stats *);
/* The request path with query, e.g. "/api/0/profiles?service=...". */
const char	*upload_target(const struct upload *);
void		 upload_free(struct upload *);

/* Percent-encodes s for a query value. Returns a new string. */
char		*upload_escape(const char *s);

#endif
