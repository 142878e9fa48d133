#!/usr/bin/env bash
# Bearer-token access control: 401 with WWW-Authenticate for a missing or
# unknown token, 403 for the wrong scope, read/write/admin scopes, reload on
# SIGHUP, the import script sending PROFD_TOKEN, and the warning when
# listening beyond loopback without --auth-file.
. "${top_srcdir:-.}/test/lib/e2e.sh"
f=$PROFD_CORPUS/go/cpuburn/cpu_A_01.pb.gz
tokens=$T_TMP/tokens
cat > "$tokens" <<'T'
# token scope
reader-0123456789 read
writer-0123456789 write
admin-0123456789  admin
T
profd_start --auth-file "$tokens" || { not_ok "profd starts"; done_testing; }
Q="service=s&type=cpu"
L="/api/0/profiles?service=s&from=2020-01-01T00:00:00&to=2100-01-01T00:00:00"
upload "$f" "$Q" >/dev/null; is "$HTTP_CODE" 401 "upload without a token: 401"
echo "$BODY" | grep -q 'missing bearer token' && ok "401 says the token is missing" || not_ok "401 message"
hdr=$(curl -s -D - -o /dev/null "$PROFD_URL$L" | tr -d '\r' | grep -i '^WWW-Authenticate:')
is "$hdr" 'WWW-Authenticate: Bearer realm="profd"' "401 carries WWW-Authenticate: Bearer"
upload "$f" "$Q" -H 'Authorization: Bearer nope-0123456789' >/dev/null; is "$HTTP_CODE" 401 "unknown token: 401"
upload "$f" "$Q" -H 'Authorization: Bearer reader-0123456789' >/dev/null; is "$HTTP_CODE" 403 "read token cannot upload: 403"
upload "$f" "$Q" -H 'Authorization: Bearer writer-0123456789' >/dev/null; is "$HTTP_CODE" 200 "write token uploads"
id=$(echo "$BODY" | jq -r .body.id)
upload "$f" "$Q" -H 'Authorization: Bearer admin-0123456789' >/dev/null; is "$HTTP_CODE" 200 "admin token uploads"
api "$L" -H 'Authorization: Bearer writer-0123456789' >/dev/null; is "$HTTP_CODE" 403 "write token cannot list: 403"
api "$L" -H 'Authorization: Bearer reader-0123456789' >/dev/null; is "$HTTP_CODE" 200 "read token lists"
is "$(echo "$BODY" | jq '.body | length')" 2 "both uploads listed"
api "/api/0/profiles/$id" -H 'Authorization: Bearer admin-0123456789' >/dev/null; is "$HTTP_CODE" 200 "admin token downloads"
api "/api/0/profiles/$id" >/dev/null; is "$HTTP_CODE" 401 "download without token: 401"
api "/api/0/profiles/merge?$Q&from=2020-01-01T00:00:00" >/dev/null; is "$HTTP_CODE" 401 "merge without token: 401"
api /api/0/services >/dev/null; is "$HTTP_CODE" 401 "services without token: 401"
api /api/0/version >/dev/null; is "$HTTP_CODE" 401 "everything under /api/ is guarded"
api /api/0/version -H 'Authorization: bearer   reader-0123456789  ' >/dev/null; is "$HTTP_CODE" 200 "scheme is case-insensitive, blanks ignored"
code=$(curl -s -o /dev/null -w '%{http_code}' "$PROFD_URL/metrics")
case $code in 200|404) ok "/metrics is not guarded ($code)" ;; *) not_ok "/metrics is not guarded (got $code)" ;; esac

