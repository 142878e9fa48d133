#!/usr/bin/env bash
# libprofd-agent at exit and across exec: a SIGPROF still pending when the
# agent stops (its thread was preempted: two programs pinned to one CPU)
# must not kill the program with the default action ("Profiling timer
# expired"), so 24 short hotapp runs under LD_PRELOAD, two at a time on one
# CPU, all exit 0. And a program that execs with ITIMER_PROF armed (the
# timer survives execve, the handler does not) does not kill the new image
# when it has the agent too.
. "${top_srcdir:-.}/test/lib/e2e.sh"

B=${top_builddir:-.}
SO=$B/agent/.libs/libprofd-agent.so
HOTAPP=$B/agent/examples/hotapp
[ -f "$SO" ] && [ -x "$HOTAPP" ] || skip_all "agent not built"
command -v taskset >/dev/null || skip_all "taskset not installed"
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0"
cpu=$(taskset -pc $$ | sed 's/.*: *//; s/[-,].*//')

# run_pinned N: one hotapp under the agent on $cpu; only hotapp preloads it.
run_pinned() {
	taskset -c "$cpu" env LD_PRELOAD="$SO" PROFD_SERVICE=exit-test \
	    PROFD_HZ=1000 PROFD_WINDOW=1 PROFD_PERIOD=1 \
	    PROFD_OUTPUT_DIR="$T_TMP/out" "$HOTAPP" -n 400 \
	    >"$T_TMP/out.$1" 2>"$T_TMP/err.$1"
}

mkdir -p "$T_TMP/out"
bad=0 runs=0
for i in $(seq 1 12); do
	run_pinned a & pa=$!
	run_pinned b & pb=$!
	for p in $pa $pb; do
		wait "$p"; rc=$?
		runs=$((runs + 1))
		[ "$rc" -eq 0 ] || { bad=$((bad + 1)); diag "run $runs: exit $rc"; }
	done
	cat "$T_TMP"/err.a "$T_TMP"/err.b | sed 's/^/# /'
done
is "$bad/$runs" "0/$runs" "24 pinned pairs of agent runs all exit 0"
n=$(ls "$T_TMP/out" | grep -c 'pb.gz$')
check "the runs were profiled ($n profiles)" test "$n" -ge 12

# exec with ITIMER_PROF armed (SIG_DFL in the new image until the agent's
# constructor runs): the agent takes the inherited timer over.
if command -v python3 >/dev/null; then
	bad=0
	for i in 1 2 3 4 5; do
		python3 -c '
import os, signal, sys
signal.setitimer(signal.ITIMER_PROF, 0.05, 0.01)
os.execve(sys.argv[1], sys.argv[1:], dict(os.environ, LD_PRELOAD=sys.argv[2],
    PROFD_SERVICE="exec-test", PROFD_WINDOW="1", PROFD_PERIOD="1",
    PROFD_OUTPUT_DIR=sys.argv[3]))' "$HOTAPP" "$SO" "$T_TMP/out" -n 300 \
		    >"$T_TMP/out.x" 2>"$T_TMP/err.x" || bad=$((bad + 1))
		sed 's/^/# /' "$T_TMP/err.x"
	done
	is "$bad" 0 "exec with ITIMER_PROF armed: the agent's new image survives"
fi
done_testing
