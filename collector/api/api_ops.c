/*
 * GET /metrics and GET /healthz.
 *
 * Both do their store work on env->ops_pool, a thread of their own where
 * no request work ever queues, so neither waits behind uploads, queries
 * or merges.
 *
 * A scrape reads the store's totals there (the store may not be touched
 * from the loop; the totals are kept by the store, so this is cheap) and
 * renders everything else on the loop, where the request counters live.
 * When the pool refuses the job (queue full) the scrape is answered at
 * once from the totals cached by the last one: an overloaded daemon is
 * exactly when its metrics matter.
 *
 * A health check says whether the daemon is alive and serving, not whether
 * a pool is busy: a daemon whose every merge worker is taken, or whose CPU
 * queue is long, still answers 200. It proves the loop (it answers at all)
 * and the store: a job on the ops pool looks up an id that cannot exist, a
 * real indexed SELECT, within API_OPS_HEALTHZ_TIMEOUT_MS. 503 only while
 * stopping (the router says so) or when the store fails or does not
 * answer in time. When the timer wins, the 503 goes out and the late job
 * only frees itself.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <event2/http.h>

#include "collector/api/api_ops.h"
#include "collector/config.h"
#include "collector/env.h"
#include "collector/http/reply.h"
#include "collector/http/tls.h"
#include "collector/metrics.h"
#include "common/log.h"
#include "common/pool.h"
#include "common/xmalloc.h"
#include "storage/store.h"
#include "storage/store_meta.h"

#define API_OPS_METRICS_TYPE	"text/plain; version=0.0.4; charset=utf-8"
#define API_OPS_NO_SUCH_ID		"00000000000000000000"

struct api_ops_scrape {
	struct pool_job		 pj;	/* first member */
	struct env		*env;
	struct evhttp_request	*req;
	char			*cause;	/* store_totals failed */
};

/* The pool for the store work of /metrics and /healthz. */
static struct pool *
api_ops_pool(struct env *env)
{
	return env->ops_pool != NULL ? env->ops_pool : env->pool;
}

/* Hands the listener's TLS counters to the metrics (loop thread). */
static void
api_ops_tls_figures(struct env *env)
{
	struct metrics_tls mt;
	struct tls_stats st;
	int i;

	memset(&mt, 0, sizeof mt);
	if (env->tls != NULL) {
		tls_get_stats(env->tls, &st);
		mt.on = 1;
		mt.handshakes = st.handshakes;
		for (i = 0; i < TLS_FAIL_N && i < METRICS_TLS_REASONS; i++) {
			mt.reason[i] = tls_fail_name((enum tls_fail)i);
			mt.fail[i] = st.fail[i];
		}
		mt.reloads = st.reloads;
		mt.reload_errors = st.reload_errors;
	}
	metrics_set_tls(env->metrics, &mt);
}

/* Renders the metrics and replies (loop thread). */
static void
api_ops_metrics_reply(struct env *env, struct evhttp_request *req)
{
	struct metrics_gauges g;
	char *text;
	size_t len;

	memset(&g, 0, sizeof g);
	g.queued = pool_queued(env->pool);
	g.inflight = pool_inflight(env->pool);
	g.workers = pool_workers(env->pool);
	g.retention_ns = env->cfg->retention_ns;
	if (env->merge_pool != NULL) {
		g.merge_queued = pool_queued(env->merge_pool);
		g.merge_inflight = pool_inflight(env->merge_pool);
		g.merge_workers = pool_workers(env->merge_pool);
	}
	g.merges = env->merges;
	g.max_merges = (int)env->cfg->max_merges;
	api_ops_tls_figures(env);
	text = metrics_render_string(env->metrics, &g, &len);
	reply_bytes(env, req, (uint8_t *)text, len, API_OPS_METRICS_TYPE, NULL);
}

