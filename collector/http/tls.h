/*
 * HTTPS for the listener (--tls-cert, --tls-key, --tls-client-ca): the
 * OpenSSL context and the server-side bufferevents made with it, one per
 * accepted connection (collector/http/conns.c asks for them), so that
 * evhttp reads and writes plain HTTP over TLS and every limit of the
 * plain listener holds unchanged. TLS 1.2 and 1.3 only, forward-secret
 * AEAD ciphers for 1.2 (OpenSSL's defaults for 1.3), no renegotiation,
 * no compression. The files are re-read by tls_reload (SIGHUP): new
 * connections get the new certificate, open ones keep the one they have.
 *
 * With a client CA, clients are asked for a certificate and one that does
 * not verify fails the handshake; whether a client may come without one
 * is the caller's choice (required). A verified certificate's subject
 * common name is what tls_peer_name returns, for access control.
 *
 * Handshakes that fail are counted by reason when their connection goes
 * (tls_bev_done), for /metrics. Loop thread only.
 */
#ifndef PROFD_TLS_H
#define PROFD_TLS_H

#include <stddef.h>
#include <stdint.h>

struct bufferevent;
struct event_base;
struct tls;

/* Why a handshake failed (the label of the failures metric). */
enum tls_fail {
	TLS_FAIL_NOT_TLS,	/* plain HTTP or other bytes to the TLS port */
	TLS_FAIL_PROTOCOL,	/* no common version or cipher, bad message */
	TLS_FAIL_CLIENT_CERT,	/* client certificate missing or refused */
	TLS_FAIL_PEER_REFUSED,	/* the client refused our certificate */
	TLS_FAIL_TIMEOUT,	/* cut off by --read-timeout */
	TLS_FAIL_CLOSED,	/* the client left before it finished */
	TLS_FAIL_N
};

struct tls_stats {
	uint64_t	handshakes;		/* completed */
	uint64_t	fail[TLS_FAIL_N];
	uint64_t	reloads, reload_errors;
};

/*
 * Loads the certificate chain and key (PEM) and, if client_ca is not
 * NULL, the CAs that client certificates must chain to (required: a
 * client without one fails the handshake). NULL and *cause on error.
 */
struct tls	*tls_new(const char *cert, const char *key,
		    const char *client_ca, int required, char **cause);
/* Re-reads the files; on error keeps serving with the old ones (-1). */
int		 tls_reload(struct tls *, char **cause);
void		 tls_free(struct tls *);
/* A bufferevent for a connection about to be accepted (fd set later). */
struct bufferevent *tls_bev_new(struct tls *, struct event_base *);
/* bev's connection is gone; cut: it was cut off by the read timeout. */
void		 tls_bev_done(struct tls *, struct bufferevent *, int cut);
/*
 * The subject common name of bev's verified client certificate, into buf
 * (printable ASCII only): 0, or -1 with no verified certificate.
 */
int		 tls_peer_name(struct bufferevent *, char *buf, size_t size);
void		 tls_get_stats(const struct tls *, struct tls_stats *);
/* The metric label of a reason ("not_tls", ...). */
const char	*tls_fail_name(enum tls_fail);

#endif
