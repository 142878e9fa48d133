#!/bin/bash
# api_small.sh: small API behaviours from a review.
#
# 1. An id segment is decoded after the path is split, so
#    /api/0/profiles/..%2F..%2Fetc%2Fpasswd is a malformed id (400), not an
#    unknown path (404).
# 2. HEAD on the merge routes checks the parameters and what matches but
#    merges nothing: profd_merge_duration_seconds_count does not move.
# 3. A window merge (GET /api/0/profiles/merge) merges the profiles of the
#    most common sample types and leaves out the others, counting them in
#    X-Profd-Merge-Mismatched; an explicit id list keeps its 422.
# 4. POST /api/0/profiles/merge takes the id list in the body (a form field
#    or plain text), for lists too long for a URL: the same merge as the
#    id+id form (same functions, flat and cum), for 4,000 ids where the URL
#    form fails.

. "${top_srcdir:-.}/test/lib/e2e.sh"

C=$PROFD_CORPUS
G=$C/go/cpuburn
command -v jq >/dev/null 2>&1 || skip_all "jq not installed"
command -v go >/dev/null 2>&1 || skip_all "go tool pprof not installed"
[ -d "$G" ] || skip_all "corpus not found at $C"
export PPROF_TMPDIR=$T_TMP/pprof
mkdir -p "$PPROF_TMPDIR"

W='from=2026-11-22T00:00:00&to=2026-11-22T00:59:59'

# same_merge A B: both merged profiles list the same functions with the
# same flat and cum for each sample type. (Not the same bytes: a merge
# numbers locations in the order its workers first saw them, which
# depends on which worker took which input first; under ASan two merges
# of the same ids differed in 2 runs of 6.)
same_merge() {
	local i
	[ -s "$1" ] && [ -s "$2" ] || return 1
	for i in 0 1; do
		cmp -s <(gopprof -top -nodecount=1000000 -nodefraction=0 \
		    -edgefraction=0 -unit=ns -sample_index=$i "$1" 2>/dev/null |
		    sed -n '/flat%/,$p' | LC_ALL=C sort) \
		    <(gopprof -top -nodecount=1000000 -nodefraction=0 \
		    -edgefraction=0 -unit=ns -sample_index=$i "$2" 2>/dev/null |
		    sed -n '/flat%/,$p' | LC_ALL=C sort) || return 1
	done
}

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

# --- uploads: three CPU profiles and a heap profile, all as type=cpu -------
ids=
for f in "$G"/cpu_A_01.pb.gz "$G"/cpu_A_02.pb.gz "$G"/cpu_A_03.pb.gz \
    "$G"/heap_A_01.pb.gz; do
	put "$f" cpu || break
	ids=${ids:+$ids+}$ID
done
check "4 uploads as type=cpu" test "$(echo "$ids" | tr + '\n' | wc -l)" = 4
HEAPID=$ID

# --- 2. HEAD on merges ---------------------------------------------------
n0=$(merges)
req HEAD "/api/0/profiles/merge?service=s&type=cpu&$W"
is "$HTTP_CODE" 200 "HEAD of a window merge: 200"
is "$(hdr X-Profd-Merge-Mismatched)" 1 "... with X-Profd-Merge-Mismatched: 1"
check "... and Content-Disposition" grep -qi '^Content-Disposition: attachment' "$T_TMP/hdr"
req HEAD "/api/0/profiles/$ids"
is "$HTTP_CODE" 422 "HEAD of an id list of mixed types: 422"
req HEAD "/api/0/profiles/${ids%+*}"
is "$HTTP_CODE" 200 "HEAD of an id list of CPU profiles: 200"
req HEAD "/api/0/profiles/merge?service=nosuch&type=cpu&$W"
is "$HTTP_CODE" 404 "HEAD of a window with nothing in it: 404"
req HEAD "/api/0/profiles/merge?type=cpu"
is "$HTTP_CODE" 400 "HEAD of a window merge without service: 400"
req HEAD "/api/0/profiles/0123456789abcdefghij+$HEAPID"
is "$HTTP_CODE" 404 "HEAD of an id list with an unknown id: 404"
is "$(merges)" "$n0" "no HEAD ran a merge (merge count unchanged)"

