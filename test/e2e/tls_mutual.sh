#!/usr/bin/env bash
# Mutual TLS (--tls-client-ca), with certificates made here by openssl.
# Without --auth-file every client must show a certificate from the client
# CA (and then may do everything); with one, a client shows a token, a
# certificate named in a "cert SCOPE NAME" line, or both, and gets what
# they give together. A certificate from another CA, or expired, fails the
# handshake and /metrics counts it; the daemon keeps serving.
. "${top_srcdir:-.}/test/lib/e2e.sh"
. "${top_srcdir:-.}/test/lib/tls_pki.sh"
f=$PROFD_CORPUS/go/cpuburn/cpu_A_01.pb.gz

# as NAME PATH [CURL ARGS...]: api with NAME's client certificate.
as() {
	local who=$1 path=$2; shift 2
	api "$path" --cert "$P/$who.pem" --key "$P/$who.key" "$@"
}

mkca ca && mkca clients && mkca other &&
    mkcert ca srv 1 localhost &&
    mkcert clients agent 1 'agent fleet' "$TLS_CLIENT_EXT" &&
    mkcert clients dash 1 dashboard "$TLS_CLIENT_EXT" &&
    mkcert clients stranger 1 'someone else' "$TLS_CLIENT_EXT" &&
    mkcert clients old -1 'agent fleet' "$TLS_CLIENT_EXT" &&
    mkcert other intruder 1 'agent fleet' "$TLS_CLIENT_EXT" ||
    { not_ok "openssl made the test PKI"; done_testing; }
ok "openssl made a server CA, a client CA, client certificates and a foreign one"
export CURL_CA_BUNDLE=$P/ca.pem
Q="service=mtls&type=cpu"
L="/api/0/profiles?service=mtls&from=2000-01-01T00:00:00&to=2100-01-01T00:00:00"

# Without --auth-file: the certificate is the credential.
profd_start --tls-cert "$P/srv.pem" --tls-key "$P/srv.key" --tls-client-ca "$P/clients.pem" ||
    { not_ok "profd starts with --tls-client-ca"; done_testing; }
PROFD_URL=https://localhost:${PROFD_URL##*:}
out=$(curl -sS "$PROFD_URL/api/0/version" 2>&1); rc=$?
[ $rc -ne 0 ] && ok "no client certificate: the handshake fails (curl exit $rc)" ||
    { not_ok "no client certificate refused"; diag "$out"; }
as agent "/api/0/profiles?$Q" --data-binary "@$f" >/dev/null
is "$HTTP_CODE" 200 "a certificate from the client CA uploads"
as dash "$L" >/dev/null; is "$HTTP_CODE" 200 "and any other from it lists (no auth file: all scopes)"
out=$(curl -sS --cert "$P/intruder.pem" --key "$P/intruder.key" "$PROFD_URL/api/0/version" 2>&1); rc=$?
[ $rc -ne 0 ] && ok "a certificate from another CA with the same name is refused (curl exit $rc)" ||
    { not_ok "foreign certificate refused"; diag "$out"; }
out=$(curl -sS --cert "$P/old.pem" --key "$P/old.key" "$PROFD_URL/api/0/version" 2>&1); rc=$?
[ $rc -ne 0 ] && ok "an expired client certificate is refused (curl exit $rc)" ||
    { not_ok "expired client certificate refused"; diag "$out"; }
as agent /api/0/version >/dev/null; is "$HTTP_CODE" 200 "the daemon keeps serving"
sleep 0.3
n=$(tls_metric client_cert --cert "$P/agent.pem" --key "$P/agent.key")
check "/metrics counts the refused client certificates ($n)" [ "${n:-0}" -ge 3 ]
profd_stop

# With --auth-file: tokens, certificate names, or both.
cat > "$T_TMP/auth" <<'T'
writer-0123456789 write
reader-0123456789 read
cert write agent fleet
cert read   dashboard
T
PROFD_DIR=
profd_start --tls-cert "$P/srv.pem" --tls-key "$P/srv.key" --tls-client-ca "$P/clients.pem" \
    --auth-file "$T_TMP/auth" || { not_ok "profd starts with --tls-client-ca and --auth-file"; done_testing; }
PROFD_URL=https://localhost:${PROFD_URL##*:}
upload "$f" "$Q" -H 'Authorization: Bearer writer-0123456789' >/dev/null
is "$HTTP_CODE" 200 "no certificate, a token: allowed (certificates optional with tokens)"
api "$L" >/dev/null; is "$HTTP_CODE" 401 "neither: 401"
as agent "/api/0/profiles?$Q" --data-binary "@$f" >/dev/null
is "$HTTP_CODE" 200 "'cert write agent fleet': the agent's certificate uploads without a token"
as agent "$L" >/dev/null; is "$HTTP_CODE" 403 "but cannot list (write only)"
echo "$BODY" | grep -q 'this certificate lacks the read scope' && ok "403 names the certificate" ||
    { not_ok "403 message"; diag "$BODY"; }
as agent "$L" -H 'Authorization: Bearer reader-0123456789' >/dev/null
is "$HTTP_CODE" 200 "certificate and token together: write and read"
as dash "$L" >/dev/null; is "$HTTP_CODE" 200 "'cert read dashboard' lists"
is "$(echo "$BODY" | jq '.body | length')" 2 "both uploads listed"
as dash "/api/0/profiles?$Q" --data-binary "@$f" >/dev/null; is "$HTTP_CODE" 403 "and cannot upload"
as stranger "$L" >/dev/null; is "$HTTP_CODE" 401 "a verified certificate named in no line: 401"
out=$(curl -sS --cert "$P/intruder.pem" --key "$P/intruder.key" "$PROFD_URL$L" 2>&1); rc=$?
[ $rc -ne 0 ] && ok "a foreign certificate named like the agent's still fails the handshake" ||
    { not_ok "foreign certificate with tokens"; diag "$out"; }
profd_stop

# A malformed cert line is refused at start.
printf 'cert write\n' > "$T_TMP/bad"
out=$("$PROFD" --addr 127.0.0.1:0 --data-dir "$T_TMP/x" --auth-file "$T_TMP/bad" 2>&1)
[ $? -ne 0 ] && echo "$out" | grep -q 'want "cert read|write|admin COMMON-NAME"' &&
    ok "a cert line without a name is refused" || { not_ok "bad cert line"; diag "$out"; }
done_testing
