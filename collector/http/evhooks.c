/*
 * The libevent hooks of evhooks.h. libevent 2.1 gives no callback before a
 * request's body is read and writes its own HTML error pages, so this file
 * defines two of libevent's exported functions in the executable:
 *
 *  - evhttp_request_new, which evhttp calls for every request it is about
 *    to read: it calls the real one (found with dlsym RTLD_NEXT) and, for
 *    the installed server's requests, sets libevent's header callback,
 *    which evhttp_read_header calls once the headers are parsed;
 *  - evhttp_send_error, which evhttp calls for every request it fails
 *    itself: it answers through the installed error callback.
 *
 * The dynamic linker binds libevent's own calls to these (libevent calls
 * its exported functions through its PLT: ELF symbol interposition), which
 * test/e2e/http_early.sh checks end to end. A refusal is kept in the
 * request's output headers under EVHOOKS_REFUSAL (freed with the request,
 * so nothing outlives it) and forces the body read to fail by lowering the
 * connection's body limit to 0: libevent then stops reading and calls
 * evhttp_send_error, and the error callback gets the refusal instead.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>

#include "collector/http/evhooks.h"
#include "common/log.h"
#include "common/xmalloc.h"

/* Where a refusal waits for the error hook; never sent. */
#define EVHOOKS_REFUSAL	"X-Profd-Refusal"

typedef struct evhttp_request *(*evhooks_new_fn)(
    void (*)(struct evhttp_request *, void *), void *);

static struct {
	struct evhttp		*http;	/* NULL: not installed */
	struct evhooks_ops	 ops;
	void			*arg;
	unsigned long		 heads;
} evhooks;

static evhooks_new_fn evhooks_real_new;
static pthread_once_t evhooks_once = PTHREAD_ONCE_INIT;

/* Finds libevent's evhttp_request_new. */
static void
evhooks_resolve(void)
{
	evhooks_real_new = (evhooks_new_fn)dlsym(RTLD_NEXT,
	    "evhttp_request_new");
	if (evhooks_real_new == NULL) {
		log_error("evhooks: libevent's evhttp_request_new not found: "
		    "%s", dlerror());
		abort();
	}
}

/* libevent's header callback: the headers are in, the body is not. */
static int
evhooks_header_cb(struct evhttp_request *req, void *arg)
{
	if (evhooks.http == NULL || arg != evhooks.http ||
	    evhooks.ops.head == NULL)
		return 0;
	evhooks.heads++;
	return evhooks.ops.head(req, evhooks.arg);
}

/* libevent's chunk callback: hands a piece of the body over. */
static void
evhooks_chunk_cb(struct evhttp_request *req, void *arg)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);

	if (evhooks.http != NULL && arg == evhooks.http &&
	    evhooks.ops.body != NULL)
		evhooks.ops.body(req, in, evhooks.arg);
}

/* Interposed: libevent's constructor, plus the header callback. */
struct evhttp_request *
evhttp_request_new(void (*cb)(struct evhttp_request *, void *), void *arg)
{
	struct evhttp_request *req;

	pthread_once(&evhooks_once, evhooks_resolve);
	req = evhooks_real_new(cb, arg);
	if (req != NULL && evhooks.http != NULL && arg == evhooks.http)
		evhttp_request_set_header_cb(req, evhooks_header_cb);
	return req;
}

/* Interposed: libevent's error page, answered by the error callback. */
void
evhttp_send_error(struct evhttp_request *req, int error, const char *reason)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);
	struct evbuffer *buf;
	char *msg = NULL, *body;
	int code;

	if (req->major == 0 && req->minor == 0) {	/* unparsed: 1.1 */
		req->major = 1;
		req->minor = 1;
	}
	reason = NULL;		/* libevent's is only the reason phrase */
	if ((code = evhooks_take_refusal(req, &msg)) != 0) {
		error = code;
		reason = msg;
	}
	evhttp_remove_header(out, "Connection");
	evhttp_add_header(out, "Connection", "close");
	if (evhooks.http != NULL && evhooks.ops.error != NULL)
		evhooks.ops.error(req, error, reason, evhooks.arg);
	else {
		buf = evbuffer_new();
		body = xasprintf("{\"code\":%d,\"error\":\"%d\"}", error, error);
		evbuffer_add(buf, body, strlen(body));
		evhttp_remove_header(out, "Content-Type");
		evhttp_add_header(out, "Content-Type", "application/json");
		evhttp_send_reply(req, error, "Error", buf);
		evbuffer_free(buf);
		free(body);
	}
	free(msg);
}

/* Routes the requests of http through ops. */
void
evhooks_install(struct evhttp *http, const struct evhooks_ops *ops,
    void *arg)
{
	pthread_once(&evhooks_once, evhooks_resolve);
	evhooks.http = http;
	evhooks.ops = *ops;
	evhooks.arg = arg;
}

/* Stops the hooks. */
void
evhooks_remove(struct evhttp *http)
{
	if (evhooks.http == http)
		memset(&evhooks, 0, sizeof evhooks);
}

/* Requests seen by the head hook. */
unsigned long
evhooks_heads(void)
{
	return evhooks.heads;
}

/* Asks for req's body in pieces. */
void
evhooks_watch_body(struct evhttp_request *req)
{
	evhttp_request_set_chunked_cb(req, evhooks_chunk_cb);
}

/* Stores a refusal and makes libevent stop reading req's body. */
void
evhooks_refuse(struct evhttp_request *req, int code, const char *msg)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	char *v = xasprintf("%d %s", code, msg), *p;

	for (p = v; *p != '\0'; p++) {	/* a header value: one line */
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	}
	evhttp_remove_header(out, EVHOOKS_REFUSAL);
	evhttp_add_header(out, EVHOOKS_REFUSAL, v);
	free(v);
	if (evcon != NULL)
		evhttp_connection_set_max_body_size(evcon, 0);
	/*
	 * Before the body: a chunked body would only fail at its first chunk
	 * (which may never come), while a Content-Length over the limit
	 * fails at once, so turn one into the other. The connection closes
	 * after the answer, so nothing reads the body either way.
	 */
	if (!req->chunked && evhttp_find_header(in, "Transfer-Encoding")) {
		evhttp_remove_header(in, "Transfer-Encoding");
		evhttp_remove_header(in, "Content-Length");
		evhttp_add_header(in, "Content-Length", "1");
	}
}

/* Takes the refusal stored with req: its code (0: none) and message. */
int
evhooks_take_refusal(struct evhttp_request *req, char **msg)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);
	const char *v = evhttp_find_header(out, EVHOOKS_REFUSAL);
	char *end;
	long code;

	*msg = NULL;
	if (v == NULL)
		return 0;
	code = strtol(v, &end, 10);
	*msg = xstrdup(*end == ' ' ? end + 1 : end);
	evhttp_remove_header(out, EVHOOKS_REFUSAL);
	return code >= 100 && code <= 599 ? (int)code : 500;
}
