/*
 * The method table of Pyroscope's query service (see qservice.h). The
 * method is the path's last segment, matched exactly (Connect's paths
 * are case-sensitive).
 */
#include <string.h>

#include <event2/http.h>

#include "collector/http/reply.h"
#include "collector/query/qconnect.h"
#include "collector/query/qlabels.h"
#include "collector/query/qmerge.h"
#include "collector/query/qseries.h"
#include "collector/query/qservice.h"

typedef void (*qservice_fn)(struct env *, struct evhttp_request *);

static const struct {
	const char	*name;
	qservice_fn	 fn;	/* NULL: left out, unimplemented */
} qservice_methods[] = {
	{ "ProfileTypes", qlabels_profile_types },
	{ "LabelNames", qlabels_label_names },
	{ "LabelValues", qlabels_label_values },
	{ "Series", qlabels_series_method },
	{ "SelectMergeStacktraces", qmerge_stacktraces },
	{ "SelectMergeProfile", qmerge_profile },
	{ "SelectSeries", qseries_select },
	{ "Diff", qmerge_diff },
	{ "SelectMergeSpanProfile", NULL },
	{ "SelectHeatmap", NULL },
	{ "GetProfileStats", NULL },
	{ "AnalyzeQuery", NULL },
};

/* POST /querier.v1.QuerierService/{Method} */
void
qservice_post(struct env *env, struct evhttp_request *req,
    const struct params *p)
{
	const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(
	    req));
	const char *name;
	size_t i;

	(void)p;
	if (path == NULL || strncmp(path, QCONNECT_PREFIX,
	    strlen(QCONNECT_PREFIX)) != 0) {
		reply_error(env, req, 501, "no such method");
		return;
	}
	name = path + strlen(QCONNECT_PREFIX);
	for (i = 0; i < sizeof qservice_methods / sizeof qservice_methods[0];
	    i++) {
		if (strcmp(name, qservice_methods[i].name) != 0)
			continue;
		if (qservice_methods[i].fn == NULL)
			reply_error(env, req, 501, "querier.v1.QuerierService/"
			    "%s is not served by profd (see its README, "
			    "\"Grafana\")", name);
		else
			qservice_methods[i].fn(env, req);
		return;
	}
	reply_error(env, req, 501, "no method querier.v1.QuerierService/%.64s",
	    name);
}