# --- 3. window merges leave out other sample types ------------------------
req GET "/api/0/profiles/merge?service=s&type=cpu&$W"
is "$HTTP_CODE" 200 "GET of the window merge: 200"
is "$(hdr X-Profd-Merge-Mismatched)" 1 "... X-Profd-Merge-Mismatched: 1"
cp "$T_TMP/out" "$T_TMP/merged.pb.gz"
if gopprof -top "$T_TMP/merged.pb.gz" > "$T_TMP/top" 2>&1 &&
    grep -q 'samples' "$T_TMP/top"; then
	ok "... go tool pprof -top reads it, a CPU profile"
else
	not_ok "... go tool pprof -top reads it, a CPU profile"
	head -5 "$T_TMP/top" | sed 's/^/# /'
fi
exp=$(gopprof -top "$G"/cpu_A_0[1-3].pb.gz 2>/dev/null | grep -m1 'total')
got=$(grep -m1 'total' "$T_TMP/top")
is "$got" "$exp" "... with the total of the three CPU profiles"
req GET "/api/0/profiles/$ids"
is "$HTTP_CODE" 422 "GET of the id list of all four: still 422"
req GET "/api/0/profiles/merge?service=s&type=cpu&$W&limit=1"
is "$HTTP_CODE" 200 "a window of one profile: 200"
is "$(hdr X-Profd-Merge-Mismatched)" "" "... without X-Profd-Merge-Mismatched"

# --- 4. POST an id list ---------------------------------------------------
cpu=${ids%+*}
req GET "/api/0/profiles/$cpu"
cp "$T_TMP/out" "$T_TMP/get.pb.gz"
HTTP_CODE=$(curl -s -o "$T_TMP/post.pb.gz" -w '%{http_code}' \
    --data "ids=$cpu" "$PROFD_URL/api/0/profiles/merge")
is "$HTTP_CODE" 200 "POST merge with ids=ID+ID+ID as a form: 200"
check "... the same merge as GET /api/0/profiles/ID+ID+ID" same_merge "$T_TMP/get.pb.gz" "$T_TMP/post.pb.gz"
printf '%s\n' "$cpu" | tr + '\n' > "$T_TMP/list"
HTTP_CODE=$(curl -s -o "$T_TMP/post2.pb.gz" -w '%{http_code}' -H 'Content-Type: text/plain' \
    --data-binary "@$T_TMP/list" "$PROFD_URL/api/0/profiles/merge")
is "$HTTP_CODE" 200 "POST merge with one id per line: 200"
check "... the same merge" same_merge "$T_TMP/get.pb.gz" "$T_TMP/post2.pb.gz"
HTTP_CODE=$(curl -s -o "$T_TMP/e" -w '%{http_code}' --data "ids=" "$PROFD_URL/api/0/profiles/merge")
is "$HTTP_CODE" 400 "POST merge without ids: 400"
HTTP_CODE=$(curl -s -o "$T_TMP/e" -w '%{http_code}' --data "ids=nope+$cpu" "$PROFD_URL/api/0/profiles/merge")
is "$HTTP_CODE" 400 "POST merge with a malformed id: 400"
long=$(for i in $(seq 1 1334); do printf '%s+' "$cpu"; done)
long=${long%+}
req GET "/api/0/profiles/$long"
check "4,002 ids in the URL: refused ($HTTP_CODE)" [ "$HTTP_CODE" -ge 400 ]
HTTP_CODE=$(curl -s -o "$T_TMP/long.pb.gz" -w '%{http_code}' --max-time 60 \
    --data "ids=$long" "$PROFD_URL/api/0/profiles/merge")
is "$HTTP_CODE" 200 "the same 4,002 ids POSTed: 200"
one=$(gopprof -raw "$T_TMP/get.pb.gz" 2>/dev/null | awk '/^Samples:/{s=1;next} /^Locations/{s=0} s && $1 ~ /^[0-9]+$/ {t+=$1} END{print t}')
all=$(gopprof -raw "$T_TMP/long.pb.gz" 2>/dev/null | awk '/^Samples:/{s=1;next} /^Locations/{s=0} s && $1 ~ /^[0-9]+$/ {t+=$1} END{print t}')
is "$all" "$((one * 1334))" "... each counted: the sample total is 1,334 times the three's"

done_testing
