/*
 * /symbolz (see api_symbolz.h). Go's net/http/pprof answers a GET with
 * "num_symbols: N" and a POST of "0xADDR+0xADDR..." with a line
 * "0xADDR name" per address it knows; pprof reads only those lines and
 * fails on any status but 200. profd knows none: both get 200 with
 * "num_symbols: 0" and no symbol line. The answer holds no data, so no
 * token is needed (pprof sends none); the body is not read (the router
 * holds it to --max-body like any other).
 */
#include <event2/http.h>

#include "collector/api/api_symbolz.h"
#include "collector/http/reply.h"

static const char api_symbolz_none[] = "num_symbols: 0\n";

/* GET and POST /symbolz */
void
api_symbolz(struct env *env, struct evhttp_request *req,
    const struct params *p)
{
	(void)p;
	reply_static(env, req, 200, api_symbolz_none,
	    sizeof api_symbolz_none - 1, "text/plain; charset=utf-8");
}
