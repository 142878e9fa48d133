/*
 * The JSON tokenizer of proto/pbjson_dec.c (see pbjson_lex.h). It never
 * reads past the text's end (the text need not be NUL-terminated) and
 * allocates nothing: a string is checked when read (its decoded length
 * counted) and copied by the caller into memory the caller allocated;
 * skipping keeps its nesting in a bit stack.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "proto/pbjson_lex.h"

/* Starts reading text; see pbjson_lex.h. */
void
pbjson_lex_init(struct pbjson_lex *lx, const char *text, size_t len)
{
	memset(lx, 0, sizeof *lx);
	lx->text = lx->p = lx->line_start = text;
	lx->end = text + len;
	lx->line = 1;
	lx->tline = 1;
	lx->tcol = 1;
}

/* Records a syntax error at byte at (of the current line): -1. */
static int
pbjson_lex_fail_at(struct pbjson_lex *lx, const char *at, const char *why)
{
	snprintf(lx->err, sizeof lx->err, "bad JSON at line %d, column %d: %s",
	    lx->line, (int)(at - lx->line_start) + 1, why);
	return -1;
}

/* Records a syntax error at the current token; see pbjson_lex.h. */
int
pbjson_lex_fail(struct pbjson_lex *lx, const char *why)
{
	snprintf(lx->err, sizeof lx->err, "bad JSON at line %d, column %d: %s",
	    lx->tline, lx->tcol, why);
	return -1;
}

/* The value of 4 hex digits at s (before e), or -1. */
static long
pbjson_lex_hex4(const char *s, const char *e)
{
	long v = 0;
	int i, c;

	if (e - s < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		c = (unsigned char)s[i];
		if (c >= '0' && c <= '9')
			c -= '0';
		else if ((c | 32) >= 'a' && (c | 32) <= 'f')
			c = (c | 32) - 'a' + 10;
		else
			return -1;
		v = v << 4 | c;
	}
	return v;
}

/* Bytes of valid UTF-8 at s; see pbjson_lex.h. */
size_t
pbjson_lex_utf8(const unsigned char *s, const unsigned char *e)
{
	uint32_t cp;
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		cp = s[0] & 0x07;
	} else
		return 0;
	if ((size_t)(e - s) < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return n;
}

/*
 * Reads a \u escape at s (past the backslash and the u) into *cp,
 * joining a surrogate pair; returns the bytes read, or 0 with err.
 */
static size_t
pbjson_lex_unicode(struct pbjson_lex *lx, const char *s, uint32_t *cp)
{
	const char *why = NULL;
	long hi, lo = 0;

	if ((hi = pbjson_lex_hex4(s, lx->end)) < 0)
		why = "bad \\u escape";
	else if (hi == 0)
		why = "\\u0000 in a string";
	else if (hi >= 0xdc00 && hi <= 0xdfff)
		why = "lone low surrogate";
	else if (hi >= 0xd800 && hi <= 0xdbff && (lx->end - s < 10 ||
	    s[4] != '\\' || s[5] != 'u' || (lo = pbjson_lex_hex4(s + 6,
	    lx->end)) < 0xdc00 || lo > 0xdfff))
		why = "lone high surrogate";
	if (why != NULL) {
		pbjson_lex_fail_at(lx, s - 2, why);
		return 0;
	}
	if (hi < 0xd800 || hi > 0xdbff) {
		*cp = (uint32_t)hi;
		return 4;
	}
	*cp = 0x10000 + (((uint32_t)hi - 0xd800) << 10) + ((uint32_t)lo -
	    0xdc00);
	return 10;
}

