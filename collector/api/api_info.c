/*
 * Catalogue endpoints: services, label keys and values, and the version.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <protobuf-c/protobuf-c.h>
#include <sqlite3.h>
#include <zlib.h>

#include "collector/api/api_info.h"
#include "collector/api/params.h"
#include "collector/build_info.h"
#include "collector/config.h"
#include "collector/env.h"
#include "collector/http/httpjob.h"
#include "collector/http/reply.h"
#include "common/xmalloc.h"
#include "storage/store_free.h"

/* A JSON array of strings; frees them. */
static json_t *
api_info_strings(char **s, size_t n)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; i < n; i++)
		json_array_append_new(arr, json_string(s[i]));
	store_free_strings(s, n);
	return arr;
}

/* Worker: lists services. */
static void
api_info_services_work(struct httpjob *job)
{
	char **s, *cause = NULL;
	size_t n;

	if (store_services(job->env->store, &s, &n, &cause) != 0) {
		httpjob_store_error(job, cause);
		free(cause);
		return;
	}
	httpjob_json(job, api_info_strings(s, n));
}

/* GET /api/0/services */
void
api_info_services(struct env *env, struct evhttp_request *req,
    const struct params *p)
{
	httpjob_submit(httpjob_new(env, req, api_info_services_work, NULL, NULL));
}

struct api_info_labels_args {
	char	*service;
	char	*key;
};

/* Frees labels arguments. */
static void
api_info_labels_free(void *arg)
{
	struct api_info_labels_args *la = arg;

	free(la->service);
	free(la->key);
	free(la);
}

/* Worker: lists label keys or values. */
static void
api_info_labels_work(struct httpjob *job)
{
	struct api_info_labels_args *la = job->arg;
	char **s, *cause = NULL;
	size_t n;

	if (store_labels(job->env->store, la->service, la->key, &s, &n,
	    &cause) != 0) {
		httpjob_store_error(job, cause);
		free(cause);
		return;
	}
	httpjob_json(job, api_info_strings(s, n));
}

/* GET /api/0/labels[?service=S][&key=K] */
void
api_info_labels(struct env *env, struct evhttp_request *req,
    const struct params *p)
{
	struct api_info_labels_args *la = xcalloc(1, sizeof *la);
	char *cause = NULL;

	if (params_get(p, "service", &la->service, &cause) < 0 ||
	    params_get(p, "key", &la->key, &cause) < 0) {
		reply_error(env, req, 400, "%s", cause);
		free(cause);
		api_info_labels_free(la);
		return;
	}
	if (la->service != NULL && *la->service == '\0') {
		free(la->service);
		la->service = NULL;
	}
	if (la->key != NULL && !params_label_key_valid(la->key)) {
		reply_error(env, req, 400, "bad label key \"%.64s\"", la->key);
		api_info_labels_free(la);
		return;
	}
	httpjob_submit(httpjob_new(env, req, api_info_labels_work, la, api_info_labels_free));
}

/* GET /api/0/version: answered on the loop, nothing to look up. */
void
api_info_version(struct env *env, struct evhttp_request *req,
    const struct params *p)
{
	reply_json(env, req, 200, json_pack("{s:s, s:s, s:s, s:{s:s, s:s, "
	    "s:s, s:s, s:s}}",
	    "version", PACKAGE_VERSION, "commit", PROFD_COMMIT,
	    "build_time", PROFD_BUILD_TIME, "libraries",
	    "libevent", event_get_version(), "sqlite", sqlite3_libversion(),
	    "protobuf-c", protobuf_c_version(), "jansson", JANSSON_VERSION,
	    "zlib", zlibVersion()));
}
