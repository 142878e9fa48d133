/*
 * OTLP/HTTP profiles (POST /v1development/profiles): OpenTelemetry's
 * Alpha profiles signal, each profile stored as a pprof under its
 * resource's service.name.
 */
#ifndef PROFD_API_OTLP_H
#define PROFD_API_OTLP_H

struct env;
struct evhttp_request;
struct params;

/* POST /v1development/profiles */
void	api_otlp(struct env *, struct evhttp_request *, const struct params *);

#endif
