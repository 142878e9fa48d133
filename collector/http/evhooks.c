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
 *    itself: it answers through the installed error callback;
 *  - evbuffer_readln, which evhttp calls for each line it reads: on the
 *    input buffer of a connection receiving a chunked body (the "chunk
 *    watches" below) it bounds the line at EVHOOKS_LINE_MAX bytes without
 *    rescanning the buffer on every read (libevent would buffer a line
 *    that never ends, rescanning it: unbounded memory, quadratic CPU),
 *    and it checks each chunk-size line whole (chunkline.c) and hands
 *    libevent only the size, so chunk extensions are accepted and junk is
 *    refused with 400.
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
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>

#include "collector/http/chunkline.h"
#include "collector/http/evhooks.h"
#include "common/log.h"
#include "common/xmalloc.h"

/* Where a refusal waits for the error hook; never sent. */
#define EVHOOKS_REFUSAL	"X-Profd-Refusal"

/* The longest chunk-size or trailer line of a chunked body, CRLF aside. */
#define EVHOOKS_LINE_MAX	4096

typedef struct evhttp_request *(*evhooks_new_fn)(
    void (*)(struct evhttp_request *, void *), void *);
typedef char *(*evhooks_readln_fn)(struct evbuffer *, size_t *,
    enum evbuffer_eol_style);

/* A connection's input buffer while it carries a chunked body. */
struct evhooks_watch {
	struct evbuffer		*in;
	struct evhttp_request	*req;
	int			 trailer;	/* past the last chunk */
};

static struct {
	struct evhttp		*http;	/* NULL: not installed */
	struct evhooks_ops	 ops;
	void			*arg;
	unsigned long		 heads;
	struct evhooks_watch	*watch;		/* chunk watches */
	size_t			 nwatch, capwatch;
} evhooks;

static evhooks_new_fn evhooks_real_new;
static evhooks_readln_fn evhooks_real_readln;
static pthread_once_t evhooks_once = PTHREAD_ONCE_INIT;

/* Finds libevent's function name, or aborts. */
static void *
evhooks_find(const char *name)
{
	void *fn = dlsym(RTLD_NEXT, name);

	if (fn == NULL) {
		log_error("evhooks: libevent's %s not found: %s", name,
		    dlerror());
		abort();
	}
	return fn;
}

/* Finds the libevent functions the interposed ones call. */
static void
evhooks_resolve(void)
{
	evhooks_real_new = (evhooks_new_fn)evhooks_find("evhttp_request_new");
	evhooks_real_readln = (evhooks_readln_fn)evhooks_find(
	    "evbuffer_readln");
}

/* The chunk watch of input buffer in, or NULL. */
static struct evhooks_watch *
evhooks_watch_find(const struct evbuffer *in)
{
	size_t i;

	for (i = 0; i < evhooks.nwatch; i++) {
		if (evhooks.watch[i].in == in)
			return &evhooks.watch[i];
	}
	return NULL;
}

/* Ends the chunk watch of input buffer in, if any. */
void
evhooks_unwatch_input(struct evbuffer *in)
{
	struct evhooks_watch *w = evhooks_watch_find(in);

	if (w != NULL)
		*w = evhooks.watch[--evhooks.nwatch];
}

/* The input buffer of req's connection, or NULL. */
static struct evbuffer *
evhooks_input(struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev;

	if (evcon == NULL ||
	    (bev = evhttp_connection_get_bufferevent(evcon)) == NULL)
		return NULL;
	return bufferevent_get_input(bev);
}

/* Refuses the watched request with 400 and makes line fail libevent's
 * parse (it holds at least 2 bytes). */
static char *
evhooks_line_refuse(struct evhooks_watch *w, char *line, size_t *n_read_out,
    const char *msg)
{
	struct evbuffer *in = w->in;

	if (n_read_out != NULL)
		*n_read_out = 1;
	evhooks_refuse(w->req, 400, msg);
	evhooks_unwatch_input(in);
	memcpy(line, "-", 2);		/* neither a size nor a header */
	return line;
}

/*
 * The next line of a watched chunked body: NULL until a line ends within
 * EVHOOKS_LINE_MAX bytes; a chunk-size line cut to its size.
 */
static char *
evhooks_chunk_readln(struct evhooks_watch *w, size_t *n_read_out,
    enum evbuffer_eol_style style)
{
	struct evbuffer *in = w->in;
	size_t len = evbuffer_get_length(in), n, digits;
	struct evbuffer_ptr end, at;
	enum chunkline_kind kind;
	char *line;

	evbuffer_ptr_set(in, &end, len < EVHOOKS_LINE_MAX + 2 ? len :
	    EVHOOKS_LINE_MAX + 2, EVBUFFER_PTR_SET);
	at = evbuffer_search_range(in, "\n", 1, NULL, &end);
	if (at.pos < 0 && len < EVHOOKS_LINE_MAX + 2)
		return NULL;			/* wait for the rest */
	if (at.pos < 0)
		return evhooks_line_refuse(w, xstrdup("--"), n_read_out, "a line of the "
		    "chunked body (chunk size or trailer) is longer than "
		    "4096 bytes");
	if ((line = evhooks_real_readln(in, &n, style)) == NULL)
		return NULL;
	if (n_read_out != NULL)
		*n_read_out = n;
	if (w->trailer) {
		if (n == 0)			/* the end of the trailers */
			evhooks_unwatch_input(in);
		return line;
	}
	if (n == 0)			/* the CRLF after a chunk's data */
		return line;
	if ((kind = chunkline_parse(line, n, &digits)) == CHUNKLINE_BAD)
		return evhooks_line_refuse(w, line, n_read_out, "malformed chunk-size "
		    "line in the chunked body");
	line[digits] = '\0';
	if (n_read_out != NULL)
		*n_read_out = digits;
	if (kind == CHUNKLINE_LAST)
		w->trailer = 1;
	return line;
}

/* Interposed: libevent's line reader, with the chunk watches. */
char *
evbuffer_readln(struct evbuffer *buf, size_t *n_read_out,
    enum evbuffer_eol_style style)
{
	struct evhooks_watch *w;

	pthread_once(&evhooks_once, evhooks_resolve);
	if (evhooks.nwatch == 0 || (w = evhooks_watch_find(buf)) == NULL)
		return evhooks_real_readln(buf, n_read_out, style);
	return evhooks_chunk_readln(w, n_read_out, style);
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
	struct evbuffer *buf, *in;
	char *msg = NULL, *body;
	int code;

	if (req->major == 0 && req->minor == 0) {	/* unparsed: 1.1 */
		req->major = 1;
		req->minor = 1;
	}
	reason = NULL;		/* libevent's is only the reason phrase */
	if (evhooks.nwatch > 0 && (in = evhooks_input(req)) != NULL)
		evhooks_unwatch_input(in);
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
	if (evhooks.http == http) {
		free(evhooks.watch);
		memset(&evhooks, 0, sizeof evhooks);
	}
}

/* Requests seen by the head hook. */
unsigned long
evhooks_heads(void)
{
	return evhooks.heads;
}

/* Asks for req's body in pieces, and watches its lines if chunked. */
void
evhooks_watch_body(struct evhttp_request *req)
{
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	const char *te = evhttp_find_header(in, "Transfer-Encoding");
	struct evbuffer *buf = evhooks_input(req);
	struct evhooks_watch *w;

	evhttp_request_set_chunked_cb(req, evhooks_chunk_cb);
	if (te == NULL || evutil_ascii_strcasecmp(te, "chunked") != 0 ||
	    buf == NULL)
		return;
	if ((w = evhooks_watch_find(buf)) == NULL) {
		if (evhooks.nwatch == evhooks.capwatch) {
			evhooks.capwatch = evhooks.capwatch * 2 + 8;
			evhooks.watch = xreallocarray(evhooks.watch,
			    evhooks.capwatch, sizeof *evhooks.watch);
		}
		w = &evhooks.watch[evhooks.nwatch++];
	}
	w->in = buf;
	w->req = req;
	w->trailer = 0;
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
