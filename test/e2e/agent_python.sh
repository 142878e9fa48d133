#!/usr/bin/env bash
# Python's own functions in native profiles (issue #31), from both agents,
# on Debian's python3.11 and on the other CPython builds the machine has
# (pyenv's 3.12 and 3.13 where present; skipped, saying so, where not):
# test/python/pyshares.py burns its threads' CPU time in alpha (50%, pure
# Python), beta (30%, hashing in the hashlib C extension) and gamma (20%,
# consuming a generator), each in its own file, single-threaded, in two
# threads, and inside an asyncio coroutine.
#  - libprofd-agent.so: the shares within 5 points of the truth; each
#    function at its file and lines; the C extension's native frames
#    (_hashlib, libcrypto) under beta; the callers in order (run_for,
#    schedule, main, <module>; Thread.run in the thread; the asyncio
#    loop under delta); the generator's frame under gamma; no evaluator
#    frame left; a "[python]" mapping; go tool pprof -top and the web UI
#    (chromium) show the qualified names;
#  - profd-hostagent: the shares within 10 points, the same functions,
#    lines and callers, and the profile comment says how late the frames
#    were read;
#  - a CPython the agents do not know (pyenv's 3.10): native stacks kept,
#    said once (PROFD_VERBOSE in-process, stderr of the host agent).
. "${top_srcdir:-.}/test/lib/e2e.sh"

S=${top_srcdir:-.}
B=${top_builddir:-.}
SO=$B/agent/.libs/libprofd-agent.so
HA=$B/agent/host/profd-hostagent
CHECK=$S/test/lib/pyframes_check.py
PROG=$S/test/python/pyshares.py
PY311=/usr/bin/python3.11
[ -f "$SO" ] || skip_all "libprofd-agent.so not built"
[ -x "$PY311" ] || skip_all "python3.11 not installed (tools/deps.sh --test)"
command -v jq >/dev/null || skip_all "jq not installed"
[ "$(uname -m)" = x86_64 ] || skip_all "x86-64 only"
t=$$
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0"
# Shares among the samples in alpha, beta or gamma: the 50/30/20 split is
# of their time (run_for's own loop is not part of it).
FNS="--share shares_alpha.alpha --share shares_beta.beta
    --share shares_gamma.gamma
    --fn shares_gamma.gamma_items --fn pyshares.delta --fn pyshares.run_for"

# Other CPython builds (pyenv's), the newest of each minor version.
pyenv_python() {
	ls -d /root/.pyenv/versions/"$1".*/bin/python3 2>/dev/null |
	    sort -V | tail -n 1
}
PY312=$(pyenv_python 3.12)
PY313=$(pyenv_python 3.13)
PY310=$(pyenv_python 3.10)

