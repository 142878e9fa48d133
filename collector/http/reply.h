/*
 * Replies on the loop thread: the JSON envelope {"code":N,"body":...} or
 * {"code":N,"error":"..."}, and raw bytes.
 */
#ifndef PROFD_REPLY_H
#define PROFD_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct env;
struct evhttp_request;

/* Sends {"code":code,"body":body}; steals body. */
void	reply_json(struct env *, struct evhttp_request *, int code,
	    json_t *body);
/* Sends {"code":code,"error":message}; bytes of message that are not
 * UTF-8 are sent as '?'. */
void	reply_error(struct env *, struct evhttp_request *, int code,
	    const char *, ...) __attribute__((format(printf, 4, 5)));
/* Sends bytes (ownership of buf passes to the reply). */
void	reply_bytes(struct env *, struct evhttp_request *, uint8_t *buf,
	    size_t len, const char *content_type, const char *filename);
/*
 * Sends code with len static bytes at data (never freed; 0 for none) and
 * content_type (NULL: no Content-Type); other headers are the caller's.
 */
void	reply_static(struct env *, struct evhttp_request *, int code,
	    const void *data, size_t len, const char *content_type);
/* The reason phrase for a status code. */
const char *reply_reason(int code);

#endif
