/*
 * The chunk-size line of HTTP/1.1 chunked framing (RFC 9112, 7.1):
 *
 *	chunk-size [ chunk-ext ]
 *	chunk-ext  = *( BWS ";" BWS name [ BWS "=" BWS ( token / quoted-string ) ] )
 *
 * libevent 2.1 reads the size with strtoll and rejects anything after it
 * but a space, so a chunk extension (which recipients must ignore) failed
 * the upload. chunkline_parse checks the whole line and tells where the
 * size ends; evhooks.c hands libevent only the size. Pure: no libevent.
 */
#ifndef PROFD_CHUNKLINE_H
#define PROFD_CHUNKLINE_H

#include <stddef.h>

enum chunkline_kind {
	CHUNKLINE_BAD = -1,	/* not a chunk-size line */
	CHUNKLINE_DATA = 0,	/* a chunk of data follows */
	CHUNKLINE_LAST = 1	/* size 0: the last chunk, trailers follow */
};

/*
 * Parses the len bytes of line (without its CRLF). On success sets *digits
 * to the length of the hexadecimal size at its start.
 */
enum chunkline_kind chunkline_parse(const char *line, size_t len,
	    size_t *digits);

#endif