/* Worker: refreshes the cached store totals. */
static void
api_ops_scrape_work(struct pool_job *pj)
{
	struct api_ops_scrape *s = (struct api_ops_scrape *)pj;
	struct store_rollup_stats rs;
	int64_t profiles, bytes;

	if (store_totals(s->env->store, &profiles, &bytes, &s->cause) == 0)
		metrics_set_totals(s->env->metrics, profiles, bytes);
	if (s->cause == NULL && store_rollup_stats(s->env->store, &rs,
	    &s->cause) == 0)
		metrics_set_rollups(s->env->metrics, &rs);
}

/* Loop: replies with the fresh totals. */
static void
api_ops_scrape_done(struct pool_job *pj)
{
	struct api_ops_scrape *s = (struct api_ops_scrape *)pj;

	if (s->cause != NULL)
		log_warn("%s: store totals: %s", __func__, s->cause);
	api_ops_metrics_reply(s->env, s->req);
	free(s->cause);
	free(s);
}

/* GET /metrics */
void
api_ops_metrics(struct env *env, struct evhttp_request *req,
    const struct params *p)
{
	struct api_ops_scrape *s = xcalloc(1, sizeof *s);

	s->pj.work = api_ops_scrape_work;
	s->pj.done = api_ops_scrape_done;
	s->env = env;
	s->req = req;
	if (pool_submit(api_ops_pool(env), &s->pj) == 0)
		return;
	free(s);
	api_ops_metrics_reply(env, req);	/* cached totals */
}

struct api_ops_health {
	struct pool_job		 pj;	/* first member */
	struct env		*env;
	struct evhttp_request	*req;
	struct event		*timer;
	int			 answered;	/* the timer replied 503 */
	int			 rc;		/* store_get's */
	char			*cause;
};

/* Worker: one cheap indexed lookup. */
static void
api_ops_health_work(struct pool_job *pj)
{
	struct api_ops_health *h = (struct api_ops_health *)pj;
	struct profile_meta m;

	memset(&m, 0, sizeof m);
	h->rc = store_get(h->env->store, API_OPS_NO_SUCH_ID, &m, &h->cause);
	if (h->rc == 0)
		store_meta_clear(&m);
}

/* Loop: answers unless the timer already did, then frees. */
static void
api_ops_health_done(struct pool_job *pj)
{
	struct api_ops_health *h = (struct api_ops_health *)pj;
	uint8_t *body;

	if (!h->answered) {
		evtimer_del(h->timer);
		if (h->rc < 0) {
			log_warn("%s: store: %s", __func__, h->cause);
			reply_error(h->env, h->req, 503, "store: %s",
			    h->cause != NULL ? h->cause : "error");
		} else {
			body = (uint8_t *)xstrdup("ok\n");
			reply_bytes(h->env, h->req, body, 3,
			    "text/plain; charset=utf-8", NULL);
		}
	}
	event_free(h->timer);
	free(h->cause);
	free(h);
}

/* Loop timer: the store check did not come back in time. */
static void
api_ops_health_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct api_ops_health *h = arg;

	h->answered = 1;
	log_warn("%s: the store did not answer within %d ms", __func__,
	    API_OPS_HEALTHZ_TIMEOUT_MS);
	reply_error(h->env, h->req, 503, "store did not answer within %d ms",
	    API_OPS_HEALTHZ_TIMEOUT_MS);
}

/* GET /healthz */
void
api_ops_healthz(struct env *env, struct evhttp_request *req,
    const struct params *p)
{
	struct api_ops_health *h = xcalloc(1, sizeof *h);
	struct timeval tv = { API_OPS_HEALTHZ_TIMEOUT_MS / 1000,
	    API_OPS_HEALTHZ_TIMEOUT_MS % 1000 * 1000 };
	struct pool *pool = api_ops_pool(env);

	h->pj.work = api_ops_health_work;
	h->pj.done = api_ops_health_done;
	h->env = env;
	h->req = req;
	if (pool_submit(pool, &h->pj) != 0) {
		/* Only when that many checks are stuck: the store hangs. */
		free(h);
		reply_error(env, req, 503, "store checks are not coming back "
		    "(%d queued)", pool_queued(pool));
		return;
	}
	h->timer = evtimer_new(env->base, api_ops_health_timeout_cb, h);
	evtimer_add(h->timer, &tv);
}
