/*
 * Connect's error codes from profd's HTTP statuses (see connerr.h). 413
 * (a limit: --max-merge-profiles, --merge-memory, a body's size) is
 * resource_exhausted, sent as 429; 422 (inputs that cannot be merged)
 * failed_precondition; 405 and 501 unimplemented; 415 keeps its status,
 * as Connect's protocol asks for an unsupported Content-Type.
 */
#include <string.h>

#include <event2/http.h>

#include "collector/http/connerr.h"

/* The output header that marks a Connect call until its reply. */
#define CONNERR_MARK	"X-Profd-Connect-Call"

/* The Connect service prefixes profd serves. */
static const char *const connerr_prefixes[] = {
	"/querier.v1.QuerierService/",
};

/* Whether a request path is a Connect route. */
int
connerr_is_connect(const char *uri)
{
	size_t i;

	if (uri == NULL)
		return 0;
	for (i = 0; i < sizeof connerr_prefixes / sizeof connerr_prefixes[0];
	    i++)
		if (strncmp(uri, connerr_prefixes[i],
		    strlen(connerr_prefixes[i])) == 0)
			return 1;
	return 0;
}

/* Marks req as a Connect call when its path is one. */
void
connerr_mark(struct evhttp_request *req)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);

	if (connerr_is_connect(evhttp_request_get_uri(req)) &&
	    evhttp_find_header(out, CONNERR_MARK) == NULL)
		evhttp_add_header(out, CONNERR_MARK, "1");
}

/* Whether req is a Connect call. */
int
connerr_request(struct evhttp_request *req)
{
	return connerr_is_connect(evhttp_request_get_uri(req)) ||
	    evhttp_find_header(evhttp_request_get_output_headers(req),
	    CONNERR_MARK) != NULL;
}

/* Takes the mark off. */
void
connerr_unmark(struct evhttp_request *req)
{
	evhttp_remove_header(evhttp_request_get_output_headers(req),
	    CONNERR_MARK);
}

/* The Connect code for an HTTP status. */
const char *
connerr_code(int s)
{
	switch (s) {
	case 400: case 415: return "invalid_argument";
	case 401: return "unauthenticated";
	case 403: return "permission_denied";
	case 404: return "not_found";
	case 405: case 501: return "unimplemented";
	case 408: case 504: return "deadline_exceeded";
	case 409: return "aborted";
	case 413: case 429: case 507: return "resource_exhausted";
	case 422: return "failed_precondition";
	case 499: return "canceled";
	case 503: return "unavailable";
	}
	return s >= 400 && s < 500 ? "invalid_argument" : "internal";
}

/* The HTTP status Connect sends for the code of status s. */
int
connerr_status(int s)
{
	const char *c = connerr_code(s);

	if (s == 415)
		return 415;
	if (strcmp(c, "invalid_argument") == 0 ||
	    strcmp(c, "failed_precondition") == 0)
		return 400;
	if (strcmp(c, "unauthenticated") == 0)
		return 401;
	if (strcmp(c, "permission_denied") == 0)
		return 403;
	if (strcmp(c, "not_found") == 0)
		return 404;
	if (strcmp(c, "aborted") == 0)
		return 409;
	if (strcmp(c, "resource_exhausted") == 0)
		return 429;
	if (strcmp(c, "canceled") == 0)
		return 499;
	if (strcmp(c, "unimplemented") == 0)
		return 501;
	if (strcmp(c, "unavailable") == 0)
		return 503;
	if (strcmp(c, "deadline_exceeded") == 0)
		return 504;
	return 500;
}
