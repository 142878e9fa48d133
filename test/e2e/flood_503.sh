#!/usr/bin/env bash
# Overload: profd with one worker and a queue of four takes a flood of
# FLOOD_N parallel requests: three uploads of a large bigstacks CPU profile
# (400 KB, 3 MB inflated) to one merge of ten 2 MB bigstacks heap profiles
# (18 MB inflated each). Some must get 503 with Retry-After,
# every reply must be 200 or 503 (no reset connection, no other 5xx), the
# daemon's resident memory (VmRSS, sampled every 20 ms) must stay under
# FLOOD_RSS_MB, and right after the flood an upload and a list must work.
. "${top_srcdir:-.}/test/lib/e2e.sh"
[ -d "$PROFD_CORPUS" ] || skip_all "corpus not found at $PROFD_CORPUS"
command -v jq >/dev/null || skip_all "jq not installed"

N=${FLOOD_N:-200}
HEAP=$PROFD_CORPUS/go/bigstacks/heap_B_02.pb.gz	# 2.1 MB, 18 MB inflated
BIG=${FLOOD_FILE:-$PROFD_CORPUS/go/bigstacks/cpu_A_01.pb.gz}	# 400 KB
[ -f "$BIG" ] && [ -f "$HEAP" ] || skip_all "missing bigstacks profiles"
W='from=2020-01-01T00:00:00&to=2100-01-01T00:00:00'
# ASan's shadow memory and quarantine, and TSan's shadow memory, inflate
# RSS: allow more there.
if nm -an "$PROFD" 2>/dev/null | grep -qE '__(asan|tsan)_init' ||
    ldd "$PROFD" 2>/dev/null | grep -qE 'lib(asan|tsan)'; then
	RSS_MB=${FLOOD_RSS_MB:-1024}
else
	RSS_MB=${FLOOD_RSS_MB:-300}
fi

profd_start --workers 1 --max-queue 4 || { not_ok "profd starts"; done_testing; }
ok "profd starts with --workers 1 --max-queue 4"
for i in $(seq 1 10); do
	upload "$HEAP" "service=flood&type=heap" > /dev/null
	[ "$HTTP_CODE" = 200 ] || break
done
is "$HTTP_CODE" 200 "ten large profiles stored before the flood"
rss_start=$(awk '/^VmRSS:/ { print $2 }' "/proc/$PROFD_PID/status")

# sample VmRSS (KB) until told to stop; print the peak (read by the
# shell: an awk every 20 ms cost more than the sampling)
(
	peak=0
	while [ ! -e "$T_TMP/stop_rss" ]; do
		r=
		while read -r k v _; do
			[ "$k" = VmRSS: ] && { r=$v; break; }
		done < "/proc/$PROFD_PID/status" 2>/dev/null
		[ -n "$r" ] && [ "$r" -gt "$peak" ] && peak=$r
		sleep 0.02
	done
	echo "$peak" > "$T_TMP/rss_peak"
) &
sampler=$!

# The flood: N requests (every fourth a merge) sent at once by one curl
# (--parallel: a connection each); request I leaves its headers in
# $T_TMP/h.I and "I STATUS CURL-EXIT" in $T_TMP/codes.
: > "$T_TMP/flood.cfg"
for i in $(seq 1 "$N"); do
	{
		[ "$i" = 1 ] || echo next
		printf 'output = "/dev/null"\ndump-header = "%s"\nmax-time = 120\n' "$T_TMP/h.$i"
		printf 'write-out = "%s %%{http_code} %%{exitcode}\\n"\n' "$i"
		if [ $((i % 4)) = 0 ]; then
			printf 'url = "%s"\n' "$PROFD_URL/api/0/profiles/merge?service=flood&type=heap&$W"
		else
			printf 'url = "%s"\n' "$PROFD_URL/api/0/profiles?service=flood&type=cpu&labels=n=$i"
			printf 'header = "Content-Type: application/octet-stream"\n'
			printf 'data-binary = "@%s"\n' "$BIG"
		fi
	} >> "$T_TMP/flood.cfg"
done

begin=$(date +%s%N)
curl -s --parallel --parallel-immediate --parallel-max "$N" -K "$T_TMP/flood.cfg" > "$T_TMP/codes"
ms=$(( ($(date +%s%N) - begin) / 1000000 ))
touch "$T_TMP/stop_rss"
wait "$sampler"
peak=$(cat "$T_TMP/rss_peak")

codes=() exits=()
while read -r i code rc; do codes[i]=$code exits[i]=$rc; done < "$T_TMP/codes"
n200=0 n503=0 nother=0 nerr=0 noretry=0
for i in $(seq 1 "$N"); do
	code=${codes[i]:-} rc=${exits[i]:-}
	[ "$rc" = 0 ] || { nerr=$((nerr + 1)); diag "request $i: curl exit $rc"; }
	case $code in
	200) n200=$((n200 + 1)) ;;
	503) n503=$((n503 + 1))
	     grep -qi '^Retry-After: [0-9]' "$T_TMP/h.$i" || noretry=$((noretry + 1)) ;;
	*)   nother=$((nother + 1)); diag "request $i: status $code" ;;
	esac
done
diag "$N requests in $ms ms: $n200 got 200, $n503 got 503, $nother other, $nerr transport errors"
diag "VmRSS: $((rss_start / 1024)) MB before, peak $((peak / 1024)) MB during the flood (bound $RSS_MB MB)"
check "some requests got 503 ($n503)" [ "$n503" -gt 0 ]
check "some requests got through ($n200)" [ "$n200" -gt 0 ]
is "$noretry" 0 "every 503 carries Retry-After"
is "$nother" 0 "no status other than 200 and 503"
is "$nerr" 0 "no connection reset or timeout"
check "peak VmRSS $((peak / 1024)) MB < $RSS_MB MB" [ "$peak" -lt $((RSS_MB * 1024)) ]
check "profd still running" kill -0 "$PROFD_PID"
diag "VmRSS after the flood: $(( $(awk '/^VmRSS:/ { print $2 }' "/proc/$PROFD_PID/status") / 1024 )) MB"

# right after the flood: a normal upload and list
upload "$PROFD_CORPUS/go/cpuburn/cpu_A_01.pb.gz" "service=after&type=cpu" > /dev/null
is "$HTTP_CODE" 200 "an upload right after the flood succeeds"
api "/api/0/profiles?service=after&$W" > /dev/null
is "$HTTP_CODE $(echo "$BODY" | jq '.body | length')" "200 1" "a list right after the flood succeeds"
api "/api/0/profiles?service=flood&type=cpu&$W&limit=100000" > /dev/null
stored=$(echo "$BODY" | jq '.body | length')
merged=0
for i in $(seq 4 4 "$N"); do [ "${codes[i]:-}" = 200 ] && merged=$((merged + 1)); done
accepted=$((n200 - merged))
is "$stored" "$accepted" "every accepted upload is stored, no refused one ($accepted accepted)"
done_testing
