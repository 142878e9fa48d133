#!/usr/bin/env bash
# The heap profiler (LD_PRELOAD=libprofd-heap.so: agent/inproc/heapwrap.c,
# agent/inproc/heap.c, agent/inproc/heapprof.c) against the real collector:
#  1. agent/examples/leaky at PROFD_HEAP_RATE=16k, 2-second windows: the
#     newest heap=inuse profile has leak_a's 64 MiB and leak_b's 16 MiB
#     within 10%, churn's in-use under 1% of what it allocated; the merge
#     of the run's heap=allocs profiles has churn's 1 GiB within 10% and
#     equal to the cumulative figure of the heap=inuse profile (windows
#     are contiguous); go tool pprof reads the merge URL with churn on
#     top; the leak functions are their blocks' leaf frames, with no frame
#     of the wrappers, the agent or malloc in any stack;
#  2. leaky at the default rate (512 KiB): leak_a within 4 sigma;
#  3. agent/examples/heapapi (every interposed C function's contract,
#     threads, a fork) at rates 1, 7, 4k and the default: exit 0, "ok";
#     at rate 1 every allocation is sampled (exact counts), none leaks;
#  4. off means nothing interposed: libprofd-agent defines no allocation
#     function and a program under it binds malloc to libc; libprofd-heap
#     defines exactly the allocation functions and operators besides what
#     libprofd-agent defines (it holds the agent, with its signal-mask,
#     sigaction and exec wrappers), and needs no libprofd-agent: a
#     program under it binds pthread_sigmask to it;
#  5. Debian's programs, unchanged: python3.11 keeping 50 MB of str
#     (and a fork child keeping 20 MB more, each process labelled with
#     its pid), sqlite3 inserting 200,000 indexed rows, clang++ -O2 -c
#     (same output, C++ frames of libLLVM and libclang-cpp, no operator
#     new frame); a C++ program built here with every form of new and
#     delete (checked at rate 1; keep_objects' 32 MiB within 10% at 16k)
#     and a realloc'd 32 MiB;
#  6. consecutive windows: a program allocating without pause has the
#     allocations of each window in its allocs profile, none lost between
#     windows; files written with PROFD_OUTPUT_DIR never overwrite each
#     other.
# Figures (measured and true) are printed in the test descriptions.
. "${top_srcdir:-.}/test/lib/e2e.sh"

B=${top_builddir:-.}
S=${top_srcdir:-.}
HEAP=$B/agent/.libs/libprofd-heap.so
SO=$B/agent/.libs/libprofd-agent.so
LEAKY=$B/agent/examples/leaky
HEAPAPI=$B/agent/examples/heapapi
PY=/usr/bin/python3.11
[ -f "$HEAP" ] && [ -f "$SO" ] && [ -x "$LEAKY" ] && [ -x "$HEAPAPI" ] ||
    skip_all "agent not built"
# Under ASan (.ci/run runs the whole suite so) the program's malloc is the
# sanitizer's and libprofd-heap's own code is instrumented: a preloaded
# libprofd-heap crashes in its free() while libasan initializes (its
# instrumented read before a block, shadow memory not mapped yet; seen
# with GCC 12), and after that every read of a block's tag would be a
# redzone read. TSan and MSan replace malloc likewise.
nm -D "$SO" 2>/dev/null | grep -qE '__(asan|tsan|msan)_init' &&
    skip_all "sanitizer build: its runtime owns malloc, which libprofd-heap cannot interpose"
[ "$(uname -m)" = x86_64 ] || skip_all "heap stacks of Debian's programs need CFI unwinding (x86-64 only)"
command -v go >/dev/null || skip_all "go tool pprof not installed"
command -v jq >/dev/null || skip_all "jq not installed"
command -v curl >/dev/null || skip_all "curl not installed"

pprof() { gopprof "$@" 2>/dev/null; }
# fetch PATH FILE: GET into FILE (binary-safe); status in $HTTP_CODE.
fetch() { HTTP_CODE=$(curl -s -o "$2" -w '%{http_code}' "$PROFD_URL$1"); }
# list SERVICE [LABELS]: the META array of SERVICE's heap profiles of this
# test run (newest first), with LABELS (k=v,k=v) if given.
list() {
	curl -s "$PROFD_URL/api/0/profiles?service=$1&type=heap&from=$T0${2:+&labels=$2}" |
	    jq -c '.body // []'
}
# newest SERVICE LABELS: the id of the newest profile of list.
newest() { list "$1" "$2" | jq -r '.[0].id // empty'; }
# newest_after SERVICE LABELS UNIX: the newest profile of a window that
# began in a later second than UNIX (seconds, with a fraction); else the
# newest.
newest_after() {
	list "$1" "$2" | jq -r --argjson t "$3" \
	    '(map(select(.created_at | sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601 > $t)) +
	      .)[0].id // empty'
}
# top SELECTION SAMPLE_TYPE: /api/0/top's body (rows in bytes or counts).
top() {
	curl -s "$PROFD_URL/api/0/top?$1&sample_type=$2&limit=100000" | jq -c '.body // {}'
}
# row TOP NAME flat|cum: the function's value in a top body (0 if absent).
row() {
	jq -r --arg n "$2" --arg f "$3" \
	    '[(.rows // [])[] | select(.name == $n) | .[$f]] | first // 0' <<<"$1"
}
# total TOP: the selection's total.
total() { jq -r '.total // 0' <<<"$1"; }
# within GOT WANT PCT: |GOT - WANT| <= PCT% of WANT.
within() {
	awk -v g="$1" -v w="$2" -v p="$3" \
	    'BEGIN { d = g - w; if (d < 0) d = -d; exit !(w > 0 && d <= w * p / 100) }'
}
# below GOT LIMIT: GOT < LIMIT (numbers).
below() { awk -v g="$1" -v l="$2" 'BEGIN { exit !(g < l) }'; }
# mib BYTES: "12.34 MiB"; mb BYTES: "12.34 MB".
mib() { awk -v b="$1" 'BEGIN { printf "%.2f MiB", b / 1048576 }'; }
mb() { awk -v b="$1" 'BEGIN { printf "%.2f MB", b / 1e6 }'; }
# pct A B: A as a percentage of B.
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f%%", b ? 100 * a / b : 0 }'; }
# dev GOT WANT: the signed deviation of GOT from WANT, "+1.23%".
dev() { awk -v g="$1" -v w="$2" 'BEGIN { printf "%+.2f%%", w ? 100 * (g - w) / w : 0 }'; }
# frames FILE...: the functions (as stored: C++ names mangled) of every
# location of the profiles, one a line, then "mapping BASENAME" for each
# mapping (test/lib/pprof_stacks.py reads them).
frames() {
	python3 - "$S/test/lib" "$@" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import pprof_stacks
for path in sys.argv[2:]:
    p = pprof_stacks.read(path)
    s = p["strings"]
    for loc in p["loc"].values():
        for f in loc["fns"]:
            print(s[p["fn"].get(f, 0)] or "0x%x" % loc["address"])
        if not loc["fns"]:
            print("0x%x" % loc["address"])
    for m in p["maps"]:
        print("mapping " + s[p["map"][m][2]].rsplit("/", 1)[-1])
EOF
}
# Frames that must never be in a stack: the wrappers, the agent's entry
# points, the allocation functions themselves (their callers own the
# blocks) and the C++ runtime's operator new and delete.
OURS='^(heapwrap_|profd_agent_heap_|heap_|(__libc_)?(malloc|calloc|realloc|free|memalign|aligned_alloc|posix_memalign|valloc|pvalloc)$|_Zn[wa]m|_Zd[la]Pv|mapping libprofd-)'
# epoch TIME: an RFC 3339 time in seconds since the epoch.
epoch() { date -d "$1" +%s.%N; }

