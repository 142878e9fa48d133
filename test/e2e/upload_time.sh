#!/usr/bin/env bash
# A profile's own time decides when retention deletes it, so profd refuses
# (400, naming the limit, nothing stored) an upload dated before the
# retention window, which it would acknowledge and then sweep within a
# minute, and one dated further ahead than --max-future, which no time
# range would list and no sweep would delete. Real corpus profiles,
# re-dated with test/lib/retime.py.
. "${top_srcdir:-.}/test/lib/e2e.sh"
RETIME=${top_srcdir:-.}/test/lib/retime.py
SRC=$PROFD_CORPUS/go/cpuburn/cpu_A_01.pb.gz
[ -f "$SRC" ] || skip_all "no corpus profile $SRC"
command -v python3 >/dev/null || skip_all "needs python3"

# dated WHEN: a copy of SRC with time_nanos WHEN (see retime.py); prints its path.
n=0
dated() {
	n=$((n + 1))
	python3 "$RETIME" "$SRC" "$T_TMP/p$n.pb.gz" "$1" && echo "$T_TMP/p$n.pb.gz"
}
# up FILE [QUERY]: uploads FILE; sets HTTP_CODE and BODY.
up() {
	BODY=$(curl -s -o - -w '\n%{http_code}' --data-binary @"$1" \
		"$PROFD_URL/api/0/profiles?service=timed&type=cpu${2:+&$2}")
	HTTP_CODE=${BODY##*$'\n'}
	BODY=${BODY%$'\n'*}
}
count() {
	curl -s "$PROFD_URL/api/0/profiles?service=timed&from=2000-01-01T00:00:00&to=now%2B24h&limit=100000" |
		jq '.body | length'
}
blobs() { store_blobs; }

profd_start --retention 7d --workers 2 || { not_ok "profd starts"; done_testing; }

up "$(dated now-8d)"
is "$HTTP_CODE" 400 "dated 8 days ago with --retention 7d: 400"
check "... naming the retention: $BODY" grep -q -- '--retention' <<<"$BODY"
is "$(count)" 0 "... nothing listed"
is "$(blobs)" 0 "... no blob written"

up "$(dated now-6d)"
is "$HTTP_CODE" 200 "dated 6 days ago: stored"
up "$(dated now)"
is "$HTTP_CODE" 200 "dated now: stored"
up "$(dated now+30m)"
is "$HTTP_CODE" 200 "dated 30 minutes ahead (inside --max-future 1h): stored"

up "$(dated now+2h)"
is "$HTTP_CODE" 400 "dated 2 hours ahead: 400"
check "... naming --max-future: $BODY" grep -q -- '--max-future' <<<"$BODY"
up "$(dated 9223372036854775807)"
is "$HTTP_CODE" 400 "time_nanos = INT64_MAX: 400"
up "$(dated 7258118400000000000)"
is "$HTTP_CODE" 400 "dated in the year 2200: 400"
is "$(count)" 3 "only the three in range are listed"
is "$(blobs)" 3 "... and only their blobs are on disk"

# Without time_nanos, the created_at parameter is the profile's time.
nots=$(dated 0)
up "$nots" "created_at=2020-01-01T00:00:00"
is "$HTTP_CODE" 400 "no time_nanos, created_at in 2020: 400"
check "... naming created_at: $BODY" grep -q 'created_at' <<<"$BODY"
up "$nots" "created_at=now-1h"
is "$HTTP_CODE" 200 "no time_nanos, created_at an hour ago: stored"

# Every stored time can be asked for.
is "$(count)" 4 "a range up to now+24h lists all four"
profd_stop

# --retention 0 keeps everything, however old; --max-future 0 refuses
# anything dated after now.
PROFD_DIR=
profd_start --retention 0 --max-future 0 || { not_ok "profd restarts"; done_testing; }
up "$(dated 1000000000000000000)"
is "$HTTP_CODE" 200 "--retention 0: a profile from 2001 is stored"
up "$(dated now+1m)"
is "$HTTP_CODE" 400 "--max-future 0: a profile a minute ahead is refused"
done_testing