# inproc NAME PYTHON MODE SECONDS: the program under libprofd-agent.
inproc() {
	mkdir -p "$T_TMP/in-$1"
	env LD_PRELOAD="$SO" PROFD_SERVICE="py-$1-$t" PROFD_OUTPUT_DIR="$T_TMP/in-$1" \
	    PROFD_WINDOW=2 PROFD_PERIOD=2 PROFD_VERBOSE=1 \
	    ${PROFD_URL:+PROFD_COLLECTOR=$PROFD_URL} \
	    "$2" "$PROG" "$3" "$4" 2> "$T_TMP/in-$1.err"
}
# summary DIR: pyframes_check.py over a run's profiles.
summary() {
	# shellcheck disable=SC2086
	python3 "$CHECK" $FNS "$1"/*.pb.gz
}
# near GOT WANT POINTS: |GOT - WANT| <= POINTS (shares in [0, 1]).
near() {
	awk -v g="$1" -v w="$2" -v p="$3" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(d * 100 <= p) }'
}
# A sanitizer build runs its handler and reads several times slower:
# the shares are then only checked to be there.
SAN=0
nm -D "$SO" 2>/dev/null | grep -qE '__(asan|tsan|msan)_init' && SAN=1
# shares WHO JSON POINTS: the three shares against 50/30/20.
shares() {
	local who=$1 j=$2 p=$3 a b g
	a=$(printf '%s' "$j" | jq '.shares["shares_alpha.alpha"]')
	b=$(printf '%s' "$j" | jq '.shares["shares_beta.beta"]')
	g=$(printf '%s' "$j" | jq '.shares["shares_gamma.gamma"]')
	if [ "$SAN" = 1 ]; then
		check "$who: alpha, beta and gamma all sampled ($a, $b, $g; sanitizer build: not timed)" \
		    awk -v a="$a" -v b="$b" -v g="$g" 'BEGIN { exit !(a > 0.02 && b > 0.02 && g > 0.02) }'
		return
	fi
	check "$who: alpha's share $a within $p points of 0.50" near "$a" 0.50 "$p"
	check "$who: beta's share $b within $p points of 0.30" near "$b" 0.30 "$p"
	check "$who: gamma's share $g within $p points of 0.20" near "$g" 0.20 "$p"
}
# lines WHO JSON: each function at its own file and lines.
lines() {
	local who=$1 j=$2
	is "$(printf '%s' "$j" | jq -r '.where["shares_alpha.alpha"] | map(select(test("^shares_alpha.py:[4-8]$") | not)) | length')" 0 \
	    "$who: alpha's locations at shares_alpha.py, lines 4-8 ($(printf '%s' "$j" | jq -c '.where["shares_alpha.alpha"]'))"
	is "$(printf '%s' "$j" | jq -r '.where["shares_beta.beta"] | map(select(test("^shares_beta.py:(7|8|9|10|11)$") | not)) | length')" 0 \
	    "$who: beta's locations at shares_beta.py, lines 7-11 ($(printf '%s' "$j" | jq -c '.where["shares_beta.beta"]'))"
	is "$(printf '%s' "$j" | jq -r '.where["shares_gamma.gamma"] | map(select(test("^shares_gamma.py:(9|10|11|12|13)$") | not)) | length')" 0 \
	    "$who: gamma's locations at shares_gamma.py, lines 9-13 ($(printf '%s' "$j" | jq -c '.where["shares_gamma.gamma"]'))"
	check "$who: alpha has locations" [ "$(printf '%s' "$j" | jq '.where["shares_alpha.alpha"] | length')" -ge 1 ]
}
# chain WHO JSON ROOTS: alpha's Python callers, in order, to ROOTS.
chain() {
	is "$(printf '%s' "$2" | jq -r '.chain["shares_alpha.alpha"] | join(" < ")')" \
	    "shares_alpha.alpha < pyshares.run_for < pyshares.schedule < $3" \
	    "$1: alpha's callers in order"
}

# The collector, for uploads and the web UI.
profd_start || { not_ok "profd started"; done_testing; }

# 1. profd-hostagent, started first, on its own runs of the program (the
# in-process runs are left to their agent: it skips their processes).
ha=
if [ -x "$HA" ]; then
	mkdir -p "$T_TMP/ha"
	"$HA" --output-dir "$T_TMP/ha" --hz 199 --period 2s --verbose \
	    > "$T_TMP/ha.log" 2>&1 &
	ha=$!
	for i in $(seq 1 100); do
		grep -q 'sampling' "$T_TMP/ha.log" && break
		kill -0 "$ha" 2>/dev/null || break
		sleep 0.1
	done
	check "the host agent started" grep -q 'sampling' "$T_TMP/ha.log"
fi

# Two runs at a time (two CPUs): in-process and host side by side.
inproc single "$PY311" single 8 &
p1=$!
[ -n "$ha" ] && PROFD_SERVICE=hpy-single-$t "$PY311" "$PROG" single 8 &
p2=$!
wait $p1 $p2
inproc threads "$PY311" threads 5 &
p1=$!
[ -n "$ha" ] && PROFD_SERVICE=hpy-threads-$t "$PY311" "$PROG" threads 5 &
p2=$!
wait $p1 $p2
inproc async "$PY311" async 5 &
p1=$!
[ -n "$ha" ] && PROFD_SERVICE=hpy-async-$t "$PY311" "$PROG" async 5 &
p2=$!
wait $p1 $p2
for v in 312 313; do
	eval py=\$PY$v
	[ -n "$py" ] || continue
	inproc "single$v" "$py" single 6 &
	p1=$!
	[ -n "$ha" ] && PROFD_SERVICE=hpy-single$v-$t "$py" "$PROG" single 6 &
	p2=$!
	wait $p1 $p2
done
if [ -n "$PY310" ]; then
	inproc old "$PY310" single 3
	# Twice: the host agent says it once.
	[ -n "$ha" ] && PROFD_SERVICE=hpy-old-$t "$PY310" "$PROG" single 2
	[ -n "$ha" ] && PROFD_SERVICE=hpy-old-$t "$PY310" "$PROG" single 1
fi
if [ -n "$ha" ]; then
	sleep 2.5
	kill -TERM "$ha"
	wait "$ha"
	is "$?" 0 "the host agent exits 0"
	check "no sanitizer report from the host agent" \
	    sh -c "! grep -qE 'runtime error|Sanitizer' '$T_TMP/ha.log'"
fi

# 2. The in-process agent.
j=$(summary "$T_TMP/in-single")
diag "in-process, 3.11: $(printf '%s' "$j" | jq -c '{samples, shares, callers, below, eval_left}' | cut -c 1-700)"
check "in-process: samples ($(printf '%s' "$j" | jq .samples))" [ "$(printf '%s' "$j" | jq .samples)" -ge 400 ]
check "in-process: it said it found the interpreter" \
    grep -q 'Python frames on: CPython 3.11' "$T_TMP/in-single.err"
shares "in-process, 3.11" "$j" 5
lines "in-process, 3.11" "$j"
chain "in-process, 3.11" "$j" "pyshares.main < pyshares.<module>"
check "in-process: the C extension's native frames under beta ($(printf '%s' "$j" | jq -c '.below_maps["shares_beta.beta"]'))" \
    sh -c "[ \"\$(printf '%s' '$j' | jq '.below_maps[\"shares_beta.beta\"] | map(select(test(\"^_hashlib|^libcrypto\"))) | length')\" -ge 1 ] &&
    awk -v r=\"\$(printf '%s' '$j' | jq '.below[\"shares_beta.beta\"]')\" 'BEGIN { exit !(r >= 0.5) }'"
check "in-process: the generator's frame under gamma" \
    awk -v r="$(printf '%s' "$j" | jq '.shares["shares_gamma.gamma_items"]')" 'BEGIN { exit !(r >= 0.05) }'
is "$(printf '%s' "$j" | jq -r '.chain["shares_gamma.gamma_items"][:3] | join(" < ")')" \
    "shares_gamma.gamma_items < shares_gamma.gamma < pyshares.run_for" \
    "in-process: gamma_items' Python caller is gamma (the generator's native frames between)"
check "in-process: no evaluator frame left ($(printf '%s' "$j" | jq .eval_left))" \
    awk -v r="$(printf '%s' "$j" | jq .eval_left)" 'BEGIN { exit !(r <= 0.02) }'
is "$(printf '%s' "$j" | jq .python_map)" true "in-process: the Python frames under a [python] mapping"
is "$(python3 "$S/test/lib/pprof_stacks.py" "$T_TMP"/in-single/*.pb.gz | jq .bad_frames)" 0 \
    "in-process: no location outside its mapping"

j=$(summary "$T_TMP/in-threads")
diag "in-process, two threads: $(printf '%s' "$j" | jq -c '{samples, shares, chain}' | cut -c 1-700)"
shares "in-process, two threads" "$j" 5
python3 - "$T_TMP"/in-threads/*.pb.gz > "$T_TMP/threads.json" <<'EOF'
import json, os, sys
sys.path.insert(0, os.environ.get("top_srcdir", ".") + "/test/lib")
from pprof_stacks import read
roots = {}
for path in sys.argv[1:]:
    p = read(path)
    s = p["strings"]
    for locs, vals, _ in p["samples"]:
        names = [s[p["fn"].get(f, 0)] for l in locs for f in p["loc"].get(l, {"fns": []})["fns"]]
        if "shares_alpha.alpha" in names:
            k = "thread" if "threading.Thread.run" in names else "main" if "pyshares.main" in names else "other"
            roots[k] = roots.get(k, 0) + vals[0]
print(json.dumps(roots))
EOF
diag "alpha's samples by thread: $(cat "$T_TMP/threads.json")"
check "in-process, two threads: alpha in the worker (under Thread.run) and in the main thread" \
    sh -c "[ \"\$(jq '.thread // 0' '$T_TMP/threads.json')\" -ge 20 ] && [ \"\$(jq '.main // 0' '$T_TMP/threads.json')\" -ge 20 ]"

j=$(summary "$T_TMP/in-async")
diag "in-process, asyncio: $(printf '%s' "$j" | jq -c '{samples, shares, chain: .chain["shares_alpha.alpha"]}' | cut -c 1-700)"
shares "in-process, asyncio" "$j" 5
check "in-process, asyncio: the coroutine delta under the event loop" \
    sh -c "printf '%s' '$j' | jq -e '.shares[\"pyshares.delta\"] >= 0.95 and (.chain[\"shares_alpha.alpha\"] | index(\"pyshares.delta\") != null) and (.chain[\"shares_alpha.alpha\"] | map(select(test(\"run_until_complete\"))) | length == 1)' > /dev/null"

for v in 312 313; do
	eval py=\$PY$v
	if [ -z "$py" ]; then
		ok "# SKIP in-process, CPython ${v:0:1}.${v:1}: not on this machine"
		continue
	fi
	j=$(summary "$T_TMP/in-single$v")
	diag "in-process, ${v:0:1}.${v:1} ($py): $(printf '%s' "$j" | jq -c '{samples, shares, eval_left}')"
	check "in-process, ${v:0:1}.${v:1}: it said it found the interpreter" \
	    grep -q "Python frames on: CPython ${v:0:1}.${v:1}" "$T_TMP/in-single$v.err"
	shares "in-process, ${v:0:1}.${v:1}" "$j" 5
	lines "in-process, ${v:0:1}.${v:1}" "$j"
	chain "in-process, ${v:0:1}.${v:1}" "$j" "pyshares.main < pyshares.<module>"
done

if [ -n "$PY310" ]; then
	check "in-process, 3.10: said once that its frames stay native" \
	    sh -c "[ \"\$(grep -c 'Python frames off: .*older than 3.11' '$T_TMP/in-old.err')\" -eq 1 ]"
	j=$(python3 "$S/test/lib/pprof_stacks.py" --has '^_PyEval_EvalFrameDefault$' "$T_TMP"/in-old/*.pb.gz)
	check "in-process, 3.10: native stacks kept (the evaluator on them)" \
	    awk -v r="$(printf '%s' "$j" | jq '.functions["^_PyEval_EvalFrameDefault$"]')" 'BEGIN { exit !(r >= 0.2) }'
	is "$(summary "$T_TMP/in-old" | jq .python_map)" false "in-process, 3.10: no Python frames"
else
	ok "# SKIP in-process, an unknown CPython: no 3.10 on this machine"
fi

# go tool pprof and the collector's merged profile.
code=$(curl -s -o "$T_TMP/merged.pb.gz" -w '%{http_code}' \
    "$PROFD_URL/api/0/profiles/merge?service=py-single-$t&type=cpu&from=now-10m")
is "$code" 200 "the collector merges the uploaded profiles"
go tool pprof -top "$T_TMP/merged.pb.gz" > "$T_TMP/top.txt" 2>&1
diag "$(sed -n '/flat%/,+4p' "$T_TMP/top.txt" | tr -s ' ' | head -5 | tr '\n' '|')"
check "go tool pprof -top shows the qualified names" \
    sh -c "grep -q 'shares_alpha.alpha' '$T_TMP/top.txt' && grep -q 'shares_beta.beta' '$T_TMP/top.txt'"
go tool pprof -list 'shares_alpha.alpha' "$T_TMP/merged.pb.gz" > "$T_TMP/list.txt" 2>&1
check "go tool pprof -list places alpha at its file" grep -q 'shares_alpha.py' "$T_TMP/list.txt"

if command -v node >/dev/null 2>&1 && [ -x /usr/bin/chromium ] &&
    [ -d "$S/test/ui/node_modules/playwright-core" ]; then
	first=$(awk '/flat%/ { go = 1; next } go && NF >= 6 { print $6; exit }' "$T_TMP/top.txt")
	PROFD_URL=$PROFD_URL UI_SERVICE=py-single-$t UI_TOP_NAME=$first \
	UI_FRAME=shares_alpha.alpha UI_SCREENSHOT=$T_TMP/ui.png \
	    timeout 200 node "$S/test/ui/open_profile.mjs" > "$T_TMP/ui.tap" 2>&1
	rc=$?
	while IFS= read -r line; do
		case $line in
		"ok "*) ok "web UI: ${line#ok * - }" ;;
		"not ok "*) not_ok "web UI: ${line#not ok * - }" ;;
		"#"*) echo "$line" ;;
		esac
	done < "$T_TMP/ui.tap"
	is "$rc" 0 "web UI: the browser test's exit status"
else
	ok "# SKIP web UI: node, chromium or playwright-core not installed (tools/deps.sh --test)"
fi

# 3. The host agent.
if [ -z "$ha" ]; then
	ok "# SKIP host agent: not built"
	done_testing
fi
hsum() {
	mkdir -p "$T_TMP/h-$1"
	cp "$T_TMP"/ha/hpy-"$1"-$t-cpu-*.pb.gz "$T_TMP/h-$1/" 2>/dev/null
	summary "$T_TMP/h-$1"
}
j=$(hsum single)
diag "host agent, 3.11: $(printf '%s' "$j" | jq -c '{samples, shares, callers, eval_left}' | cut -c 1-700)"
check "host agent: samples ($(printf '%s' "$j" | jq .samples))" [ "$(printf '%s' "$j" | jq .samples)" -ge 400 ]
shares "host agent, 3.11" "$j" 10
lines "host agent, 3.11" "$j"
chain "host agent, 3.11" "$j" "pyshares.main < pyshares.<module>"
check "host agent: the C extension's native frames under beta" \
    sh -c "[ \"\$(printf '%s' '$j' | jq '.below_maps[\"shares_beta.beta\"] | map(select(test(\"^_hashlib|^libcrypto\"))) | length')\" -ge 1 ]"
is "$(printf '%s' "$j" | jq .python_map)" true "host agent: the Python frames under a [python] mapping"
c=$(go tool pprof -comments "$T_TMP"/h-single/*.pb.gz 2>/dev/null | grep -o 'Python frames in [0-9]* samples[^;]*' | head -n 1)
diag "$c"
check "host agent: the profile says how late the frames were read" \
    sh -c "printf '%s' '$c' | grep -qE 'read [0-9.]+ ms after the sample'"
is "$(python3 "$S/test/lib/pprof_stacks.py" "$T_TMP"/h-single/*.pb.gz | jq .bad_frames)" 0 \
    "host agent: no location outside its mapping"
j=$(hsum threads)
diag "host agent, two threads: $(printf '%s' "$j" | jq -c '{samples, shares}')"
shares "host agent, two threads" "$j" 10
j=$(hsum async)
diag "host agent, asyncio: $(printf '%s' "$j" | jq -c '{samples, shares}')"
shares "host agent, asyncio" "$j" 10
check "host agent, asyncio: the coroutine delta on the stacks" \
    awk -v r="$(printf '%s' "$j" | jq '.shares["pyshares.delta"]')" 'BEGIN { exit !(r >= 0.9) }'
for v in 312 313; do
	eval py=\$PY$v
	if [ -z "$py" ]; then
		ok "# SKIP host agent, CPython ${v:0:1}.${v:1}: not on this machine"
		continue
	fi
	j=$(hsum "single$v")
	diag "host agent, ${v:0:1}.${v:1}: $(printf '%s' "$j" | jq -c '{samples, shares}')"
	shares "host agent, ${v:0:1}.${v:1}" "$j" 10
	chain "host agent, ${v:0:1}.${v:1}" "$j" "pyshares.main < pyshares.<module>"
done
if [ -n "$PY310" ]; then
	check "host agent, 3.10: said once that its programs keep native stacks" \
	    sh -c "[ \"\$(grep -c 'is CPython, but it is older than 3.11' '$T_TMP/ha.log')\" -eq 1 ]"
	j=$(hsum old)
	is "$(printf '%s' "$j" | jq .python_map)" false "host agent, 3.10: no Python frames"
else
	ok "# SKIP host agent, an unknown CPython: no 3.10 on this machine"
fi
done_testing
