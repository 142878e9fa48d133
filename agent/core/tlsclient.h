/*
 * TLS for the agent's uploads and polls (https:// collector URLs), on the
 * system's OpenSSL 3 loaded with dlopen when the first https:// URL is
 * set up: a program profiled over plain HTTP never maps libssl, and the
 * agent's object has no dependency on it. The server's certificate is
 * verified (against PROFD_CA_FILE, or the system's CAs) and its name
 * checked against the URL's host; a client certificate can be shown for
 * mutual TLS. Sessions run on the caller's non-blocking socket: each call
 * says which poll event it waits for, so the caller keeps its own waits
 * and deadlines.
 */
#ifndef PROFD_AGENT_TLSCLIENT_H
#define PROFD_AGENT_TLSCLIENT_H

#include <stddef.h>
#include <sys/types.h>

struct tlsclient;
struct tlsclient_conn;

/*
 * A client context: ca_file (NULL: the system's CAs), cert_file and
 * key_file (both or neither: a client certificate). NULL and *cause on
 * error (libssl missing, a file that does not load).
 */
struct tlsclient	*tlsclient_new(const char *ca_file, const char *cert_file,
			    const char *key_file, char **cause);
void			 tlsclient_free(struct tlsclient *);
/* A session on connected socket fd, for server host; NULL on error. */
struct tlsclient_conn	*tlsclient_open(struct tlsclient *, int fd,
			    const char *host);
/*
 * Drives the handshake: 0 done, or -1 with *want the poll event to wait
 * for (POLLIN, POLLOUT), or -1 with *want 0 and err set on failure.
 */
int			 tlsclient_handshake(struct tlsclient_conn *, int *want,
			    char *err, size_t errsize);
/* Writes or reads: bytes done (0 from read: closed), else as above. */
ssize_t			 tlsclient_write(struct tlsclient_conn *, const void *,
			    size_t, int *want);
ssize_t			 tlsclient_read(struct tlsclient_conn *, void *, size_t,
			    int *want);
/*
 * Frees the session; notify: the socket is still ours, send close_notify
 * (never waits).
 */
void			 tlsclient_close(struct tlsclient_conn *, int notify);

#endif
