#!/usr/bin/env bash
# libprofd-agent against the real collector: hotapp (LD_PRELOAD and linked)
# uploads 1-second windows; profd lists them by service, type and labels,
# and the merged profile read by go tool pprof has load on top and the
# call chain main -> busyloop -> foo1 -> bar -> load. With the collector
# down (a closed port) the program runs at normal speed, exits on time and
# the agent's memory stays flat.
. "${top_srcdir:-.}/test/lib/e2e.sh"

B=${top_builddir:-.}
SO=$B/agent/.libs/libprofd-agent.so
HOTAPP=$B/agent/examples/hotapp
LINKED=$B/agent/examples/hotapp-linked
[ -f "$SO" ] && [ -x "$HOTAPP" ] || skip_all "agent not built"
command -v go >/dev/null || skip_all "go tool pprof not installed"
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0"

pprof() { gopprof "$@" 2>/dev/null; }
first_flat() { pprof -top "$@" | awk '/ flat%/ { getline; print $NF; exit }'; }
has_chain() {
	pprof -traces "$@" | awk '
	    { gsub(/^[ \t]*[0-9.]+[a-z]*[ \t]+/, ""); gsub(/^[ \t]+/, "") }
	    /^-+\+/ { n = 0; next }
	    { f[n++] = $0; if (n >= 5 && f[n-5] == "load" && f[n-4] == "bar" &&
	      f[n-3] == "foo1" && f[n-2] == "busyloop" && f[n-1] == "main") ok = 1 }
	    END { exit !ok }'
}
# fetch PATH FILE: GET into FILE (binary-safe); status in $HTTP_CODE.
fetch() { HTTP_CODE=$(curl -s -o "$2" -w '%{http_code}' "$PROFD_URL$1"); }
# rss_kb PID: resident set size in kB.
rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

# 1. Collector down: a port nobody listens on.
DOWN=http://127.0.0.1:1
start=$(date +%s.%N)
LD_PRELOAD=$SO PROFD_SERVICE=hotapp PROFD_COLLECTOR=$DOWN PROFD_WINDOW=1 \
    PROFD_PERIOD=1 PROFD_QUEUE=2 PROFD_VERBOSE=1 \
    "$HOTAPP" -s 4 >"$T_TMP/out" 2>"$T_TMP/err" &
pid=$!
sleep 1.5; rss1=$(rss_kb $pid)
sleep 2; rss2=$(rss_kb $pid)
wait $pid; rc=$?
end=$(date +%s.%N)
is "$rc" 0 "collector down: hotapp exits 0"
total=$(echo "$end - $start" | bc)
work=$(awk '/done/ { print $5 }' "$T_TMP/out")
diag "work ${work}s, process ${total}s, RSS ${rss1} kB -> ${rss2} kB"
check "collector down: the work took its 4 s (${work}s)" \
    awk -v w="$work" 'BEGIN { exit !(w >= 3.9 && w < 4.5) }'
check "collector down: exits promptly, no 2 s flush wait (${total}s)" \
    awk -v t="$total" 'BEGIN { exit !(t < 5.5) }'
# ASan keeps freed blocks in its quarantine, so RSS creeps there even
# when nothing leaks: a looser bound in sanitizer builds.
grow_kb=1024
nm -D "$SO" 2>/dev/null | grep -q __asan_ && grow_kb=8192
check "collector down: RSS stays flat (${rss1} -> ${rss2} kB, bound +${grow_kb})" \
    test -n "$rss1" -a -n "$rss2" -a "$((rss2 - rss1))" -lt "$grow_kb"
check "collector down: uploads were retried" \
    grep -q 'upload failed (connection' "$T_TMP/err"
check "collector down: the bounded queue dropped the oldest" \
    grep -Eq 'stopped: 0 profiles sent, [1-9][0-9]* dropped' "$T_TMP/err"
grep stopped "$T_TMP/err" | sed 's/^/# /'

# 2. The real collector.
if ! [ -x "$PROFD" ] || ! profd_start; then
	diag "profd is not available; collector tests skipped"
	done_testing
fi
LABELS="env=e2e,build=preload"
LD_PRELOAD=$SO PROFD_SERVICE=hotapp-e2e PROFD_COLLECTOR=$PROFD_URL \
    PROFD_LABELS=$LABELS PROFD_WINDOW=1 PROFD_PERIOD=1 PROFD_TOKEN=secret \
    "$HOTAPP" -s 4 >"$T_TMP/out" 2>"$T_TMP/err"
is "$?/$(wc -c <"$T_TMP/err")" "0/0" "LD_PRELOAD hotapp uploads quietly and exits 0"
api "/api/0/profiles?service=hotapp-e2e&type=cpu&labels=env=e2e,build=preload" >/dev/null
is "$HTTP_CODE" 200 "list by service, type and labels"
list=$BODY
n=$(jq '.body | length' <<<"$list")
check "at least 3 cpu profiles listed ($n)" test "${n:-0}" -ge 3
is "$(jq -r '[.body[].type] | unique | join(",")' <<<"$list")" cpu "all of type cpu"
is "$(jq -r '.body[0].labels | map(.key + "=" + .value) | sort | join(",")' <<<"$list" | grep -o 'build=preload,env=e2e')" \
    "build=preload,env=e2e" "labels stored with the profile"
fetch "/api/0/profiles/merge?service=hotapp-e2e&type=cpu&from=now-15m&labels=build=preload" \
    "$T_TMP/merged.pb.gz"
is "$HTTP_CODE" 200 "merge returns a profile"
is "$(first_flat "$T_TMP/merged.pb.gz")" load "merged: load has the most flat time"
check "merged: traces show main -> busyloop -> foo1 -> bar -> load" \
    has_chain "$T_TMP/merged.pb.gz"

"$LINKED" -S hotapp-e2e -c "$PROFD_URL" -l env=e2e,build=linked -w 1 -p 1 \
    -s 3 >"$T_TMP/out" 2>"$T_TMP/err"
is "$?/$(wc -c <"$T_TMP/err")" "0/0" "linked hotapp uploads quietly and exits 0"
list=$(api "/api/0/profiles?service=hotapp-e2e&type=cpu&labels=build=linked")
n=$(jq '.body | length' <<<"$list")
check "linked: at least 2 profiles listed ($n)" test "${n:-0}" -ge 2
fetch "/api/0/profiles/merge?service=hotapp-e2e&type=cpu&from=now-15m&labels=build=linked" \
    "$T_TMP/linked.pb.gz"
is "$HTTP_CODE" 200 "linked: merge returns a profile"
is "$(first_flat "$T_TMP/linked.pb.gz")" load "linked merged: load on top"
check "linked merged: main -> busyloop -> foo1 -> bar -> load" \
    has_chain "$T_TMP/linked.pb.gz"

done_testing
