#!/usr/bin/env bash
# libprofd-agent without a collector: hotapp under LD_PRELOAD (and the
# linked build) writes its profiles to PROFD_OUTPUT_DIR; go tool pprof must
# accept them, name the static functions (.symtab) and show the call tree
# main -> busyloop -> foo1 -> bar -> load with load on top. Also: bad
# settings, a program with its own SIGPROF handler (left alone), fork,
# threads, and the
# C unit test's profile.
. "${top_srcdir:-.}/test/lib/e2e.sh"

B=${top_builddir:-.}
SO=$B/agent/.libs/libprofd-agent.so
HOTAPP=$B/agent/examples/hotapp
LINKED=$B/agent/examples/hotapp-linked
command -v go >/dev/null || skip_all "go tool pprof not installed"
[ -f "$SO" ] && [ -x "$HOTAPP" ] || skip_all "agent not built"
# An ASan build of the agent is preloaded ahead of the ASan runtime.
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0"

pprof() { gopprof "$@" 2>/dev/null; }
# pprof_ok FILE: go tool pprof -raw parses FILE.
pprof_ok() { gopprof -raw "$1" >/dev/null 2>&1; }
# first_flat FILES...: the function with the most flat time.
first_flat() { pprof -top "$@" | awk '/ flat%/ { getline; print $NF; exit }'; }
# flat_pct FN FILES...: flat percentage of FN.
flat_pct() { local fn=$1; shift; pprof -top "$@" | awk -v f="$fn" '$NF == f { sub("%", "", $2); print int($2); exit }'; }
# has_chain FILES...: some trace is load/bar/foo1/busyloop/main in a row.
has_chain() {
	pprof -traces "$@" | awk '
	    { gsub(/^[ \t]*[0-9.]+[a-z]*[ \t]+/, ""); gsub(/^[ \t]+/, "") }
	    /^-+\+/ { n = 0; next }
	    { f[n++] = $0; if (n >= 5 && f[n-5] == "load" && f[n-4] == "bar" &&
	      f[n-3] == "foo1" && f[n-2] == "busyloop" && f[n-1] == "main") ok = 1 }
	    END { exit !ok }'
}

# 1. LD_PRELOAD, window 1 s every 1 s, 2.5 s of work.
OUT=$T_TMP/preload; mkdir -p "$OUT"
LD_PRELOAD=$SO PROFD_SERVICE=hotapp PROFD_OUTPUT_DIR=$OUT PROFD_WINDOW=1 \
    PROFD_PERIOD=1 "$HOTAPP" -s 2.5 >"$T_TMP/out" 2>"$T_TMP/err"
rc=$?
is "$rc" 0 "hotapp under LD_PRELOAD exits 0"
is "$(wc -c <"$T_TMP/err")" 0 "no agent output on stderr"
set -- "$OUT"/hotapp-cpu-*.pb.gz
check "at least 2 profiles written (got $#)" test "$#" -ge 2
bad=0
for f in "$@"; do pprof_ok "$f" || bad=$((bad + 1)); done
is "$bad" 0 "go tool pprof -raw accepts every profile"
is "$(first_flat "$@")" load "load has the most flat time"
p=$(flat_pct load "$@")
check "load flat share is over 80% (${p:-?}%)" test "${p:-0}" -gt 80
check "traces show main -> busyloop -> foo1 -> bar -> load" has_chain "$@"
raw=$(pprof -raw "$1")
# (foo2 is in any of the profiles: on a loaded machine one window may hold
# only a few samples, none of them in foo2)
allraw=$(for f in "$@"; do pprof -raw "$f"; done)
check "static functions are named (.symtab)" grep -q ' foo2 ' <<<"$allraw"
bid=$(readelf -n "$HOTAPP" | awk '/Build ID/ { print $3 }')
check "mapping 1 is hotapp with its GNU build id ($bid)" \
    grep -q "^1: .*/hotapp $bid" <<<"$raw"
check "sample types samples/count and cpu/nanoseconds" \
    grep -q '^samples/count cpu/nanoseconds' <<<"$raw"
check "period is 10 ms at 100 Hz" grep -q '^Period: 10000000$' <<<"$raw"

# 2. Bad settings: one clear line, the program runs unprofiled.
OUT2=$T_TMP/bad; mkdir -p "$OUT2"
LD_PRELOAD=$SO PROFD_SERVICE=hotapp PROFD_OUTPUT_DIR=$OUT2 PROFD_HZ=abc \
    "$HOTAPP" -s 0.3 >"$T_TMP/out" 2>"$T_TMP/err"
rc=$?
is "$rc/$(wc -l <"$T_TMP/err")" "0/1" "PROFD_HZ=abc: exit 0, one stderr line"
check "the line names PROFD_HZ and says profiling is off" \
    grep -q 'PROFD_HZ="abc".*profiling off' "$T_TMP/err"
