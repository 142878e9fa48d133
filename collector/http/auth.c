/*
 * Bearer tokens: loading the token file and checking requests against it.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "collector/http/auth.h"
#include "common/xmalloc.h"

struct auth_token {
	char	*token;
	size_t	 len;
	int	 scope;
};

struct auth_cert {
	char	*name;		/* subject common name */
	int	 scope;
};

struct auth {
	struct auth_token	*tokens;
	int			 n;
	struct auth_cert	*certs;
	int			 ncerts;
};

/* Frees the tokens, clearing their bytes first. */
void
auth_free(struct auth *a)
{
	int i;

	if (a == NULL)
		return;
	for (i = 0; i < a->n; i++) {
		explicit_bzero(a->tokens[i].token, a->tokens[i].len);
		free(a->tokens[i].token);
	}
	free(a->tokens);
	for (i = 0; i < a->ncerts; i++)
		free(a->certs[i].name);
	free(a->certs);
	free(a);
}

/* Number of tokens. */
int
auth_count(const struct auth *a)
{
	return a != NULL ? a->n : 0;
}

/* Parses a scope name. */
static int
auth_scope(const char *s)
{
	if (strcmp(s, "read") == 0)
		return AUTH_READ;
	if (strcmp(s, "write") == 0)
		return AUTH_WRITE;
	if (strcmp(s, "admin") == 0)
		return AUTH_ADMIN;
	return -1;
}

/* A "cert SCOPE NAME" line's rest (after "cert"): 0, or -1 if malformed. */
static int
auth_cert_line(struct auth *a, char *rest)
{
	char *scope, *name, *end;
	int sc;

	rest += strspn(rest, " \t");
	scope = rest;
	rest += strcspn(rest, " \t\r\n");
	if (*rest == '\0')
		return -1;
	*rest++ = '\0';
	name = rest + strspn(rest, " \t");
	end = name + strlen(name);
	while (end > name && isspace((unsigned char)end[-1]))
		*--end = '\0';
	if ((sc = auth_scope(scope)) < 0 || *name == '\0')
		return -1;
	a->certs = xreallocarray(a->certs, a->ncerts + 1, sizeof *a->certs);
	a->certs[a->ncerts].name = xstrdup(name);
	a->certs[a->ncerts].scope = sc;
	a->ncerts++;
	return 0;
}

/* Reads "TOKEN SCOPE" and "cert SCOPE NAME" lines. */
struct auth *
auth_load(const char *path, char **cause)
{
	struct auth *a = xcalloc(1, sizeof *a);
	FILE *f;
	char *line = NULL, *tok, *scope, *extra, *save;
	size_t cap = 0, lineno = 0;
	int sc;

	if ((f = fopen(path, "r")) == NULL) {
		xcause(cause, "cannot open auth file %s: %s", path,
		    strerror(errno));
		free(a);
		return NULL;
	}
	while (getline(&line, &cap, f) != -1) {
		lineno++;
		tok = line + strspn(line, " \t");
		if (strncmp(tok, "cert", 4) == 0 && (tok[4] == ' ' ||
		    tok[4] == '\t')) {
			if (auth_cert_line(a, tok + 4) < 0) {
				xcause(cause, "%s:%zu: want \"cert "
				    "read|write|admin COMMON-NAME\"", path,
				    lineno);
				goto fail;
			}
			continue;
		}
		tok = strtok_r(line, " \t\r\n", &save);
		if (tok == NULL || *tok == '#')
			continue;
		scope = strtok_r(NULL, " \t\r\n", &save);
		extra = strtok_r(NULL, " \t\r\n", &save);
		if (scope == NULL || extra != NULL ||
		    (sc = auth_scope(scope)) < 0) {
			xcause(cause, "%s:%zu: want \"TOKEN read|write|admin\"",
			    path, lineno);
			goto fail;
		}
		if (strlen(tok) < 8) {
			xcause(cause, "%s:%zu: token shorter than 8 characters",
			    path, lineno);
			goto fail;
		}
		a->tokens = xreallocarray(a->tokens, a->n + 1,
		    sizeof *a->tokens);
		a->tokens[a->n].token = xstrdup(tok);
		a->tokens[a->n].len = strlen(tok);
		a->tokens[a->n].scope = sc;
		a->n++;
	}
	if (a->n == 0 && a->ncerts == 0) {
		xcause(cause, "%s: no tokens", path);
		goto fail;
	}
	if (line != NULL)
		explicit_bzero(line, cap);
	free(line);
	fclose(f);
	return a;
fail:
	if (line != NULL)
		explicit_bzero(line, cap);
	free(line);
	fclose(f);
	auth_free(a);
	return NULL;
}

/* Compares in time that depends only on the lengths. */
static int
auth_equal(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t i, n = alen > blen ? alen : blen;
	unsigned char d = alen != blen;

	for (i = 0; i < n; i++)
		d |= (unsigned char)((i < alen ? a[i] : 0) ^ (i < blen ? b[i] : 0));
	return d == 0;
}

/* Checks "Bearer TOKEN" against every token, without stopping early. */
int
auth_check(const struct auth *a, const char *header, int need)
{
	return auth_check_peer(a, header, NULL, need);
}

/* The scope the token and the certificate give together. */
int
auth_check_peer(const struct auth *a, const char *header, const char *peer,
    int need)
{
	const char *t;
	size_t len;
	int i, scope = 0;

	for (i = 0; peer != NULL && i < a->ncerts; i++) {
		if (strcmp(peer, a->certs[i].name) == 0)
			scope |= a->certs[i].scope;
	}
	if (header == NULL || strncasecmp(header, "Bearer ", 7) != 0)
		return scope == 0 ? 401 : (scope & need) == need ? 0 : 403;
	for (t = header + 7; *t == ' '; t++)
		;
	len = strlen(t);
	while (len > 0 && isspace((unsigned char)t[len - 1]))
		len--;
	for (i = 0; i < a->n; i++) {
		if (auth_equal(t, len, a->tokens[i].token, a->tokens[i].len))
			scope |= a->tokens[i].scope;
	}
	if (scope == 0)
		return 401;
	return (scope & need) == need ? 0 : 403;
}
