#!/usr/bin/env bash
# The agent (libprofd-agent, PROFD_COLLECTOR=https://...) and profd-import
# (--cacert) upload to a collector serving HTTPS, with a CA made here by
# openssl: the server's certificate is verified (a wrong CA is a clear
# error, never a fall back to plain HTTP), client certificates work for
# mutual TLS (PROFD_CERT_FILE/PROFD_KEY_FILE, --cert/--key).
. "${top_srcdir:-.}/test/lib/e2e.sh"
. "${top_srcdir:-.}/test/lib/tls_pki.sh"
f=$PROFD_CORPUS/go/cpuburn/cpu_A_01.pb.gz
IMP=${top_srcdir:-.}/tools/profd-import
SO=${top_builddir:-.}/agent/.libs/libprofd-agent.so
HOTAPP=${top_builddir:-.}/agent/examples/hotapp

# count SERVICE: profiles of SERVICE stored (with the reader certificate).
count() {
	curl -s --cacert "$P/ca.pem" --cert "$P/reader.pem" --key "$P/reader.key" \
	    "$PROFD_URL/api/0/profiles?service=$1&from=2000-01-01T00:00:00&to=2100-01-01T00:00:00" |
	    jq '.body | length'
}
mkca ca && mkca clients && mkca other &&
    mkcert ca srv 1 localhost &&
    mkcert clients agent 1 agents "$TLS_CLIENT_EXT" &&
    mkcert clients reader 1 reader "$TLS_CLIENT_EXT" ||
    { not_ok "openssl made the test PKI"; done_testing; }
echo "writer-0123456789 write" > "$T_TMP/auth"
printf 'cert write agents\ncert read reader\n' >> "$T_TMP/auth"
profd_start --tls-cert "$P/srv.pem" --tls-key "$P/srv.key" --tls-client-ca "$P/clients.pem" \
    --auth-file "$T_TMP/auth" || { not_ok "profd starts with TLS"; done_testing; }
