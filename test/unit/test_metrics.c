/*
 * Unit tests for collector/metrics.c: requests counted by route and code,
 * upload accounting and rejection reasons derived from the upload route's
 * codes, latency and merge histograms (cumulative buckets, +Inf equal to
 * the count, a slow request landing in the right bucket), the pending
 * table under thousands of concurrent requests and reused pointers, store
 * totals and retention counters, the merge pool's gauges, refused merges
 * and request timeouts, and that every line of the exposition parses as
 * Prometheus text format 0.0.4.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/metrics.h"
#include "test/lib/tap.h"

/* Length of a metric or label name at s (0 if none). */
static size_t
name_len(const char *s, int colon)
{
	size_t n = 0;

	if (!isalpha((unsigned char)s[0]) && s[0] != '_' &&
	    !(colon && s[0] == ':'))
		return 0;
	while (isalnum((unsigned char)s[n]) || s[n] == '_' ||
	    (colon && s[n] == ':'))
		n++;
	return n;
}

/*
 * Checks one sample line: name{k="v",...} value. Copies the metric name to
 * name. Returns 1 if it parses.
 */
static int
sample_ok(const char *line, char *name, size_t cap)
{
	const char *p = line;
	char *end;
	size_t n;

	if ((n = name_len(p, 1)) == 0 || n >= cap)
		return 0;
	memcpy(name, p, n);
	name[n] = '\0';
	p += n;
	if (*p == '{') {
		p++;
		while (*p != '}') {
			if ((n = name_len(p, 0)) == 0)
				return 0;
			p += n;
			if (p[0] != '=' || p[1] != '"')
				return 0;
			for (p += 2; *p != '"'; p++) {
				if (*p == '\0' || *p == '\n')
					return 0;
				if (*p == '\\' && p[1] != '\0')
					p++;
			}
			p++;
			if (*p == ',')
				p++;
			else if (*p != '}')
				return 0;
		}
		p++;
	}
	if (*p++ != ' ')
		return 0;
	if (strcmp(p, "+Inf") == 0 || strcmp(p, "-Inf") == 0 ||
	    strcmp(p, "NaN") == 0)
		return 1;
	strtod(p, &end);
	return end != p && *end == '\0';
}

/* True if every line parses and every sample follows its # TYPE. */
static int
format_ok(char *text)
{
	char *line, *save = NULL, name[128], typed[128] = "";
	size_t tl;
	int good = 1;

	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "# HELP ", 7) == 0)
			continue;
		if (strncmp(line, "# TYPE ", 7) == 0) {
			if (sscanf(line + 7, "%127s", typed) != 1)
				good = 0;
			continue;
		}
		if (!sample_ok(line, name, sizeof name)) {
			printf("# bad line: %s\n", line);
			good = 0;
			continue;
		}
		tl = strlen(typed);
		if (strncmp(name, typed, tl) != 0 || (name[tl] != '\0' &&
		    strcmp(name + tl, "_bucket") != 0 &&
		    strcmp(name + tl, "_sum") != 0 &&
		    strcmp(name + tl, "_count") != 0)) {
			printf("# %s not under its # TYPE (%s)\n", name, typed);
			good = 0;
		}
	}
	return good;
}

/* The value of the sample whose name and labels are exactly series. */
static double
value(const char *text, const char *series)
{
	size_t n = strlen(series);
	const char *p = text;

	while ((p = strstr(p, series)) != NULL) {
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return strtod(p + n + 1, NULL);
		p += n;
	}
	return -1;
}

/* Renders m with fixed gauges. */
static char *
render(struct metrics *m)
{
	struct metrics_gauges g = { 3, 5, 2, 7 * 86400 * INT64_C(1000000000),
	    4, 6, 2, 1, 2 };
	size_t len;

	return metrics_render_string(m, &g, &len);
}

/* One request from start to reply. */
static void
request(struct metrics *m, const void *req, enum metrics_route r,
    size_t body, int code)
{
	metrics_request_start(m, req, r, body);
	metrics_request_end(m, req, code);
}

/* True if the buckets of series (e.g. "x_bucket{route=\"list\",") are
 * non-decreasing and the +Inf bucket equals count. */
static int
hist_ok(const char *text, const char *prefix, const char *count_series)
{
	const char *p = text;
	double last = 0, v = 0;
	size_t n = strlen(prefix);
	int seen = 0;

	while ((p = strstr(p, prefix)) != NULL) {
		const char *sp = strchr(p, ' ');

		v = strtod(sp + 1, NULL);
		if (v < last)
			return 0;
		last = v;
		seen++;
		if (strncmp(p + n, "le=\"+Inf\"}", 10) == 0)
			return seen > 1 && v == value(text, count_series);
		p = sp;
	}
	return 0;
}

