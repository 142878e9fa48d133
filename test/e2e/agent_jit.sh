#!/usr/bin/env bash
# JIT-compiled code by name (issue #31): node (the machine's Node.js)
# burning CPU in a JavaScript function, run with --perf-basic-prof so
# that V8 writes /tmp/perf-PID.map:
#  - libprofd-agent.so: the function's name (JS:*burnCpuInJsHot ...) is
#    the leaf of most samples, stacks walk through the JIT frames (frame
#    pointers) to main, no location lies outside its mapping;
#  - profd-hostagent: the same, the map read through /proc/PID/root;
#  - without --perf-basic-prof (no map): code in anonymous memory keeps
#    no name at all, never a neighbouring symbol's.
. "${top_srcdir:-.}/test/lib/e2e.sh"

S=${top_srcdir:-.}
B=${top_builddir:-.}
SO=$B/agent/.libs/libprofd-agent.so
HA=$B/agent/host/profd-hostagent
STACKS=$S/test/lib/pprof_stacks.py
[ -f "$SO" ] || skip_all "libprofd-agent.so not built"
command -v node >/dev/null || skip_all "node not installed"
command -v jq >/dev/null || skip_all "jq not installed"
[ "$(uname -m)" = x86_64 ] || skip_all "x86-64 only"
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0"
# A sanitizer build's runtime must come first for node (its interceptors
# find nothing to call otherwise); node frees nothing at exit.
PRE=$SO
asan=$(ldd "$SO" 2>/dev/null | awk '/libasan/ { print $3 }')
if [ -n "$asan" ]; then
	PRE=$asan:$SO
	export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"
fi
JS=$T_TMP/burn.js
cat > "$JS" <<'EOF'
function burnCpuInJsHot(n) {
  let s = 0;
  for (let i = 0; i < n; i++) { s = (s + i * i) % 1000003; }
  return s;
}
const end = Date.now() + parseFloat(process.argv[2]) * 1000;
let t = 0;
while (Date.now() < end) t += burnCpuInJsHot(200000);
console.log(t > 0 ? "done" : "zero");
EOF
HOT='^JS:\*burnCpuInJsHot '

# jit_summary WHO FILES...: the leaf share of the JS function, reach.
jit_check() {
	local who=$1 j hot
	shift
	j=$(python3 "$STACKS" --has "$HOT" "$@")
	hot=$(jq --arg h "$HOT" '[.top[] | select(.[0] | test($h)) | .[1]] | add // 0' <<<"$j")
	diag "$who: $(jq -c '{samples, top: .top[:3], reach, bad_frames}' <<<"$j" | cut -c 1-400)"
	check "$who: samples ($(jq .samples <<<"$j"))" [ "$(jq .samples <<<"$j")" -ge 50 ]
	check "$who: the JS function on top in at least $((${REACH#0.} * 10))% of the samples ($hot)" \
	    awk -v r="$hot" -v m="$REACH" 'BEGIN { exit !(r >= m) }'
	check "$who: stacks reach main through the JIT frames ($(jq .reach <<<"$j") >= $REACH)" \
	    awk -v r="$(jq .reach <<<"$j")" -v m="$REACH" 'BEGIN { exit !(r >= m) }'
	is "$(jq .bad_frames <<<"$j")" 0 "$who: no location outside its mapping"
}

# 1. In-process. (Its first samples may stop in node's own code while
# node's large unwind table waits for the parsing budget, and the agent's
# own thread is sampled too: a loaded machine, or a sanitizer build,
# spreads both over more of the run.)
REACH=0.5
mkdir -p "$T_TMP/in" "$T_TMP/in-nomap"
env LD_PRELOAD="$PRE" PROFD_SERVICE=jit PROFD_OUTPUT_DIR="$T_TMP/in" \
    PROFD_WINDOW=2 PROFD_PERIOD=2 node --perf-basic-prof "$JS" 5 \
    > "$T_TMP/out" 2> "$T_TMP/err"
is "$?/$(cat "$T_TMP/out")" "0/done" "node under the agent: exit 0"
jit_check "in-process" "$T_TMP"/in/*.pb.gz
env LD_PRELOAD="$PRE" PROFD_SERVICE=jit PROFD_OUTPUT_DIR="$T_TMP/in-nomap" \
    PROFD_WINDOW=2 PROFD_PERIOD=2 node "$JS" 3 > /dev/null 2>&1
j=$(python3 "$STACKS" "$T_TMP"/in-nomap/*.pb.gz)
is "$(jq -r '.names_in[""] // [] | map(select(. != "")) | join(",")' <<<"$j")" "" \
    "in-process, no perf map: no name for code in anonymous memory"
check "in-process, no perf map: the JIT code's samples are there, unnamed ($(jq .unnamed_leaf <<<"$j"))" \
    awk -v r="$(jq .unnamed_leaf <<<"$j")" 'BEGIN { exit !(r >= 0.5) }'

# 2. The host agent, on its own run (it leaves the agent's processes be).
if [ -x "$HA" ]; then
	mkdir -p "$T_TMP/ha"
	"$HA" --output-dir "$T_TMP/ha" --exe node --hz 99 --period 2s \
	    > "$T_TMP/ha.log" 2>&1 &
	ha=$!
	for i in $(seq 1 100); do
		grep -q 'sampling' "$T_TMP/ha.log" && break
		sleep 0.1
	done
	PROFD_SERVICE=hjit-$$ node --perf-basic-prof "$JS" 5 > /dev/null
	PROFD_SERVICE=hjit-nomap-$$ node "$JS" 3 > /dev/null
	sleep 2.5
	kill -TERM "$ha"
	wait "$ha"
	is "$?" 0 "the host agent exits 0"
	REACH=0.8
	jit_check "host agent" "$T_TMP"/ha/hjit-$$-cpu-*.pb.gz
	j=$(python3 "$STACKS" "$T_TMP"/ha/hjit-nomap-$$-cpu-*.pb.gz)
	is "$(jq -r '.names_in["anon"] // [] | map(select(. != "")) | join(",")' <<<"$j")" "" \
	    "host agent, no perf map: no name for code in anonymous memory"
	check "host agent, no perf map: the JIT code's samples are there, unnamed ($(jq .unnamed_leaf <<<"$j"))" \
	    awk -v r="$(jq .unnamed_leaf <<<"$j")" 'BEGIN { exit !(r >= 0.5) }'
else
	ok "# SKIP host agent: not built"
fi
done_testing
