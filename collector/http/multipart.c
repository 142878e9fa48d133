/*
 * multipart/form-data (RFC 7578, RFC 2046 5.1): a body of parts, each
 * after a line "--BOUNDARY", with headers, a blank line and content that
 * runs to the CRLF before the next boundary line; "--BOUNDARY--" ends
 * it. Only what an upload needs: find one part by the name in its
 * Content-Disposition, without copying. Everything is checked against
 * the body's length; a body that breaks the format is refused, never
 * guessed at.
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "collector/http/multipart.h"
#include "common/xmalloc.h"

#define MULTIPART_MAX_BOUNDARY	70	/* RFC 2046 */
#define MULTIPART_MAX_HEADERS	8192	/* a part's header block */

/* The boundary of a Content-Type; see the header. */
int
multipart_boundary(const char *ct, char **boundary, char **cause)
{
	const char *p, *b, *e;

	*boundary = NULL;
	if (ct == NULL)
		return 0;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (strncasecmp(ct, "multipart/form-data", 19) != 0 ||
	    (ct[19] != '\0' && ct[19] != ';' && ct[19] != ' '))
		return 0;
	for (p = ct + 19; (p = strchr(p, ';')) != NULL; p++) {
		for (b = p + 1; *b == ' ' || *b == '\t'; b++)
			;
		if (strncasecmp(b, "boundary=", 9) != 0)
			continue;
		b += 9;
		if (*b == '"') {
			if ((e = strchr(++b, '"')) == NULL)
				return xcause(cause, "Content-Type: the "
				    "boundary's quote is not closed");
		} else
			for (e = b; *e != '\0' && *e != ';' && *e != ' ' &&
			    *e != '\t'; e++)
				;
		if (e == b || e - b > MULTIPART_MAX_BOUNDARY)
			return xcause(cause, "Content-Type: the boundary "
			    "must be 1 to %d characters",
			    MULTIPART_MAX_BOUNDARY);
		*boundary = xstrndup(b, e - b);
		return 1;
	}
	return xcause(cause, "Content-Type: multipart/form-data without a "
	    "boundary");
}

/* First occurrence of needle in hay[0..n), or NULL. */
static const uint8_t *
multipart_search(const uint8_t *hay, size_t n, const char *needle,
    size_t nlen)
{
	const uint8_t *p, *end = hay + n;

	if (nlen > n)
		return NULL;
	for (p = hay; (size_t)(end - p) >= nlen; p++) {
		p = memchr(p, needle[0], (size_t)(end - p) - nlen + 1);
		if (p == NULL)
			return NULL;
		if (memcmp(p, needle, nlen) == 0)
			return p;
	}
	return NULL;
}

/*
 * The next delimiter ("\r\n--BOUNDARY" then "--", or blanks and CRLF) in
 * p[0..n), or NULL: content may hold the delimiter's bytes followed by
 * anything else ("--BOUNDARYX").
 */
static const uint8_t *
multipart_next(const uint8_t *p, size_t n, const char *delim, size_t dlen)
{
	const uint8_t *end = p + n, *q, *r;

	while ((q = multipart_search(p, (size_t)(end - p), delim, dlen)) !=
	    NULL) {
		r = q + dlen;
		if (end - r >= 2 && r[0] == '-' && r[1] == '-')
			return q;
		while (r < end && (*r == ' ' || *r == '\t'))
			r++;
		if (end - r >= 2 && r[0] == '\r' && r[1] == '\n')
			return q;
		p = q + 1;
	}
	return NULL;
}

/*
 * True if the header block h[0..n) has a Content-Disposition whose name
 * parameter is name.
 */
static int
multipart_named(const uint8_t *h, size_t n, const char *name)
{
	const char *s = (const char *)h, *end = s + n, *line, *eol, *p;
	size_t nlen = strlen(name);

	for (line = s; line < end; line = eol + 2) {
		eol = (const char *)multipart_search((const uint8_t *)line,
		    end - line, "\r\n", 2);
		if (eol == NULL)
			eol = end;
		if (eol - line < 20 || strncasecmp(line,
		    "Content-Disposition:", 20) != 0)
			continue;
		for (p = line + 20; p < eol; p++) {
			if (*p != ';')
				continue;
			do
				p++;
			while (p < eol && (*p == ' ' || *p == '\t'));
			if (eol - p < 5 || strncasecmp(p, "name=", 5) != 0)
				continue;
			p += 5;
			if (p < eol && *p == '"')
				return eol - p >= (ptrdiff_t)nlen + 2 &&
				    memcmp(p + 1, name, nlen) == 0 &&
				    p[1 + nlen] == '"';
			return eol - p >= (ptrdiff_t)nlen &&
			    memcmp(p, name, nlen) == 0 && (p + nlen == eol ||
			    p[nlen] == ';' || p[nlen] == ' ');
		}
	}
	return 0;
}

/* Finds a part by name; see the header. */
int
multipart_find(const uint8_t *body, size_t len, const char *boundary,
    const char *name, const uint8_t **part, size_t *partlen, char **cause)
{
	size_t blen = strlen(boundary), dlen = blen + 4;
	char delim[MULTIPART_MAX_BOUNDARY + 5];
	const uint8_t *p, *end = body + len, *hdr, *hend, *next;

	*part = NULL;
	*partlen = 0;
	if (blen == 0 || blen > MULTIPART_MAX_BOUNDARY)
		return xcause(cause, "multipart: bad boundary");
	memcpy(delim, "\r\n--", 4);
	memcpy(delim + 4, boundary, blen);
	/* The first boundary line may open the body (no CRLF before). */
	if (len >= dlen - 2 && memcmp(body, delim + 2, dlen - 2) == 0)
		p = body + dlen - 2;
	else if ((p = multipart_next(body, len, delim, dlen)) != NULL)
		p += dlen;
	else
		return xcause(cause, "multipart: no boundary line "
		    "\"--%.70s\" in the body", boundary);
	for (;;) {
		/* p is just past a boundary: "--" ends, else its line ends. */
		if (end - p >= 2 && p[0] == '-' && p[1] == '-')
			return 0;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (end - p < 2 || p[0] != '\r' || p[1] != '\n')
			return xcause(cause, "multipart: a boundary line "
			    "not followed by CRLF");
		hdr = p + 2;
		if (end - hdr >= 2 && hdr[0] == '\r' && hdr[1] == '\n')
			hend = hdr;		/* a part without headers */
		else if ((hend = multipart_search(hdr, (size_t)(end - hdr) <
		    MULTIPART_MAX_HEADERS ? (size_t)(end - hdr) :
		    MULTIPART_MAX_HEADERS, "\r\n\r\n", 4)) == NULL)
			return xcause(cause, "multipart: a part's headers do "
			    "not end (with a blank line) within %d bytes",
			    MULTIPART_MAX_HEADERS);
		else
			hend += 2;
		next = multipart_next(hend + 2, end - hend - 2, delim, dlen);
		if (next == NULL)
			return xcause(cause, "multipart: a part is not closed "
			    "by a boundary line");
		if (multipart_named(hdr, hend - hdr, name)) {
			*part = hend + 2;
			*partlen = (size_t)(next - *part);
			return 1;
		}
		p = next + dlen;
	}
}
