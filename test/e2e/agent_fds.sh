#!/usr/bin/env bash
# libprofd-agent in programs that close every inherited descriptor, as ssh
# does (close_range(3, ~0U)) and Python's os.closerange(3, 1024):
# 1. Debian's python3.11 calls close_range(3, ~0U, 0) first thing, then
#    burns CPU: profiles still reach the real profd afterwards, nothing is
#    printed on the program's stderr, and (strace) the agent thread never
#    closes a descriptor number that it did not open last.
# 2. The same program closes everything from 3 up every few ms while a
#    slow collector keeps each upload open for 0.3 s, and reopens files of
#    its own under the freed numbers: the agent never closes one of them
#    (the program checks its own descriptors before each closerange), and
#    it notices that its sockets were taken (PROFD_VERBOSE's count).
. "${top_srcdir:-.}/test/lib/e2e.sh"

B=${top_builddir:-.}
SO=$(cd "$B" && pwd)/agent/.libs/libprofd-agent.so
PY=/usr/bin/python3.11
[ -f "$SO" ] || skip_all "agent not built"
[ -x "$PY" ] || skip_all "Debian's python3.11 is not installed"
nm -D "$SO" 2>/dev/null | grep -q __tsan_init &&
    skip_all "a TSan agent cannot be preloaded into Debian's python3.11"
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0"
profd_start || skip_all "profd is not available"

# The program of part 1: close_range(3, ~0U) as ssh does, then 3.5 s of CPU.
cat >"$T_TMP/burn.py" <<'PYEOF'
import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
if libc.close_range(3, 0xffffffff, 0) != 0:
    raise SystemExit("close_range failed: %d" % ctypes.get_errno())
t = time.process_time()
x = 0
while time.process_time() - t < 3.5:
    x += 1
PYEOF

# 1. The real collector, under strace when it is there.
run=(env LD_PRELOAD="$SO" PROFD_SERVICE=fds-test PROFD_COLLECTOR="$PROFD_URL" \
    PROFD_WINDOW=1 PROFD_PERIOD=1 "$PY" "$T_TMP/burn.py")
if command -v strace >/dev/null && strace -f -o /dev/null true 2>/dev/null; then
	# (LeakSanitizer cannot run under ptrace)
	ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" \
	strace -f -qq -o "$T_TMP/trace" -e trace=socket,openat,open,close,close_range,dup,dup2,dup3,pipe2,epoll_create1,eventfd2 \
	    "${run[@]}" >"$T_TMP/out" 2>"$T_TMP/err"
else
	"${run[@]}" >"$T_TMP/out" 2>"$T_TMP/err"
fi
rc=$?
is "$rc/$(wc -c <"$T_TMP/err")" "0/0" "close_range(3, ~0U): python3.11 exits 0, nothing on its stderr"
sed 's/^/# /' "$T_TMP/err" | head -5
api "/api/0/profiles?service=fds-test&type=cpu" >/dev/null
n=$(jq '.body | length' <<<"$BODY")
check "close_range(3, ~0U): profiles still arrive afterwards ($n)" test "${n:-0}" -ge 2
if [ -f "$T_TMP/trace" ]; then
	# The agent thread is the one that creates sockets. Each of its
	# close(N) must follow its own creation of N, with no close_range or
	# close of N by another thread in between.
	verdict=$(python3 - "$T_TMP/trace" <<'PYEOF'
import re, sys
owner = {}          # fd -> tid that created it last (None: closed)
agent = set()
bad = []
closes = 0
pend = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\d+) +(.*)", line.rstrip())
    if not m:
        continue
    tid, rest = int(m.group(1)), m.group(2)
    if rest.endswith("<unfinished ...>"):
        pend[tid] = rest[:-len("<unfinished ...>")]
        continue
    r = re.match(r"<\.\.\. (\w+) resumed>(.*)", rest)
    if r:
        rest = pend.pop(tid, r.group(1) + "(") + r.group(2)
    c = re.match(r"(\w+)\((.*)\)\s+= (-?\d+)", rest)
    if not c:
        continue
    name, args, ret = c.group(1), c.group(2), int(c.group(3))
    if name == "socket" and ret >= 0:
        agent.add(tid)
    if name in ("socket", "openat", "open", "dup", "pipe2", "epoll_create1",
                "eventfd2") and ret >= 0:
        owner[ret] = tid
    elif name in ("dup2", "dup3") and ret >= 0:
        owner[ret] = tid
    elif name == "close_range":
        lo, hi = [int(x, 0) for x in args.split(",")[:2]]
        for fd in list(owner):
            if lo <= fd <= hi:
                owner[fd] = None
    elif name == "close":
        fd = int(args)
        if tid in agent:
            closes += 1
            if owner.get(fd) != tid:
                bad.append(line.strip())
        owner[fd] = None
print("%d %d %s" % (closes, len(bad), bad[:3]))
PYEOF
)
	diag "strace: agent closes, wrong closes: $verdict"
	check "strace: the agent closed only descriptors it had opened last ($verdict)" \
	    test "$(echo "$verdict" | awk '{ print ($1 > 0 && $2 == 0) }')" = 1
fi

# 2. Descriptors taken during uploads, numbers reused by the program.
python3 "${top_srcdir:-.}/test/lib/slow_collector.py" "$T_TMP/port" slow \
    >"$T_TMP/conns" 2>/dev/null &
coll=$!
for i in $(seq 1 100); do [ -f "$T_TMP/port" ] && break; sleep 0.05; done
cat >"$T_TMP/churn.py" <<'PYEOF'
import os, sys, time
mine = {}
bad = 0
t = time.monotonic()
while time.monotonic() - t < 4:
    for fd, ident in mine.items():
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != ident:
                bad += 1
        except OSError:
            bad += 1
    os.closerange(3, 1024)
    mine = {}
    for i in range(6):
        fd = os.open("/dev/null", os.O_RDONLY)
        st = os.fstat(fd)
        mine[fd] = (st.st_dev, st.st_ino)
    x = 0
    for i in range(20000):
        x += i
print("bad", bad)
PYEOF
env LD_PRELOAD="$SO" PROFD_SERVICE=fds-churn \
    PROFD_COLLECTOR="http://127.0.0.1:$(cat "$T_TMP/port")" PROFD_WINDOW=1 \
    PROFD_PERIOD=1 PROFD_VERBOSE=1 "$PY" "$T_TMP/churn.py" \
    >"$T_TMP/out2" 2>"$T_TMP/err2"
rc=$?
kill "$coll" 2>/dev/null; wait "$coll" 2>/dev/null
grep -E 'stopped|upload' "$T_TMP/err2" | tail -n 4 | sed 's/^/# /'
is "$rc/$(cat "$T_TMP/out2")" "0/bad 0" "churn: the agent never closed one of the program's descriptors"
check "churn: the collector saw uploads ($(wc -l <"$T_TMP/conns") connections)" \
    test "$(wc -l <"$T_TMP/conns")" -ge 2
lost=$(sed -n 's/.* \([0-9]*\) sockets closed by the program.*/\1/p' "$T_TMP/err2")
check "churn: the agent saw its sockets taken and forgot them (${lost:-none})" \
    test "${lost:-0}" -ge 1
check "churn: no libevent or other error lines" \
    sh -c "! grep -qiE 'bad file descriptor|epoll' '$T_TMP/err2'"
done_testing
