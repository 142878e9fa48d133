/*
 * The listener's TLS: OpenSSL contexts built from the configured files,
 * libevent's OpenSSL bufferevents for accepted connections, handshake
 * accounting. See tls.h.
 *
 * Each connection's SSL object carries a small state word (its app data):
 * the first failure reason seen by the info callback (an alert sent or
 * received during the handshake) and whether the handshake completed.
 * When the connection goes, a handshake that never completed is counted
 * under that reason, or under one read from the errors libevent kept
 * (plain HTTP gives OpenSSL's "http request" error), the read timeout, or
 * "closed".
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>

#include "collector/http/tls.h"
#include "common/log.h"
#include "common/xmalloc.h"

#define TLS_STATE_DONE		0x100	/* handshake completed, counted */
#define TLS_STATE_REASON	0xff	/* reason + 1, 0: none yet */

/* TLS 1.2's suites: ECDHE key exchange and AEAD ciphers only. */
#define TLS_CIPHERS_12	"ECDHE-ECDSA-AES128-GCM-SHA256:" \
	"ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:" \
	"ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:" \
	"ECDHE-RSA-CHACHA20-POLY1305"

struct tls {
	SSL_CTX		*ctx;
	char		*cert, *key, *client_ca;
	int		 required;
	struct tls_stats st;
};

static const char *const tls_fail_names[TLS_FAIL_N] = {
	"not_tls", "protocol", "client_cert", "peer_refused", "timeout",
	"closed",
};

/* The metric label of a reason. */
const char *
tls_fail_name(enum tls_fail r)
{
	return (unsigned)r < TLS_FAIL_N ? tls_fail_names[r] : "unknown";
}

/* OpenSSL's queued errors as one string for a cause (and clears them). */
static char *
tls_errors(const char *what, const char *path)
{
	char buf[256] = "";
	unsigned long e, last = 0;

	while ((e = ERR_get_error()) != 0)
		last = e;
	if (last != 0)
		ERR_error_string_n(last, buf, sizeof buf);
	return xasprintf("%s %s: %s", what, path, last != 0 ? buf :
	    "unreadable");
}

/* The state word of ssl. */
static uintptr_t
tls_state(const SSL *ssl)
{
	return (uintptr_t)SSL_get_app_data(ssl);
}

/* Sets ssl's state word. */
static void
tls_set_state(const SSL *ssl, uintptr_t st)
{
	SSL_set_app_data((SSL *)ssl, (void *)st);
}

/* Whether an alert description is about a certificate. */
static int
tls_alert_is_cert(int desc)
{
	switch (desc) {
	case SSL_AD_BAD_CERTIFICATE:
	case SSL_AD_UNSUPPORTED_CERTIFICATE:
	case SSL_AD_CERTIFICATE_REVOKED:
	case SSL_AD_CERTIFICATE_EXPIRED:
	case SSL_AD_CERTIFICATE_UNKNOWN:
	case SSL_AD_UNKNOWN_CA:
	case SSL_AD_CERTIFICATE_REQUIRED:
		return 1;
	}
	return 0;
}

/*
 * A plain HTTP request came to the TLS port: tells the client so in plain
 * HTTP, as nginx does, before the connection is closed (best effort: the
 * socket's buffer is empty at this point).
 */
static void
tls_plain_reply(int fd)
{
	static const char body[] = "this port speaks HTTPS: use an https:// "
	    "URL\n";
	char msg[256];
	int n;

	n = snprintf(msg, sizeof msg, "HTTP/1.1 400 Bad Request\r\n"
	    "Content-Type: text/plain\r\nConnection: close\r\n"
	    "Content-Length: %zu\r\n\r\n%s", sizeof body - 1, body);
	if (fd >= 0 && send(fd, msg, (size_t)n, MSG_DONTWAIT |
	    MSG_NOSIGNAL) < 0)
		log_debug("tls: plain HTTP reply: %s", strerror(errno));
}

