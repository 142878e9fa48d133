#!/usr/bin/env bash
# Grafana Pyroscope's Node.js SDK (npm @pyroscope/nodejs 0.6.4, as
# published, installed by tools/deps.sh --test into test/pyroscope) pushing to
# profd's /ingest with a bearer token: its wall and heap profiles are
# stored under the application's name with the right types, its tags as
# labels (and spy=nodespy), each reads in `go tool pprof` with the
# function that burnt the CPU, and profd's merge of them equals `go tool
# pprof`'s merge of the stored files. A token without the write scope is
# refused and stores nothing.
. "${top_srcdir:-.}/test/lib/e2e.sh"
command -v go >/dev/null 2>&1 || skip_all "go tool pprof not installed"
command -v jq >/dev/null 2>&1 || skip_all "jq not installed"
command -v node >/dev/null 2>&1 || skip_all "node not installed"
SDK=$top_srcdir/test/pyroscope
[ -d "$SDK/node_modules/@pyroscope/nodejs" ] ||
    skip_all "@pyroscope/nodejs not installed (tools/deps.sh --test runs npm ci in test/pyroscope)"

W='from=2020-01-01T00:00:00&to=2100-01-01T00:00:00'
cat > "$T_TMP/tokens" <<'T'
reader-0123456789 read
writer-0123456789 write
T
profd_start --auth-file "$T_TMP/tokens" || { not_ok "profd starts"; done_testing; }
R=(-H 'Authorization: Bearer reader-0123456789')
# list TYPE: the stored profiles of nodeapp of TYPE, as JSON lines.
list() { curl -s "${R[@]}" "$PROFD_URL/api/0/profiles?service=nodeapp&type=$1&$W&limit=1000" | jq -c '.body[]'; }

# (a second's push: the SDK sends its window when it stops)
PROFD_URL=$PROFD_URL PROFD_TOKEN=reader-0123456789 PUSH_SECONDS=1 DEBUG=pyroscope \
    node "$SDK/push.js" > "$T_TMP/push0.log" 2>&1
is "$?" 0 "the SDK runs with a read-only token"
check "... refused with 403" grep -q 'HTTP 403' "$T_TMP/push0.log"
is "$(list other | wc -l)/$(list heap | wc -l)" 0/0 "... and nothing is stored"

is "$(curl -s -o /dev/null -w '%{http_code}' --data-binary 'a;b 1' "$PROFD_URL/ingest?name=nodeapp")" 401 "/ingest without a token: 401"
is "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer nope-0123456789' --data-binary 'a;b 1' "$PROFD_URL/pyroscope/ingest?name=nodeapp")" 401 "... an unknown token: 401"
start=$(date +%s)
PROFD_URL=$PROFD_URL PROFD_TOKEN=writer-0123456789 PUSH_SECONDS=7 DEBUG=pyroscope \
    node "$SDK/push.js" > "$T_TMP/push.log" 2>&1
is "$?" 0 "the SDK pushes for 7 s and stops"
is "$(grep -c 'rejected\|Error sending' "$T_TMP/push.log")" 0 "... no upload refused"
list other > "$T_TMP/other"
list heap > "$T_TMP/heap"
nw=$(wc -l < "$T_TMP/other")
nh=$(wc -l < "$T_TMP/heap")
check "wall profiles are stored as type other ($nw)" [ "$nw" -ge 3 ]
check "heap profiles as type heap ($nh)" [ "$nh" -ge 2 ]
w1=$(head -n 1 "$T_TMP/other")
is "$(jq -c .sample_types <<<"$w1")" '["samples/count","wall/nanoseconds"]' "... wall: samples and wall time"
is "$(head -n 1 "$T_TMP/heap" | jq -c .sample_types)" '["inuse_objects/count","inuse_space/bytes"]' "... heap: in-use objects and space"
labels=$(jq -r '.labels | map(.key + "=" + .value) | join(",")' <<<"$w1")
check "the SDK's tags are labels ($labels)" grep -q 'env=test.*region=eu-west' <<<"$labels"
check "... with spy=nodespy and the runtime" grep -q 'process.runtime.name=nodejs.*spy=nodespy' <<<"$labels"
d=$(( $(date -d "$(jq -r .created_at <<<"$w1")" +%s) - start ))
check "... dated within the push ($d s after it began)" [ "$d" -ge -1 -a "$d" -le 12 ]
n=$(curl -s "${R[@]}" "$PROFD_URL/api/0/profiles?service=nodeapp&type=other&env=test&$W&labels=region=eu-west" | jq '.body | length')
is "$n" "$nw" "a label query finds them all"

# Every wall profile reads in go tool pprof; profd's merge equals pprof's.
i=0
for id in $(jq -r .id "$T_TMP/other"); do
	i=$((i + 1))
	curl -s "${R[@]}" -o "$T_TMP/w.$i.pb.gz" "$PROFD_URL/api/0/profiles/$id"
done
gopprof -top "$T_TMP/w.1.pb.gz" > "$T_TMP/top1" 2>&1
check "go tool pprof reads a stored wall profile" grep -q 'flat%' "$T_TMP/top1"
curl -s "${R[@]}" -o "$T_TMP/m.pb.gz" "$PROFD_URL/api/0/profiles/merge?service=nodeapp&type=other&$W"
gopprof -proto "$T_TMP"/w.*.pb.gz > "$T_TMP/gm.pb.gz" 2>/dev/null
gopprof -top -sample_index=samples -nodecount=100000 -nodefraction=0 "$T_TMP/m.pb.gz" 2>/dev/null | sed -n '/flat%/,$p' | sort > "$T_TMP/ours"
gopprof -top -sample_index=samples -nodecount=100000 -nodefraction=0 "$T_TMP/gm.pb.gz" 2>/dev/null | sed -n '/flat%/,$p' | sort > "$T_TMP/theirs"
check "profd's merge of the wall profiles equals go tool pprof's ($(wc -l < "$T_TMP/ours") rows)" cmp -s "$T_TMP/ours" "$T_TMP/theirs"
check "... burnHashes is on top" grep -q 'burnHashes' <<<"$(gopprof -top -sample_index=wall "$T_TMP/m.pb.gz" 2>/dev/null | sed -n '/flat%/,+3p')"
curl -s "${R[@]}" -o "$T_TMP/h.pb.gz" "$PROFD_URL/api/0/profiles/merge?service=nodeapp&type=heap&$W"
check "the heap merge names keepArrays" grep -q 'keepArrays' <<<"$(gopprof -top -sample_index=inuse_space "$T_TMP/h.pb.gz" 2>/dev/null)"
profd_stop
done_testing
