/*
 * The chunk-size line parser of chunkline.h: the size in hexadecimal, then
 * any number of extensions (name, optional value as a token or a quoted
 * string), with optional blanks around ";" and "=" and at the end. Nothing
 * else is accepted: a line libevent would have read as a size despite
 * trailing junk ("5 junk") is refused here.
 */
#include <string.h>

#include "collector/http/chunkline.h"

/* A token character (RFC 9110, 5.6.2). */
static int
chunkline_tchar(unsigned char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z'))
		return 1;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* A hexadecimal digit. */
static int
chunkline_hex(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	    (c >= 'A' && c <= 'F');
}

/* Skips blanks (BWS) from i. */
static size_t
chunkline_blanks(const char *s, size_t len, size_t i)
{
	while (i < len && (s[i] == ' ' || s[i] == '\t'))
		i++;
	return i;
}

/* Skips a token at i: its end, or i if there is none. */
static size_t
chunkline_token(const char *s, size_t len, size_t i)
{
	while (i < len && chunkline_tchar((unsigned char)s[i]))
		i++;
	return i;
}

/* Skips a quoted string at i: its end, or 0 if it is not one. */
static size_t
chunkline_quoted(const char *s, size_t len, size_t i)
{
	unsigned char c;

	if (i >= len || s[i] != '"')
		return 0;
	for (i++; i < len; i++) {
		c = (unsigned char)s[i];
		if (c == '"')
			return i + 1;
		if (c == '\\') {		/* quoted-pair */
			if (++i >= len)
				return 0;
			c = (unsigned char)s[i];
		}
		if (c != '\t' && (c < 0x20 || c == 0x7f))
			return 0;	/* no controls, quoted or not */
	}
	return 0;			/* unterminated */
}

/* Parses a chunk-size line; see chunkline.h. */
enum chunkline_kind
chunkline_parse(const char *line, size_t len, size_t *digits)
{
	size_t i = 0, j, nonzero = 0;

	while (i < len && chunkline_hex((unsigned char)line[i])) {
		if (line[i] != '0')
			nonzero = 1;
		i++;
	}
	if (i == 0)
		return CHUNKLINE_BAD;
	*digits = i;
	for (;;) {
		i = chunkline_blanks(line, len, i);
		if (i == len)
			break;
		if (line[i] != ';')
			return CHUNKLINE_BAD;
		i = chunkline_blanks(line, len, i + 1);
		if ((j = chunkline_token(line, len, i)) == i)
			return CHUNKLINE_BAD;		/* no name */
		i = chunkline_blanks(line, len, j);
		if (i == len || line[i] != '=')
			continue;			/* no value */
		i = chunkline_blanks(line, len, i + 1);
		if ((j = chunkline_token(line, len, i)) == i &&
		    (j = chunkline_quoted(line, len, i)) == 0)
			return CHUNKLINE_BAD;		/* no value after = */
		i = j;
	}
	return nonzero ? CHUNKLINE_DATA : CHUNKLINE_LAST;
}