/* Bytes of code point cp in UTF-8. */
static size_t
pbjson_lex_cplen(uint32_t cp)
{
	return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/* Reads a string token (p at its quote): 0, or -1 with err. */
static int
pbjson_lex_scan_string(struct pbjson_lex *lx)
{
	const char *s = lx->p + 1;
	size_t n = 0, k;
	uint32_t cp;

	lx->esc = 0;
	while (s < lx->end) {
		unsigned char c = (unsigned char)*s;

		if (c == '"') {
			lx->tok = PBJSON_LEX_STRING;
			lx->tp = lx->p + 1;
			lx->tlen = (size_t)(s - lx->tp);
			lx->slen = n;
			lx->p = s + 1;
			return 0;
		}
		if (c < 0x20)
			return pbjson_lex_fail_at(lx, s, "control character in "
			    "a string");
		if (c == '\\') {
			lx->esc = 1;
			if (s + 1 == lx->end)
				break;
			if (strchr("\"\\/bfnrt", s[1]) != NULL && s[1] != '\0') {
				n++;
				s += 2;
				continue;
			}
			if (s[1] != 'u')
				return pbjson_lex_fail_at(lx, s, "bad escape");
			if ((k = pbjson_lex_unicode(lx, s + 2, &cp)) == 0)
				return -1;
			n += pbjson_lex_cplen(cp);
			s += 2 + k;
			continue;
		}
		if ((k = pbjson_lex_utf8((const unsigned char *)s,
		    (const unsigned char *)lx->end)) == 0)
			return pbjson_lex_fail_at(lx, s, "not UTF-8");
		n += k;
		s += k;
	}
	return pbjson_lex_fail_at(lx, lx->p, "unterminated string");
}

/* Bytes of the JSON number at s (before e), or 0 if there is none. */
static size_t
pbjson_lex_number_len(const char *s, const char *e)
{
	const char *p = s, *d;

	if (p < e && *p == '-')
		p++;
	if (p < e && *p == '0')
		p++;
	else if (p < e && *p >= '1' && *p <= '9')
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	else
		return 0;
	if (p < e && *p == '.') {
		d = ++p;
		while (p < e && *p >= '0' && *p <= '9')
			p++;
		if (p == d)
			return 0;
	}
	if (p < e && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < e && (*p == '+' || *p == '-'))
			p++;
		d = p;
		while (p < e && *p >= '0' && *p <= '9')
			p++;
		if (p == d)
			return 0;
	}
	return (size_t)(p - s);
}

/* Whether s is a JSON number; see pbjson_lex.h. */
int
pbjson_lex_is_number(const char *s, size_t len)
{
	return len > 0 && pbjson_lex_number_len(s, s + len) == len;
}

/* Whether c may not follow a number or a literal. */
static int
pbjson_lex_is_word(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z') || c == '.' || c == '_' || c == '+' ||
	    c == '-';
}

/* Reads a number or a literal (true, false, null) at p. */
static int
pbjson_lex_word(struct pbjson_lex *lx)
{
	static const struct {
		const char		*s;
		enum pbjson_lex_tok	 tok;
	} lit[] = { { "true", PBJSON_LEX_TRUE }, { "false", PBJSON_LEX_FALSE },
	    { "null", PBJSON_LEX_NULL } };
	size_t n, i, left = (size_t)(lx->end - lx->p);

	if ((n = pbjson_lex_number_len(lx->p, lx->end)) > 0)
		lx->tok = PBJSON_LEX_NUMBER;
	for (i = 0; n == 0 && i < sizeof lit / sizeof lit[0]; i++)
		if (left >= strlen(lit[i].s) &&
		    memcmp(lx->p, lit[i].s, strlen(lit[i].s)) == 0) {
			n = strlen(lit[i].s);
			lx->tok = lit[i].tok;
		}
	if (n == 0 || (n < left && pbjson_lex_is_word((unsigned char)lx->p[n])))
		return pbjson_lex_fail_at(lx, lx->p, *lx->p == '-' ||
		    (*lx->p >= '0' && *lx->p <= '9') ? "bad number" :
		    "unexpected character");
	lx->tp = lx->p;
	lx->tlen = n;
	lx->p += n;
	return 0;
}

/* Reads the next token; see pbjson_lex.h. */
int
pbjson_lex_next(struct pbjson_lex *lx)
{
	static const char punct[] = "{}[]:,";
	static const enum pbjson_lex_tok ptok[] = { PBJSON_LEX_OBJ,
	    PBJSON_LEX_OBJ_END, PBJSON_LEX_ARR, PBJSON_LEX_ARR_END,
	    PBJSON_LEX_COLON, PBJSON_LEX_COMMA };
	const char *q;

	for (; lx->p < lx->end; lx->p++) {
		if (*lx->p == '\n') {
			lx->line++;
			lx->line_start = lx->p + 1;
		} else if (*lx->p != ' ' && *lx->p != '\t' && *lx->p != '\r')
			break;
	}
	lx->tline = lx->line;
	lx->tcol = (int)(lx->p - lx->line_start) + 1;
	if (lx->p == lx->end) {
		lx->tok = PBJSON_LEX_END;
		lx->tp = lx->p;
		lx->tlen = 0;
		return 0;
	}
	if (*lx->p != '\0' && (q = strchr(punct, *lx->p)) != NULL) {
		lx->tok = ptok[q - punct];
		lx->tp = lx->p++;
		lx->tlen = 1;
		return 0;
	}
	if (*lx->p == '"')
		return pbjson_lex_scan_string(lx);
	return pbjson_lex_word(lx);
}