# --- 4. Off means nothing interposed (no collector needed) ---------------
ALLOC_FNS='aligned_alloc calloc free malloc malloc_usable_size memalign posix_memalign pvalloc realloc valloc'
NEW_DELETE='_ZdaPv _ZdaPvRKSt9nothrow_t _ZdaPvSt11align_val_t _ZdaPvSt11align_val_tRKSt9nothrow_t _ZdaPvm _ZdaPvmSt11align_val_t _ZdlPv _ZdlPvRKSt9nothrow_t _ZdlPvSt11align_val_t _ZdlPvSt11align_val_tRKSt9nothrow_t _ZdlPvm _ZdlPvmSt11align_val_t _Znam _ZnamRKSt9nothrow_t _ZnamSt11align_val_t _ZnamSt11align_val_tRKSt9nothrow_t _Znwm _ZnwmRKSt9nothrow_t _ZnwmSt11align_val_t _ZnwmSt11align_val_tRKSt9nothrow_t'
IGNORED='^(_init|_fini|__bss_start|_edata|_end)$'
# defined LIB: the dynamic symbols LIB defines, sorted.
defined() {
	nm -D --defined-only "$1" | awk '$2 ~ /^[TtWiVvDdBb]$/ { sub(/@.*/, "", $3); print $3 }' |
	    grep -Ev "$IGNORED" | LC_ALL=C sort -u
}
got=$(defined "$SO" | grep -E '^(malloc|free|calloc|realloc|memalign|aligned_alloc|posix_memalign|valloc|pvalloc|malloc_usable_size|_Zn[wa]m.*|_Zd[la]Pv.*)$' | tr '\n' ' ')
is "$got" "" "libprofd-agent.so defines no allocation function or operator new/delete"
want=$({ printf '%s\n' $ALLOC_FNS $NEW_DELETE; defined "$SO"; } | LC_ALL=C sort -u | tr '\n' ' ')
is "$(defined "$HEAP" | tr '\n' ' ')" "$want" \
    "libprofd-heap.so defines exactly the 10 allocation functions, 20 operators new/delete and libprofd-agent's $(defined "$SO" | wc -l) symbols"
is "$(readelf -d "$HEAP" | grep -c 'NEEDED.*libprofd-agent')" 0 \
    "libprofd-heap.so does not load libprofd-agent (which would come after libc)"
mkdir -p "$T_TMP/ld"
# The bindings the loader made for leaky under LIB (LD_DEBUG=bindings).
bindings() {
	LD_DEBUG=bindings LD_PRELOAD=$1 PROFD_SERVICE=heap-ld PROFD_OUTPUT_DIR=$T_TMP/ld \
	    "$LEAKY" 0 0 2>&1 >/dev/null
}
# bound FILE SYMBOL: the object leaky's SYMBOL was bound to.
bound() {
	sed -n "s/.*binding file [^ ]*leaky \[0\] to \([^ ]*\) \[0\]: normal symbol \`$2'.*/\1/p" "$1" |
	    head -n 1 | xargs -r basename
}
bindings "$SO" >"$T_TMP/ld/off"
bindings "$HEAP" >"$T_TMP/ld/on"
for f in malloc calloc free; do
	is "$(bound "$T_TMP/ld/off" $f)" libc.so.6 "under libprofd-agent.so alone leaky's $f binds to libc.so.6"
	is "$(bound "$T_TMP/ld/on" $f)" libprofd-heap.so "under libprofd-heap.so leaky's $f binds to libprofd-heap.so"
done
# agent/examples/blocker masks a thread's signals with pthread_sigmask:
# under libprofd-heap the call reaches the agent's wrapper (sigmask.c).
LD_DEBUG=bindings LD_PRELOAD=$HEAP "$B/agent/examples/blocker" -s 0.05 \
    2>"$T_TMP/ld/blocker" >/dev/null
b=$(sed -n "s/.*binding file [^ ]*blocker \[0\] to \([^ ]*\) \[0\]: normal symbol \`pthread_sigmask'.*/\1/p" \
    "$T_TMP/ld/blocker" | head -n 1 | xargs -r basename)
is "$b" libprofd-heap.so "under libprofd-heap.so blocker's pthread_sigmask binds to libprofd-heap.so"

if ! [ -x "$PROFD" ] || ! profd_start; then
	diag "profd is not available; collector tests skipped"
	done_testing
