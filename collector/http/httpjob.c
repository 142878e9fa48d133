/*
 * HTTP jobs: the bridge between an evhttp request on the loop thread and
 * the work a pool worker does for it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "collector/http/httpjob.h"
#include "collector/http/reply.h"
#include "collector/env.h"
#include "common/log.h"
#include "common/xmalloc.h"

/* Worker side: runs the handler's work. */
static void
httpjob_work_cb(struct pool_job *pj)
{
	struct httpjob *job = (struct httpjob *)pj;

	if (job->io_pending) {
		job->io_pending = 0;
		job->io(job);
		return;
	}
	if (__atomic_load_n(&job->cancelled, __ATOMIC_RELAXED)) {
		httpjob_error(job, 499, "client went away");
		return;
	}
	job->work(job);
	if (job->io != NULL && job->error == NULL && job->json == NULL) {
		job->io_pending = 1;
		job->pj.next = job->env->io_pool;	/* straight on */
	}
}

/* Frees the job and its result. */
static void
httpjob_free(struct httpjob *job)
{
	int i;

	if (job->arg_free != NULL)
		job->arg_free(job->arg);
	free(job->error);
	if (job->json != NULL)
		json_decref(job->json);
	free(job->bytes);
	free(job->disposition);
	for (i = 0; i < job->nhdrs; i++) {
		free(job->hdr_name[i]);
		free(job->hdr_value[i]);
	}
	free(job);
}

/* Loop side: sends the result and frees the job. */
static void
httpjob_done_cb(struct pool_job *pj)
{
	struct httpjob *job = (struct httpjob *)pj;
	struct env *env = job->env;
	int i;

	if (job->watched)
		TAILQ_REMOVE(&env->watched, job, watch_entry);
	for (i = 0; i < job->nhdrs; i++)
		evhttp_add_header(evhttp_request_get_output_headers(job->req),
		    job->hdr_name[i], job->hdr_value[i]);
	if (job->error != NULL)
		reply_error(env, job->req, job->code, "%s", job->error);
	else if (job->json != NULL) {
		reply_json(env, job->req, job->code, job->json);
		job->json = NULL;
	} else if (job->bytes != NULL || job->content_type != NULL) {
		reply_bytes(env, job->req, job->bytes, job->nbytes,
		    job->content_type, job->disposition);
		job->bytes = NULL;
	} else
		reply_error(env, job->req, 500, "internal error: no result");
	httpjob_free(job);
}

/* A job for req; arg is the handler's state. */
struct httpjob *
httpjob_new(struct env *env, struct evhttp_request *req,
    void (*work)(struct httpjob *), void *arg, void (*arg_free)(void *))
{
	struct httpjob *job = xcalloc(1, sizeof *job);

	job->pj.work = httpjob_work_cb;
	job->pj.done = httpjob_done_cb;
	job->env = env;
	job->req = req;
	job->work = work;
	job->arg = arg;
	job->arg_free = arg_free;
	job->code = 200;
	return job;
}

/* Queues the job or answers 503. */
void
httpjob_submit(struct httpjob *job)
{
	struct env *env = job->env;

	if (pool_submit(env->pool, &job->pj) == 0)
		return;
	if (job->watched)
		TAILQ_REMOVE(&env->watched, job, watch_entry);
	reply_error(env, job->req, 503, "busy: %d jobs queued, try again",
	    pool_queued(env->pool));
	httpjob_free(job);
}

/* Registers the job for client-gone checks (before submitting). */
void
httpjob_watch(struct httpjob *job)
{
	job->watched = 1;
	TAILQ_INSERT_TAIL(&job->env->watched, job, watch_entry);
}

/* True if the client of req has closed its side or the connection died. */
static int
httpjob_client_gone(struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev;
	evutil_socket_t fd;
	char c;
	ssize_t n;

	if (evcon == NULL)
		return 1;
	if ((bev = evhttp_connection_get_bufferevent(evcon)) == NULL ||
	    (fd = bufferevent_getfd(bev)) < 0)
		return 1;
	n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n == 0)
		return 1;
	return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
	    errno != EINTR;
}

/* Marks watched jobs whose clients went away. */
void
httpjob_check_watched(struct env *env)
{
	struct httpjob *job;

	TAILQ_FOREACH(job, &env->watched, watch_entry) {
		if (!job->cancelled && httpjob_client_gone(job->req)) {
			log_info("%s: client went away, cancelling", __func__);
			__atomic_store_n(&job->cancelled, 1, __ATOMIC_RELAXED);
		}
	}
}

/* Sets an error result. */
void
httpjob_error(struct httpjob *job, int code, const char *fmt, ...)
{
	va_list ap;

	free(job->error);
	va_start(ap, fmt);
	job->error = xvasprintf(fmt, ap);
	va_end(ap);
	job->code = code;
}

/* Sets a JSON result; steals body. */
void
httpjob_json(struct httpjob *job, json_t *body)
{
	if (job->json != NULL)
		json_decref(job->json);
	job->json = body;
	job->code = 200;
}

/* Adds a reply header. */
void
httpjob_header(struct httpjob *job, const char *name, const char *fmt, ...)
{
	va_list ap;

	if (job->nhdrs >= HTTPJOB_MAX_HEADERS)
		return;
	job->hdr_name[job->nhdrs] = xstrdup(name);
	va_start(ap, fmt);
	job->hdr_value[job->nhdrs] = xvasprintf(fmt, ap);
	va_end(ap);
	job->nhdrs++;
}

/* Sets a bytes result; takes buf. */
void
httpjob_bytes(struct httpjob *job, uint8_t *buf, size_t len,
    const char *content_type, const char *filename)
{
	free(job->bytes);
	job->bytes = buf;
	job->nbytes = len;
	job->content_type = content_type;
	free(job->disposition);
	job->disposition = filename != NULL ? xstrdup(filename) : NULL;
	job->code = 200;
}
