/*
 * Unit tests of collector/http/chunkline.c: every form of chunk extension
 * RFC 9112 allows is accepted and the size's digits are found; the last
 * chunk is told apart; anything else on the line is refused.
 */
#include <stdio.h>
#include <string.h>

#include "collector/http/chunkline.h"
#include "test/lib/tap.h"

/* s with bytes outside printable ASCII as \xNN, for test names. */
static const char *
show(const char *s)
{
	static char buf[256];
	size_t n = 0;

	for (; *s != '\0' && n < sizeof buf - 5; s++) {
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			n += (size_t)snprintf(buf + n, sizeof buf - n, "\\x%02x",
			    (unsigned char)*s);
		else
			buf[n++] = *s;
	}
	buf[n] = '\0';
	return buf;
}

/* Parses s, returning its kind and the digits' length in *digits. */
static enum chunkline_kind
parse(const char *s, size_t *digits)
{
	*digits = (size_t)-1;
	return chunkline_parse(s, strlen(s), digits);
}

/* Lines that are chunk-size lines, with where their size ends. */
static void
test_good(void)
{
	static const struct {
		const char		*line;
		enum chunkline_kind	 kind;
		size_t			 digits;
	} good[] = {
		{ "5", CHUNKLINE_DATA, 1 },
		{ "1a2B", CHUNKLINE_DATA, 4 },
		{ "0", CHUNKLINE_LAST, 1 },
		{ "0000", CHUNKLINE_LAST, 4 },
		{ "00010", CHUNKLINE_DATA, 5 },
		{ "5 ", CHUNKLINE_DATA, 1 },
		{ "5;a", CHUNKLINE_DATA, 1 },
		{ "5;name=value", CHUNKLINE_DATA, 1 },
		{ "5 ; a = b ", CHUNKLINE_DATA, 1 },
		{ "5\t;\ta\t=\tb", CHUNKLINE_DATA, 1 },
		{ "5;a;b=1;c=\"\"", CHUNKLINE_DATA, 1 },
		{ "5;q=\"semi;colon\"", CHUNKLINE_DATA, 1 },
		{ "5;q=\"esc\\\"aped\\\\\"", CHUNKLINE_DATA, 1 },
		{ "5;q=\"tab\tin\"", CHUNKLINE_DATA, 1 },
		{ "5;q=\"\x80\xff\"", CHUNKLINE_DATA, 1 },
		{ "5;!#$%&'*+-.^_`|~=x", CHUNKLINE_DATA, 1 },
		{ "0;last=yes", CHUNKLINE_LAST, 1 },
		{ "ffffffffffffffffffff", CHUNKLINE_DATA, 20 },
	};
	size_t i, d;

	for (i = 0; i < sizeof good / sizeof good[0]; i++) {
		ok(parse(good[i].line, &d) == good[i].kind &&
		    d == good[i].digits, "accepted: '%s'", show(good[i].line));
	}
}

/* Lines that are not. */
static void
test_bad(void)
{
	static const char *bad[] = {
		"", " 5", "x5", "-5", "+5", "0x5", "5 junk", "5,6", "5;",
		"5;=v", "5;a=", "5;a= ", "5;a=\"open", "5;a=\"esc\\",
		"5;a=b c", "5;a=b;", "5;a=\"ctl\001\"", "5;a=\"del\x7f\"",
		"5;a\x01", "5;a=b\r", "5;a=\"x\"y", "5;a==b", "5 5",
		"5;a=(b)", "5;a=b@c",
	};
	size_t i, d;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ok(parse(bad[i], &d) == CHUNKLINE_BAD, "refused: '%s'",
		    show(bad[i]));
}

/* The length counts, not the NUL: bytes past len are not read. */
static void
test_length(void)
{
	size_t d;

	ok(chunkline_parse("5;a=b junk", 5, &d) == CHUNKLINE_DATA && d == 1,
	    "only len bytes are parsed");
	ok(chunkline_parse("5\0;x", 4, &d) == CHUNKLINE_BAD,
	    "a NUL inside the line is refused");
}

int
main(void)
{
	test_good();
	test_bad();
	test_length();
	return tap_done();
}
