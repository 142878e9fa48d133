#!/usr/bin/env bash
# Folded stacks on the profefe API: POST /api/0/profiles?format=folded
# (and format=lines) is converted to pprof at ingest, stored, listed with
# its sample types, downloaded as a pprof that `go tool pprof` reads with
# the same stacks and values, and merged; bad text gets a 400 naming the
# line and stores nothing; perf's own collapser's output (perf script report
# stackcollapse) of a test program and of Debian's xz is taken as it is.
. "${top_srcdir:-.}/test/lib/e2e.sh"
command -v go >/dev/null 2>&1 || skip_all "go tool pprof not installed"
command -v jq >/dev/null 2>&1 || skip_all "jq not installed"

W='from=2020-01-01T00:00:00&to=2100-01-01T00:00:00'
profd_start || { not_ok "profd starts"; done_testing; }
# postf FILE QUERY: uploads FILE; HTTP_CODE and BODY set.
postf() {
	BODY=$(curl -s -w '\n%{http_code}' --data-binary "@$1" "$PROFD_URL/api/0/profiles?$2")
	HTTP_CODE=$(tail -n 1 <<<"$BODY")
	BODY=$(sed '$d' <<<"$BODY")
}
# post TEXT QUERY: uploads TEXT (printf %b escapes).
post() {
	printf '%b' "$1" > "$T_TMP/in"
	postf "$T_TMP/in" "$2"
}

post 'main;work;hash 3\nmain;work 2\nmain;idle 5\nmain;work;hash 1\n' \
    'service=fold&type=cpu&format=folded&sample_rate=50&labels=host=a'
is "$HTTP_CODE" 200 "a folded cpu profile is taken"
id=$(jq -r .body.id <<<"$BODY")
is "$(jq -c .body.sample_types <<<"$BODY")" '["samples/count","cpu/nanoseconds"]' "... with counts and cpu time"
is "$(jq .body.samples <<<"$BODY")" 3 "... identical stacks summed (3 samples)"
curl -s -o "$T_TMP/one.pb.gz" "$PROFD_URL/api/0/profiles/$id"
gopprof -raw "$T_TMP/one.pb.gz" > "$T_TMP/raw" 2>/dev/null
check "go tool pprof reads the stored profile" grep -q '^Samples:' "$T_TMP/raw"
is "$(sed -n 's/^Period: //p' "$T_TMP/raw")" 20000000 "the period is 1 s / sample_rate (20 ms)"
is "$(gopprof -top -sample_index=cpu "$T_TMP/one.pb.gz" 2>/dev/null | sed -n 's/.*% of \([0-9a-z.]*\) total/\1/p')" 220ms \
    "11 samples at 20 ms: 220 ms"
top=$(gopprof -top -sample_index=samples "$T_TMP/one.pb.gz" 2>/dev/null)
check "hash has 4 samples of its own" grep -Eq '^ +4 .* hash$' <<<"$top"
check "work holds 6 in all" grep -Eq '^ +2 .* 6 .* work$' <<<"$top"

post 'a;b\na;b\na;c\n' 'service=fold&type=heap&format=lines'
is "$HTTP_CODE" 200 "format=lines is taken"
is "$(jq -c .body.sample_types <<<"$BODY")" '["samples/count"]' "... a heap profile keeps counts only"

n0=$(api "/api/0/profiles?service=fold&$W&limit=1000" | jq '.body | length')
post 'a;b 1\na;b 2\na;b\n' 'service=fold&type=cpu&format=folded'
is "$HTTP_CODE" 400 "a line without a count: 400"
check "... naming line 3 ($(jq -r .error <<<"$BODY"))" grep -q 'line 3' <<<"$(jq -r .error <<<"$BODY")"
post 'a;;b 1\n' 'service=fold&type=cpu&format=folded'
is "$HTTP_CODE/$(jq -r .error <<<"$BODY")" "400/invalid folded profile: line 1: an empty frame" "an empty frame: 400"
post 'a;\xff 1\n' 'service=fold&type=cpu&format=folded'
is "$HTTP_CODE" 400 "a frame that is not UTF-8: 400"
post 'a 1\n' 'service=fold&type=cpu&format=jfr'
is "$HTTP_CODE" 400 "format=jfr: 400"
post 'a 1\n' 'service=fold&type=cpu&format=folded&sample_rate=0'
is "$HTTP_CODE" 400 "sample_rate=0: 400"
post '\n\n' 'service=fold&type=cpu&format=folded'
is "$HTTP_CODE" 400 "no stacks: 400"
is "$(api "/api/0/profiles?service=fold&$W&limit=1000" | jq '.body | length')" "$n0" "the bad uploads stored nothing"

post 'main;work;hash 2\n' 'service=fold&type=cpu&format=folded&sample_rate=50&labels=host=b'
code=$(curl -s -o "$T_TMP/m.pb.gz" -w '%{http_code}' "$PROFD_URL/api/0/profiles/merge?service=fold&type=cpu&$W")
is "$code" 200 "the folded cpu profiles merge"
is "$(gopprof -top -sample_index=cpu "$T_TMP/m.pb.gz" 2>/dev/null | sed -n 's/.*% of \([0-9a-z.]*\) total/\1/p')" 260ms \
    "... 13 samples at 20 ms"
