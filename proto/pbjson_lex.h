/*
 * A JSON tokenizer over text in memory (RFC 8259), for decoding JSON
 * straight into protobuf-c messages without building a tree: tokens are
 * read one at a time, strings are checked (UTF-8, escapes, no control
 * characters, no \u0000) when read and copied out on demand, values the
 * reader does not want are skipped without recursion. Syntax errors name
 * the line and column ("bad JSON at line 3, column 7: ...").
 */
#ifndef PROFD_PBJSON_LEX_H
#define PROFD_PBJSON_LEX_H

#include <stddef.h>

/* Arrays and objects nested deeper than this in a skipped value: refused. */
#define PBJSON_LEX_MAX_DEPTH	1024

enum pbjson_lex_tok {
	PBJSON_LEX_END,		/* the text ended */
	PBJSON_LEX_OBJ,		/* { */
	PBJSON_LEX_OBJ_END,	/* } */
	PBJSON_LEX_ARR,		/* [ */
	PBJSON_LEX_ARR_END,	/* ] */
	PBJSON_LEX_COLON,
	PBJSON_LEX_COMMA,
	PBJSON_LEX_STRING,
	PBJSON_LEX_NUMBER,
	PBJSON_LEX_TRUE,
	PBJSON_LEX_FALSE,
	PBJSON_LEX_NULL
};

struct pbjson_lex {
	const char		*text, *p, *end;
	const char		*line_start;	/* of the line p is on */
	int			 line;
	enum pbjson_lex_tok	 tok;		/* the current token */
	const char		*tp;	/* its text (a string's inside quotes) */
	size_t			 tlen;
	size_t			 slen;	/* a string's length, escapes decoded */
	int			 esc;	/* whether the string has escapes */
	int			 tline, tcol;	/* where the token starts */
	char			 err[200];	/* the syntax error */
};

/* Starts reading len bytes of text (need not be NUL-terminated). */
void	pbjson_lex_init(struct pbjson_lex *, const char *text, size_t len);
/* Reads the next token into tok: 0, or -1 with err (bad JSON). */
int	pbjson_lex_next(struct pbjson_lex *);
/* Reads the next token and checks it is t: 0, or -1 with err. */
int	pbjson_lex_expect(struct pbjson_lex *, enum pbjson_lex_tok t,
	    const char *what);
/* Records a syntax error at the current token: -1. */
int	pbjson_lex_fail(struct pbjson_lex *, const char *why);
/* Copies the current string token's slen bytes and a NUL into dst. */
void	pbjson_lex_string(const struct pbjson_lex *, char *dst);
/*
 * Skips the value whose first token is the current one, leaving its last
 * token current: 0, or -1 with err.
 */
int	pbjson_lex_skip(struct pbjson_lex *);
/* Bytes of the valid UTF-8 sequence at s (before e), or 0 if not valid. */
size_t	pbjson_lex_utf8(const unsigned char *s, const unsigned char *e);
/* Whether s (len bytes) is a JSON number, all of it. */
int	pbjson_lex_is_number(const char *s, size_t len);

#endif