/* Reads the next token, which must be t; see pbjson_lex.h. */
int
pbjson_lex_expect(struct pbjson_lex *lx, enum pbjson_lex_tok t,
    const char *what)
{
	char why[64];

	if (pbjson_lex_next(lx) != 0)
		return -1;
	if (lx->tok == t)
		return 0;
	snprintf(why, sizeof why, "expected %s", what);
	return pbjson_lex_fail(lx, lx->tok == PBJSON_LEX_END ?
	    "unexpected end of the text" : why);
}

/* Writes code point cp as UTF-8 at d; returns the bytes written. */
static size_t
pbjson_lex_put_cp(char *d, uint32_t cp)
{
	size_t n = pbjson_lex_cplen(cp), i;
	static const unsigned char lead[] = { 0, 0, 0xc0, 0xe0, 0xf0 };

	for (i = n - 1; i > 0; i--) {
		d[i] = (char)(0x80 | (cp & 0x3f));
		cp >>= 6;
	}
	d[0] = (char)(lead[n] | cp);
	return n;
}

/* Copies the current string; see pbjson_lex.h. */
void
pbjson_lex_string(const struct pbjson_lex *lx, char *dst)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *s = lx->tp, *e = lx->tp + lx->tlen;
	char *d = dst;
	long hi, lo;

	if (!lx->esc) {
		memcpy(dst, lx->tp, lx->tlen);
		dst[lx->tlen] = '\0';
		return;
	}
	while (s < e) {
		if (*s != '\\') {
			*d++ = *s++;
			continue;
		}
		if (s[1] != 'u') {
			*d++ = to[strchr(from, s[1]) - from];
			s += 2;
			continue;
		}
		/* Checked when read: a code point or a surrogate pair. */
		hi = pbjson_lex_hex4(s + 2, e);
		s += 6;
		if (hi >= 0xd800 && hi <= 0xdbff) {
			lo = pbjson_lex_hex4(s + 2, e);
			s += 6;
			hi = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
		}
		d += pbjson_lex_put_cp(d, (uint32_t)hi);
	}
	*d = '\0';
}

/* Reads a key and its colon after a '{' or ',' of a skipped object. */
static int
pbjson_lex_skip_key(struct pbjson_lex *lx)
{
	if (lx->tok != PBJSON_LEX_STRING)
		return pbjson_lex_fail(lx, "expected a key");
	if (pbjson_lex_expect(lx, PBJSON_LEX_COLON, "':'") != 0)
		return -1;
	return pbjson_lex_next(lx);
}

/* Skips a value; see pbjson_lex.h. */
int
pbjson_lex_skip(struct pbjson_lex *lx)
{
	uint64_t obj[PBJSON_LEX_MAX_DEPTH / 64];	/* bit set: an object */
	int depth = 0, is_obj, more;

	for (;;) {
		/* The current token starts a value. */
		if (lx->tok == PBJSON_LEX_OBJ || lx->tok == PBJSON_LEX_ARR) {
			if (depth == PBJSON_LEX_MAX_DEPTH)
				return pbjson_lex_fail(lx, "nested too deeply");
			is_obj = lx->tok == PBJSON_LEX_OBJ;
			if (is_obj)
				obj[depth / 64] |= (uint64_t)1 << (depth % 64);
			else
				obj[depth / 64] &= ~((uint64_t)1 << (depth % 64));
			depth++;
			if (pbjson_lex_next(lx) != 0)
				return -1;
			if (lx->tok != (is_obj ? PBJSON_LEX_OBJ_END :
			    PBJSON_LEX_ARR_END)) {
				if (is_obj && pbjson_lex_skip_key(lx) != 0)
					return -1;
				continue;
			}
			depth--;
		} else if (lx->tok < PBJSON_LEX_STRING)
			return pbjson_lex_fail(lx, lx->tok == PBJSON_LEX_END ?
			    "unexpected end of the text" : "expected a value");
		/* A value ended: close what it ends, or go on to the next. */
		for (more = 0; depth > 0 && !more;) {
			is_obj = (obj[(depth - 1) / 64] >> ((depth - 1) % 64)) &
			    1;
			if (pbjson_lex_next(lx) != 0)
				return -1;
			if (lx->tok == PBJSON_LEX_COMMA) {
				if (pbjson_lex_next(lx) != 0 ||
				    (is_obj && pbjson_lex_skip_key(lx) != 0))
					return -1;
				more = 1;
			} else if (lx->tok == (is_obj ? PBJSON_LEX_OBJ_END :
			    PBJSON_LEX_ARR_END))
				depth--;
			else
				return pbjson_lex_fail(lx, is_obj ?
				    "expected ',' or '}'" : "expected ',' or ']'");
		}
		if (!more)
			return 0;
	}
}
