/*
 * UTF-8 checks (see utf8.h): one decoder of a sequence's length, used both
 * to validate and to clean.
 */
#include <string.h>

#include "common/utf8.h"

/* Length of the well-formed sequence at s[0..left) (1 to 4), or 0. */
size_t
utf8_seq_len(const unsigned char *s, size_t left)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, k;

	if (s[0] < 0x80)
		return 1;
	/* the lead byte gives the length and the second byte's range */
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		lo = s[0] == 0xe0 ? 0xa0 : lo;	/* overlong */
		hi = s[0] == 0xed ? 0x9f : hi;	/* surrogates */
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		lo = s[0] == 0xf0 ? 0x90 : lo;	/* overlong */
		hi = s[0] == 0xf4 ? 0x8f : hi;	/* above U+10FFFF */
	} else
		return 0;	/* continuation, 0xc0, 0xc1, 0xf5.. */
	if (left < n || s[1] < lo || s[1] > hi)
		return 0;
	for (k = 2; k < n; k++) {
		if (s[k] < 0x80 || s[k] > 0xbf)
			return 0;
	}
	return n;
}

/* True if s[0..len) is well-formed UTF-8 without NUL bytes. */
int
utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n;

	while (i < len) {
		if (p[i] == 0 || (n = utf8_seq_len(p + i, len - i)) == 0)
			return 0;
		i += n;
	}
	return 1;
}

/* Makes s valid UTF-8 in place: a byte starting no sequence becomes '?'. */
void
utf8_clean(char *s)
{
	unsigned char *p = (unsigned char *)s;
	size_t i = 0, len = strlen(s), n;

	while (i < len) {
		if ((n = utf8_seq_len(p + i, len - i)) == 0) {
			p[i] = '?';
			n = 1;
		}
		i += n;
	}
}
