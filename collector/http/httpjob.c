/*
 * HTTP jobs: the bridge between an evhttp request on the loop thread and
 * the work a pool worker does for it, and the request's time limit.
 *
 * The loop owns the request: only it replies, and it replies once. When
 * the --request-timeout timer wins, it replies and forgets the request
 * (req = NULL, answered = 1); the worker still holds the job, so the job
 * is freed only when it comes back through done(), which then sends
 * nothing. A job the timer takes back from a queue (pool_withdraw) never
 * reaches a worker and is freed at once.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "collector/http/conns.h"
#include "collector/http/httpjob.h"
#include "collector/http/reply.h"
#include "collector/config.h"
#include "collector/env.h"
#include "collector/metrics.h"
#include "common/log.h"
#include "common/xmalloc.h"
#include "storage/store.h"

/* Worker side: runs the handler's work. */
static void
httpjob_work_cb(struct pool_job *pj)
{
	struct httpjob *job = (struct httpjob *)pj;

	if (job->io_pending) {
		job->io_pending = 0;
		if (__atomic_load_n(&job->cancelled, __ATOMIC_RELAXED)) {
			/* Nothing is written for a request already answered. */
			httpjob_error(job, 499, "cancelled before its write");
			return;
		}
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

/* Stops the client-gone checks of the job. */
static void
httpjob_unwatch(struct httpjob *job)
{
	if (job->watched)
		TAILQ_REMOVE(&job->env->watched, job, watch_entry);
	job->watched = 0;
}

/* Loop side: the job is over (no worker holds it); frees it. */
static void
httpjob_finish(struct httpjob *job)
{
	httpjob_unwatch(job);
	if (job->timer != NULL)
		event_free(job->timer);
	if (job->merge)
		job->env->merges--;
	httpjob_free(job);
}

/* Loop side: sends the result and frees the job. */
static void
httpjob_done_cb(struct pool_job *pj)
{
	struct httpjob *job = (struct httpjob *)pj;
	struct env *env = job->env;
	int i;

	if (job->answered) {
		/* The timer replied; this late result has no request. */
		httpjob_finish(job);
		return;
	}
	httpjob_unwatch(job);
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
	httpjob_finish(job);
}

/*
 * Loop timer: --request-timeout passed before the job's result came back.
 * A job still queued is taken back and refused (503, it never runs); a
 * running one is cancelled (merges stop within about a second) and its
 * client answered now (504); its late result is dropped in done().
 */
static void
httpjob_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct httpjob *job = arg;
	struct env *env = job->env;
	long long secs = (long long)env->cfg->request_timeout;

	httpjob_unwatch(job);
	if (pool_withdraw(&job->pj) == 0) {
		log_warn("%s: request still queued after %lld s: refused",
		    __func__, secs);
		metrics_request_timeout(env->metrics, 1);
		reply_error(env, job->req, 503, "request waited longer than "
		    "--request-timeout (%lld s) for a worker; try again", secs);
		httpjob_finish(job);
		return;
	}
	__atomic_store_n(&job->cancelled, 1, __ATOMIC_RELAXED);
	log_warn("%s: request still running after %lld s: cancelled",
	    __func__, secs);
	metrics_request_timeout(env->metrics, 0);
	reply_error(env, job->req, 504, "request took longer than "
	    "--request-timeout (%lld s); its work was cancelled", secs);
	job->req = NULL;
	job->answered = 1;
}

/* Starts the job's --request-timeout clock (none without a config). */
static void
httpjob_arm(struct httpjob *job)
{
	struct env *env = job->env;
	struct timeval tv;
	const struct timeval *common;

	if (env->cfg == NULL || env->cfg->request_timeout <= 0)
		return;
	tv.tv_sec = (time_t)env->cfg->request_timeout;
	tv.tv_usec = 0;
	/* Every job has the same duration: libevent then keeps their
	 * timers in one queue instead of the heap. */
	common = event_base_init_common_timeout(env->base, &tv);
	job->timer = evtimer_new(env->base, httpjob_timeout_cb, job);
	evtimer_add(job->timer, common != NULL ? common : &tv);
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

	if (pool_submit(env->pool, &job->pj) == 0) {
		httpjob_arm(job);
		return;
	}
	reply_error(env, job->req, 503, "busy: %d jobs queued, try again",
	    pool_queued(env->pool));
	httpjob_finish(job);
}

/* Queues a merge on the merge pool, or answers 503 at --max-merges. */
void
httpjob_submit_merge(struct httpjob *job)
{
	struct env *env = job->env;
	struct pool *pool = env->merge_pool != NULL ? env->merge_pool :
	    env->pool;
	long long max = env->cfg != NULL ? (long long)env->cfg->max_merges : 0;

	if (max > 0 && env->merges >= max) {
		metrics_merge_refused(env->metrics);
		reply_error(env, job->req, 503, "busy: %d merges running "
		    "(--max-merges %lld), try again", env->merges, max);
		httpjob_finish(job);
		return;
	}
	if (pool_submit(pool, &job->pj) != 0) {
		reply_error(env, job->req, 503, "busy: %d merge jobs queued, "
		    "try again", pool_queued(pool));
		httpjob_finish(job);
		return;
	}
	job->merge = 1;
	env->merges++;
	httpjob_arm(job);
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

	if (evcon == NULL)
		return 1;
	if ((bev = evhttp_connection_get_bufferevent(evcon)) == NULL ||
	    (fd = bufferevent_getfd(bev)) < 0)
		return 1;
	return conns_fd_gone(fd);
}

/* Marks watched jobs whose clients went away. */
void
httpjob_check_watched(struct env *env)
{
	struct httpjob *job;

	TAILQ_FOREACH(job, &env->watched, watch_entry) {
		if (!job->cancelled && job->req != NULL &&
		    httpjob_client_gone(job->req)) {
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

/* Sets the error of a failed store call: 503 if unreachable, else 500. */
void
httpjob_store_error(struct httpjob *job, const char *cause)
{
	if (store_unavailable())
		httpjob_error(job, 503, "store unavailable, retry later: %s",
		    cause != NULL ? cause : "");
	else
		httpjob_error(job, 500, "storage error: %s",
		    cause != NULL ? cause : "");
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
