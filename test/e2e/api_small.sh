#!/bin/bash
# api_small.sh: small API behaviours from a review.
#
# 1. An id segment is decoded after the path is split, so
#    /api/0/profiles/..%2F..%2Fetc%2Fpasswd is a malformed id (400), not an
#    unknown path (404).

. "${top_srcdir:-.}/test/lib/e2e.sh"

C=$PROFD_CORPUS
G=$C/go/cpuburn
command -v jq >/dev/null 2>&1 || skip_all "jq not installed"
command -v go >/dev/null 2>&1 || skip_all "go tool pprof not installed"
[ -d "$G" ] || skip_all "corpus not found at $C"
export PPROF_TMPDIR=$T_TMP/pprof
mkdir -p "$PPROF_TMPDIR"

W='from=2026-11-22T00:00:00&to=2026-11-22T00:59:59'

# req METHOD PATH: status in $HTTP_CODE, headers in $T_TMP/hdr, body in
# $T_TMP/out. HEAD goes with -I so curl does not wait for a body.
req() {
	local how=(-X "$1")
	[ "$1" = HEAD ] && how=(-I)
	HTTP_CODE=$(curl -s --max-time 20 "${how[@]}" -D "$T_TMP/hdr" \
	    -o "$T_TMP/out" -w '%{http_code}' "$PROFD_URL$2")
}
# hdr NAME: a reply header's value from the last req.
hdr() {
	tr -d '\r' < "$T_TMP/hdr" | awk -v k="$(echo "$1" | tr A-Z a-z)" \
	    'index(tolower($0), k ":") == 1 { sub(/^[^:]*: */, ""); print }'
}
# merges: profd_merge_duration_seconds_count from /metrics.
merges() {
	curl -s "$PROFD_URL/metrics" |
	    awk '$1 == "profd_merge_duration_seconds_count" { print $2 }'
}
# put FILE TYPE: uploads as service "s"; the id lands in $ID.
put() {
	upload "$1" "service=s&type=$2&labels=k=v" >/dev/null
	ID=$(printf '%s' "$BODY" | jq -r '.body.id // empty' 2>/dev/null)
	[ "$HTTP_CODE" = 200 ] && [ -n "$ID" ] && return 0
	diag "upload $1: $HTTP_CODE $BODY"
	return 1
}

profd_start --workers 2 || { not_ok "profd starts"; done_testing; }
ok "profd starts"

# --- 1. malformed ids ----------------------------------------------------
req GET '/api/0/profiles/..%2F..%2Fetc%2Fpasswd'
is "$HTTP_CODE" 400 "GET of an id with an encoded '/': 400"
grep -q 'malformed profile id' "$T_TMP/out" && ok "... says malformed profile id" ||
    { not_ok "... says malformed profile id"; diag "$(cat "$T_TMP/out")"; }
req GET '/api/0/profiles/abc%2Fdef+0123456789abcdefghij'
is "$HTTP_CODE" 400 "an id list with an encoded '/': 400"
req GET '/api/0/profiles/0123456789abcdefghij%00x'
is "$HTTP_CODE" 400 "an id with an encoded NUL: 400"
req GET '/api/0/profiles/a/b'
is "$HTTP_CODE" 404 "two segments after /api/0/profiles/: still 404"
req GET '/api/0/profiles/0123456789abcdefghij'
is "$HTTP_CODE" 404 "a well-formed unknown id: 404"

done_testing
