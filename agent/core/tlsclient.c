/*
 * The agent's TLS client: OpenSSL 3 through dlopen (see tlsclient.h). The
 * functions used are looked up once, in the library's own scope; a macro
 * of OpenSSL's (SSL_CTX_set_min_proto_version, SSL_set_tlsext_host_name)
 * is spelled out as the ctrl call it stands for.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include "agent/core/tlsclient.h"
#include "common/xmalloc.h"

#define TLSCLIENT_LIBSSL	"libssl.so.3"

/* The OpenSSL functions, found by name in libssl (and its libcrypto). */
static struct {
	const SSL_METHOD *(*client_method)(void);
	SSL_CTX	*(*ctx_new)(const SSL_METHOD *);
	void	 (*ctx_free)(SSL_CTX *);
	long	 (*ctx_ctrl)(SSL_CTX *, int, long, void *);
	uint64_t (*ctx_set_options)(SSL_CTX *, uint64_t);
	void	 (*ctx_set_verify)(SSL_CTX *, int, SSL_verify_cb);
	int	 (*ctx_default_paths)(SSL_CTX *);
	int	 (*ctx_load_locations)(SSL_CTX *, const char *, const char *);
	int	 (*ctx_use_chain)(SSL_CTX *, const char *);
	int	 (*ctx_use_key)(SSL_CTX *, const char *, int);
	int	 (*ctx_check_key)(const SSL_CTX *);
	SSL	*(*ssl_new)(SSL_CTX *);
	void	 (*ssl_free)(SSL *);
	int	 (*set_fd)(SSL *, int);
	int	 (*set1_host)(SSL *, const char *);
	X509_VERIFY_PARAM *(*get0_param)(SSL *);
	int	 (*param_set1_ip_asc)(X509_VERIFY_PARAM *, const char *);
	long	 (*ssl_ctrl)(SSL *, int, long, void *);
	int	 (*connect)(SSL *);
	int	 (*read)(SSL *, void *, int);
	int	 (*write)(SSL *, const void *, int);
	int	 (*get_error)(const SSL *, int);
	int	 (*shutdown)(SSL *);
	long	 (*verify_result)(const SSL *);
	const char *(*verify_string)(long);
	unsigned long (*err_get)(void);
	void	 (*err_string)(unsigned long, char *, size_t);
	void	 (*err_clear)(void);
} tlsclient_fn;

static pthread_once_t	tlsclient_once = PTHREAD_ONCE_INIT;
static const char	*tlsclient_missing;	/* NULL: all found */
static char		 tlsclient_dlerr[160];

struct tlsclient {
	SSL_CTX	*ctx;
};

struct tlsclient_conn {
	SSL	*ssl;
};

/* Looks one function up; remembers the first one missing. */
static void *
tlsclient_sym(void *h, const char *name)
{
	void *f = dlsym(h, name);

	if (f == NULL && tlsclient_missing == NULL)
		tlsclient_missing = name;
	return f;
}