# the import script sends PROFD_TOKEN
imp=$top_srcdir/tools/profd-import
if [ -x "$imp" ]; then
	out=$(PROFD_TOKEN=writer-0123456789 "$imp" --collector "$PROFD_URL" --service imp --type cpu "$f" 2>&1)
	echo "$out" | grep -q ': [0-9a-v]\{20\}$' && ok "profd-import with PROFD_TOKEN uploads" || { not_ok "profd-import with PROFD_TOKEN"; diag "$out"; }
	"$imp" --collector "$PROFD_URL" --retries 0 --service imp --type cpu "$f" >/dev/null 2>&1
	[ $? -ne 0 ] && ok "profd-import without a token fails" || not_ok "profd-import without a token fails"
fi

# the agent sends PROFD_TOKEN too (LD_PRELOAD into the plain hotapp; a
# sanitizer build whose runtime cannot be preloaded skips this part)
SO=${top_builddir:-.}/agent/.libs/libprofd-agent.so
HOTAPP=${top_builddir:-.}/agent/examples/hotapp
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0"
if [ -f "$SO" ] && [ -x "$HOTAPP" ] && LD_PRELOAD=$SO "$HOTAPP" -s 0 >/dev/null 2>&1; then
	LD_PRELOAD=$SO PROFD_SERVICE=agent-auth PROFD_COLLECTOR=$PROFD_URL PROFD_TOKEN=writer-0123456789 \
	    PROFD_WINDOW=1 PROFD_PERIOD=1 "$HOTAPP" -s 3 >/dev/null 2>&1
	LD_PRELOAD=$SO PROFD_SERVICE=agent-noauth PROFD_COLLECTOR=$PROFD_URL \
	    PROFD_WINDOW=1 PROFD_PERIOD=1 "$HOTAPP" -s 2 >/dev/null 2>&1
	api "/api/0/profiles?service=agent-auth&type=cpu&from=now-5m" -H 'Authorization: Bearer reader-0123456789' >/dev/null
	n=$(echo "$BODY" | jq '.body | length')
	check "the agent uploads with PROFD_TOKEN ($n profiles)" test "${n:-0}" -ge 1
	api "/api/0/profiles?service=agent-noauth&type=cpu&from=now-5m" -H 'Authorization: Bearer reader-0123456789' >/dev/null
	is "$(echo "$BODY" | jq '.body | length')" 0 "the agent without a token stores nothing (401)"
else
	diag "agent not built or not preloadable in this build: agent token checks skipped"
fi

# SIGHUP re-reads the file; a broken file keeps the old tokens
echo "fresh-0123456789 admin" > "$tokens"
kill -HUP "$PROFD_PID"; sleep 0.3
api /api/0/version -H 'Authorization: Bearer reader-0123456789' >/dev/null; is "$HTTP_CODE" 401 "after SIGHUP the removed token is refused"
api /api/0/version -H 'Authorization: Bearer fresh-0123456789' >/dev/null; is "$HTTP_CODE" 200 "after SIGHUP the new token works"
echo "broken line with too many words" > "$tokens"
kill -HUP "$PROFD_PID"; sleep 0.3
api /api/0/version -H 'Authorization: Bearer fresh-0123456789' >/dev/null; is "$HTTP_CODE" 200 "a broken file on SIGHUP keeps the old tokens"
grep -q 'keeping the old tokens' "$PROFD_LOG" && ok "the broken file is logged" || not_ok "the broken file is logged"
profd_stop

echo "x read" > "$T_TMP/short"
PROFD_DIR=
"$PROFD" --addr 127.0.0.1:0 --data-dir "$T_TMP/d2" --auth-file "$T_TMP/short" 2>"$T_TMP/err"
rc=$?
[ $rc -ne 0 ] && grep -q 'shorter than 8' "$T_TMP/err" && ok "a bad auth file stops start-up with the line" || not_ok "bad auth file at start (rc $rc)"
profd_start --addr 0.0.0.0:0 || { not_ok "profd starts on 0.0.0.0"; done_testing; }
grep -q 'no --auth-file and 0.0.0.0:0 is not a loopback' "$PROFD_LOG" && ok "warns when listening beyond loopback without --auth-file" || not_ok "warning beyond loopback"
done_testing