port=${PROFD_URL##*:}
PROFD_URL=https://localhost:$port

# profd-import
out=$("$IMP" --collector "$PROFD_URL" --cacert "$P/ca.pem" --service imp --type cpu \
    --token-file /dev/stdin "$f" <<<"writer-0123456789" 2>&1)
echo "$out" | grep -q ': [0-9a-v]\{20\}$' && ok "profd-import --cacert uploads over HTTPS" ||
    { not_ok "profd-import over HTTPS"; diag "$out"; }
out=$(PROFD_CA_FILE=$P/ca.pem "$IMP" --collector "$PROFD_URL" --cert "$P/agent.pem" --key "$P/agent.key" \
    --service imp --type cpu "$f" 2>&1)
echo "$out" | grep -q ': [0-9a-v]\{20\}$' && ok "profd-import with a client certificate (PROFD_CA_FILE) uploads" ||
    { not_ok "profd-import mTLS"; diag "$out"; }
t0=$(date +%s)
out=$("$IMP" --collector "$PROFD_URL" --cacert "$P/other.pem" --service imp --type cpu \
    --token-file /dev/stdin "$f" <<<"writer-0123456789" 2>&1); rc=$?
t1=$(date +%s)
[ $rc -ne 0 ] && echo "$out" | grep -q 'error: .*certificate' &&
    ok "profd-import with the wrong CA fails clearly (exit $rc)" || { not_ok "profd-import wrong CA"; diag "$out"; }
check "and does not retry a verification failure ($((t1 - t0)) s)" [ $((t1 - t0)) -lt 3 ]
out=$("$IMP" --collector "$PROFD_URL" --cert "$P/agent.pem" --service imp --type cpu "$f" 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q -- '--cert and --key go together' &&
    ok "profd-import --cert without --key: usage error" || { not_ok "--cert alone"; diag "$out"; }
is "$(count imp)" 2 "two profiles imported over HTTPS"

# the agent (a sanitizer build whose runtime cannot be preloaded skips it);
# hotapp works 10% of the time (-d 10): still some ten samples a second,
# and a window with samples is uploaded
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0"
if [ -f "$SO" ] && [ -x "$HOTAPP" ] && LD_PRELOAD=$SO "$HOTAPP" -s 0 >/dev/null 2>&1; then
	# libssl is mapped only for https:// (dlopen when the uploader starts)
	maps() {
		LD_PRELOAD=$SO PROFD_SERVICE=maps PROFD_COLLECTOR=$1 PROFD_CA_FILE=$P/ca.pem \
		    PROFD_WINDOW=1 PROFD_PERIOD=1 /usr/bin/python3.11 -c \
		    'import time; time.sleep(2); print(open("/proc/self/maps").read())' 2>/dev/null |
		    grep -c 'libssl\.so'
	}
	is "$(maps http://127.0.0.1:9)" 0 "an http:// agent does not map libssl"
	check "an https:// agent does" [ "$(maps "$PROFD_URL")" -ge 1 ]
	LD_PRELOAD=$SO PROFD_SERVICE=agent-tls PROFD_COLLECTOR=$PROFD_URL PROFD_CA_FILE=$P/ca.pem \
	    PROFD_TOKEN=writer-0123456789 PROFD_WINDOW=1 PROFD_PERIOD=1 "$HOTAPP" -s 3 -d 10 >/dev/null 2>"$T_TMP/a1.err"
	n=$(count agent-tls)
	check "the agent uploads over HTTPS with PROFD_CA_FILE ($n profiles)" [ "${n:-0}" -ge 1 ]
	LD_PRELOAD=$SO PROFD_SERVICE=agent-mtls PROFD_COLLECTOR=$PROFD_URL PROFD_CA_FILE=$P/ca.pem \
	    PROFD_CERT_FILE=$P/agent.pem PROFD_KEY_FILE=$P/agent.key \
	    PROFD_WINDOW=1 PROFD_PERIOD=1 "$HOTAPP" -s 3 -d 10 >/dev/null 2>"$T_TMP/a2.err"
	n=$(count agent-mtls)
	check "the agent uploads with a client certificate and no token ($n profiles)" [ "${n:-0}" -ge 1 ]
	LD_PRELOAD=$SO PROFD_SERVICE=agent-wrongca PROFD_COLLECTOR=$PROFD_URL PROFD_CA_FILE=$P/other.pem \
	    PROFD_TOKEN=writer-0123456789 PROFD_WINDOW=1 PROFD_PERIOD=1 "$HOTAPP" -s 3 -d 10 >/dev/null 2>"$T_TMP/a3.err"
	is "$(count agent-wrongca)" 0 "an agent trusting another CA uploads nothing"
	grep -q "TLS with localhost:$port failed: certificate verify failed" "$T_TMP/a3.err" &&
	    ok "and says why on stderr, once ($(grep -c 'TLS with' "$T_TMP/a3.err") line)" ||
	    { not_ok "agent TLS error message"; sed 's/^/# /' "$T_TMP/a3.err"; }
	is "$(grep -c 'TLS with' "$T_TMP/a3.err")" 1 "the failure is said once without PROFD_VERBOSE"
	LD_PRELOAD=$SO PROFD_SERVICE=agent-noca PROFD_COLLECTOR=$PROFD_URL PROFD_TOKEN=writer-0123456789 \
	    PROFD_WINDOW=1 PROFD_PERIOD=1 "$HOTAPP" -s 2 -d 10 >/dev/null 2>"$T_TMP/a4.err"
	is "$(count agent-noca)" 0 "without PROFD_CA_FILE the system's CAs do not vouch for a private CA"
	LD_PRELOAD=$SO PROFD_SERVICE=agent-badca PROFD_COLLECTOR=$PROFD_URL PROFD_CA_FILE=$T_TMP/none.pem \
	    PROFD_WINDOW=1 PROFD_PERIOD=1 "$HOTAPP" -s 1 -d 10 >/dev/null 2>"$T_TMP/a5.err"; rc=$?
	is "$rc" 0 "an unreadable PROFD_CA_FILE leaves the program running"
	grep -q "PROFD_CA_FILE=\"$T_TMP/none.pem\": No such file or directory; profiling off" "$T_TMP/a5.err" && ok "and the agent says so, profiling off" ||
	    { not_ok "unreadable CA message"; sed 's/^/# /' "$T_TMP/a5.err"; }
	LD_PRELOAD=$SO PROFD_SERVICE=agent-plain PROFD_COLLECTOR=http://localhost:$port \
	    PROFD_TOKEN=writer-0123456789 PROFD_WINDOW=1 PROFD_PERIOD=1 "$HOTAPP" -s 2 -d 10 >/dev/null 2>&1
	is "$(count agent-plain)" 0 "an http:// agent to the TLS port stores nothing"
else
	diag "the agent cannot be preloaded here; its TLS tests skipped"
fi
profd_stop
done_testing