int
main(void)
{
	struct metrics *m = metrics_new();
	struct timespec ts = { 0, 30 * 1000000 };
	static char reqs[5000];
	char *text;
	size_t i;

	ok(strcmp(metrics_route_name(METRICS_ROUTE_GET_MERGED), "get_merged")
	    == 0 && strcmp(metrics_route_name(METRICS_ROUTE_POLL), "poll") == 0
	    && strcmp(metrics_route_name(METRICS_NROUTES), "other") == 0,
	    "route names");

	/* an empty set renders and parses */
	text = render(m);
	ok(format_ok(text), "fresh metrics parse");
	free(text);
	text = render(m);
	ok(value(text, "profd_uploads_total") == 0, "no uploads yet");
	ok(strstr(text, "profd_profiles_stored") == NULL,
	    "no store totals before the first refresh");
	ok(value(text, "profd_worker_queue_depth") == 3 &&
	    value(text, "profd_worker_jobs_inflight") == 5 &&
	    value(text, "profd_workers") == 2, "pool gauges");
	ok(value(text, "profd_retention_seconds") == 7 * 86400,
	    "retention gauge");
	free(text);

	/* uploads and the rejection reasons */
	request(m, &reqs[0], METRICS_ROUTE_UPLOAD, 100, 200);
	request(m, &reqs[1], METRICS_ROUTE_UPLOAD, 1000, 200);
	request(m, &reqs[2], METRICS_ROUTE_UPLOAD, 10, 400);
	request(m, &reqs[3], METRICS_ROUTE_UPLOAD, 20, 400);
	request(m, &reqs[4], METRICS_ROUTE_UPLOAD, 30, 413);
	request(m, &reqs[5], METRICS_ROUTE_UPLOAD, 40, 503);
	request(m, &reqs[6], METRICS_ROUTE_UPLOAD, 50, 500);
	request(m, &reqs[7], METRICS_ROUTE_UPLOAD, 60, 507);
	request(m, &reqs[8], METRICS_ROUTE_UPLOAD, 70, 499);
	request(m, &reqs[9], METRICS_ROUTE_LIST, 999, 200);
	request(m, &reqs[10], METRICS_ROUTE_MERGE, 0, 200);
	request(m, &reqs[11], METRICS_ROUTE_GET_MERGED, 0, 200);
	request(m, &reqs[12], METRICS_ROUTE_GET_MERGED, 0, 422);
	request(m, &reqs[13], METRICS_ROUTE_OTHER, 0, 404);
	metrics_request_end(m, &reqs[14], 408);	/* never started */
	metrics_request_end(m, &reqs[15], 42);	/* nonsense code */

	/* one slow health check */
	metrics_request_start(m, &reqs[16], METRICS_ROUTE_HEALTHZ, 0);
	nanosleep(&ts, NULL);
	metrics_request_end(m, &reqs[16], 200);

	/* thousands in flight at once, answered out of order */
	for (i = 100; i < sizeof reqs; i++)
		metrics_request_start(m, &reqs[i], METRICS_ROUTE_GET, 0);
	for (i = sizeof reqs; i-- > 100; )
		metrics_request_end(m, &reqs[i], i % 2 ? 200 : 404);
	/* a pointer reused before its reply: counted once, on its new route */
	metrics_request_start(m, &reqs[17], METRICS_ROUTE_LABELS, 0);
	metrics_request_start(m, &reqs[17], METRICS_ROUTE_SERVICES, 0);
	metrics_request_end(m, &reqs[17], 200);
	/* started and never answered: freed with the table (ASan checks) */
	metrics_request_start(m, &reqs[18], METRICS_ROUTE_VERSION, 0);

	metrics_set_totals(m, 42, 123456);
	metrics_retention_deleted(m, 500);
	metrics_retention_deleted(m, 7);
	metrics_retention_sweep(m, 0, 1500000);
	metrics_retention_sweep(m, 1, 100);
	metrics_merge_refused(m);
	metrics_merge_refused(m);
	metrics_request_timeout(m, 0);
	metrics_request_timeout(m, 1);
	metrics_request_timeout(m, 1);
	{
		struct metrics_pacing pc;

		memset(&pc, 0, sizeof pc);
		pc.type[0] = "cpu";
		pc.type[1] = "heap";
		pc.grants[0] = 12;
		pc.grants[1] = 3;
		pc.cancelled = 2;
		pc.held = 40;
		pc.instances = 41;
		metrics_set_pacing(m, &pc);
	}

	text = render(m);
#define V(s)	value(text, s)
	ok(V("profd_http_requests_total{route=\"upload\",code=\"200\"}") == 2,
	    "upload 200 counted");
	ok(V("profd_http_requests_total{route=\"upload\",code=\"400\"}") == 2,
	    "upload 400 counted");
	ok(V("profd_http_requests_total{route=\"list\",code=\"200\"}") == 1,
	    "list 200 counted");
	ok(V("profd_http_requests_total{route=\"other\",code=\"404\"}") == 1,
	    "404 on an unknown path counted as route other");
	ok(V("profd_http_requests_total{route=\"other\",code=\"408\"}") == 1,
	    "a reply with no start is counted as route other");
	ok(V("profd_http_requests_total{route=\"other\",code=\"500\"}") == 1,
	    "a code outside 100-599 is counted as 500");
	ok(V("profd_http_requests_total{route=\"get\",code=\"200\"}") == 2450 &&
	    V("profd_http_requests_total{route=\"get\",code=\"404\"}") == 2450,
	    "4900 concurrent requests all found their start");
	ok(V("profd_http_requests_total{route=\"services\",code=\"200\"}") == 1
	    && V("profd_http_requests_total{route=\"labels\",code=\"200\"}")
	    == -1, "a reused request pointer counts once, on its new route");
	ok(V("profd_uploads_total") == 2, "uploads_total counts stored ones");
	ok(V("profd_upload_received_bytes_total") == 1380,
	    "bytes received of all uploads, not other routes");
	ok(V("profd_uploads_rejected_total{reason=\"bad_request\"}") == 2 &&
	    V("profd_uploads_rejected_total{reason=\"too_large\"}") == 1 &&
	    V("profd_uploads_rejected_total{reason=\"busy\"}") == 1 &&
	    V("profd_uploads_rejected_total{reason=\"storage_error\"}") == 2,
	    "rejections by reason");
	ok(V("profd_merge_duration_seconds_count") == 2,
	    "merge histogram counts successful merges of both kinds");
	ok(V("profd_http_request_duration_seconds_count{route=\"upload\"}")
	    == 9, "latency counted per route");
	ok(V("profd_http_request_duration_seconds_count{route=\"other\"}") == 1,
	    "no latency for replies without a start");
	ok(V("profd_http_request_duration_seconds_bucket{route=\"healthz\","
	    "le=\"0.025\"}") == 0 &&
	    V("profd_http_request_duration_seconds_bucket{route=\"healthz\","
	    "le=\"0.05\"}") == 1 &&
	    V("profd_http_request_duration_seconds_sum{route=\"healthz\"}")
	    >= 0.03, "a 30 ms request lands in the 0.05 bucket");
	ok(hist_ok(text, "profd_http_request_duration_seconds_bucket{route="
	    "\"get\",", "profd_http_request_duration_seconds_count{route="
	    "\"get\"}"), "latency buckets cumulative, +Inf = count");
	ok(hist_ok(text, "profd_merge_duration_seconds_bucket{",
	    "profd_merge_duration_seconds_count"),
	    "merge buckets cumulative, +Inf = count");
	ok(V("profd_profiles_stored") == 42 && V("profd_stored_bytes") == 123456,
	    "store totals");
	ok(V("profd_retention_deleted_profiles_total") == 507 &&
	    V("profd_retention_sweeps_total") == 2 &&
	    V("profd_retention_sweep_failures_total") == 1,
	    "retention counters");
	ok(V("profd_merge_queue_depth") == 4 &&
	    V("profd_merge_jobs_inflight") == 6 &&
	    V("profd_merge_workers") == 2 && V("profd_merges_running") == 1 &&
	    V("profd_merges_max") == 2, "merge pool gauges");
	ok(V("profd_merges_refused_total") == 2, "refused merges counted");
	ok(V("profd_request_timeouts_total{state=\"running\"}") == 1 &&
	    V("profd_request_timeouts_total{state=\"queued\"}") == 2,
	    "request timeouts counted by state");
	ok(V("profd_retention_last_sweep_timestamp_seconds") > 1.6e9,
	    "last sweep time");
	ok(strstr(text, "profd_build_info{version=\"" PACKAGE_VERSION "\",")
	    != NULL, "build info");
	ok(V("profd_pacing_grants_total{type=\"cpu\"}") == 12 &&
	    V("profd_pacing_grants_total{type=\"heap\"}") == 3 &&
	    strstr(text, "profd_pacing_grants_total{type=\"mutex\"}") ==
	    NULL && V("profd_pacing_cancelled_total") == 2 &&
	    V("profd_pacing_polls_held") == 40 &&
	    V("profd_pacing_instances") == 41, "pacing figures");
#undef V
	ok(format_ok(text), "every line parses as text format 0.0.4");
	free(text);

	/* the parser itself refuses bad lines */
	{
		char bad1[] = "# TYPE x counter\nx{a=\"1\" 1\n";
		char bad2[] = "# TYPE x counter\nx 1 2\n";
		char bad3[] = "# TYPE x counter\ny 1\n";
		char good[] = "# TYPE x counter\nx{a=\"q\\\"\",b=\"\"} 1e-05\n";

		ok(!format_ok(bad1) && !format_ok(bad2) && !format_ok(bad3) &&
		    format_ok(good), "format checker refuses bad lines");
	}
	metrics_free(m);
	return tap_done();
}