fi
T0=$(( $(date +%s) - 5 ))
# Every run uploads to this collector (never to the default address) and
# waits at exit for the last window's upload (up to 5 s on a loaded
# machine) unless said otherwise.
COMMON=(PROFD_COLLECTOR="$PROFD_URL" PROFD_EXIT_TIMEOUT=5s)

# --- background runs (they mostly sleep) ----------------------------------
# leaky: sleeps 1 s, keeps 64 MiB (leak_a) and 16 MiB (leak_b), churns 1 GiB,
# sleeps 3 s, exits without freeing. timeout itself is not preloaded (it
# would profile itself under the same service).
L16_START=$(date +%s.%N)
timeout -k 5 60 env LD_PRELOAD="$HEAP" PROFD_SERVICE=heap-leaky "${COMMON[@]}" \
    PROFD_WINDOW=2 PROFD_PERIOD=2 PROFD_HEAP_RATE=16k \
    "$LEAKY" 1 3 >"$T_TMP/leaky16.out" 2>"$T_TMP/leaky16.err" &
L16=$!
timeout -k 5 60 env LD_PRELOAD="$HEAP" PROFD_SERVICE=heap-leaky-default "${COMMON[@]}" \
    PROFD_WINDOW=2 PROFD_PERIOD=2 \
    "$LEAKY" 1 3 >"$T_TMP/leakydef.out" 2>"$T_TMP/leakydef.err" &
LDEF=$!

# Python: 50,000 str of 1,000 ASCII characters (1,049 bytes each:
# sys.getsizeof, CPython 3.11's compact header is 48 bytes, then the
# characters and a NUL), made by concatenation (no realloc
# on the way), kept by the parent; a fork child keeps 20,000 more. Each
# prints the time its strings were all made, and sleeps through at least
# three 1-second windows after it; the checks read the newest profile of
# a window that began after that time (on a loaded machine a window may
# close before the strings are made, and the upload of the next may still
# be under way at exit). PROFD_EXIT_TIMEOUT=0: the exit window (after the
# interpreter freed everything) is not sent.
cat >"$T_TMP/keep.py" <<'EOF'
import os, sys, time

def keep_strings(n):
    a = "y" * 992
    return [a + ("%08d" % i) for i in range(n)]

kept = keep_strings(50000)
pid = os.fork()
if pid == 0:
    more = keep_strings(20000)
    print("child", os.getpid(), "%.3f" % time.time(), flush=True)
    time.sleep(4)
    sys.exit(0)
print("parent", os.getpid(), len(kept), sum(map(len, kept)), "%.3f" % time.time(),
      flush=True)
time.sleep(4)
os.waitpid(pid, 0)
EOF
PYPID=
if [ -x "$PY" ]; then
	timeout -k 5 60 env LD_PRELOAD="$HEAP" PROFD_SERVICE=heap-python \
	    PROFD_COLLECTOR="$PROFD_URL" PROFD_EXIT_TIMEOUT=0 PROFD_WINDOW=1 \
	    PROFD_PERIOD=1 PROFD_HEAP_RATE=64k PYTHONMALLOC=malloc PROFD_VERBOSE=1 \
	    "$PY" "$T_TMP/keep.py" >"$T_TMP/py.out" 2>"$T_TMP/py.err" &
	PYPID=$!
	# A loop allocating without pause for 3.5 s (the windows' seams).
	timeout -k 5 60 env LD_PRELOAD="$HEAP" PROFD_SERVICE=heap-seams "${COMMON[@]}" \
	    PROFD_WINDOW=1 PROFD_PERIOD=1 PROFD_HEAP_RATE=64k PYTHONMALLOC=malloc \
	    "$PY" -c '
import time
end = time.monotonic() + 3.5
while time.monotonic() < end:
    b = [bytes(500) for _ in range(200)]
' >"$T_TMP/seams.out" 2>"$T_TMP/seams.err" &
	SEAMS=$!
	# One 2 MB block a second, asleep otherwise (windows without CPU
	# samples), written to an output directory.
	mkdir -p "$T_TMP/files"
	timeout -k 5 60 env LD_PRELOAD="$HEAP" PROFD_SERVICE=heap-files \
	    PROFD_OUTPUT_DIR="$T_TMP/files" PROFD_VERBOSE=1 PROFD_WINDOW=1 \
	    PROFD_PERIOD=1 PROFD_HEAP_RATE=64k PYTHONMALLOC=malloc "$PY" -c '
import time
keep = []
for i in range(4):
    keep.append(bytearray(2000000))
    time.sleep(1)
' >"$T_TMP/files.out" 2>"$T_TMP/files.err" &
	FILES=$!
fi