/* Whether a queued OpenSSL error says the bytes were not TLS at all. */
static int
tls_error_not_tls(unsigned long e)
{
	switch (ERR_GET_REASON(e)) {
	case SSL_R_HTTP_REQUEST:
	case SSL_R_HTTPS_PROXY_REQUEST:
	case SSL_R_WRONG_VERSION_NUMBER:
	case SSL_R_UNKNOWN_PROTOCOL:
	case SSL_R_PACKET_LENGTH_TOO_LONG:
		return 1;
	}
	return 0;
}

/* Info callback: completed handshakes, alerts, bytes that are not TLS. */
static void
tls_info_cb(const SSL *ssl, int where, int ret)
{
	struct tls *t = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
	uintptr_t st = tls_state(ssl);
	int desc = ret & 0xff;
	unsigned long e;
	enum tls_fail r;

	if ((where & SSL_CB_EXIT) && ret <= 0 && !(st & TLS_STATE_DONE) &&
	    (st & TLS_STATE_REASON) == 0 && (e = ERR_peek_last_error()) != 0 &&
	    tls_error_not_tls(e)) {
		tls_set_state(ssl, st | (uintptr_t)(TLS_FAIL_NOT_TLS + 1));
		if (ERR_GET_REASON(e) == SSL_R_HTTP_REQUEST)
			tls_plain_reply(SSL_get_fd(ssl));
		return;
	}
	if ((where & SSL_CB_HANDSHAKE_DONE) && !(st & TLS_STATE_DONE)) {
		tls_set_state(ssl, st | TLS_STATE_DONE);
		if (t != NULL)
			t->st.handshakes++;
		return;
	}
	if (!(where & SSL_CB_ALERT) || (st & TLS_STATE_DONE) ||
	    (st & TLS_STATE_REASON) != 0 || desc == SSL_AD_CLOSE_NOTIFY)
		return;
	if (where & SSL_CB_READ)
		r = TLS_FAIL_PEER_REFUSED;
	else if (tls_alert_is_cert(desc))
		r = TLS_FAIL_CLIENT_CERT;
	else
		r = TLS_FAIL_PROTOCOL;
	tls_set_state(ssl, st | (uintptr_t)(r + 1));
}

/* Builds a context from t's files. NULL and *cause on error. */
static SSL_CTX *
tls_ctx_new(struct tls *t, char **cause)
{
	STACK_OF(X509_NAME) *names;
	SSL_CTX *ctx;
	static const unsigned char sid[] = "profd";

	ERR_clear_error();
	if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL) {
		*cause = tls_errors("cannot make a TLS context for", t->cert);
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION |
	    SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_session_id_context(ctx, sid, sizeof sid - 1);
	if (SSL_CTX_set_cipher_list(ctx, TLS_CIPHERS_12) != 1) {
		*cause = tls_errors("cannot set the ciphers for", t->cert);
		goto fail;
	}
	if (SSL_CTX_use_certificate_chain_file(ctx, t->cert) != 1) {
		*cause = tls_errors("cannot load certificate", t->cert);
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, t->key, SSL_FILETYPE_PEM) != 1) {
		*cause = tls_errors("cannot load key", t->key);
		goto fail;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		*cause = tls_errors("key does not match certificate", t->key);
		goto fail;
	}
	if (t->client_ca != NULL) {
		if (SSL_CTX_load_verify_locations(ctx, t->client_ca,
		    NULL) != 1 || (names = SSL_load_client_CA_file(
		    t->client_ca)) == NULL) {
			*cause = tls_errors("cannot load client CA",
			    t->client_ca);
			goto fail;
		}
		SSL_CTX_set_client_CA_list(ctx, names);
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | (t->required ?
		    SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0), NULL);
	}
	SSL_CTX_set_app_data(ctx, t);
	SSL_CTX_set_info_callback(ctx, tls_info_cb);
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

