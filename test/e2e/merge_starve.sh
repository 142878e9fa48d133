#!/usr/bin/env bash
# Merges never starve everything else (issue 11, item 3: during 8
# concurrent merges of 240 large heap profiles an upload took 25 s, a
# services list 22 s, and /healthz answered 503). profd runs with its
# default workers and --max-merges 3. Eight merges of 400 large heap
# profiles each (four stored ones, each listed 100 times: many seconds of
# work each) are sent at once: three are admitted and run on the merge
# pool, the other five get 503 at once with Retry-After and a message
# naming --max-merges. While the three keep every merge worker busy (their
# clients still wait after the probes, and /metrics shows them running),
# an upload, a list,
# a download, a services and a labels query and /healthz must each answer
# 200 within STARVE_PROBE_MS (default 3000 ms; before the fix they waited
# for the merges, 25-90 s), as must /metrics, and the common pool's queue
# must stay empty (merge helpers run on the merge pool). Last, the merges' clients go away
# and the merges stop.
. "${top_srcdir:-.}/test/lib/e2e.sh"
[ -d "$PROFD_CORPUS" ] || skip_all "corpus not found at $PROFD_CORPUS"
command -v jq >/dev/null || skip_all "jq not installed"

BIG=$PROFD_CORPUS/go/bigstacks
SMALL=$PROFD_CORPUS/go/cpuburn/cpu_A_01.pb.gz
for f in "$BIG/heap_A_01" "$BIG/heap_A_02" "$BIG/heap_B_01" "$BIG/heap_B_02"; do
	[ -f "$f.pb.gz" ] || skip_all "missing $f.pb.gz"
done
[ -f "$SMALL" ] || skip_all "missing $SMALL"
MAXM=3
NMERGE=8
PROBE_MS=${STARVE_PROBE_MS:-3000}
W='from=2020-01-01T00:00:00&to=2100-01-01T00:00:00'

# probe NAME CURL ARGS...: one timed request; 200 within PROBE_MS passes.
probe() {
	local name=$1 code t ms
	shift
	read -r code t < <(curl -s -o "$T_TMP/probe.b" \
	    -w '%{http_code} %{time_total}\n' -m 60 "$@")
	ms=$(awk -v t="$t" 'BEGIN { printf "%d", t * 1000 }')
	if [ "$code" = 200 ] && [ "$ms" -lt "$PROBE_MS" ]; then
		ok "$name answers 200 in $ms ms (< $PROBE_MS) while merges run"
	else
		not_ok "$name answers 200 in $ms ms (< $PROBE_MS) while merges run ($code)"
	fi
}

profd_start --max-merges "$MAXM" || { not_ok "profd starts"; done_testing; }
ok "profd starts with default workers and --max-merges $MAXM"
ids=()
for f in heap_A_01 heap_A_02 heap_B_01 heap_B_02; do
	upload "$BIG/$f.pb.gz" "service=big&type=heap&labels=file=$f" > /dev/null
	ids+=("$(echo "$BODY" | jq -r .body.id)")
done
is "$HTTP_CODE" 200 "four large heap profiles stored"
FOUR=$(IFS=+; echo "${ids[*]}")
IDS=$FOUR
for r in $(seq 2 100); do IDS="$IDS+$FOUR"; done
t0=$(date +%s%N)
code=$(curl -s -o /dev/null -w '%{http_code}' "$PROFD_URL/api/0/profiles/$FOUR")
diag "one merge of the four alone: $code in $(( ($(date +%s%N) - t0) / 1000000 )) ms; each merge below reads them 100 times over"

pids=()
for i in $(seq 1 "$NMERGE"); do
	curl -s -o "$T_TMP/m.$i.b" -D "$T_TMP/m.$i.h" -w '%{http_code}' \
	    "$PROFD_URL/api/0/profiles/$IDS" > "$T_TMP/m.$i" 2>/dev/null &
	pids+=($!)
done
# The refused ones are answered at once.
for i in $(seq 1 100); do
	n=0
	for j in $(seq 1 "$NMERGE"); do [ -s "$T_TMP/m.$j" ] && n=$((n + 1)); done
	[ "$n" -ge $((NMERGE - MAXM)) ] && break
	sleep 0.1
done
n503=0 named=0 retry=0 running=()
for i in $(seq 1 "$NMERGE"); do
	if [ -s "$T_TMP/m.$i" ]; then
		[ "$(cat "$T_TMP/m.$i")" = 503 ] && n503=$((n503 + 1))
		grep -q "busy: $MAXM merges running (--max-merges $MAXM), try again" \
		    "$T_TMP/m.$i.b" && named=$((named + 1))
		grep -qi '^Retry-After: [0-9]' "$T_TMP/m.$i.h" && retry=$((retry + 1))
	else
		running+=("${pids[$((i - 1))]}")
	fi
done
is "$n503" $((NMERGE - MAXM)) "the merges past --max-merges $MAXM get 503 at once"
is "$named" "$n503" "their error names --max-merges and its value"
is "$retry" "$n503" "they carry Retry-After"
is "${#running[@]}" "$MAXM" "the $MAXM admitted merges are still running"
sleep 0.5	# let them get going

# Meanwhile, everything else answers.
probe "an upload" --data-binary "@$SMALL" -H 'Content-Type: application/octet-stream' \
    "$PROFD_URL/api/0/profiles?service=probe&type=cpu"
id=$(jq -r .body.id "$T_TMP/probe.b")
probe "a list" "$PROFD_URL/api/0/profiles?service=big&$W"
is "$(jq '.body | length' "$T_TMP/probe.b")" 4 "the list has the four profiles"
probe "a download" "$PROFD_URL/api/0/profiles/$id"
cmp -s "$T_TMP/probe.b" "$SMALL"
check "the download is the uploaded profile" [ $? = 0 ]
probe "a services query" "$PROFD_URL/api/0/services"
is "$(jq -c '.body | sort' "$T_TMP/probe.b")" '["big","probe"]' "it lists both services"
probe "a labels query" "$PROFD_URL/api/0/labels?service=big"
probe "/healthz" "$PROFD_URL/healthz"
is "$(cat "$T_TMP/probe.b")" ok "/healthz says ok"
probe "/metrics" "$PROFD_URL/metrics"
mv_() { awk -v n="$1" '$1 == n { print $2 }' "$T_TMP/probe.b"; }
alive=0
for p in "${running[@]}"; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
is "$alive $(mv_ profd_merges_running)" "$MAXM $MAXM" \
    "the merges were still running after the probes (clients waiting, /metrics)"
is "$(mv_ profd_merges_refused_total)" "$n503" "/metrics counts the refusals"
is "$(mv_ profd_worker_queue_depth)" 0 "nothing waits in the common pool's queue"
check "the merge pool holds the merges and their helpers ($(mv_ profd_merge_jobs_inflight) jobs)" \
    [ "$(mv_ profd_merge_jobs_inflight)" -ge "$MAXM" ]

# The clients go away: the merges stop.
kill "${running[@]}" 2>/dev/null
wait "${pids[@]}" 2>/dev/null
check "the merges stop once their clients are gone" \
    wait_metric profd_merges_running 0 10
code=$(curl -s -o /dev/null -w '%{http_code}' "$PROFD_URL/api/0/profiles/$FOUR")
is "$code" 200 "a merge is served again"
done_testing
