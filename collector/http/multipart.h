/*
 * multipart/form-data bodies (RFC 7578), as Pyroscope's SDKs post
 * profiles: the boundary from the Content-Type, and one part by name.
 */
#ifndef PROFD_MULTIPART_H
#define PROFD_MULTIPART_H

#include <stddef.h>
#include <stdint.h>

/*
 * The boundary of a Content-Type (may be NULL): 1 with *boundary (free)
 * for multipart/form-data, 0 for anything else, -1 with *cause when it is
 * multipart/form-data without a usable boundary.
 */
int	multipart_boundary(const char *content_type, char **boundary,
	    char **cause);
/*
 * The content of the part named name: 1 with *part (inside body) and
 * *partlen, 0 when no part has that name, -1 with *cause when the body is
 * not a well-formed multipart body of that boundary.
 */
int	multipart_find(const uint8_t *body, size_t len, const char *boundary,
	    const char *name, const uint8_t **part, size_t *partlen,
	    char **cause);

#endif
