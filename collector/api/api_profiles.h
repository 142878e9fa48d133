/*
 * Single profiles: upload, list and download. Each handler runs on the
 * loop thread: it checks the parameters, answers 400 at once when they are
 * bad, and otherwise hands the work to the pool as an httpjob.
 */
#ifndef PROFD_API_PROFILES_H
#define PROFD_API_PROFILES_H

#include <stdint.h>

#include "proto/folded.h"
#include "storage/store.h"

struct env;
struct evbuffer;
struct evhttp_request;
struct httpjob;
struct params;

/*
 * An upload on its way to the store, filled in by a front end (profefe's
 * API here, Pyroscope's /ingest in api_ingest.c). On a worker: prepare
 * (if any) makes the body a pprof or folded text, folded text is
 * converted with fold, then the pprof is checked and its META filled in;
 * on the I/O pool the store writes it.
 */
struct api_profiles_upload {
	struct profile_meta	 meta;		/* service, type, labels */
	int64_t			 created_at;	/* 0: the profile's or now */
	struct evbuffer		*body;
	int			 folded;	/* body is folded text */
	struct folded_options	 fold;		/* (time_nanos: created_at) */
	/* Worker: 0, or -1 with the job answered. */
	int			(*prepare)(struct httpjob *,
				    struct api_profiles_upload *, int64_t now);
	void			*arg;		/* the front end's */
	void			(*arg_free)(void *);
	int64_t			 duration_ns;	/* when the pprof has none */
	/* A type from the sample types, when meta.type is NULL. */
	const char		*(*type_of)(const char *sample_types);
	int			 empty_reply;	/* 200 without META */
};

/*
 * Takes the request's body into up and submits the job that checks and
 * stores it (400 at once for an empty body). up (calloc'ed) is the job's.
 */
void	api_profiles_submit(struct env *, struct evhttp_request *,
	    struct api_profiles_upload *up);
/* Frees an upload (for a front end that refuses it before submitting). */
void	api_profiles_upload_free(void *up);

/* POST /api/0/profiles */
void	api_profiles_upload(struct env *, struct evhttp_request *,
	    const struct params *);
/* GET /api/0/profiles */
void	api_profiles_list(struct env *, struct evhttp_request *,
	    const struct params *);
/* GET /api/0/profiles/{id} */
void	api_profiles_get(struct env *, struct evhttp_request *,
	    const char *id);

#endif
