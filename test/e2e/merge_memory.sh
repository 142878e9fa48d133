#!/usr/bin/env bash
# --merge-memory (issue #11, "tiny upload, gigabyte merge"): a 145 KB
# upload of 20M one-value samples (test/fuzz/gen_sample_bomb.py; 100 MB
# inflated) took 2.76 GB to merge and, under `ulimit -v 2000000`, aborted
# the daemon. Now a merge reads its inputs in place (memory follows the
# distinct stacks, not the samples) and draws every byte from the budget:
#  - under the address-space limit, with --merge-memory 64M, merging two
#    such bombs answers 413 naming the limit, and the daemon keeps serving;
#  - with --merge-memory 160M the same merge answers 200, the right sum,
#    and the daemon's peak RSS (VmHWM) stays within the budget plus a
#    fixed 32 MiB (plain builds; sanitizers' shadow memory inflates RSS);
#  - two such merges at once: a merge crowded out by the other gets 503
#    with Retry-After, never a crash.
. "${top_srcdir:-.}/test/lib/e2e.sh"
command -v python3 >/dev/null || skip_all "needs python3"
command -v jq >/dev/null || skip_all "jq not installed"
GEN=${top_srcdir:-.}/test/fuzz/gen_sample_bomb.py
MiB=$((1024 * 1024))
sanitized=0
if nm -an "$PROFD" 2>/dev/null | grep -qE '__(asan|tsan)_init' ||
    ldd "$PROFD" 2>/dev/null | grep -qE 'lib(asan|tsan)'; then
	sanitized=1
fi
hwm_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$PROFD_PID/status"; }

python3 "$GEN" 20000000 > "$T_TMP/bomb.pb.gz" ||
    { not_ok "gen_sample_bomb.py writes the bomb"; done_testing; }
ok "the bomb: 20M samples in $(wc -c < "$T_TMP/bomb.pb.gz") bytes"

# Store it twice (the upload check walks it without decoding it).
profd_start --max-samples 100000000 || { not_ok "profd starts"; done_testing; }
ids=()
for i in 1 2; do
	upload "$T_TMP/bomb.pb.gz" "service=bomb&type=cpu" > /dev/null
	ids+=("$(echo "$BODY" | jq -r .body.id)")
done
is "$HTTP_CODE ${#ids[@]}" "200 2" "stored twice with --max-samples 100000000"
profd_stop
M="/api/0/profiles/${ids[0]}+${ids[1]}"

# Over the budget, under the address-space limit of the issue.
real=$PROFD
if [ "$sanitized" = 0 ]; then
	PROFD=$T_TMP/profd-ulimit
	printf '#!/bin/sh\nulimit -v 2000000 || exit 99\nexec "%s" "$@"\n' \
	    "$real" > "$PROFD"
	chmod +x "$PROFD"
fi
profd_start --merge-memory 64M --workers 2 ||
    { not_ok "profd starts with --merge-memory 64M"; done_testing; }
api "$M" > /dev/null
is "$HTTP_CODE" 413 "merging the two bombs in 64M: 413"
is "$(echo "$BODY" | jq -r .error)" "merge needs more memory than \
--merge-memory (64 MiB) allows; merge fewer or smaller profiles" \
    "... naming the limit"
check "the daemon is alive" kill -0 "$PROFD_PID"
is "$(curl -s -o /dev/null -w '%{http_code}' "$PROFD_URL/healthz")" 200 \
    "... and healthy"
for f in "$PROFD_CORPUS"/go/cpuburn/cpu_A_0[12].pb.gz; do
	upload "$f" "service=real&type=cpu" > /dev/null
done
is "$HTTP_CODE" 200 "... and takes uploads"
code=$(curl -s -o "$T_TMP/real.pb.gz" -w '%{http_code}' \
    "$PROFD_URL/api/0/profiles/merge?service=real&type=cpu&from=2000-01-01T00:00:00")
is "$code" 200 "... and merges what fits"
[ "$sanitized" = 0 ] &&
    ok "peak RSS with the 413: $(($(hwm_kb) / 1024)) MiB under ulimit -v 2000000"
profd_stop
PROFD=$real

# Within the budget: the merge's memory is its inputs', not its samples'.
profd_start --merge-memory 160M --workers 2 ||
    { not_ok "profd starts with --merge-memory 160M"; done_testing; }
t0=$(date +%s%N)
code=$(curl -s -o "$T_TMP/m.pb.gz" -w '%{http_code}' "$PROFD_URL$M")
ms=$((($(date +%s%N) - t0) / 1000000))
is "$code" 200 "merging the two bombs in 160M: 200 ($ms ms)"
sum=$(python3 - "$T_TMP/m.pb.gz" <<'PY'
import gzip, sys
b = gzip.decompress(open(sys.argv[1], "rb").read())
def varint(i):
    v = s = 0
    while True:
        c = b[i]; i += 1; v |= (c & 0x7f) << s; s += 7
        if c < 0x80:
            return v, i
# the one Sample (field 2) holds one packed value (field 2)
i = 0
while i < len(b):
    k, i = varint(i)
    if k & 7 == 0:
        _, i = varint(i)
        continue
    n, i = varint(i)
    if k >> 3 == 2:
        j, end = i, i + n
        while j < end:
            kk, j = varint(j)
            nn, j = varint(j)
            if kk >> 3 == 2:
                print(varint(j)[0])
            j += nn
    i += n
PY
)
is "$sum" 40000000 "... one sample worth 40000000"
if [ "$sanitized" = 0 ]; then
	hwm=$(hwm_kb)
	bound=$((160 * 1024 + 32 * 1024))
	[ "$hwm" -lt "$bound" ] &&
	    ok "peak RSS $((hwm / 1024)) MiB < --merge-memory 160 MiB + 32 MiB" ||
	    not_ok "peak RSS $((hwm / 1024)) MiB < --merge-memory 160 MiB + 32 MiB"
fi

# Two at once: each fits alone, not both.
pids=()
for i in 1 2; do
	curl -s -D "$T_TMP/h$i" -o "$T_TMP/b$i" -w '%{http_code}' \
	    "$PROFD_URL$M" > "$T_TMP/c$i" &
	pids+=($!)
done
wait "${pids[@]}"
codes="$(cat "$T_TMP/c1") $(cat "$T_TMP/c2")"
case $codes in
"200 200") ok "two at once: both 200 (they did not overlap)" ;;
"200 503"|"503 200")
	ok "two at once: one crowded out ($codes)"
	k=1; [ "$(cat "$T_TMP/c1")" = 503 ] || k=2
	check "... with Retry-After" grep -qi '^Retry-After:' "$T_TMP/h$k"
	check "... saying why: $(cat "$T_TMP/b$k")" \
	    grep -q 'other merges hold the memory budget' "$T_TMP/b$k" ;;
*) not_ok "two at once: $codes" ;;
esac
check "the daemon is alive" kill -0 "$PROFD_PID"
is "$(grep -c 'still charged' "$PROFD_LOG")" 0 \
    "no merge left bytes charged to the budget"
done_testing
