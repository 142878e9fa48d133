#!/usr/bin/env bash
# A merge covering a damaged input (its blob deleted or truncated on disk)
# answers 200 with the rest, says what it left out in a reply header and
# counts it in /metrics, instead of failing every merge of that window.
. "${top_srcdir:-.}/test/lib/e2e.sh"
profd_start --workers 2 || { not_ok "profd starts"; done_testing; }
ids=()
for f in "$PROFD_CORPUS"/go/cpuburn/cpu_A_0[1-5].pb.gz; do
	ids+=("$(curl -s --data-binary @"$f" \
		"$PROFD_URL/api/0/profiles?service=dmg&type=cpu" | jq -r .body.id)")
done
is "${#ids[@]}" 5 "5 CPU profiles stored"
store_blob_damage "${ids[1]}" remove
store_blob_damage "${ids[3]}" truncate
ok "one blob removed, one truncated behind profd's back"

q="service=dmg&type=cpu&from=2000-01-01T00:00:00"
code=$(curl -s -D "$T_TMP/h" -o "$T_TMP/m.pb.gz" -w '%{http_code}' \
	"$PROFD_URL/api/0/profiles/merge?$q")
is "$code" 200 "the merge answers 200 with the other three"
check "... X-Profd-Merge-Skipped: deleted=0 damaged=2" \
	grep -qi '^X-Profd-Merge-Skipped: deleted=0 damaged=2' "$T_TMP/h"
check "... X-Profd-Merge-Damaged names the first: $(grep -i damaged: "$T_TMP/h" | tr -d '\r')" \
	grep -qiE '^X-Profd-Merge-Damaged: (stored )?profile [13]' "$T_TMP/h"
if command -v go >/dev/null; then
	n=$(gopprof -raw "$T_TMP/m.pb.gz" 2>/dev/null | grep -c '^ *[0-9]')
	[ "${n:-0}" -gt 0 ] && ok "go tool pprof reads the result ($n samples)" ||
		not_ok "go tool pprof reads the result"
fi
check "the log says what was left out" grep -q 'merge: left out input' "$PROFD_LOG"
m=$(curl -s "$PROFD_URL/metrics" | awk '$1 == "profd_merge_inputs_skipped_total{reason=\"damaged\"}" { print $2 }')
is "$m" 2 "metrics: 2 damaged inputs skipped"

# the id list form too
code=$(curl -s -D "$T_TMP/h2" -o /dev/null -w '%{http_code}' \
	"$PROFD_URL/api/0/profiles/${ids[0]}+${ids[1]}+${ids[2]}")
is "$code" 200 "an id list with a damaged one answers 200"
check "... and says so" grep -qi '^X-Profd-Merge-Skipped: deleted=0 damaged=1' "$T_TMP/h2"
# nothing readable at all
code=$(curl -s -o "$T_TMP/b" -w '%{http_code}' "$PROFD_URL/api/0/profiles/${ids[1]}+${ids[3]}")
is "$code" 500 "only damaged inputs: 500"
check "... saying no profile could be read: $(cat "$T_TMP/b")" grep -q 'no profile could be read' "$T_TMP/b"
done_testing
