#!/usr/bin/env bash
# libprofd-agent on programs from Debian's packages, built without frame
# pointers: python3.11 running a CPU loop and gzip -9 on a large file,
# each under LD_PRELOAD with PROFD_OUTPUT_DIR and, where perf works, under
# `perf record --call-graph=dwarf` in the same run. Every profile decodes
# (go tool pprof -raw); after the first window (whose first drain ticks,
# 100 ms apart while tables come in, load the tables, agent/README.md) at
# least 90% of the samples reach __libc_start_main (unwound through the
# program's own frames down to libc's start code), over the whole run at
# least 85% (97-98% here; 89% seen with the machine under a full CI run,
# the table parsing budget being a share of the process's CPU); the
# median depth
# (above the start code) is within 20% of perf's (else at least 6 frames
# for python), and every location's address lies inside its mapping (no
# garbage frame).
. "${top_srcdir:-.}/test/lib/e2e.sh"

B=${top_builddir:-.}
SO=$B/agent/.libs/libprofd-agent.so
PY=/usr/bin/python3.11
[ -f "$SO" ] || skip_all "agent not built"
[ "$(uname -m)" = x86_64 ] || skip_all "CFI unwinding is x86-64 only"
command -v go >/dev/null || skip_all "go tool pprof not installed"
[ -x "$PY" ] || skip_all "$PY not installed"
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0"

# perf works here (installed, allowed to sample)?
PERF=
if command -v perf >/dev/null &&
    perf record -q -e cpu-clock -o "$T_TMP/probe.data" -- true \
    >/dev/null 2>&1; then
	PERF=perf
else
	diag "perf is not usable here: depth checked against a fixed bound"
fi

