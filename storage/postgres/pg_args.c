/*
 * Statement arguments for the postgresql backend: a growing list of
 * parameters (text, integers, binary bytes), for statements built with a
 * variable number of them, and array literals built element by element,
 * so a whole batch of rows goes in one parameter per column (unnest)
 * whatever its size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "storage/postgres/pg_args.h"

/* Makes room for one more parameter. */
static void
pg_args_grow(struct pg_args *p)
{
	if (p->n < p->cap)
		return;
	p->cap = p->cap ? p->cap * 2 : 16;
	p->v = xreallocarray(p->v, p->cap, sizeof *p->v);
	p->len = xreallocarray(p->len, p->cap, sizeof *p->len);
	p->fmt = xreallocarray(p->fmt, p->cap, sizeof *p->fmt);
}

/* Appends a text parameter. */
int
pg_args_str(struct pg_args *p, const char *s)
{
	pg_args_grow(p);
	p->v[p->n] = s;
	p->len[p->n] = 0;
	p->fmt[p->n] = 0;
	return (int)++p->n;
}

/* Appends an integer parameter (its text kept until pg_args_free). */
int
pg_args_int(struct pg_args *p, int64_t v)
{
	char	buf[24];

	if (p->nown == p->capown) {
		p->capown = p->capown ? p->capown * 2 : 16;
		p->own = xreallocarray(p->own, p->capown, sizeof *p->own);
	}
	p->own[p->nown] = xstrdup(pg_conn_i64(buf, v));
	return pg_args_str(p, p->own[p->nown++]);
}

/* Appends a binary parameter. */
int
pg_args_bin(struct pg_args *p, const void *b, size_t len)
{
	pg_args_grow(p);
	p->v[p->n] = b;
	p->len[p->n] = (int)len;
	p->fmt[p->n] = 1;
	return (int)++p->n;
}

/* Frees the arrays and the integers' texts. */
void
pg_args_free(struct pg_args *p)
{
	size_t	i;

	for (i = 0; i < p->nown; i++)
		free(p->own[i]);
	free(p->own);
	free(p->v);
	free(p->len);
	free(p->fmt);
	memset(p, 0, sizeof *p);
}

/* Runs sql with p's parameters. */
int
pg_args_exec(PGconn *c, const char *sql, const struct pg_args *p,
    PGresult **res, char **cause, const char *what)
{
	return pg_conn_exec(c, sql, (int)p->n, p->v, p->len, p->fmt, res,
	    cause, what);
}

/* Appends len bytes to an array literal's text. */
static void
pg_args_array_put(struct pg_args_array *a, const char *s, size_t len)
{
	if (a->len + len + 3 > a->cap) {
		a->cap = (a->len + len + 3) * 2;
		a->buf = xreallocarray(a->buf, a->cap, 1);
	}
	memcpy(a->buf + a->len, s, len);
	a->len += len;
}

/* Starts the next element: "{" or ",". */
static void
pg_args_array_next(struct pg_args_array *a)
{
	pg_args_array_put(a, a->n++ == 0 ? "{" : ",", 1);
}

/* Appends a string element, quoted, or NULL. */
void
pg_args_array_str(struct pg_args_array *a, const char *s)
{
	const char	*p;
	size_t		 run;

	pg_args_array_next(a);
	if (s == NULL) {
		pg_args_array_put(a, "NULL", 4);
		return;
	}
	pg_args_array_put(a, "\"", 1);
	for (p = s; *p != '\0'; p += run) {
		run = strcspn(p, "\"\\");
		if (run == 0) {
			pg_args_array_put(a, "\\", 1);
			run = 1;
		}
		pg_args_array_put(a, p, run);
	}
	pg_args_array_put(a, "\"", 1);
}

/* Appends an integer element. */
void
pg_args_array_int(struct pg_args_array *a, int64_t v)
{
	char	buf[24];

	pg_args_array_next(a);
	pg_args_array_put(a, buf, strlen(pg_conn_i64(buf, v)));
}

/* The literal so far, closed. */
const char *
pg_args_array_text(struct pg_args_array *a)
{
	if (a->n == 0)
		return "{}";
	pg_args_array_put(a, "}", 1);
	a->len--;		/* the next append overwrites it */
	a->buf[a->len + 1] = '\0';
	return a->buf;
}

/* Frees the literal. */
void
pg_args_array_free(struct pg_args_array *a)
{
	free(a->buf);
	memset(a, 0, sizeof *a);
}
