#!/usr/bin/env bash
# PostgreSQL going away under a running profd: two uploaders keep
# uploading while the server is stopped (a clean restart) and, later,
# crashed (pg_ctl -m immediate: crash recovery at the next start). While
# it is down, uploads, lists, merges and /healthz answer 503 with
# Retry-After (never 500) and profd keeps serving what needs no database;
# once the server is back, everything works again without restarting
# profd, and every upload that got a 200 is listed and reads back
# byte-identical.
. "${top_srcdir:-.}/test/lib/e2e.sh"
[ -d "$PROFD_CORPUS" ] || skip_all "corpus not found at $PROFD_CORPUS"
command -v jq >/dev/null || skip_all "jq not installed"
pg_available || skip_all "PostgreSQL server not installed"

PROFD_TEST_STORE=postgresql
W='from=2020-01-01T00:00:00&to=2100-01-01T00:00:00'
F=$PROFD_CORPUS/go/cpuburn/cpu_A_01.pb.gz
profd_start --workers 2 || { not_ok "profd starts on PostgreSQL"; done_testing; }
upload "$F" "service=outage&type=cpu" >/dev/null
is "$HTTP_CODE" 200 "an upload before the outage"

STOP=$T_TMP/stop
# uploader N: uploads until $STOP exists; records codes and acked ids.
uploader() {
	local u=$1 i=0 code out=$T_TMP/reply.$1
	: > "$T_TMP/ok.$u"
	: > "$T_TMP/codes.$u"
	while [ ! -e "$STOP" ]; do
		i=$((i + 1))
		code=$(curl -s -m 20 -o "$out" -D "$out.h" -w '%{http_code}' \
		    --data-binary "@$F" \
		    "$PROFD_URL/api/0/profiles?service=outage&type=cpu&labels=u=$u,n=$i" 2>/dev/null)
		echo "$code" >> "$T_TMP/codes.$u"
		case $code in
		200) printf '%s\n' "$(jq -r .body.id < "$out")" >> "$T_TMP/ok.$u" ;;
		503) grep -qi '^Retry-After:' "$out.h" || echo "503 without Retry-After" >> "$T_TMP/noretry" ;;
		esac
		[ "$code" = 200 ] || sleep 0.05
	done
}
for u in 1 2; do uploader "$u" & done
upids=$(jobs -p | grep -v "^$PROFD_PID\$")

# outage MODE: stops the server (fast, or immediate: a crash), checks
# what profd answers meanwhile, starts it again.
outage() {
	local mode=$1 code
	sleep 1
	pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m "$mode" -w stop >/dev/null
	sleep 0.5
	upload "$F" "service=outage&type=cpu" -D "$T_TMP/h" >/dev/null
	is "$HTTP_CODE" 503 "$mode stop: an upload answers 503"
	check "... with Retry-After" grep -qi '^Retry-After:' "$T_TMP/h"
	api "/api/0/profiles?service=outage&$W" >/dev/null
	is "$HTTP_CODE" 503 "$mode stop: a list answers 503"
	api "/api/0/profiles/merge?service=outage&type=cpu&$W" >/dev/null
	is "$HTTP_CODE" 503 "$mode stop: a merge answers 503"
	api /api/0/services >/dev/null
	is "$HTTP_CODE" 503 "$mode stop: services answers 503"
	code=$(curl -s -o /dev/null -w '%{http_code}' "$PROFD_URL/healthz")
	is "$code" 503 "$mode stop: /healthz says 503"
	api /api/0/version >/dev/null
	is "$HTTP_CODE" 200 "$mode stop: profd still serves what needs no database"
	sleep 1
	pg_server start || not_ok "PostgreSQL starts again"
	for _ in $(seq 1 100); do
		upload "$F" "service=outage&type=cpu" >/dev/null
		[ "$HTTP_CODE" = 200 ] && break
		sleep 0.1
	done
	is "$HTTP_CODE" 200 "$mode stop: uploads succeed again once the server is back"
	code=$(curl -s -o /dev/null -w '%{http_code}' "$PROFD_URL/healthz")
	is "$code" 200 "$mode stop: /healthz is 200 again"
}
outage fast
outage immediate
sleep 1
touch "$STOP"
for p in $upids; do wait "$p" 2>/dev/null; done
check "profd kept running through both outages" kill -0 "$PROFD_PID"

cat "$T_TMP"/ok.* > "$T_TMP/ok"
acked=$(wc -l < "$T_TMP/ok")
diag "upload codes: $(cat "$T_TMP"/codes.* | sort | uniq -c | tr '\n' ' ')"
is "$(cat "$T_TMP"/codes.* | grep -vcE '^(200|503)$')" 0 "every upload got 200 or 503 (no 500, no dropped connection)"
check "some uploads got 503 during the outages" grep -q '^503$' "$T_TMP"/codes.*
check "no 503 came without Retry-After" [ ! -e "$T_TMP/noretry" ]
api "/api/0/profiles?service=outage&$W&limit=100000" >/dev/null
echo "$BODY" | jq -r '.body[].id' | sort > "$T_TMP/listed"
sort "$T_TMP/ok" > "$T_TMP/acked"
is "$(comm -23 "$T_TMP/acked" "$T_TMP/listed" | wc -l)" 0 "every upload that got a 200 is listed ($acked)"
bad=0
while read -r id; do
	curl -s -o "$T_TMP/down" "$PROFD_URL/api/0/profiles/$id"
	cmp -s "$T_TMP/down" "$F" || bad=$((bad + 1))
done < "$T_TMP/ok"
is "$bad" 0 "... and reads back byte-identical"
check "the log names the outage" grep -q 'postgresql unavailable\|cannot connect' "$PROFD_LOG"
profd_stop
done_testing
