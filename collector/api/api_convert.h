/*
 * Conversions at ingest (api_convert.c): folded or lines text, and legacy
 * gperftools CPU profiles, turned into the pprof stored in their place,
 * on a worker, with their memory bounded. Shared by profefe's upload and
 * Pyroscope's /ingest.
 */
#ifndef PROFD_API_CONVERT_H
#define PROFD_API_CONVERT_H

struct evbuffer;
struct folded_options;
struct httpjob;

/* Distinct frames a folded upload may name. */
#define API_CONVERT_MAX_FRAMES	1000000

/*
 * Replaces body's folded text with its pprof, converted with o (its
 * max_frames and acct are set here): 0, or -1 with the job answered (400
 * bad text; 413 past API_CONVERT_MAX_FRAMES or --merge-memory, which
 * conversions share with merges; 503 when merges hold that memory now).
 */
int	api_convert_folded(struct httpjob *job, struct evbuffer *body,
	    const struct folded_options *o);
/*
 * If body (gzipped or not) is a legacy gperftools CPU profile, replaces
 * it with its pprof: 1; 0 if it is not one; -1 with the job answered
 * (400, 413, 503 as above).
 */
int	api_convert_gperf(struct httpjob *job, struct evbuffer *body);

#endif
