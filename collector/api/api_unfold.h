/*
 * Folded stacks at ingest (api_unfold.c): the conversion of a folded or
 * lines body into the pprof stored in its place, on a worker, with its
 * memory bounded. Shared by profefe's upload and Pyroscope's /ingest.
 */
#ifndef PROFD_API_UNFOLD_H
#define PROFD_API_UNFOLD_H

struct evbuffer;
struct folded_options;
struct httpjob;

/* Distinct frames a folded upload may name. */
#define API_UNFOLD_MAX_FRAMES	1000000

/*
 * Replaces body's folded text with its pprof, converted with o (its
 * max_frames and acct are set here): 0, or -1 with the job answered (400
 * bad text; 413 past API_UNFOLD_MAX_FRAMES or --merge-memory, which
 * conversions share with merges; 503 when merges hold that memory now).
 */
int	api_unfold(struct httpjob *job, struct evbuffer *body,
	    const struct folded_options *o);

#endif
