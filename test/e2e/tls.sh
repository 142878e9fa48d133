#!/usr/bin/env bash
# HTTPS on the listener (--tls-cert, --tls-key), with a CA and certificates
# made here with Debian's openssl: uploads, queries and a merge over HTTPS
# with curl and go tool pprof; a client trusting another CA, an expired
# certificate and plain HTTP to the TLS port each fail clearly while the
# daemon keeps serving; the certificate re-read on SIGHUP with a client
# connected (it keeps its connection, new ones get the new certificate); a
# broken certificate on SIGHUP keeps the old one; handshakes that stall are
# cut off by --read-timeout; --max-connections, the body limit and the
# token check before the body hold over TLS; a client leaving a merge
# cancels it; /metrics counts handshake failures by reason; bad flags;
# clean shutdown with TLS clients open.
. "${top_srcdir:-.}/test/lib/e2e.sh"
. "${top_srcdir:-.}/test/lib/tls_pki.sh"
PY=$(command -v python3.11 || command -v python3)
TC="$PY ${top_srcdir:-.}/test/lib/tls_client.py"
f=$PROFD_CORPUS/go/cpuburn/cpu_A_01.pb.gz
g=$PROFD_CORPUS/go/cpuburn/cpu_A_02.pb.gz
# serial FILE: a certificate's serial number, as Python prints it.
serial() { openssl x509 -in "$1" -noout -serial | sed 's/^serial=//'; }

mkca ca && mkca other && mkcert ca srv 1 localhost && mkcert ca srv2 1 localhost &&
    mkcert ca expired -1 localhost && mkcert other foreign 1 localhost ||
    { not_ok "openssl made the test PKI"; done_testing; }
ok "openssl made a CA, server certificates (one expired) and a second CA"

# Bad flags and files: a clear error, no daemon.
out=$("$PROFD" --addr 127.0.0.1:0 --data-dir "$T_TMP/x" --tls-cert "$P/srv.pem" 2>&1)
[ $? -ne 0 ] && echo "$out" | grep -q -- '--tls-cert and --tls-key go together' &&
    ok "--tls-cert without --tls-key is refused" || { not_ok "--tls-cert alone"; diag "$out"; }
out=$("$PROFD" --addr 127.0.0.1:0 --data-dir "$T_TMP/x" --tls-cert "$P/srv.pem" --tls-key "$P/srv2.key" 2>&1)
[ $? -ne 0 ] && echo "$out" | grep -q "cannot load key $P/srv2.key: .*mismatch" &&
    ok "a key that is not the certificate's is refused" || { not_ok "mismatched key"; diag "$out"; }
out=$("$PROFD" --addr 127.0.0.1:0 --data-dir "$T_TMP/x" --tls-cert "$P/nope.pem" --tls-key "$P/srv.key" 2>&1)
[ $? -ne 0 ] && echo "$out" | grep -q "cannot load certificate $P/nope.pem" &&
    ok "a missing certificate file is named" || { not_ok "missing certificate"; diag "$out"; }

# The live certificate is a copy, so SIGHUP can be shown a new one.
cp "$P/srv.pem" "$P/live.pem"; cp "$P/srv.key" "$P/live.key"
profd_start --tls-cert "$P/live.pem" --tls-key "$P/live.key" --read-timeout 2 \
    --max-body 4M || { not_ok "profd starts with TLS"; done_testing; }
grep -q 'listening on https://127.0.0.1:' "$PROFD_LOG" && ok "the log says it listens on https://" ||
    not_ok "https in the listening line"