# summarize DIR [PERF_SCRIPT EXE]: one line "samples reach steady_n
# steady_reach depth bad perf_depth first" over the profiles in DIR:
# samples, those with __libc_start_main on the stack, the same two for
# the profiles after the first (the first window holds the samples taken
# before the objects' tables were loaded: agent/README.md), the median
# depth, locations outside their mapping, the median depth of perf's
# samples of the same run (0 without perf) and the percentage reaching
# __libc_start_main in the first profile. Depth counts the frames above
# the start code: a last frame in the executable (_start) and the libc
# frames under it are not counted, as perf's own unwinder stops at
# __libc_start_call_main in a varying share of its samples (10-100%, run
# to run) and would otherwise move its median by two.
summarize() {
	local dir=$1 ps=${2:-} exe=${3:-} f
	# in window order: SERVICE-cpu-PID-N.pb.gz
	for f in $(ls "$dir"/*.pb.gz | awk -F- '{ print $NF " " $0 }' |
	    sort -n | cut -d' ' -f2-); do
		echo "=== $f"
		gopprof -raw "$f" 2>/dev/null
	done >"$T_TMP/raw.txt"
	python3 - "$T_TMP/raw.txt" "$ps" "$exe" <<'EOF'
import os, re, sys
tot = [0, 0]; steady = [0, 0]; depths = []; bad = 0; first = None

def above_start(dsos, exe):
    """Frames above the start code; dsos from the top of the stack."""
    n = len(dsos)
    if n > 1 and dsos[n - 1] == exe:
        n -= 1
    while n > 1 and os.path.basename(dsos[n - 1]).startswith("libc.so"):
        n -= 1
    return n

def finish(prof, nth):
    global bad, first
    maps, locs, ss = prof
    here = [0, 0]
    for addr, m, _ in locs.values():
        if m not in maps or not maps[m][0] <= addr < maps[m][1]:
            bad += 1
    exe = maps.get(1, (0, 0, ""))[2]
    for cnt, ids in ss:
        ok = any(i in locs and locs[i][2] == "__libc_start_main" for i in ids)
        dsos = [maps.get(locs[i][1], (0, 0, ""))[2] if i in locs else ""
                for i in ids]
        depths.extend([above_start(dsos, exe)] * cnt)
        for acc in (tot, here) + ((steady,) if nth > 0 else ()):
            acc[0] += cnt
            acc[1] += cnt if ok else 0
    if nth == 0:
        first = here[1] * 100 // here[0] if here[0] else 0

prof = None; sec = None; nth = -1
for line in open(sys.argv[1]):
    if line.startswith("=== "):
        if prof: finish(prof, nth)
        prof = ({}, {}, []); sec = None; nth += 1; continue
    if line.startswith("Samples:"): sec = "s"; continue
    if line.startswith("Locations"): sec = "l"; continue
    if line.startswith("Mappings"): sec = "m"; continue
    if sec == "s":
        m = re.match(r"\s*(\d+)\s+\d+:\s+([\d ]+)$", line)
        if m:
            prof[2].append((int(m.group(1)), [int(x) for x in m.group(2).split()]))
    elif sec == "l":
        m = re.match(r"\s*(\d+): (0x[0-9a-f]+) M=(\d+) ?(\S*)", line)
        if m:
            prof[1][int(m.group(1))] = (int(m.group(2), 16), int(m.group(3)),
                                       m.group(4))
    elif sec == "m":
        m = re.match(r"(\d+): (0x[0-9a-f]+)/(0x[0-9a-f]+)/0x[0-9a-f]+ (\S+)", line)
        if m:
            prof[0][int(m.group(1))] = (int(m.group(2), 16), int(m.group(3), 16),
                                        m.group(4))
if prof: finish(prof, nth)

def median(v):
    v = sorted(v)
    return v[len(v) // 2] if v else 0

# perf script: a header line per sample (comm first), then a line per
# frame "addr sym (dso)"; perf repeats a frame's address for the functions
# inlined there. Samples of env before its exec are left out.
pd = []; cur = None; last = None; exe = sys.argv[3] if len(sys.argv) > 3 else ""
def perf_done():
    if cur is not None and cur[1]:
        pd.append(above_start(cur[1], cur[0]))
for line in open(sys.argv[2]) if sys.argv[2] else []:
    if not line.strip():
        continue
    if line[0] not in " \t":
        perf_done()
        cur = None if line.split()[0] in ("env", "perf-exec") else (exe, [])
        last = None; continue
    f = line.split()
    a = int(f[0], 16)
    dso = f[-1].strip("()")
    if dso == "inlined":    # an inline-annotated frame: its caller's object
        dso = cur[1][-1] if cur is not None and cur[1] else ""
    if cur is None or "kernel.kallsyms" in line or a >= 0x800000000000 or a == last:
        continue
    last = a
    cur[1].append(dso)
perf_done()
print(tot[0], tot[1], steady[0], steady[1], median(depths), bad, median(pd),
      first if first is not None else 0)
EOF
}

# run NAME CMD...: the command under the agent (and perf if it works);
# sets SUM to summarize's line.
run() {
	local name=$1
	shift
	rm -rf "$T_TMP/$name" && mkdir -p "$T_TMP/$name"
	if [ -n "$PERF" ]; then
		perf record -q -e cpu-clock -F 49 --call-graph=dwarf \
		    -o "$T_TMP/$name.data" -- env LD_PRELOAD="$SO" \
		    PROFD_PYTHON_FRAMES=off \
		    PROFD_SERVICE="$name" PROFD_OUTPUT_DIR="$T_TMP/$name" \
		    PROFD_WINDOW=3 PROFD_PERIOD=3 "$@" >/dev/null \
		    2>"$T_TMP/$name.err"
		RC=$?
		perf script -i "$T_TMP/$name.data" 2>/dev/null \
		    >"$T_TMP/$name.perf"
		SUM=$(summarize "$T_TMP/$name" "$T_TMP/$name.perf" \
		    "$(readlink -f "$(command -v "$1")")")
	else
		LD_PRELOAD="$SO" PROFD_SERVICE="$name" PROFD_PYTHON_FRAMES=off \
		    PROFD_OUTPUT_DIR="$T_TMP/$name" PROFD_WINDOW=3 \
		    PROFD_PERIOD=3 "$@" >/dev/null 2>"$T_TMP/$name.err"
		RC=$?
		SUM=$(summarize "$T_TMP/$name")
	fi
}

# verdicts NAME MINDEPTH: the checks on SUM.
verdicts() {
	local name=$1 min=$2 n reach sn sreach med bad pmed first
	read -r n reach sn sreach med bad pmed first <<<"$SUM"
	diag "$name: $n samples, $reach reach __libc_start_main; after the" \
	    "first window $sreach of $sn; first window alone ${first}%;" \
	    "median depth above the start code $med, perf's $pmed;" \
	    "$bad locations outside their mapping"
	is "$RC/$(wc -c <"$T_TMP/$name.err")" "0/0" "$name: exits 0, quietly"
	check "$name: profiles with samples ($n)" test "${n:-0}" -ge 300
	check "$name: after the first window >= 90% of samples reach __libc_start_main ($sreach of $sn)" \
	    test "$((sreach * 10))" -ge "$((sn * 9))" -a "${sn:-0}" -gt 0
	check "$name: over the whole run >= 85% do ($reach of $n)" \
	    test "$((reach * 20))" -ge "$((n * 17))"
	if [ "${pmed:-0}" -gt 0 ]; then
		check "$name: median depth $med within 20% of perf's $pmed" \
		    test "$((med * 5))" -ge "$((pmed * 4))" -a \
		    "$((med * 5))" -le "$((pmed * 6))"
	else
		check "$name: median depth $med >= $min" test "${med:-0}" -ge "$min"
	fi
	is "$bad" 0 "$name: every location lies inside its mapping"
}

# 1. python3.11: a pure-Python CPU loop for 12 s of CPU.
cat >"$T_TMP/loop.py" <<'EOF'
import time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
end = time.process_time() + 12
while time.process_time() < end:
    fib(18)
EOF
run python "$PY" "$T_TMP/loop.py"
verdicts python 6

# 2. gzip -9 on 80 MB of text (random words: long match chains, slow).
if command -v gzip >/dev/null; then
	python3 -c '
import random, sys
random.seed(1)
w = ["".join(random.choice("abcdefghij") for _ in range(random.randint(2, 7)))
     for _ in range(300)]
sys.stdout.write("".join(" ".join(random.choice(w) for _ in range(1000)) +
                 "\n" for _ in range(1600)))' >"$T_TMP/words"
	for i in 1 2 3 4 5 6 7 8 9 10; do cat "$T_TMP/words"; done >"$T_TMP/big"
	run gzip gzip -9 -c "$T_TMP/big"
	verdicts gzip 3
	rm -f "$T_TMP/big" "$T_TMP/words"
fi
done_testing
