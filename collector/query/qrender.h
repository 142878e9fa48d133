/*
 * Pyroscope's legacy render API (GET /pyroscope/render and
 * /pyroscope/render-diff), flamebearer JSON for Grafana's Profiles
 * Drilldown app.
 */
#ifndef PROFD_QRENDER_H
#define PROFD_QRENDER_H

struct env;
struct evhttp_request;
struct params;

void	qrender_render(struct env *, struct evhttp_request *,
	    const struct params *);
void	qrender_diff(struct env *, struct evhttp_request *,
	    const struct params *);

#endif