/* Loads the files (see tls.h). */
struct tls *
tls_new(const char *cert, const char *key, const char *client_ca,
    int required, char **cause)
{
	struct tls *t = xcalloc(1, sizeof *t);

	t->cert = xstrdup(cert);
	t->key = xstrdup(key);
	t->client_ca = client_ca != NULL ? xstrdup(client_ca) : NULL;
	t->required = required;
	if ((t->ctx = tls_ctx_new(t, cause)) == NULL) {
		tls_free(t);
		return NULL;
	}
	return t;
}

/* Re-reads the files; the old context stays on error. */
int
tls_reload(struct tls *t, char **cause)
{
	SSL_CTX *ctx;

	if ((ctx = tls_ctx_new(t, cause)) == NULL) {
		t->st.reload_errors++;
		return -1;
	}
	SSL_CTX_free(t->ctx);	/* open connections hold their own ref */
	t->ctx = ctx;
	t->st.reloads++;
	return 0;
}

/* Frees the context (connections still open keep theirs). */
void
tls_free(struct tls *t)
{
	if (t == NULL)
		return;
	SSL_CTX_free(t->ctx);
	free(t->cert);
	free(t->key);
	free(t->client_ca);
	free(t);
}

/* A server-side TLS bufferevent; evhttp sets its socket when accepted. */
struct bufferevent *
tls_bev_new(struct tls *t, struct event_base *base)
{
	struct bufferevent *bev;
	SSL *ssl;

	if ((ssl = SSL_new(t->ctx)) == NULL) {
		ERR_clear_error();
		return NULL;
	}
	tls_set_state(ssl, 0);
	bev = bufferevent_openssl_socket_new(base, -1, ssl,
	    BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL) {
		SSL_free(ssl);
		return NULL;
	}
	/* Clients that close without close_notify are the common case. */
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	return bev;
}

/* Counts a handshake that never completed, by reason. */
void
tls_bev_done(struct tls *t, struct bufferevent *bev, int cut)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	uintptr_t st;
	int any = 0;
	enum tls_fail r;

	if (ssl == NULL || ((st = tls_state(ssl)) & TLS_STATE_DONE))
		return;
	/* (the info callback has recorded bytes that were not TLS) */
	while (bufferevent_get_openssl_error(bev) != 0)
		any = 1;
	if ((st & TLS_STATE_REASON) != 0)
		r = (enum tls_fail)((st & TLS_STATE_REASON) - 1);
	else if (cut)
		r = TLS_FAIL_TIMEOUT;
	else if (any)
		r = TLS_FAIL_PROTOCOL;
	else
		r = TLS_FAIL_CLOSED;
	t->st.fail[r]++;
	tls_set_state(ssl, st | TLS_STATE_DONE);
	log_debug("tls: handshake failed: %s", tls_fail_name(r));
}

/* The verified client certificate's common name (see tls.h). */
int
tls_peer_name(struct bufferevent *bev, char *buf, size_t size)
{
	SSL *ssl = bev != NULL ? bufferevent_openssl_get_ssl(bev) : NULL;
	X509 *cert;
	int n, i;

	if (ssl == NULL || size == 0 ||
	    (cert = SSL_get0_peer_certificate(ssl)) == NULL ||
	    SSL_get_verify_result(ssl) != X509_V_OK)
		return -1;
	n = X509_NAME_get_text_by_NID(X509_get_subject_name(cert),
	    NID_commonName, buf, (int)size);
	if (n <= 0 || (size_t)n >= size)
		return -1;
	for (i = 0; i < n; i++) {
		if (buf[i] < 0x20 || buf[i] > 0x7e)
			return -1;	/* NUL, control or non-ASCII */
	}
	return 0;
}

/* The counters so far. */
void
tls_get_stats(const struct tls *t, struct tls_stats *out)
{
	if (t == NULL)
		memset(out, 0, sizeof *out);
	else
		*out = t->st;
}