# --- 3. heapapi at several rates (meanwhile) -----------------------------
for rate in 1 7 4k default; do
	r=()
	[ "$rate" = default ] || r=(PROFD_HEAP_RATE=$rate)
	s=$(date +%s.%N)
	timeout -k 5 120 env LD_PRELOAD="$HEAP" PROFD_SERVICE="heap-api-$rate" \
	    "${COMMON[@]}" PROFD_WINDOW=1 PROFD_PERIOD=1 "${r[@]}" \
	    "$HEAPAPI" >"$T_TMP/api.out" 2>"$T_TMP/api.err"
	rc=$?
	secs=$(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
	is "$rc/$(cat "$T_TMP/api.out")" "0/heapapi: ok" \
	    "heapapi at rate $rate: every contract holds, exit 0 (${secs}s)"
	[ "$rc" -eq 0 ] || sed 's/^/# /' "$T_TMP/api.err" | head -n 20
	awk '/^heapapi: pids/ { print $3, $4 }' "$T_TMP/api.err" >"$T_TMP/pids-$rate"
done
# Allocations from a signal handler (1 kHz SIGALRM, 24-byte blocks) while
# the main thread allocates, at rate 1 often inside the sample path: the
# handler's calls go through unsampled there, never wait on a lock.
for rate in 1 4k; do
	timeout -k 5 60 env LD_PRELOAD="$HEAP" PROFD_SERVICE=heap-sig \
	    "${COMMON[@]}" PROFD_WINDOW=1 PROFD_PERIOD=1 PROFD_HEAP_RATE=$rate \
	    "$HEAPAPI" signals 2 >"$T_TMP/sig.out" 2>"$T_TMP/sig.err"
	rc=$?
	n=$(awk '/signals:/ { print $3 }' "$T_TMP/sig.out")
	check "heapapi at rate $rate: malloc and free in a signal handler during sampled allocations: exit $rc, ${n:-no} handler allocations in 2 s" \
	    test "$rc" = 0 -a "${n:-0}" -ge 200
done
# At rate 1 every allocation is sampled (the agent then scales nothing,
# as Go's scaleHeapSample does for rate 1: "all samples were collected"),
# so the counts are exact. heapapi's 4 threads x 20,000 rounds each make 8
# allocations that are not page-aligned (malloc, realloc growing, realloc
# shrinking, calloc, memalign, aligned_alloc, posix_memalign,
# realloc(NULL)); valloc and pvalloc are page-aligned (never sampled, by
# design) and realloc(p, 0) frees. All of them are freed.
id=$(newest heap-api-1 heap=inuse)
t=$(top "ids=$id" alloc_objects)
n=$(row "$t" worker cum)
is "$n" 640000 "heapapi at rate 1: every allocation of the workers sampled (alloc_objects $n of 640000)"
t=$(top "ids=$id" inuse_space)
is "$(row "$t" worker cum)" 0 "heapapi at rate 1: none of the workers' blocks is in use at the end (inuse_space $(row "$t" worker cum) B)"
for rate in 1 4k; do
	l=$(list "heap-api-$rate")
	is "$(jq -r '[.[].labels[] | select(.key == "exe") | .value] | unique | join(",")' <<<"$l")" \
	    heapapi "heapapi at rate $rate: profiles uploaded, labelled exe=heapapi"
	# The parent's pid labels its profiles; the fork child (profiled
	# under its own pid) sends only if it outlives a window (it _exits:
	# no final profile), which it may on a loaded machine at rate 1.
	read -r ppid cpid <"$T_TMP/pids-$rate"
	pids=$(jq -r '[.[].labels[] | select(.key == "pid") | .value] | unique | join(" ")' <<<"$l")
	other=$(tr ' ' '\n' <<<"$pids" | grep -vxE "${ppid:-x}|${cpid:-x}" | tr '\n' ' ')
	check "heapapi at rate $rate: pid labels [$pids] the parent's ($ppid) and none but its fork child's ($cpid)" \
	    test -n "$ppid" -a -z "$other" -a -n "$(tr ' ' '\n' <<<"$pids" | grep -x "$ppid")"
done

# --- the C++ program (built meanwhile) ----------------------------------
CXX_OK=
if command -v g++ >/dev/null; then
	cat >"$T_TMP/newdel.cpp" <<'EOF'
// Every form of operator new and delete the heap profiler interposes,
// checked (values, alignment, nothrow, std::bad_alloc, the new handler);
// "measure" keeps known amounts for the profile and sleeps 2 s.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <unistd.h>

static int failed;
#define CHECK(c) do { if (!(c)) { std::fprintf(stderr, "newdel: %s (line %d)\n", \
	#c, __LINE__); failed = 1; } } while (0)
// Keeps the compiler from eliding an allocation (new/delete pairs may be).
// The functions the test looks for have C names (profd's top is not
// demangled).
template <class T> static T *escape(T *p) { __asm__ volatile("" : : "g"(p) : "memory"); return p; }

struct alignas(64) Line { unsigned char b[200]; };
struct Node { long v; Node *next; };
static int handler_calls;
static void handler() { handler_calls++; std::set_new_handler(nullptr); }

// 8 allocations, all freed.
extern "C" __attribute__((noinline)) void every_form(unsigned round) {
	Node *n = escape(new Node{(long)round, nullptr});	// _Znwm
	CHECK(n->v == (long)round);
	delete n;					// _ZdlPvm (sized)
	size_t len = 1 + round % 5000;
	char *a = escape(new char[len]);		// _Znam
	std::memset(a, (int)(round & 0xff), len);
	CHECK((unsigned char)a[len - 1] == (round & 0xff));
	delete[] a;					// _ZdaPv
	Line *l = escape(new Line);			// _ZnwmSt11align_val_t
	CHECK((uintptr_t)l % 64 == 0);
	std::memset(l->b, 7, sizeof l->b);
	delete l;					// _ZdlPvmSt11align_val_t
	Line *la = escape(new Line[3]);			// _ZnamSt11align_val_t
	CHECK((uintptr_t)la % 64 == 0 && (uintptr_t)&la[2] % 64 == 0);
	delete[] la;					// _ZdaPvSt11align_val_t
	Node *nt = escape(new (std::nothrow) Node{1, nullptr});	// _ZnwmRKSt9nothrow_t
	CHECK(nt != nullptr && nt->v == 1);
	::operator delete(nt, std::nothrow);		// _ZdlPvRKSt9nothrow_t
	int *ia = escape(new (std::nothrow) int[16]());	// _ZnamRKSt9nothrow_t
	CHECK(ia != nullptr && ia[15] == 0);
	delete[] ia;
	Line *ln = escape(new (std::nothrow) Line);	// aligned nothrow
	CHECK(ln != nullptr && (uintptr_t)ln % 64 == 0);
	delete ln;
	void *raw = ::operator new(100, std::align_val_t(256));
	CHECK((uintptr_t)raw % 256 == 0);
	::operator delete(raw, 100, std::align_val_t(256));
}

// What no memory means: nullptr, std::bad_alloc, the new handler.
extern "C" __attribute__((noinline)) void failures() {
	const size_t huge = (size_t)1 << 62;
	CHECK(escape(new (std::nothrow) char[huge]) == nullptr);
	bool threw = false;
	try { escape(new char[huge]); } catch (const std::bad_alloc &) { threw = true; }
	CHECK(threw);
	std::set_new_handler(handler);
	threw = false;
	try { escape(::operator new(huge)); } catch (const std::bad_alloc &) { threw = true; }
	CHECK(threw && handler_calls == 1);
}

static char *kept[8192];
static void *kept_r[32768];

// 32 MiB in 8,192 blocks of 4,096 bytes, live until exit.
extern "C" __attribute__((noinline)) void keep_objects() {
	for (int i = 0; i < 8192; i++) {
		kept[i] = escape(new char[4096]);
		kept[i][0] = 1;
	}
}

// 32 MiB in 32,768 blocks of 1,024 bytes, each shrunk by realloc from
// 4,096 bytes, live until exit.
extern "C" __attribute__((noinline)) void keep_realloced() {
	for (int i = 0; i < 32768; i++) {
		char *p = escape((char *)std::malloc(4096));
		std::memset(p, 3, 4096);
		kept_r[i] = std::realloc(p, 1024);
		CHECK(kept_r[i] != nullptr && ((char *)kept_r[i])[1023] == 3);
	}
}

int main(int argc, char **argv) {
	if (argc > 1 && std::strcmp(argv[1], "measure") == 0) {
		keep_objects();
		keep_realloced();
		std::printf("newdel: kept\n");
		std::fflush(stdout);
		sleep(2);
		return failed;
	}
	for (unsigned r = 0; r < 20000; r++)
		every_form(r);
	failures();
	std::printf("newdel: %s\n", failed ? "FAILED" : "ok");
	std::fflush(stdout);
	usleep(300000);	// the first window (up to 0.1 s after start) opens
	return failed;
}
EOF
	if g++ -std=c++17 -O1 -fno-omit-frame-pointer -o "$T_TMP/newdel" \
	    "$T_TMP/newdel.cpp" 2>"$T_TMP/gxx.err"; then
		CXX_OK=1
	else
		not_ok "g++ builds the C++ test program"
		sed 's/^/# /' "$T_TMP/gxx.err" | head -n 20
	fi
else
	diag "g++ not installed: the C++ test program is skipped"
fi

# --- 1. leaky at 16k ------------------------------------------------------
wait "$L16"
is "$?/$(cat "$T_TMP/leaky16.out")" "0/kept 67364 blocks" "leaky at 16k: exit 0, kept 67364 blocks"
inuse=$(list heap-leaky heap=inuse)
allocs=$(list heap-leaky heap=allocs)
ni=$(jq length <<<"$inuse")
na=$(jq length <<<"$allocs")
check "leaky: heap=inuse profiles listed ($ni; 2-second windows over 4 s)" test "$ni" -ge 2
check "leaky: heap=allocs profiles listed ($na)" test "$na" -ge 1
is "$(jq -r '[.[].sample_types | join(",")] | unique | join(" ")' <<<"$inuse")" \
    "alloc_objects/count,alloc_space/bytes,inuse_objects/count,inuse_space/bytes" \
    "leaky: heap=inuse profiles are Go-shaped (alloc_objects, alloc_space, inuse_objects, inuse_space)"
is "$(jq -r '[.[].sample_types | join(",")] | unique | join(" ")' <<<"$allocs")" \
    "alloc_objects/count,alloc_space/bytes" "leaky: heap=allocs profiles hold alloc_objects, alloc_space"
is "$(jq -rs '[.[][].labels[] | select(.key == "exe" or .key == "pid") | .key] | unique | join(",")' <<<"$inuse $allocs")/$(jq -rs '[.[][].labels[] | select(.key == "pid") | .value] | unique | length' <<<"$inuse $allocs")" \
    "exe,pid/1" "leaky: every profile labelled with exe and the one pid"
ID=$(jq -r '.[0].id' <<<"$inuse")
fetch "/api/0/profiles/$ID" "$T_TMP/leaky-inuse.pb.gz"
is "$HTTP_CODE" 200 "leaky: the newest heap=inuse profile downloads"
raw=$(pprof -raw "$T_TMP/leaky-inuse.pb.gz")
is "$(sed -n 's/^PeriodType: //p; s/^Period: //p' <<<"$raw" | tr '\n' ' ')" "space bytes 16384 " \
    "leaky: period type space/bytes, period 16384 (the rate)"
check "leaky: inuse_space is the default sample type" \
    grep -q 'inuse_space/bytes\[dflt\]' <<<"$raw"
check "leaky: leak_a's samples carry the numeric label bytes:[1000]" grep -q 'bytes:\[1000\]' <<<"$raw"
t=$(top "ids=$ID" inuse_space)
a=$(row "$t" leak_a flat); ac=$(row "$t" leak_a cum)
b=$(row "$t" leak_b flat)
# leaky keeps 67,108 blocks of 1,000 bytes (64 MiB rounded down to whole
# blocks: 67,108,000 bytes) and 256 of 65,536 (16 MiB). At 16k, leak_a's
# estimate has a relative standard deviation of 1.6% (see section 2's
# formula: 67,108 blocks sampled with p = 1 - exp(-1000/16384) = 0.059),
# leak_b's 0.85%: 10% is more than 6 sigma.
check "leaky at 16k: leak_a in use $(mib "$a") of 64 MiB ($(dev "$a" 67108000))" within "$a" 67108000 10
check "leaky at 16k: leak_b in use $(mib "$b") of 16 MiB ($(dev "$b" 16777216))" within "$b" 16777216 10
is "$ac" "$a" "leaky: leak_a owns its blocks (flat = cum: it is the leaf, no allocator frame under it)"
ca=$(row "$(top "ids=$ID" alloc_space)" churn flat)
ci=$(row "$t" churn flat)
check "leaky: churn's in-use $(mib "$ci") is under 1% of its $(mib "$ca") allocated (it freed everything)" \
    below "$ci" "$(awk -v a="$ca" 'BEGIN { print a / 100 }')"
check "leaky: churn allocated $(mib "$ca") since start, of 1024 MiB ($(dev "$ca" 1073741824))" \
    within "$ca" 1073741824 10
# The allocs profiles cover the run from the first window's start on,
# window after window with no gap, and the first window starts before
# leaky's 1-second sleep ends (0-10% of the period after start), before
# churn: so the merge of all of them holds all of churn, and exactly what
# the heap profile counts (the same samples; windows are contiguous),
# whatever window boundary churn may straddle.
first=$(jq -r '[.[].created_at] | min' <<<"$inuse")
check "leaky: the first window started before churn ($(echo "$(epoch "$first") - $L16_START" | bc | cut -c 1-5)s after launch, sleep 1 s)" \
    below "$(epoch "$first")" "$(echo "$L16_START + 1" | bc)"
MERGE="/api/0/profiles/merge?service=heap-leaky&type=heap&labels=heap=allocs&from=$T0"
t=$(top "service=heap-leaky&type=heap&labels=heap=allocs&from=$T0" alloc_space)
m=$(row "$t" churn flat)
check "leaky: the merged allocs profiles have churn's $(mib "$m") of 1024 MiB ($(dev "$m" 1073741824))" \
    within "$m" 1073741824 10
check "leaky: ... equal to the heap profile's cumulative $(mib "$ca") (windows contiguous: $(dev "$m" "$ca"))" \
    within "$m" "$ca" 0.1
out=$(PPROF_TMPDIR=$T_TMP pprof -sample_index=alloc_space -top "$PROFD_URL$MERGE")
is "$(awk '/ flat%/ { getline; print $NF; exit }' <<<"$out")" churn \
    "go tool pprof -top of the merge URL: churn on top for alloc_space"
fetch "$MERGE" "$T_TMP/leaky-allocs.pb.gz"
is "$HTTP_CODE" 200 "leaky: the merge downloads"
bad=$(frames "$T_TMP/leaky-inuse.pb.gz" "$T_TMP/leaky-allocs.pb.gz" | grep -E "$OURS" | sort -u | tr '\n' ' ')
is "$bad" "" "leaky: no frame of libprofd-heap, the agent or the allocator in any stack"
# Each kept block's stack is FUNCTION, main, the start code.
chains=$(pprof -sample_index=alloc_space -traces "$T_TMP/leaky-inuse.pb.gz" | awk '
    /^-+\+/ { n = 0; next }
    /bytes:/ { next }
    { gsub(/^[ \t]*[0-9.]+[kMG]?B[ \t]+/, ""); gsub(/^[ \t]+/, ""); f[n++] = $0
      if (n == 2 && f[0] ~ /^(leak_a|leak_b|churn)$/) print f[0] "<" f[1] }' | sort -u | tr '\n' ' ')
is "$chains" "churn<main leak_a<main leak_b<main " "leaky: the stacks read leak_a/leak_b/churn, then main"

# --- 2. leaky at the default rate ----------------------------------------
wait "$LDEF"
is "$?/$(cat "$T_TMP/leakydef.out")" "0/kept 67364 blocks" "leaky at the default rate: exit 0"
ID=$(newest heap-leaky-default heap=inuse)
t=$(top "ids=$ID" inuse_space)
a=$(row "$t" leak_a flat)
# At 512 KiB a 1,000-byte block is sampled with p = 1 - exp(-1000/524288)
# = 0.0019054 and counted 1/p times, so of leak_a's N = 67,108 blocks
# about N p = 128 are sampled; the estimate's relative standard deviation
# is sqrt((1 - p) / (N p)) = 8.84%. 4 sigma: 35% (a false alarm once in
# 16,000 runs; 25% would be 2.8 sigma, once in 200).
check "leaky at 512 KiB: leak_a in use $(mib "$a") of 64 MiB ($(dev "$a" 67108000), bound 35% = 4 sigma)" \
    within "$a" 67108000 35
diag "leaky at 512 KiB: leak_b $(mib "$(row "$t" leak_b flat)") of 16 MiB (30 samples expected: 17% sigma, not asserted)"

# --- 5. python3.11 --------------------------------------------------------
if [ -n "$PYPID" ]; then
	wait "$PYPID"
	rc=$?
	ppid_=$(awk '$1 == "parent" { print $2 }' "$T_TMP/py.out")
	cpid=$(awk '$1 == "child" { print $2 }' "$T_TMP/py.out")
	is "$rc/$(awk '$1 == "parent" { print $3, $4 }' "$T_TMP/py.out")" "0/50000 50000000" \
	    "python3.11 keeping 50,000 str: exit 0"
	# Truth: 50,000 x 1,049 bytes = 52,450,000 (parent), and the fork
	# child 20,000 more (20,980,000). At 64k a 1,049-byte block is
	# sampled with p = 0.0159: the parent's estimate has a relative
	# standard deviation of sqrt((1-p)/(N p)) = 3.5%; 4 sigma: 14%.
	ID=$(newest_after heap-python "heap=inuse,pid=$ppid_" \
	    "$(awk '$1 == "parent" { print $5 }' "$T_TMP/py.out")")
	t=$(top "ids=$ID" inuse_space)
	tot=$(total "$t")
	c=$(row "$t" PyUnicode_Concat flat)
	check "python3.11: in use $(mb "$tot") in the newest profile, within [40 MB, 120 MB]" \
	    awk -v t="$tot" 'BEGIN { exit !(t >= 40e6 && t <= 120e6) }'
	check "python3.11: PyUnicode_Concat (PyUnicode_New inlined) owns most of it ($(pct "$c" "$tot"))" \
	    awk -v c="$c" -v t="$tot" 'BEGIN { exit !(c >= 0.8 * t) }'
	check "python3.11: PyUnicode_Concat's $(mb "$c") of 52.45 MB kept ($(dev "$c" 52450000), 4 sigma: 14%)" \
	    within "$c" 52450000 14
	CID=$(newest_after heap-python "heap=inuse,pid=$cpid" \
	    "$(awk '$1 == "child" { print $3 }' "$T_TMP/py.out")")
	check "python3.11: the fork child's profiles carry its own pid ($cpid, parent $ppid_)" \
	    test -n "$CID" -a -n "$cpid" -a "$cpid" != "$ppid_"
	cc=$(row "$(top "ids=$CID" inuse_space)" PyUnicode_Concat flat)
	# The child's tables start as the parent's (the same sampled blocks,
	# the same estimate), so the difference is only the child's 20,000
	# strings: 315 samples expected, 5.6% sigma; 4 sigma: 23%.
	check "python3.11: the child keeps $(mb "$(( cc - c ))") more than the parent, of 20.98 MB ($(dev "$(( cc - c ))" 20980000), 4 sigma: 23%)" \
	    within "$(( cc - c ))" 20980000 23
	if ! within "$(( cc - c ))" 20980000 23; then
		diag "py.out: $(tr '\n' ' ' <"$T_TMP/py.out")"
		list heap-python "pid=$cpid" | jq -r '.[] | [.id, .created_at, .duration_ns, (.labels[] | select(.key == "heap") | .value)] | @tsv' |
		    while read -r id at dur h; do
			diag "child $h profile $id at $at for $dur ns: in use $(total "$(top "ids=$id" inuse_space)")"
		    done
		sed 's/^/# /' "$T_TMP/py.err"
	fi
fi

# --- 6. window seams and output files -----------------------------------
if [ -n "$PYPID" ]; then
	wait "$SEAMS"
	is "$?" 0 "python3.11 allocating for 3.5 s: exit 0"
	# Window k's allocs profile is its heap profile's cumulative counts at
	# its end less those at its start; consecutive windows meet, so the
	# allocs of windows 2..N add up to heap(N) - heap(1): the same samples,
	# only each bucket's rounding to whole bytes differs (under 1 byte a
	# bucket a window, against gigabytes here), so the bound is 0.01%.
	# Allocations made between one window's last snapshot and the next
	# window's first would be in no allocs profile.
	inuse=$(list heap-seams heap=inuse | jq -c 'sort_by(.created_at)')
	allocs=$(list heap-seams heap=allocs | jq -c 'sort_by(.created_at)')
	n=$(jq length <<<"$inuse")
	if [ "$n" -ge 3 ]; then
		f=$(jq -r '.[0].id' <<<"$inuse")
		l=$(jq -r '.[-1].id' <<<"$inuse")
		first=$(jq -r '.[0].created_at' <<<"$inuse")
		ids=$(jq -r --arg f "$first" '[.[] | select(.created_at > $f) | .id] | join("+")' <<<"$allocs")
		h1=$(total "$(top "ids=$f" alloc_space)")
		hn=$(total "$(top "ids=$l" alloc_space)")
		sum=$(total "$(top "ids=$ids" alloc_space)")
		check "window seams: allocs of windows 2..$n $(mib "$sum") = heap($n) - heap(1) $(mib "$(( hn - h1 ))") ($(dev "$sum" "$(( hn - h1 ))"); lost between windows)" \
		    within "$sum" "$(( hn - h1 ))" 0.01
	else
		not_ok "window seams: at least 3 windows of python3.11 allocating for 3.5 s ($n)"
	fi
	wait "$FILES"
	w=$(grep -c 'allocs profile' "$T_TMP/files.err")
	h=$(grep -c 'heap profile' "$T_TMP/files.err")
	fa=$(ls "$T_TMP/files" | grep -c -- '-allocs-')
	fh=$(ls "$T_TMP/files" | grep -c -- '-heap-')
	check "PROFD_OUTPUT_DIR: one file per profile written (allocs: $fa files of $w profiles, heap: $fh of $h)" \
	    test "$w" -ge 3 -a "$fa" -eq "$w" -a "$fh" -eq "$h"
	ls "$T_TMP/files" | sed 's/^/# /'
fi

# --- 5. sqlite3 -----------------------------------------------------------
if command -v sqlite3 >/dev/null; then
	cat >"$T_TMP/rows.sql" <<'EOF'
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v INTEGER);
CREATE INDEX t_name ON t(name);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 200000)
INSERT INTO t SELECT i, printf('name-%08d', (i * 7919) % 200000), i * 3 FROM c;
SELECT count(*), count(DISTINCT name), sum(v) FROM t;
SELECT name FROM t ORDER BY name LIMIT 2;
EOF
	sqlite3 :memory: <"$T_TMP/rows.sql" >"$T_TMP/sq.plain" 2>&1
	timeout -k 5 120 env LD_PRELOAD="$HEAP" PROFD_SERVICE=heap-sqlite "${COMMON[@]}" PROFD_WINDOW=1 \
	    PROFD_PERIOD=1 PROFD_HEAP_RATE=64k \
	    sqlite3 :memory: <"$T_TMP/rows.sql" >"$T_TMP/sq.agent" 2>&1
	is "$?" 0 "sqlite3 inserting 200,000 indexed rows under libprofd-heap: exit 0"
	check "sqlite3: the same output as without the agent ($(head -n 1 "$T_TMP/sq.agent"))" \
	    cmp -s "$T_TMP/sq.plain" "$T_TMP/sq.agent"
	t=$(top "service=heap-sqlite&type=heap&labels=heap=allocs&from=$T0" alloc_space)
	tot=$(total "$t")
	st=$(row "$t" sqlite3_step cum)
	ve=$(row "$t" sqlite3VdbeExec cum)
	check "sqlite3: allocs profile: sqlite3_step's cum $(mib "$st") and sqlite3VdbeExec's $(mib "$ve") of $(mib "$tot") (stacks reach the API)" \
	    awk -v s="$st" -v v="$ve" -v t="$tot" 'BEGIN { exit !(t > 0 && s >= 0.5 * t && v >= 0.5 * t) }'
	check "sqlite3: sqlite3Malloc on the stacks ($(mib "$(row "$t" sqlite3Malloc cum)"))" \
	    test "$(row "$t" sqlite3Malloc cum)" -gt 0