diag "$(cat "$T_TMP/err")"
check "the program still ran" grep -q 'done' "$T_TMP/out"
LD_PRELOAD=$SO PROFD_SERVICE=hotapp PROFD_COLLECTOR=ftp://x \
    "$HOTAPP" -s 0.1 >/dev/null 2>"$T_TMP/err"
check "a bad PROFD_COLLECTOR is one line" test "$(wc -l <"$T_TMP/err")" = 1
LD_PRELOAD=$SO PROFD_SERVICE=hotapp PROFD_LABELS='a b=c' \
    "$HOTAPP" -s 0.1 >/dev/null 2>"$T_TMP/err"
check "bad PROFD_LABELS is one line" grep -q 'PROFD_LABELS: label key' "$T_TMP/err"
LD_PRELOAD=$SO PROFD_OUTPUT_DIR=$OUT2 "$HOTAPP" -s 0.3 >/dev/null 2>"$T_TMP/err"
is "$(wc -c <"$T_TMP/err")/$(ls "$OUT2" | wc -l)" "0/0" \
    "without PROFD_SERVICE the agent does nothing"

# 3. The program owns SIGPROF: the agent, which never uses it, profiles
# anyway and says nothing (test/e2e/agent_signals.sh checks the ticks).
rm -rf "$OUT2"; mkdir -p "$OUT2"
LD_PRELOAD=$SO PROFD_SERVICE=hotapp PROFD_OUTPUT_DIR=$OUT2 PROFD_WINDOW=1 \
    PROFD_PERIOD=1 "$HOTAPP" -s 1.5 -P >"$T_TMP/out" 2>"$T_TMP/err"
rc=$?
is "$rc/$(wc -c <"$T_TMP/err")" "0/0" \
    "program with its own SIGPROF handler: exits 0, agent quiet"
check "...and is profiled all the same" test "$(ls "$OUT2" | wc -l)" -ge 1
rm -rf "$OUT2"; mkdir -p "$OUT2"
"$LINKED" -S hotapp -o "$OUT2" -w 1 -p 1 -P -s 1.5 >/dev/null 2>"$T_TMP/err"
is "$?/$(wc -c <"$T_TMP/err")" "0/0" \
    "linked: profd_agent_start works beside the program's SIGPROF"

# 4. fork: the parent goes on profiling (the child profiles itself:
# test/e2e/agent_fork.sh); threads are sampled.
OUT3=$T_TMP/fork; mkdir -p "$OUT3"
LD_PRELOAD=$SO PROFD_SERVICE=hotapp PROFD_OUTPUT_DIR=$OUT3 PROFD_WINDOW=1 \
    PROFD_PERIOD=1 "$HOTAPP" -s 1.5 -f -t 2 >"$T_TMP/out" 2>"$T_TMP/err"
child=$(awk '/^child/ { print $2 }' "$T_TMP/out")
parent=$(awk '/done/ { print $2 }' "$T_TMP/out")
check "fork: child ran" test -n "$child"
check "fork: the parent still profiles" test "$(ls "$OUT3" | grep -c -- "-$parent-")" -ge 1
check "a second thread is sampled (hotapp_thread)" \
    grep -q hotapp_thread <(pprof -traces "$OUT3"/*.pb.gz)

# 5. Linked build, files only.
OUT4=$T_TMP/linked; mkdir -p "$OUT4"
"$LINKED" -S hotlinked -o "$OUT4" -w 1 -p 1 -s 2 >"$T_TMP/out" 2>"$T_TMP/err"
rc=$?
is "$rc" 0 "hotapp-linked exits 0"
set -- "$OUT4"/hotlinked-cpu-*.pb.gz
check "hotapp-linked wrote profiles ($#)" test -f "$1"
is "$(first_flat "$@")" load "linked: load has the most flat time"
check "linked: traces show main -> busyloop -> foo1 -> bar -> load" has_chain "$@"

# 6. The unit test's hand-built profile is accepted by pprof too. (Its
# own checks are test/unit/test_agent's, in the suite; one of them failed
# once here in a loaded CI run with its output thrown away, so what fails
# is now shown.)
"$B/test/unit/test_agent" "$T_TMP/unit.pb.gz" >"$T_TMP/unit.tap" 2>&1
rc=$?
[ "$rc" = 0 ] || { diag "test/unit/test_agent exited $rc:"; grep -A4 '^not ok' "$T_TMP/unit.tap" | sed 's/^/#   /'; }
check "test/unit/test_agent wrote its profile" test -s "$T_TMP/unit.pb.gz"
check "go tool pprof -raw accepts the unit test's profile" \
    pprof_ok "$T_TMP/unit.pb.gz"

done_testing
