#!/usr/bin/env bash
# libprofd-agent at exit and across exec: a timer signal still pending when the
# agent stops (its thread was preempted: two programs pinned to one CPU)
# must not kill the program with the default action ("Profiling timer
# expired"), so 24 short hotapp runs under LD_PRELOAD, two at a time on one
# CPU, all exit 0. And a thread that execs with a timer signal pending
# (it blocked the signal) hands a clean thread to the new image, with the
# agent or not: a pending signal survives execve and would kill it.
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

# exec from a thread that blocks the agent's signal (with the system call)
# while it burns CPU:
# its timer's signal is pending on the thread when it execs, and the
# pending signal and the mask survive execve(2). The new image unblocks
# the signal (its default action terminates) and must live: the exec
# wrappers take the pending signal off the thread first. Without the
# agent in the new image (odd runs) and with it (even runs).
if command -v python3 >/dev/null && [ "$(uname -m)" = x86_64 ]; then
	bad=0
	for i in 1 2 3 4 5 6; do
		env LD_PRELOAD="$SO" PROFD_SERVICE=exit-test PROFD_HZ=1000 \
		    PROFD_WINDOW=1 PROFD_PERIOD=1 PROFD_OUTPUT_DIR="$T_TMP/out" \
		    python3 -c '
import ctypes, os, signal, sys, time
sig = signal.SIGRTMAX - 4
time.sleep(0.3)			# the first window has started
# The system call itself: the agent keeps its signal out of masks set
# through libc (agent/inproc/sigmask.c). SYS_rt_sigprocmask is 14 on x86-64.
mask = ctypes.c_ulong(1 << (sig - 1))
ctypes.CDLL(None, use_errno=True).syscall(14, 0, ctypes.byref(mask), None, 8)
t = time.process_time() + 0.3
while time.process_time() < t:
    pass
env = dict(os.environ)
if int(sys.argv[1]) % 2:
    env.pop("LD_PRELOAD")
os.execve(sys.executable, [sys.executable, "-c", """
import signal, sys
sig = signal.SIGRTMAX - 4
blocked = sig in signal.pthread_sigmask(signal.SIG_BLOCK, set())
signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
sys.exit(5 if blocked else 6)"""], env)' "$i" \
		    >"$T_TMP/out.x" 2>"$T_TMP/err.x"
		rc=$?
		[ "$rc" -eq 5 ] || { bad=$((bad + 1)); diag "exec run $i: exit $rc"; }
		sed 's/^/# /' "$T_TMP/err.x"
	done
	is "$bad" 0 "exec with the agent's signal pending on the thread: the new image lives, mask kept (6 runs)"
fi
done_testing