else
	diag "sqlite3 not installed: skipped"
fi

# --- 5. clang++ -----------------------------------------------------------
if command -v clang++ >/dev/null; then
	cat >"$T_TMP/small.cpp" <<'EOF'
#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>
template <int N> struct fib { static constexpr long v = fib<N - 1>::v + fib<N - 2>::v; };
template <> struct fib<1> { static constexpr long v = 1; };
template <> struct fib<0> { static constexpr long v = 0; };
std::string render(const std::map<std::string, std::vector<int>> &m) {
	std::ostringstream o;
	for (const auto &[k, v] : m) {
		o << k << ':';
		for (int x : v)
			o << ' ' << x;
		o << '\n';
	}
	return o.str() + std::to_string(fib<60>::v);
}
int sorted_sum(std::vector<int> v) {
	std::sort(v.begin(), v.end());
	int s = 0;
	for (int x : v)
		s += x;
	return s;
}
EOF
	clang++ -std=c++17 -O2 -c "$T_TMP/small.cpp" -o "$T_TMP/plain.o" 2>"$T_TMP/clang.err"
	# clang runs its -cc1 in the same process: one process, and its last
	# window (the only one, the compile takes about 0.6 s) is sent at exit.
	timeout -k 5 120 env LD_PRELOAD="$HEAP" PROFD_SERVICE=heap-clang "${COMMON[@]}" PROFD_WINDOW=1 \
	    PROFD_PERIOD=1 PROFD_HEAP_RATE=64k \
	    clang++ -std=c++17 -O2 -c "$T_TMP/small.cpp" -o "$T_TMP/agent.o" 2>>"$T_TMP/clang.err"
	is "$?" 0 "clang++ -O2 -c under libprofd-heap: exit 0"
	check "clang++: the object file is byte-identical to one compiled without the agent" \
	    cmp -s "$T_TMP/plain.o" "$T_TMP/agent.o"
	ID=$(newest heap-clang heap=allocs)
	fetch "/api/0/profiles/$ID" "$T_TMP/clang.pb.gz"
	is "$HTTP_CODE" 200 "clang++: an allocs profile was uploaded"
	s=$(python3 "$S/test/lib/pprof_stacks.py" "$T_TMP/clang.pb.gz")
	lm=$(jq -r '[.leaf_maps | to_entries[] | select(.key | test("^lib(LLVM|clang-cpp)")) | .value] | add // 0' <<<"$s")
	check "clang++: $(pct "$lm" 1) of the sampled allocations have their leaf in libLLVM or libclang-cpp" \
	    awk -v l="$lm" 'BEGIN { exit !(l >= 0.9) }'
	top_cxx=$(pprof -sample_index=alloc_space -top "$T_TMP/clang.pb.gz" | grep -cE ' (llvm|clang)::')
	check "clang++: C++ function names (llvm::, clang::) in the profile ($top_cxx)" test "$top_cxx" -ge 10
	bad=$(frames "$T_TMP/clang.pb.gz" | grep -E "$OURS" | sort -u | tr '\n' ' ')
	is "$bad" "" "clang++: no operator new (_Znwm ...), malloc or profd frame in any stack"
