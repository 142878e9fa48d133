#!/usr/bin/env bash
# libprofd-agent's lazy start (agent/inproc/starter.c, agent/inproc/safepoint.c): under
# LD_PRELOAD a process, and a fork child, has no agent thread until its
# first window is due; then the start timer's handler creates it at a safe
# point: in the program's own code, or while the thread waits in a system
# call (a sleep, a futex wait of a thread joining others). Checked on
# Debian's python3.11, which reports its own thread count from
# /proc/self/task. A program that resets every signal to SIG_DFL at
# start-up (agent/examples/sigreset, as daemons do) is not killed, and one
# with its own handler for the agent's signal gets none of ours (the
# interposed sigaction cancels the pending start). A shell loop of
# short execs with the start armed and firing dies of no stray signal. (An ASan build of the agent preloaded
# into python3.11 defers too: python's malloc is still glibc's.)
. "${top_srcdir:-.}/test/lib/e2e.sh"

B=${top_builddir:-.}
SO=$B/agent/.libs/libprofd-agent.so
PY=/usr/bin/python3.11
[ -f "$SO" ] || skip_all "agent not built"
[ -x "$PY" ] || skip_all "python3.11 not installed"
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0:detect_leaks=0"
mkdir -p "$T_TMP/out"

# agent_py PERIOD CODE: python3.11 -c CODE under the agent.
agent_py() {
	env LD_PRELOAD="$SO" PROFD_SERVICE=lazy PROFD_OUTPUT_DIR="$T_TMP/out" \
	    PROFD_WINDOW=1 PROFD_PERIOD="$1" "$PY" -c "$2" 2>"$T_TMP/err.txt"
}

# Threads of this process: their count and names, the names sorted (not
# by thread id: ids wrap at pid_max, and once CI's ASan stage printed
# the agent's thread first).
THREADS='
import os
def threads():
    names = []
    for t in os.listdir("/proc/self/task"):
        with open("/proc/self/task/%s/comm" % t) as f:
            names.append(f.read().strip())
    return "%d %s" % (len(names), ",".join(sorted(names)))
'

# 1-2. Before the first window (period 3600 s: due in 0-360 s): no thread.
out=$(agent_py 3600 "$THREADS
import time
time.sleep(0.3)
print(threads())")
is "${out%% *}" 1 "before the first window: one thread only ($out)"
out=$(agent_py 3600 "$THREADS
import os, time
pid = os.fork()
if pid == 0:
    time.sleep(0.3)
    print(threads())
    os._exit(0)
os.waitpid(pid, 0)")
is "${out%% *}" 1 "a fork child before its first window: one thread ($out)"

# 3. Due within 100 ms (period 1 s) while the program sleeps in a system
# call: the thread starts there.
out=$(agent_py 1 "$THREADS
import time
time.sleep(1.0)
print(threads())")
is "$out" "2 profd-agent,python3.11" \
    "due while sleeping: the agent thread starts in the wait"

# 4. Due while the program computes: it starts, and profiles come.
rm -f "$T_TMP"/out/*
out=$(agent_py 1 "$THREADS
import time
t = time.process_time()
s = 0
while time.process_time() - t < 1.5:
    s += 1
print(threads())")
is "$out" "2 profd-agent,python3.11" "due while computing: the thread starts"
n=$(ls "$T_TMP"/out | grep -c 'pb.gz$')
check "and profiles are written ($n)" test "$n" -ge 1

# 5. A fork child that computes past its first window is profiled.
rm -f "$T_TMP"/out/*
out=$(agent_py 1 "$THREADS
import os, time
pid = os.fork()
if pid == 0:
    t = time.process_time()
    s = 0
    while time.process_time() - t < 1.5:
        s += 1
    print(os.getpid(), threads())
    os._exit(0)
os.waitpid(pid, 0)")
child=${out%% *}
is "${out#* }" "2 profd-agent,python3.11" "a fork child that computes starts its thread"
set -- "$T_TMP"/out/lazy-cpu-"$child"-*.pb.gz
check "and its profiles are written" test -f "$1"

# 6. Only waiting threads (the main thread joins, another computes): the
# start lands in the main thread's futex wait.
out=$(agent_py 1 "$THREADS
import threading, time
r = []
def work():
    t = time.thread_time()
    s = 0
    while time.thread_time() - t < 1.0:
        s += 1
    r.append(threads())
w = threading.Thread(target=work)
w.start()
w.join()
print(r[0])")
is "${out%% *}" 3 "a main thread that only joins: the thread starts ($out)"

# 7. A program that resets the agent's signal to SIG_DFL before its first
# window (daemons reset every signal at start-up) is not killed by the
# start timer: the change cancels the pending start first.
env LD_PRELOAD="$SO" PROFD_SERVICE=lazy PROFD_OUTPUT_DIR="$T_TMP/out" \
    PROFD_WINDOW=1 PROFD_PERIOD=1 "$B/agent/examples/sigreset" -s 1.5 \
    >"$T_TMP/reset.out" 2>"$T_TMP/err.txt"
rc=$?
is "$rc $(cat "$T_TMP/reset.out")" "0 ok" \
    "a program resetting every signal to SIG_DFL at start-up: not killed"
# (Python's start-up is slower than a 0-100 ms first window: the agent
# may have started first, and then steps aside at its next tick.)
out=$(agent_py 1 "$THREADS
import signal, time
got = []
signal.signal(signal.SIGRTMAX - 4, lambda s, f: got.append(s))
time.sleep(1.0)
print(len(got))"; echo "rc=$?")
is "$out" "$(printf '0\nrc=0')" \
    "its own handler for the agent's signal: it gets no signal of ours"

# 8. Short execs while the start is armed and fires: no stray signal
# kills a new image (the exec wrappers disarm it and drain it).
env LD_PRELOAD="$SO" PROFD_SERVICE=lazy PROFD_OUTPUT_DIR="$T_TMP/out" \
    PROFD_WINDOW=1 PROFD_PERIOD=1 bash -c \
    'for i in $(seq 300); do /bin/true || exit 9; x=$(echo $i); done; exit 0' \
    >/dev/null 2>"$T_TMP/err.txt"
rc=$?
sed 's/^/# /' "$T_TMP/err.txt" | head -n 5
is "$rc" 0 "300 execs and command substitutions under the agent exit 0"
check "nothing on stderr" test ! -s "$T_TMP/err.txt"

done_testing
