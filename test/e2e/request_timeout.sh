#!/usr/bin/env bash
# --request-timeout bounds every request (issue 11, item 2). profd runs with
# --request-timeout 2 and one worker, so one merge thread. Six merges of
# 400 large heap profiles each (four stored ones, each listed 100 times:
# seconds of work) are sent at once: the one running at its timeout must be
# answered 504 and cancelled, the ones still queued at theirs 503 (counted
# as never started), each within a second of the timeout and naming
# --request-timeout and its value. The daemon's CPU time (/proc/PID/stat
# utime + stime) must then stop growing, and the next requests are served.
# Then, with the default timeout, a client that goes away in the middle of
# such a merge must free the CPU within about a second.
. "${top_srcdir:-.}/test/lib/e2e.sh"
[ -d "$PROFD_CORPUS" ] || skip_all "corpus not found at $PROFD_CORPUS"
command -v jq >/dev/null || skip_all "jq not installed"

BIG=$PROFD_CORPUS/go/bigstacks
for f in heap_A_01 heap_A_02 heap_B_01 heap_B_02; do
	[ -f "$BIG/$f.pb.gz" ] || skip_all "missing $BIG/$f.pb.gz"
done
NMERGE=6
TICK=$(getconf CLK_TCK)
# CPU ticks a cancelled merge may still use: it stops inside the input it
# is decoding; allow a quarter of a second (more under sanitizers).
if nm -an "$PROFD" 2>/dev/null | grep -qE '__(asan|tsan)_init' ||
    ldd "$PROFD" 2>/dev/null | grep -qE 'lib(asan|tsan)'; then
	SLACK=$((TICK))
else
	SLACK=$((TICK / 4))
fi

# cpu: the daemon's user + system CPU time so far, in ticks.
cpu() { awk '{ print $14 + $15 }' "/proc/$PROFD_PID/stat"; }
# store_heaps: uploads the four heap profiles; sets IDS (a + list of the
# four repeated 100 times).
store_heaps() {
	local f ids=() r
	for f in heap_A_01 heap_A_02 heap_B_01 heap_B_02; do
		upload "$BIG/$f.pb.gz" "service=slow&type=heap" > /dev/null
		ids+=("$(echo "$BODY" | jq -r .body.id)")
	done
	local four
	four=$(IFS=+; echo "${ids[*]}")
	IDS=$four
	for r in $(seq 2 100); do IDS="$IDS+$four"; done
}
# merge_bg N [CURL ARGS]: the 400-input merge in the background; its
# status and time land in $T_TMP/m.N, headers in .h, body in .b.
merge_bg() {
	local n=$1; shift
	curl -s -o "$T_TMP/m.$n.b" -D "$T_TMP/m.$n.h" \
	    -w '%{http_code} %{time_total}' "$@" \
	    "$PROFD_URL/api/0/profiles/$IDS" > "$T_TMP/m.$n" 2>/dev/null &
}
# merge_small: merges two small CPU profiles; prints the status.
merge_small() {
	local a b
	upload "$PROFD_CORPUS/go/cpuburn/cpu_A_01.pb.gz" "service=small&type=cpu" > /dev/null
	a=$(echo "$BODY" | jq -r .body.id)
	upload "$PROFD_CORPUS/go/cpuburn/cpu_A_02.pb.gz" "service=small&type=cpu" > /dev/null
	b=$(echo "$BODY" | jq -r .body.id)
	curl -s -o /dev/null -w '%{http_code}' "$PROFD_URL/api/0/profiles/$a+$b"
}

profd_start --request-timeout 2 --workers 1 --max-merges "$NMERGE" ||
    { not_ok "profd starts"; done_testing; }
ok "profd starts with --request-timeout 2 --workers 1 --max-merges $NMERGE"
store_heaps
is "$HTTP_CODE" 200 "four large heap profiles stored"

# NMERGE merges at once on the one merge thread: one runs, the rest wait.
pids=()
for i in $(seq 1 "$NMERGE"); do
	merge_bg "$i"
	pids+=($!)
done
wait "${pids[@]}"
cpu_answered=$(cpu)
n503=0 n504=0 nother=0 slow=0 named=0 retry=0
for i in $(seq 1 "$NMERGE"); do
	read -r code t < "$T_TMP/m.$i"
	diag "merge $i: $code in $t s: $(cat "$T_TMP/m.$i.b")"
	case $code in
	504) n504=$((n504 + 1))
	     [ "$(jq -r .error "$T_TMP/m.$i.b")" = "request took longer than --request-timeout (2 s); its work was cancelled" ] &&
	         named=$((named + 1)) ;;
	503) n503=$((n503 + 1))
	     [ "$(jq -r .error "$T_TMP/m.$i.b")" = "request waited longer than --request-timeout (2 s) for a worker; try again" ] &&
	         named=$((named + 1))
	     grep -qi '^Retry-After: 1' "$T_TMP/m.$i.h" && retry=$((retry + 1)) ;;
	*)   nother=$((nother + 1)) ;;
	esac
	awk -v t="$t" 'BEGIN { exit !(t >= 1.9 && t < 3.0) }' || slow=$((slow + 1))
done
check "a merge running at the timeout is answered 504, cancelled ($n504)" \
    [ "$n504" -ge 1 ]
check "merges still queued at their timeout are answered 503 ($n503)" \
    [ "$n503" -ge 1 ]
is "$nother" 0 "no merge got another status"
is "$named" "$NMERGE" "each error names --request-timeout and its value"
is "$retry" "$n503" "each 503 has Retry-After"
is "$slow" 0 "each was answered between the timeout and a second after it"
is "$(metric 'profd_request_timeouts_total{state="running"}') $(metric 'profd_request_timeouts_total{state="queued"}')" \
    "$n504 $n503" "metrics: the 504s timed out running, the 503s queued (never started)"

# The cancelled merges stop: CPU time stays flat after a grace second.
sleep 1
c1=$(cpu)
sleep 2
c2=$(cpu)
diag "CPU ticks ($TICK/s): $cpu_answered at the replies, $c1 a second later, $c2 two seconds after that"
check "the daemon's CPU time stops growing ($((c2 - c1)) ticks in 2 s, at most $SLACK)" \
    [ $((c2 - c1)) -le "$SLACK" ]
is "$(metric profd_merges_running)" 0 "no merge is left running"

api /healthz > /dev/null
is "$HTTP_CODE $BODY" "200 ok" "/healthz answers 200 afterwards"
is "$(merge_small)" 200 "a merge of two small profiles is served afterwards"
profd_stop

# A client that goes away mid-merge frees the CPU within about a second.
profd_start --workers 1 ||
    { not_ok "profd starts again"; done_testing; }
merge_bg c -m 1.5
pc=$!
wait "$pc"
gone=$(date +%s%N)
check "the client gave up on the merge (curl -m 1.5: $(cat "$T_TMP/m.c"))" \
    grep -q '^000' "$T_TMP/m.c"
check "the merge stops within 2 s of the client leaving" \
    wait_metric profd_merges_running 0 2
diag "merge stopped $(( ($(date +%s%N) - gone) / 1000000 )) ms after the client left"
sleep 1
c1=$(cpu)
sleep 2
c2=$(cpu)
check "then the daemon's CPU time stays flat ($((c2 - c1)) ticks in 2 s)" \
    [ $((c2 - c1)) -le "$SLACK" ]
is "$(merge_small)" 200 "the next merge is served"
done_testing
