#!/usr/bin/env bash
# libprofd-agent across exec into a program without the agent: ITIMER_PROF
# survives execve(2), the SIGPROF handler does not, so without the agent's
# exec wrappers the new image dies of "Profiling timer expired". hotapp
# runs under the agent (sampling at 1000 Hz from the start), then unsets
# LD_PRELOAD and execs, through each exec function, a CPU-burning shell
# that exits 7; the status must be 7. The linked builds (shared and
# static) do the same. A failing exec returns ENOENT and sampling goes on:
# the profile written at exit holds samples in after_exec, the work done
# after the failure.
. "${top_srcdir:-.}/test/lib/e2e.sh"

B=${top_builddir:-.}
SO=$B/agent/.libs/libprofd-agent.so
HOTAPP=$B/agent/examples/hotapp
[ -f "$SO" ] && [ -x "$HOTAPP" ] || skip_all "agent not built"
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0"
SH=$(command -v sh)
# About 100 ms of the shell's own CPU time: many SIGPROF periods.
BURN='i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; exit 7'
AGENT_ENV=(PROFD_SERVICE=exec-test PROFD_HZ=1000 PROFD_WINDOW=1
    PROFD_PERIOD=1 PROFD_OUTPUT_DIR="$T_TMP/out")
mkdir -p "$T_TMP/out"

# preloaded HOW PROG: hotapp under LD_PRELOAD execs PROG -c BURN via HOW.
preloaded() {
	env LD_PRELOAD="$SO" "${AGENT_ENV[@]}" "$HOTAPP" -n 800 -x "$1" \
	    "$2" -c "$BURN" >"$T_TMP/out.txt" 2>"$T_TMP/err.txt"
}

for how in execve execv execvp execvpe execl execlp execle fexecve \
    execveat; do
	prog=$SH
	case $how in execvp | execvpe | execlp) prog=sh ;; esac
	preloaded "$how" "$prog"; rc=$?
	sed 's/^/# /' "$T_TMP/err.txt"
	is "$rc" 7 "LD_PRELOAD: $how into a program without the agent exits 7"
done

for v in linked static; do
	app=$B/agent/examples/hotapp-$v
	if [ ! -x "$app" ]; then
		T_N=$((T_N + 1))
		echo "ok $T_N # SKIP hotapp-$v not built"
		continue
	fi
	for how in execve execvp execl; do
		"$app" -S exec-test -z 1000 -w 1 -p 1 -o "$T_TMP/out" -n 800 \
		    -x "$how" "$SH" -c "$BURN" >"$T_TMP/out.txt" \
		    2>"$T_TMP/err.txt"; rc=$?
		sed 's/^/# /' "$T_TMP/err.txt"
		is "$rc" 7 "hotapp-$v: $how into a program without the agent exits 7"
	done
done

# A failing exec returns -1/ENOENT and the agent keeps sampling.
rm -rf "$T_TMP/out"; mkdir -p "$T_TMP/out"
env LD_PRELOAD="$SO" "${AGENT_ENV[@]}" "$HOTAPP" -n 800 \
    -x execve "$T_TMP/no-such-program" >"$T_TMP/out.txt" 2>"$T_TMP/err.txt"
rc=$?
sed 's/^/# /' "$T_TMP/out.txt" "$T_TMP/err.txt"
is "$rc" 0 "failed exec: hotapp goes on and exits 0"
check "failed exec: execve reported ENOENT" \
    grep -q "execve .*: No such file or directory" "$T_TMP/out.txt"
n=$(ls "$T_TMP/out" | grep -c 'pb.gz$')
check "failed exec: profiles written afterwards ($n)" test "$n" -ge 1
if command -v go >/dev/null; then
	gopprof -traces "$T_TMP"/out/*.pb.gz 2>/dev/null \
	    >"$T_TMP/traces.txt"
	n=$(grep -c after_exec "$T_TMP/traces.txt")
	check "failed exec: samples taken after it ($n stacks in after_exec)" \
	    test "$n" -ge 1
fi
done_testing