/* Loads libssl and finds every function (once per process). */
static void
tlsclient_load(void)
{
	void *h;

	if ((h = dlopen(TLSCLIENT_LIBSSL, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		snprintf(tlsclient_dlerr, sizeof tlsclient_dlerr, "%s",
		    dlerror());
		tlsclient_missing = TLSCLIENT_LIBSSL;
		return;
	}
#define TLSCLIENT_FN(field, name) \
	*(void **)&tlsclient_fn.field = tlsclient_sym(h, name)
	TLSCLIENT_FN(client_method, "TLS_client_method");
	TLSCLIENT_FN(ctx_new, "SSL_CTX_new");
	TLSCLIENT_FN(ctx_free, "SSL_CTX_free");
	TLSCLIENT_FN(ctx_ctrl, "SSL_CTX_ctrl");
	TLSCLIENT_FN(ctx_set_options, "SSL_CTX_set_options");
	TLSCLIENT_FN(ctx_set_verify, "SSL_CTX_set_verify");
	TLSCLIENT_FN(ctx_default_paths, "SSL_CTX_set_default_verify_paths");
	TLSCLIENT_FN(ctx_load_locations, "SSL_CTX_load_verify_locations");
	TLSCLIENT_FN(ctx_use_chain, "SSL_CTX_use_certificate_chain_file");
	TLSCLIENT_FN(ctx_use_key, "SSL_CTX_use_PrivateKey_file");
	TLSCLIENT_FN(ctx_check_key, "SSL_CTX_check_private_key");
	TLSCLIENT_FN(ssl_new, "SSL_new");
	TLSCLIENT_FN(ssl_free, "SSL_free");
	TLSCLIENT_FN(set_fd, "SSL_set_fd");
	TLSCLIENT_FN(set1_host, "SSL_set1_host");
	TLSCLIENT_FN(get0_param, "SSL_get0_param");
	TLSCLIENT_FN(param_set1_ip_asc, "X509_VERIFY_PARAM_set1_ip_asc");
	TLSCLIENT_FN(ssl_ctrl, "SSL_ctrl");
	TLSCLIENT_FN(connect, "SSL_connect");
	TLSCLIENT_FN(read, "SSL_read");
	TLSCLIENT_FN(write, "SSL_write");
	TLSCLIENT_FN(get_error, "SSL_get_error");
	TLSCLIENT_FN(shutdown, "SSL_shutdown");
	TLSCLIENT_FN(verify_result, "SSL_get_verify_result");
	TLSCLIENT_FN(verify_string, "X509_verify_cert_error_string");
	TLSCLIENT_FN(err_get, "ERR_get_error");
	TLSCLIENT_FN(err_string, "ERR_error_string_n");
	TLSCLIENT_FN(err_clear, "ERR_clear_error");
#undef TLSCLIENT_FN
}

/* OpenSSL's last queued error, for a message (clears the queue). */
static void
tlsclient_last_error(char *buf, size_t size)
{
	unsigned long e, last = 0;

	while ((e = tlsclient_fn.err_get()) != 0)
		last = e;
	if (last != 0)
		tlsclient_fn.err_string(last, buf, size);
	else
		snprintf(buf, size, "unknown error");
}

/* Fails tlsclient_new with what OpenSSL said about path. */
static struct tlsclient *
tlsclient_fail(struct tlsclient *t, const char *what, const char *path,
    char **cause)
{
	char buf[256];

	tlsclient_last_error(buf, sizeof buf);
	xcause(cause, "%s %s: %s", what, path, buf);
	tlsclient_free(t);
	return NULL;
}

/* A client context (see tlsclient.h). */
struct tlsclient *
tlsclient_new(const char *ca_file, const char *cert_file,
    const char *key_file, char **cause)
{
	struct tlsclient *t;

	pthread_once(&tlsclient_once, tlsclient_load);
	if (tlsclient_missing != NULL) {
		xcause(cause, "https:// needs OpenSSL 3 (%s): %s",
		    TLSCLIENT_LIBSSL, tlsclient_dlerr[0] != '\0' ?
		    tlsclient_dlerr : tlsclient_missing);
		return NULL;
	}
	if ((cert_file == NULL) != (key_file == NULL)) {
		xcause(cause, "PROFD_CERT_FILE and PROFD_KEY_FILE go "
		    "together");
		return NULL;
	}
	t = xcalloc(1, sizeof *t);
	tlsclient_fn.err_clear();
	if ((t->ctx = tlsclient_fn.ctx_new(tlsclient_fn.client_method())) ==
	    NULL)
		return tlsclient_fail(t, "cannot make a TLS context", "", cause);
	tlsclient_fn.ctx_ctrl(t->ctx, SSL_CTRL_SET_MIN_PROTO_VERSION,
	    TLS1_2_VERSION, NULL);
	/* Replies are framed by Content-Length: a close without
	 * close_notify after one is an end, not a truncation. */
	tlsclient_fn.ctx_set_options(t->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
	tlsclient_fn.ctx_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
	if (ca_file != NULL) {
		if (tlsclient_fn.ctx_load_locations(t->ctx, ca_file, NULL) != 1)
			return tlsclient_fail(t, "cannot load CA file",
			    ca_file, cause);
	} else if (tlsclient_fn.ctx_default_paths(t->ctx) != 1)
		return tlsclient_fail(t, "cannot load the system's CAs", "",
		    cause);
	if (cert_file != NULL) {
		if (tlsclient_fn.ctx_use_chain(t->ctx, cert_file) != 1)
			return tlsclient_fail(t, "cannot load certificate",
			    cert_file, cause);
		if (tlsclient_fn.ctx_use_key(t->ctx, key_file,
		    SSL_FILETYPE_PEM) != 1 ||
		    tlsclient_fn.ctx_check_key(t->ctx) != 1)
			return tlsclient_fail(t, "cannot load key", key_file,
			    cause);
	}
	return t;
}

/* Frees the context. */
void
tlsclient_free(struct tlsclient *t)
{
	if (t == NULL)
		return;
	if (t->ctx != NULL)
		tlsclient_fn.ctx_free(t->ctx);
	free(t);
}

/* A session on fd, checking the certificate's name against host. */
struct tlsclient_conn *
tlsclient_open(struct tlsclient *t, int fd, const char *host)
{
	struct tlsclient_conn *c;
	unsigned char addr[16];
	int is_ip;
	SSL *ssl;

	tlsclient_fn.err_clear();
	if ((ssl = tlsclient_fn.ssl_new(t->ctx)) == NULL)
		return NULL;
	is_ip = inet_pton(AF_INET, host, addr) == 1 ||
	    inet_pton(AF_INET6, host, addr) == 1;
	if (tlsclient_fn.set_fd(ssl, fd) != 1 || (is_ip ?
	    tlsclient_fn.param_set1_ip_asc(tlsclient_fn.get0_param(ssl),
	    host) != 1 : tlsclient_fn.set1_host(ssl, host) != 1 ||
	    tlsclient_fn.ssl_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME,
	    TLSEXT_NAMETYPE_host_name, (void *)host) != 1)) {
		tlsclient_fn.ssl_free(ssl);
		return NULL;
	}
	c = xcalloc(1, sizeof *c);
	c->ssl = ssl;
	return c;
}

/* The poll event an SSL call that returned r waits for; 0: failed. */
static int
tlsclient_want(struct tlsclient_conn *c, int r)
{
	switch (tlsclient_fn.get_error(c->ssl, r)) {
	case SSL_ERROR_WANT_READ:
		return POLLIN;
	case SSL_ERROR_WANT_WRITE:
		return POLLOUT;
	}
	return 0;
}

/* Drives the handshake (see tlsclient.h). */
int
tlsclient_handshake(struct tlsclient_conn *c, int *want, char *err,
    size_t errsize)
{
	long v;
	int r;

	tlsclient_fn.err_clear();
	if ((r = tlsclient_fn.connect(c->ssl)) == 1)
		return 0;
	if ((*want = tlsclient_want(c, r)) != 0)
		return -1;
	if ((v = tlsclient_fn.verify_result(c->ssl)) != X509_V_OK)
		snprintf(err, errsize, "certificate verify failed: %s",
		    tlsclient_fn.verify_string(v));
	else
		tlsclient_last_error(err, errsize);
	return -1;
}

/* Writes (see tlsclient.h). */
ssize_t
tlsclient_write(struct tlsclient_conn *c, const void *buf, size_t len,
    int *want)
{
	int r, n = len > INT32_MAX ? INT32_MAX : (int)len;

	tlsclient_fn.err_clear();
	if ((r = tlsclient_fn.write(c->ssl, buf, n)) > 0)
		return r;
	*want = tlsclient_want(c, r);
	return -1;
}

/* Reads (see tlsclient.h). */
ssize_t
tlsclient_read(struct tlsclient_conn *c, void *buf, size_t len, int *want)
{
	int r, n = len > INT32_MAX ? INT32_MAX : (int)len;

	tlsclient_fn.err_clear();
	if ((r = tlsclient_fn.read(c->ssl, buf, n)) > 0)
		return r;
	if (tlsclient_fn.get_error(c->ssl, r) == SSL_ERROR_ZERO_RETURN)
		return 0;
	*want = tlsclient_want(c, r);
	return -1;
}

/* Frees the session (see tlsclient.h). */
void
tlsclient_close(struct tlsclient_conn *c, int notify)
{
	if (c == NULL)
		return;
	if (notify)
		(void)tlsclient_fn.shutdown(c->ssl);
	tlsclient_fn.ssl_free(c->ssl);
	tlsclient_fn.err_clear();
	free(c);
}