else
	diag "clang++ not installed: skipped"
fi

# --- 5. the C++ program ---------------------------------------------------
if [ -n "$CXX_OK" ]; then
	timeout -k 5 120 env LD_PRELOAD="$HEAP" PROFD_SERVICE=heap-cxx1 "${COMMON[@]}" \
	    PROFD_WINDOW=1 PROFD_PERIOD=1 PROFD_HEAP_RATE=1 \
	    "$T_TMP/newdel" >"$T_TMP/newdel.out" 2>"$T_TMP/newdel.err"
	is "$?/$(cat "$T_TMP/newdel.out")" "0/newdel: ok" \
	    "C++ new/delete in every form (aligned, nothrow, sized, arrays, bad_alloc, new handler) at rate 1: exit 0"
	sed 's/^/# /' "$T_TMP/newdel.err" | head -n 10
	ID=$(newest heap-cxx1 heap=inuse)
	t=$(top "ids=$ID" inuse_space)
	# (8 news a round, 20,000 rounds; heapapi's count above is the exact
	# one: here 1 round in 5,000 allocates 1 byte, the rest 16 or more)
	n=$(row "$(top "ids=$ID" alloc_objects)" every_form flat)
	check "C++ at rate 1: every_form's 160,000 news sampled ($n) and owned by every_form" \
	    within "$n" 160000 0.1
	is "$(row "$t" every_form flat)" 0 "C++ at rate 1: every delete found its block (every_form's in-use: 0)"
	timeout -k 5 120 env LD_PRELOAD="$HEAP" PROFD_SERVICE=heap-cxx "${COMMON[@]}" \
	    PROFD_WINDOW=1 PROFD_PERIOD=1 PROFD_HEAP_RATE=16k \
	    "$T_TMP/newdel" measure >"$T_TMP/newdel.out" 2>"$T_TMP/newdel.err"
	is "$?/$(cat "$T_TMP/newdel.out")" "0/newdel: kept" "C++ keeping 32 MiB at 16k: exit 0"
	ID=$(newest heap-cxx heap=inuse)
	t=$(top "ids=$ID" inuse_space)
	k=$(row "$t" keep_objects flat)
	# 8,192 blocks of 4,096 bytes sampled with p = 1 - exp(-1/4) = 0.221:
	# sigma sqrt((1-p)/(N p)) = 2.1%; 10% is 4.8 sigma.
	check "C++: keep_objects' new char[4096] in use $(mib "$k") of 32 MiB ($(dev "$k" 33554432))" \
	    within "$k" 33554432 10
	is "$(row "$t" keep_objects cum)" "$k" "C++: keep_objects owns its blocks (no operator new under it)"
	r=$(row "$t" keep_realloced flat)
	# 32,768 blocks of 1,024 bytes (p = 0.0606 at 16k: sigma 2.2%; 10% is
	# 4.5 sigma). A realloc is a free and a new allocation: the new block
	# is sampled by the countdown like any other, whether or not the old
	# one was.
	check "C++: keep_realloced's blocks (4,096 shrunk to 1,024 by realloc) in use $(mib "$r") of 32 MiB ($(dev "$r" 33554432))" \
	    within "$r" 33554432 10
	fetch "/api/0/profiles/$ID" "$T_TMP/cxx.pb.gz"
	bad=$(frames "$T_TMP/cxx.pb.gz" | grep -E "$OURS" | sort -u | tr '\n' ' ')
	is "$bad" "" "C++: no operator new, malloc or profd frame in any stack"
fi

done_testing
