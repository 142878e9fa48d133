/*
 * Optional bearer-token access control (--auth-file). The file holds lines
 * "TOKEN SCOPE" with SCOPE read (queries and downloads), write (uploads) or
 * admin (both); '#' starts a comment. Tokens are compared in constant time
 * and the file is re-read on SIGHUP.
 *
 * With mutual TLS (--tls-client-ca), lines "cert SCOPE NAME" give the
 * scope to clients whose verified certificate's subject common name is
 * NAME (the rest of the line, blanks included): a request is allowed what
 * its token and its certificate give together.
 */
#ifndef PROFD_AUTH_H
#define PROFD_AUTH_H

#define AUTH_READ	1
#define AUTH_WRITE	2
#define AUTH_ADMIN	(AUTH_READ | AUTH_WRITE)

struct auth;

/* Reads the token file; errors name the line. */
struct auth	*auth_load(const char *path, char **cause);
void		 auth_free(struct auth *);
/* Number of tokens loaded. */
int		 auth_count(const struct auth *);
/*
 * Checks an Authorization header value (may be NULL) for a scope:
 * 0 allowed, 401 missing or unknown token, 403 token lacks the scope.
 */
int		 auth_check(const struct auth *, const char *header, int need);
/*
 * The same for a request that may also come with a verified client
 * certificate named peer (NULL: none).
 */
int		 auth_check_peer(const struct auth *, const char *header,
		    const char *peer, int need);

#endif
