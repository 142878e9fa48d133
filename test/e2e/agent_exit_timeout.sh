#!/usr/bin/env bash
# libprofd-agent is cheap for short-lived processes, and a collector that
# accepts but never answers holds a program's exit for PROFD_EXIT_TIMEOUT
# at most:
# 1. hotapp works 0.6 s with a 1 s window open (it has samples), then
#    exits: with PROFD_EXIT_TIMEOUT=200ms the process ends within
#    0.6 + 0.2 s + slack, the agent did try (one connection, "giving up");
#    with 1s it waits about that long (the timeout is what bounds it).
# 2. A process that ends before its first window sends nothing and is not
#    held up; /bin/sleep under 1 s windows has no samples: nothing is
#    uploaded or written.
# 3. A bad PROFD_EXIT_TIMEOUT is one line naming it.
# The agents run with PROFD_PACING=off: the hanging collector offers no
# pacing, and its connection count is the uploads' (agent_pacing.sh checks
# that a pacing poll to a hanging collector holds no exit either).
. "${top_srcdir:-.}/test/lib/e2e.sh"
export PROFD_PACING=off

B=${top_builddir:-.}
SO=$(cd "$B" && pwd)/agent/.libs/libprofd-agent.so
HOTAPP=$B/agent/examples/hotapp
[ -f "$SO" ] && [ -x "$HOTAPP" ] || skip_all "agent not built"
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0"
# Sanitizer builds symbolize and build far more slowly. A TSan agent
# cannot be preloaded into programs built without TSan (/bin/sleep).
slack=0.25 tsan=0
nm -D "$SO" 2>/dev/null | grep -qE '__(asan|tsan)_init' && slack=0.8
nm -D "$SO" 2>/dev/null | grep -q '__tsan_init' && tsan=1
# (TSan sleeps 1 s at exit when other threads run, to catch late races.)
export TSAN_OPTIONS="${TSAN_OPTIONS:-}:atexit_sleep_ms=0"

python3 "${top_srcdir:-.}/test/lib/slow_collector.py" "$T_TMP/port" hang \
    >"$T_TMP/conns" 2>/dev/null &
coll=$!
for i in $(seq 1 100); do [ -f "$T_TMP/port" ] && break; sleep 0.05; done
URL=http://127.0.0.1:$(cat "$T_TMP/port")
conns() { wc -l <"$T_TMP/conns"; }

# timed VAR CMD...: runs CMD, wall seconds in VAR.
timed() {
	local v=$1 s e
	shift
	s=$(date +%s.%N)
	"$@"
	e=$(date +%s.%N)
	printf -v "$v" '%s' "$(echo "$e - $s" | bc)"
}

# Each bound is on the time over the same run without the agent.
timed base "$HOTAPP" -s 0.6 >/dev/null
diag "hotapp -s 0.6 without the agent: ${base}s"

# 1. The window has samples; the collector never answers.
timed t env LD_PRELOAD="$SO" PROFD_SERVICE=exit-timeout PROFD_COLLECTOR="$URL" \
    PROFD_WINDOW=1 PROFD_PERIOD=1 PROFD_EXIT_TIMEOUT=200ms PROFD_VERBOSE=1 \
    "$HOTAPP" -s 0.6 >/dev/null 2>"$T_TMP/err"
sed 's/^/# /' "$T_TMP/err"
check "hanging collector, PROFD_EXIT_TIMEOUT=200ms: at most 0.2 + $slack s more than without the agent (${t}s vs ${base}s)" \
    awk -v t="$t" -v b="$base" -v s="$slack" 'BEGIN { exit !(t < b + 0.2 + s) }'
check "...the last window had samples and was sent ($(conns) connection)" \
    sh -c "grep -q 'profile 1:' '$T_TMP/err' && test $(conns) -ge 1"
# (on a loaded machine the agent thread may not reach its deadline before
# the exit's timed join does: then the exit leaves it, and says so)
check "...and the agent gave up at the deadline, or the exit left its thread at the join's" \
    grep -qE 'giving up|did not stop in 200 ms; leaving it' "$T_TMP/err"
c0=$(conns)
timed t env LD_PRELOAD="$SO" PROFD_SERVICE=exit-timeout PROFD_COLLECTOR="$URL" \
    PROFD_WINDOW=1 PROFD_PERIOD=1 PROFD_EXIT_TIMEOUT=1s \
    "$HOTAPP" -s 0.6 >/dev/null 2>"$T_TMP/err"
check "PROFD_EXIT_TIMEOUT=1s: it waits for the collector about 1 s (${t}s vs ${base}s)" \
    awk -v t="$t" -v b="$base" -v s="$slack" 'BEGIN { exit !(t > b + 0.9 && t < b + 1 + s) }'
is "$(wc -c <"$T_TMP/err")/$(( $(conns) - c0 ))" "0/1" "...quietly, one connection"

# 2. Before the first window: nothing sent, no wait; a window without
# samples: nothing. The first window opens after a random delay of up to
# a tenth of the period: with the default minute a 0.05 s run started it
# about once in a hundred (CI saw it send that window at exit); with an
# hour, once in tens of thousands.
c0=$(conns)
timed base "$HOTAPP" -s 0.05 >/dev/null
timed t env LD_PRELOAD="$SO" PROFD_SERVICE=exit-timeout PROFD_COLLECTOR="$URL" \
    PROFD_PERIOD=3600 "$HOTAPP" -s 0.05 >/dev/null 2>"$T_TMP/err"
is "$(wc -c <"$T_TMP/err")/$(( $(conns) - c0 ))" "0/0" \
    "a process that ends before its first window sends nothing"
check "...and is not held (${t}s vs ${base}s without the agent)" \
    awk -v t="$t" -v b="$base" -v s="$slack" 'BEGIN { exit !(t < b + 0.1 + s) }'
mkdir -p "$T_TMP/out"
c0=$(conns)
if [ "$tsan" = 0 ]; then
	env LD_PRELOAD="$SO" PROFD_SERVICE=exit-timeout PROFD_COLLECTOR="$URL" \
	    PROFD_OUTPUT_DIR="$T_TMP/out" PROFD_WINDOW=1 PROFD_PERIOD=1 \
	    /bin/sleep 2.5 2>"$T_TMP/err"
	is "$?/$(wc -c <"$T_TMP/err")/$(( $(conns) - c0 ))/$(ls "$T_TMP/out" | wc -l)" \
	    "0/0/0/0" "windows without samples (/bin/sleep 2.5): nothing uploaded or written"
else
	ok "windows without samples # SKIP a TSan agent cannot be preloaded into /bin/sleep"
fi
kill "$coll" 2>/dev/null; wait "$coll" 2>/dev/null

# 3. Bad values.
for v in abc 20000 -1 1.5s; do
	env LD_PRELOAD="$SO" PROFD_SERVICE=exit-timeout PROFD_EXIT_TIMEOUT=$v \
	    "$HOTAPP" -s 0.05 >/dev/null 2>"$T_TMP/err"
	check "PROFD_EXIT_TIMEOUT=$v: one line naming it ($(cat "$T_TMP/err"))" \
	    sh -c "test \$(wc -l <'$T_TMP/err') = 1 && grep -q 'PROFD_EXIT_TIMEOUT=\"$v\".*profiling off' '$T_TMP/err'"
done
done_testing