port=${PROFD_URL##*:}
PROFD_URL=https://localhost:$port
export CURL_CA_BUNDLE=$P/ca.pem

# Uploads, queries, a merge over HTTPS.
Q="service=tls&type=cpu"
upload "$f" "$Q" >/dev/null; is "$HTTP_CODE" 200 "upload over HTTPS"
id=$(echo "$BODY" | jq -r .body.id)
upload "$g" "$Q&labels=zone=a" >/dev/null; is "$HTTP_CODE" 200 "second upload over HTTPS"
api "/api/0/profiles?service=tls&from=2000-01-01T00:00:00&to=2100-01-01T00:00:00" >/dev/null
is "$(echo "$BODY" | jq '.body | length')" 2 "both listed over HTTPS"
curl -s -o "$T_TMP/one.pb.gz" "$PROFD_URL/api/0/profiles/$id"
cmp -s "$T_TMP/one.pb.gz" "$f" && ok "download over HTTPS: the bytes uploaded" || not_ok "download over HTTPS"
M="/api/0/profiles/merge?$Q&from=2000-01-01T00:00:00&to=2100-01-01T00:00:00"
if command -v go >/dev/null; then
	# Go reads its trusted CAs from SSL_CERT_FILE on Linux.
	out=$(SSL_CERT_FILE=$P/ca.pem HOME=$T_TMP PPROF_TMPDIR=$T_TMP gopprof -top "$PROFD_URL$M" 2>&1)
	echo "$out" | grep -q '^ *flat *flat%' && ok "go tool pprof opens a merge over HTTPS" ||
	    { not_ok "go tool pprof over HTTPS"; echo "$out" | head -5 | sed 's/^/# /'; }
	out=$(HOME=$T_TMP PPROF_TMPDIR=$T_TMP SSL_CERT_FILE=$P/other.pem go tool pprof -top "$PROFD_URL$M" 2>&1)
	echo "$out" | grep -q 'certificate signed by unknown authority' &&
	    ok "go tool pprof refuses a server its CAs do not vouch for" || { not_ok "go, wrong CA"; echo "$out" | head -3 | sed 's/^/# /'; }
else
	ok "# SKIP go not installed"; ok "# SKIP go not installed"
fi

# A client that trusts another CA; plain HTTP to the TLS port; TLS 1.1.
out=$(curl -sS --cacert "$P/other.pem" "$PROFD_URL/api/0/version" 2>&1); rc=$?
[ $rc -eq 60 ] && ok "a client trusting another CA refuses the server (curl exit 60)" ||
    { not_ok "wrong CA (curl exit $rc)"; diag "$out"; }
out=$(curl -s -w ' %{http_code}' "http://127.0.0.1:$port/api/0/version")
case $out in *"this port speaks HTTPS"*" 400") ok "plain HTTP to the TLS port: 400 saying so" ;;
	*) not_ok "plain HTTP to the TLS port"; diag "$out" ;; esac
out=$(curl -sS --tls-max 1.1 --tlsv1.0 "$PROFD_URL/api/0/version" 2>&1); rc=$?
[ $rc -ne 0 ] && ok "TLS 1.1 is refused (curl exit $rc)" || not_ok "TLS 1.1 refused"
api /api/0/version >/dev/null; is "$HTTP_CODE" 200 "the daemon keeps serving"
sleep 0.3	# failed connections are counted when reaped
is "$(tls_metric not_tls)" 1 "/metrics: one handshake failure for plain HTTP"
refusers=1; command -v go >/dev/null && refusers=2
is "$(tls_metric peer_refused)" $refusers "/metrics: one for each client that refused our certificate"
is "$(tls_metric protocol)" 1 "/metrics: one for the protocol version"

# SIGHUP: a new certificate while a client is connected.
rm -f "$T_TMP/go"
$TC keepalive localhost "$port" "$P/ca.pem" "$T_TMP/go" > "$T_TMP/ka.out" 2>&1 &
ka=$!
for i in $(seq 1 100); do [ -s "$T_TMP/ka.out" ] && break; sleep 0.05; done
cp "$P/srv2.pem" "$P/live.pem"; cp "$P/srv2.key" "$P/live.key"
kill -HUP "$PROFD_PID"
for i in $(seq 1 100); do grep -q 'certificate .* re-read' "$PROFD_LOG" && break; sleep 0.05; done
touch "$T_TMP/go"; wait $ka
s1=$(serial "$P/srv.pem"); s2=$(serial "$P/srv2.pem")
is "$(sed -n 1p "$T_TMP/ka.out")" "200 $s1" "before SIGHUP: the first certificate"
is "$(sed -n 2p "$T_TMP/ka.out")" "200 $s1" "the open connection survives the reload"
is "$(sed -n 3p "$T_TMP/ka.out")" "200 $s2" "a new connection gets the new certificate"
is "$(metric 'profd_tls_reloads_total{result="ok"}')" 1 "/metrics counts the reload"

# An expired certificate: clients refuse it; a broken file keeps the old.
cp "$P/expired.pem" "$P/live.pem"; cp "$P/expired.key" "$P/live.key"
kill -HUP "$PROFD_PID"; sleep 0.5
out=$(curl -sS "$PROFD_URL/api/0/version" 2>&1); rc=$?
[ $rc -eq 60 ] && echo "$out" | grep -qi 'expired' && ok "an expired certificate is refused by the client" ||
    { not_ok "expired certificate (curl exit $rc)"; diag "$out"; }
echo "not a certificate" > "$P/live.pem"
kill -HUP "$PROFD_PID"
for i in $(seq 1 100); do grep -q 'still serving the previous certificate' "$PROFD_LOG" && break; sleep 0.05; done
grep -q 'still serving the previous certificate' "$PROFD_LOG" && ok "a broken certificate on SIGHUP is logged" ||
    not_ok "broken certificate logged"
cp "$P/srv.pem" "$P/live.pem"; cp "$P/srv.key" "$P/live.key"
kill -HUP "$PROFD_PID"; sleep 0.5
api /api/0/version >/dev/null; is "$HTTP_CODE" 200 "a good certificate again: served"
is "$(metric 'profd_tls_reloads_total{result="error"}')" 1 "/metrics counts the failed reload"
is "$(metric 'profd_tls_reloads_total{result="ok"}')" 3 "and the good ones"

