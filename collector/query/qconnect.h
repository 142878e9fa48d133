/*
 * Connect's unary RPC protocol (connectrpc.com/docs/protocol) for
 * Pyroscope's query API: a request's encoding from its Content-Type
 * (application/proto or application/json), its body decoded into the
 * method's message on a worker (gunzipped first when Content-Encoding
 * says gzip, bounded), and the answer encoded the same way. Errors are
 * the job's usual httpjob_error codes; collector/http/reply.c writes
 * them in Connect's shape for these routes (collector/http/connerr.c).
 */
#ifndef PROFD_QCONNECT_H
#define PROFD_QCONNECT_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

struct env;
struct evbuffer;
struct evhttp_request;
struct httpjob;

/* The route's prefix; the method's name follows it. */
#define QCONNECT_PREFIX		"/querier.v1.QuerierService/"
/* A request body, compressed or not, and inflated. */
#define QCONNECT_MAX_BODY	(1024 * 1024)
/* The most a JSON answer may take (a merged profile as JSON). */
#define QCONNECT_MAX_JSON	((size_t)512 * 1024 * 1024)

enum qconnect_enc {
	QCONNECT_PROTO,
	QCONNECT_JSON,
};

/* One call: what the loop took from the request. */
struct qconnect_call {
	enum qconnect_enc	 enc;
	int			 gzip;
	struct evbuffer		*body;
};

/*
 * Loop: checks the request (POST, a Content-Type Connect's unary
 * protocol uses, the body's size) and takes its body into c. 0, or -1
 * with the request answered (415, 413, 400).
 */
int	qconnect_begin(struct env *, struct evhttp_request *,
	    struct qconnect_call *c);
/* Frees what a call holds. */
void	qconnect_clear(struct qconnect_call *c);
/*
 * Worker: decodes the body as a d message. 0 with *out (free with
 * protobuf_c_message_free_unpacked(*out, NULL)), or -1 with the job
 * answered (400: invalid_argument).
 */
int	qconnect_decode(struct httpjob *, const struct qconnect_call *c,
	    const ProtobufCMessageDescriptor *d, ProtobufCMessage **out);
/* Worker: m, in the call's encoding, is the job's answer. */
void	qconnect_reply(struct httpjob *, const struct qconnect_call *c,
	    const ProtobufCMessage *m);
/*
 * Worker: raw (packed protobuf of a d message, malloc'd; taken) is the
 * answer: as it is for application/proto, else decoded and written as
 * JSON.
 */
void	qconnect_reply_packed(struct httpjob *, const struct qconnect_call *c,
	    const ProtobufCMessageDescriptor *d, uint8_t *raw, size_t len);

#endif
