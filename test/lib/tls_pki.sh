# Test PKI for the TLS tests (tls.sh, tls_mutual.sh, tls_clients.sh):
# CAs and certificates made at test time with Debian's openssl (P-256),
# under $P (a new directory in $T_TMP), and the /metrics reader of TLS
# handshake failures. Source after test/lib/e2e.sh.
command -v openssl >/dev/null || skip_all "openssl not installed"
P=$T_TMP/pki
mkdir -p "$P"
# The server's extension: its names for the tests' clients.
TLS_SERVER_EXT='subjectAltName=DNS:localhost,IP:127.0.0.1'
TLS_CLIENT_EXT='extendedKeyUsage=clientAuth'

# mkca NAME: a self-signed CA as $P/NAME.pem and .key.
mkca() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout "$P/$1.key" -out "$P/$1.pem" -days 2 \
	    -subj "/CN=profd test $1" 2>/dev/null
}
# mkcert CA NAME DAYS CN [EXT]: a certificate for subject CN signed by CA,
# valid DAYS (-1: expired yesterday), as $P/NAME.pem and .key; EXT is its
# extension (default: a server's, for localhost and 127.0.0.1).
mkcert() {
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout "$P/$2.key" -out "$P/$2.csr" -subj "/CN=$4" 2>/dev/null &&
	printf '%s\n' "${5:-$TLS_SERVER_EXT}" > "$P/$2.ext" &&
	openssl x509 -req -in "$P/$2.csr" -CA "$P/$1.pem" -CAkey "$P/$1.key" \
	    -CAcreateserial -out "$P/$2.pem" -days "$3" -extfile "$P/$2.ext" \
	    2>/dev/null
}
# tls_metric REASON [CURL ARGS...]: a handshake failure count from /metrics.
tls_metric() {
	local r=$1; shift
	curl -s "$@" "$PROFD_URL/metrics" | awk -v r="reason=\"$r\"" \
	    'index($1, "profd_tls_handshake_failures_total{" r "}") == 1 { print $2 }'
}