# Limits over TLS.
t=$($TC stall 127.0.0.1 "$port" 10)
case $t in open) not_ok "a silent client is cut off (still open after 10 s)" ;;
	*) check "a client that never starts its handshake is cut off in ~2 s ($t s)" \
	    "$PY" -c "import sys; sys.exit(not (1.5 <= $t <= 5))" ;; esac
# a ClientHello's record header and 3 bytes of its 512: then nothing
t=$($TC stall 127.0.0.1 "$port" 10 1603010200010001fc)
case $t in open) not_ok "a stalled handshake is cut off (still open after 10 s)" ;;
	*) check "a handshake stalled midway is cut off in ~2 s ($t s)" \
	    "$PY" -c "import sys; sys.exit(not (1.5 <= $t <= 5))" ;; esac
sleep 0.3
is "$(tls_metric timeout)" 2 "/metrics: two handshakes cut off by the timeout"
head -c 5000000 /dev/urandom > "$T_TMP/big"
upload "$T_TMP/big" "$Q" >/dev/null; is "$HTTP_CODE" 413 "a body past --max-body: 413 over TLS"
# A client that gives up on a long merge (curl closes with close_notify,
# bytes the daemon must not take for a next request): the merge stops.
ids=
for h in heap_A_01 heap_A_02 heap_B_01 heap_B_02; do
	upload "$PROFD_CORPUS/go/bigstacks/$h.pb.gz" "service=slow&type=heap" >/dev/null
	ids=${ids:+$ids+}$(echo "$BODY" | jq -r .body.id)
done
all=$ids; for r in $(seq 2 100); do all="$all+$ids"; done
curl -s -o /dev/null -m 0.5 "$PROFD_URL/api/0/profiles/$all"
for i in $(seq 1 50); do grep -q 'client went away, cancelling' "$PROFD_LOG" && break; sleep 0.1; done
grep -q 'client went away, cancelling' "$PROFD_LOG" && ok "a TLS client that gives up on a merge cancels it" ||
    not_ok "merge cancelled when the TLS client left"
profd_stop

# The token is checked before the body is read, over TLS too.
echo "writer-0123456789 write" > "$T_TMP/tokens"
PROFD_DIR=
profd_start --tls-cert "$P/srv.pem" --tls-key "$P/srv.key" --auth-file "$T_TMP/tokens" \
    --max-connections 6 || { not_ok "profd starts with TLS and tokens"; done_testing; }
PROFD_URL=https://localhost:${PROFD_URL##*:}
# --max-connections 6: six idle TLS clients hold every slot (the default
# read timeout, 60 s, leaves them be).
coproc HOLD { $TC hold localhost "${PROFD_URL##*:}" "$P/ca.pem" 6; }
read -r -t 30 line <&"${HOLD[0]}"
is "$line" "held 6" "six TLS connections open"
out=$(curl -s -m 2 -o /dev/null -w '%{http_code}' "$PROFD_URL/healthz"); rc=$?
[ $rc -ne 0 ] && ok "a seventh client waits at --max-connections (curl exit $rc)" || not_ok "seventh client waits ($out)"
exec {HOLD[1]}>&-; wait $HOLD_PID 2>/dev/null
sleep 0.3
api /healthz >/dev/null; is "$HTTP_CODE" 200 "served again once they close"
head -c 20000000 /dev/zero > "$T_TMP/zeros"
t0=$(date +%s%N)
upload "$T_TMP/zeros" "$Q" --limit-rate 2M >/dev/null
t1=$(date +%s%N)
is "$HTTP_CODE" 401 "an upload without a token: 401 over TLS"
check "refused before the 20 MB body was read ($(( (t1 - t0) / 1000000 )) ms)" [ $(( (t1 - t0) / 1000000 )) -lt 5000 ]
upload "$f" "$Q" -H 'Authorization: Bearer writer-0123456789' >/dev/null; is "$HTTP_CODE" 200 "with the token: 200"
# clean shutdown with a TLS client connected
coproc HOLD2 { $TC hold localhost "${PROFD_URL##*:}" "$P/ca.pem" 2; }
read -r -t 20 line <&"${HOLD2[0]}"
is "$line" "held 2" "two TLS clients connected at shutdown"
profd_stop
exec {HOLD2[1]}>&-; wait $HOLD2_PID 2>/dev/null

# The warning beyond loopback without TLS.
PROFD_DIR=
profd_start --addr 0.0.0.0:0 || { not_ok "profd starts on 0.0.0.0"; done_testing; }
grep -q 'no --tls-cert and 0.0.0.0:0 is not a loopback address: profiles cross the network in clear text' "$PROFD_LOG" &&
    ok "warns when listening beyond loopback without TLS" || { not_ok "TLS warning"; grep warn "$PROFD_LOG" | sed 's/^/# /'; }
profd_stop
done_testing