# Real collapsed stacks: perf's own collapser (perf script report
# stackcollapse, shipped with Debian's linux-perf) on a program with
# symbols and on Debian's xz (kernel frames, [unknown] frames).
if command -v perf >/dev/null 2>&1 && command -v cc >/dev/null 2>&1; then
	cat > "$T_TMP/burn.c" <<'C'
volatile unsigned long sink;
__attribute__((noinline)) void hash_block(unsigned n) { for (unsigned i = 0; i < n; i++) sink = sink * 31 + i; }
__attribute__((noinline)) void compress_block(unsigned n) { for (unsigned i = 0; i < n; i++) sink ^= sink << 3 | i; hash_block(n / 4); }
int main(void) { for (int r = 0; r < 1500; r++) { hash_block(300000); compress_block(100000); } return (int)(sink & 1); }
C
	# (hash_block runs 3.25 times the iterations of compress_block's own
	# loop: an iteration of either costs about the same, so which is
	# hottest does not hang on the machine's load or the CPU model)
	cc -O1 -g -fno-omit-frame-pointer -o "$T_TMP/burn" "$T_TMP/burn.c"
	# (xz takes some 0.6 s a MB of random bytes: 4 MB are over a
	# thousand samples at 499 Hz)
	head -c 4000000 /dev/urandom > "$T_TMP/rand"
	for prog in burn xz; do
		case $prog in
		burn) cmd=("$T_TMP/burn") ;;
		xz) cmd=(xz -T1 -6 -c "$T_TMP/rand") ;;
		esac
		if ! perf record -q -F 499 -g -o "$T_TMP/perf.data" -- "${cmd[@]}" > /dev/null 2>"$T_TMP/perf.err" ||
		    ! perf script report stackcollapse -i "$T_TMP/perf.data" > "$T_TMP/$prog.folded" 2>/dev/null ||
		    [ ! -s "$T_TMP/$prog.folded" ]; then
			ok "# SKIP perf cannot record here ($(head -c 100 "$T_TMP/perf.err"))"
			continue
		fi
		sum=$(awk '{ s += $NF } END { print s }' "$T_TMP/$prog.folded")
		postf "$T_TMP/$prog.folded" "service=perf&type=cpu&format=folded&sample_rate=499&labels=prog=$prog"
		is "$HTTP_CODE" 200 "perf's collapsed stacks of $prog are taken ($(wc -l < "$T_TMP/$prog.folded") lines, $sum samples)"
		is "$(jq .body.samples <<<"$BODY")" "$(wc -l < "$T_TMP/$prog.folded")" "... one sample a distinct stack"
		curl -s -o "$T_TMP/$prog.pb.gz" "$PROFD_URL/api/0/profiles/$(jq -r .body.id <<<"$BODY")"
		is "$(gopprof -raw "$T_TMP/$prog.pb.gz" 2>/dev/null | awk '/^Samples:/ { on = 1; getline; next } /^Locations/ { on = 0 } on && /:/ { s += $1 } END { print s }')" "$sum" "... the counts add up as in the text"
	done
	[ -s "$T_TMP/burn.pb.gz" ] && check "... hash_block is burn's hottest function" \
	    grep -q 'hash_block' <<<"$(gopprof -top -nodecount=1 -sample_index=samples "$T_TMP/burn.pb.gz" 2>/dev/null | tail -n 1)"
fi

# The conversion's memory is bounded: at most a million distinct frames,
# and its tables charged to --merge-memory (413 past either).
awk 'BEGIN { for (i = 0; i < 265000; i++) { s = "root"; for (j = 0; j < 10; j++) s = s ";fn_" i "_" j; print s, 1 } }' > "$T_TMP/big"
check "a 32 MB body of distinct frames ($(wc -c < "$T_TMP/big") bytes)" [ "$(wc -c < "$T_TMP/big")" -gt 30000000 ]
code=$(curl -s -o "$T_TMP/out" -w '%{http_code}' --data-binary "@$T_TMP/big" "$PROFD_URL/api/0/profiles?service=fold&type=cpu&format=folded")
is "$code" 413 "past a million distinct frames: 413"
check "... saying so ($(jq -r .error "$T_TMP/out"))" grep -q '1000000 distinct frames' "$T_TMP/out"
hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$PROFD_PID/status")
check "... the daemon's peak memory stays under 400 MB ($((hwm / 1024)) MB)" [ "$hwm" -lt 409600 ]
is "$(api "/api/0/profiles?service=fold&$W&limit=1000" | jq '.body | length')" "$((n0 + 1))" "... nothing stored"
profd_stop
profd_start --merge-memory 4M || { not_ok "profd restarts"; done_testing; }
head -n 20000 "$T_TMP/big" > "$T_TMP/mid"
code=$(curl -s -o "$T_TMP/out" -w '%{http_code}' --data-binary "@$T_TMP/mid" "$PROFD_URL/api/0/profiles?service=fold&type=cpu&format=folded")
is "$code" 413 "tables past --merge-memory (4M): 413"
check "... saying so ($(jq -r .error "$T_TMP/out"))" grep -q 'merge-memory' "$T_TMP/out"
head -n 200 "$T_TMP/big" > "$T_TMP/small"
code=$(curl -s -o "$T_TMP/out" -w '%{http_code}' --data-binary "@$T_TMP/small" "$PROFD_URL/api/0/profiles?service=fold&type=cpu&format=folded")
is "$code" 200 "a smaller one fits"
profd_stop
done_testing
