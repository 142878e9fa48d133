#!/bin/bash
# merge_api.sh: merges through the real daemon's HTTP API against
# `go tool pprof -proto` of the same files.
#
# For every kind of corpus profile (Go cpu, heap, allocs stored as heap,
# block, mutex, goroutine, threadcreate from a couple of programs; node
# wall as "other" and heap; gperftools cpu), uploads the files with labels,
# downloads GET /api/0/profiles/merge?service&type&labels&from&to and checks
# that `go tool pprof -top` of it lists the same functions with the same
# flat and cum values as pprof's own merge, for every sample index, and the
# same total as pprof -top of the inputs; and that the {id1}+{id2}+... form
# gives the same rows. Then: go tool pprof fetching the merge URL itself,
# Content-Disposition, a merge of one profile, builds A+B merging location
# for location, every error status (400, 404, 413, 422), a window of
# mixed sample types (the others left out), and clients that
# hang up mid-merge (the daemon keeps serving and exits clean, which under
# ASan means no leak or memory error).

. "${top_srcdir:-.}/test/lib/e2e.sh"

MF=${top_builddir:-.}/test/lib/merge_files
C=$PROFD_CORPUS
G=$C/go
command -v go >/dev/null 2>&1 || skip_all "go tool pprof not installed"
command -v jq >/dev/null 2>&1 || skip_all "jq not installed"
[ -d "$G" ] || skip_all "corpus not found at $C"
[ -x "$MF" ] || skip_all "merge_files not built"
# pprof saves what it fetches over HTTP under $PPROF_TMPDIR (default ~/pprof)
export PPROF_TMPDIR=$T_TMP/pprof
mkdir -p "$PPROF_TMPDIR"

# The corpus was recorded 2026-11-22 between 00:11 and 00:30 UTC.
W='from=2026-11-22T00:00:00&to=2026-11-22T00:59:59'
# gperftools' profile has time_nanos 0: created_at puts it in the window.
GPERF_AT=2026-11-22T00:30:00

. "${top_srcdir:-.}/test/e2e/pprof_read.sh"

# nlocs FILE: number of locations in a profile.
nlocs() {
	gopprof -raw "$1" 2>/dev/null | awk '/^Locations/ { on = 1; next }
	    /^Mappings/ { on = 0 } on && /^ +[0-9]+: /' | wc -l
}


# get PATH OUT: downloads PATH into OUT; sets HTTP_CODE, headers in $T_TMP/hdr.
get() {
	HTTP_CODE=$(curl -s -D "$T_TMP/hdr" -o "$2" -w '%{http_code}' \
	    "$PROFD_URL$1")
}

# put FILE SERVICE TYPE LABELS [QUERY]: uploads; the id lands in $ID.
ID=
put() {
	upload_all "service=$2&type=$3&labels=$4${5:+&$5}" "$1" || return 1
	ID=${UPLOAD_IDS[0]}
}

# same_rows NAME A B N: A and B give the same pprof -top for indexes 0..N-1.
same_rows() {
	local i
	for ((i = 0; i < $4; i++)); do
		cmp -s <(top "$i" "$2") <(top "$i" "$3") || return 1
	done
}

profd_start --workers 2 || { not_ok "profd starts"; done_testing; }
ok "profd starts"

# compare NAME TYPE FILE...: uploads FILEs as service "m", type TYPE, labels
# set=NAME,part=in, merges them through both API forms and checks them
# against pprof, one test per sample index plus one for the id form.
NSETS=0
compare() {
	local name=$1 type=$2; shift 2
	local set=s$NSETS ours=$T_TMP/ours.pb.gz
	local byid=$T_TMP/byid.pb.gz ids= f i n extra=
	NSETS=$((NSETS + 1))
	[ "$type" = gpercpu ] && { type=cpu; extra="created_at=$GPERF_AT"; }
	upload_all "service=m&type=$type&labels=set=$set,part=in${extra:+&$extra}" "$@" ||
	    { not_ok "$name: upload"; return; }
	for ID in "${UPLOAD_IDS[@]}"; do ids=$ids${ids:++}$ID; done
	# decoys that the query must leave out: same set, another label
	put "$G/cpuburn/goroutine_A_01.pb.gz" m "$type" "set=$set,part=out" ||
	    { not_ok "$name: decoy upload"; return; }
	get "/api/0/profiles/merge?service=m&type=$type&labels=set=$set,part=in&$W" "$ours"
	if [ "$HTTP_CODE" != 200 ]; then
		not_ok "$name: merge by query: HTTP $HTTP_CODE $(head -c 300 "$ours")"
		return
	fi
	compare_merged "$name (type=$type)" "$ours" "$@"
	n=$CMP_N
	[ "$n" -gt 0 ] || return
	get "/api/0/profiles/$ids" "$byid"
	for ((i = 0; i < n; i++)); do
		top "$i" "$byid" | cmp -s - "$T_TMP/top.ours.$i" || break
	done
	if [ "$HTTP_CODE" != 200 ]; then
		not_ok "$name: {id1}+{id2}+... form: HTTP $HTTP_CODE"
	elif [ "$i" = "$n" ]; then
		ok "$name: {id1}+...+{id$#} form gives the same rows"
	else
		not_ok "$name: {id1}+...+{id$#} form differs from the query form"
	fi
}

compare "cpuburn cpu A+B" cpu $G/cpuburn/cpu_[AB]_0*.pb.gz
compare "allocheavy cpu" cpu $G/allocheavy/cpu_[AB]_0[1-3].pb.gz
compare "bigstacks cpu" cpu $G/bigstacks/cpu_A_01.pb.gz $G/bigstacks/cpu_B_01.pb.gz
compare "cpuburn heap" heap $G/cpuburn/heap_[AB]_0[1-4].pb.gz
compare "allocheavy heap" heap $G/allocheavy/heap_[AB]_0*.pb.gz
compare "allocheavy allocs" heap $G/allocheavy/allocs_[AB]_0*.pb.gz
compare "goroutines allocs" heap $G/goroutines/allocs_[AB]_0[1-3].pb.gz
compare "contention block" block $G/contention/block_[AB]_0*.pb.gz
compare "allocheavy block" block $G/allocheavy/block_[AB]_0*.pb.gz
compare "contention mutex" mutex $G/contention/mutex_[AB]_0*.pb.gz
compare "goroutines mutex" mutex $G/goroutines/mutex_[AB]_0*.pb.gz
compare "goroutines goroutine" goroutine $G/goroutines/goroutine_[AB]_0*.pb.gz
compare "contention goroutine" goroutine $G/contention/goroutine_[AB]_0[1-3].pb.gz
compare "threadcreate, all programs" threadcreate $G/*/threadcreate_[AB]_0[12].pb.gz
compare "node datadog wall" other $C/node/datadog/wall_*.pb.gz
compare "node google wall" other $C/node/google/wall_*.pb.gz
compare "node datadog heap" heap $C/node/datadog/heap_*.pb.gz
compare "node google heap" heap $C/node/google/heap_*.pb.gz
compare "gperftools cpu x3" gpercpu $C/gperftools/cworker.cpu.pb.gz \
    $C/gperftools/cworker.cpu.pb.gz $C/gperftools/cworker.cpu.pb.gz

# --- the time window: a copy retimed a day later is left out ---------------
A1=$G/cpuburn/cpu_A_01.pb.gz
A2=$G/cpuburn/cpu_A_02.pb.gz
mkdir -p "$T_TMP/late"
"$MF" -R 1795400000000000000,1,1 "$T_TMP/late" "$A2" >/dev/null
put "$A1" w cpu "set=win"; put "$T_TMP/late/00000.pb.gz" w cpu "set=win"
get "/api/0/profiles/merge?service=w&type=cpu&labels=set=win&$W" "$T_TMP/win.pb.gz"
if [ "$HTTP_CODE" = 200 ] && same_rows win "$T_TMP/win.pb.gz" "$A1" 2; then
	ok "from/to: only the profile inside the window is merged"
else
	not_ok "from/to: only the profile inside the window is merged ($HTTP_CODE)"
fi
get "/api/0/profiles/merge?service=w&type=cpu&labels=set=win&from=2026-11-22T00:00:00&to=2026-11-24T00:00:00" "$T_TMP/win2.pb.gz"
gopprof -proto "$A1" "$A2" >"$T_TMP/win2-pprof.pb.gz" 2>/dev/null
if [ "$HTTP_CODE" = 200 ] &&
    same_rows win "$T_TMP/win2.pb.gz" "$T_TMP/win2-pprof.pb.gz" 2; then
	ok "from/to: a wider window merges both"
else
	not_ok "from/to: a wider window merges both ($HTTP_CODE)"
fi

# --- one profile merged is the profile ------------------------------------
H=$G/allocheavy/heap_A_05.pb.gz
put "$H" one heap "set=one"
get "/api/0/profiles/merge?service=one&type=heap&$W" "$T_TMP/one.pb.gz"
bad=0
for i in 0 1 2 3; do
	cmp -s <(top "$i" "$T_TMP/one.pb.gz") <(top "$i" "$H") || bad=$((bad + 1))
done
is "$HTTP_CODE/$bad" 200/0 "a merge of one profile equals it (4 indexes, totals too)"

# --- Content-Disposition and go tool pprof on the URL ---------------------
URL="/api/0/profiles/merge?service=m&type=cpu&labels=set=s0,part=in&$W"
get "$URL" "$T_TMP/cd.pb.gz"
cd=$(tr -d '\r' <"$T_TMP/hdr" | sed -n 's/^[Cc]ontent-[Dd]isposition: //p')
is "$cd" 'attachment; filename="m-cpu.pb.gz"' "Content-Disposition names SERVICE-TYPE.pb.gz"
out=$(gopprof -top "$PROFD_URL$URL" 2>&1); rc=$?
if [ "$rc" = 0 ] && printf '%s\n' "$out" | grep -q 'main\.' &&
    printf '%s\n' "$out" | grep -q '^Type: cpu'; then
	ok "go tool pprof -top on the merge URL (labels percent-encoded by pprof) works"
else
	not_ok "go tool pprof -top on the merge URL: exit $rc"
	printf '%s\n' "$out" | head -5 | sed 's/^/# /'
fi

# --- builds A and B merge location for location ---------------------------
B1=$G/cpuburn/cpu_B_01.pb.gz
put "$A1" ab cpu "set=ab"; ida=$ID
put "$B1" ab cpu "set=ab"; idb=$ID
get "/api/0/profiles/$ida+$idb" "$T_TMP/ab.pb.gz"
ab=$(nlocs "$T_TMP/ab.pb.gz")
gopprof -proto "$A1" "$B1" >"$T_TMP/ab-pprof.pb.gz" 2>/dev/null
theirs=$(nlocs "$T_TMP/ab-pprof.pb.gz")
check "A+B through the API: $ab locations, fewer than pprof's $theirs" \
    test "$HTTP_CODE" = 200 -a "$ab" -gt 0 -a "$ab" -lt "$theirs"
is "$ab" "$(keys "$A1" "$B1")" "A+B through the API: one location per distinct symbolized key"

# --- errors ----------------------------------------------------------------
api "/api/0/profiles/$ida+00000000000000000000+$idb" >/dev/null
is "$HTTP_CODE" 404 "unknown id in a + list: 404"
check "... naming it: $BODY" grep -q '00000000000000000000' <<<"$BODY"
api "/api/0/profiles/$ida+not-an-id" >/dev/null
is "$HTTP_CODE" 400 "malformed id in a + list: 400"
check "... naming it: $BODY" grep -q 'not-an-id' <<<"$BODY"
api "/api/0/profiles/merge?service=m&type=cpu&labels=set=nosuchset&$W" >/dev/null
is "$HTTP_CODE" 404 "nothing matched: 404 ($BODY)"
api "/api/0/profiles/merge?service=nosuchservice&type=cpu&$W" >/dev/null
is "$HTTP_CODE" 404 "unknown service: 404 ($BODY)"
api "/api/0/profiles/merge?service=m&$W" >/dev/null
is "$HTTP_CODE" 400 "type missing: 400"
check "... naming it: $BODY" grep -q 'type' <<<"$BODY"
api "/api/0/profiles/merge?service=m&type=trace&$W" >/dev/null
is "$HTTP_CODE" 400 "type=trace: 400 ($BODY)"
api "/api/0/profiles/merge?type=cpu&$W" >/dev/null
is "$HTTP_CODE" 400 "service missing: 400 ($BODY)"
api "/api/0/profiles/merge?service=m&type=cpu&from=yesterday" >/dev/null
is "$HTTP_CODE" 400 "bad from: 400 ($BODY)"
put "$C/node/google/heap_01.pb.gz" X heap "set=mix"; idg=$ID
put "$C/node/datadog/heap_01.pb.gz" X heap "set=mix"; idd=$ID
# A window merge keeps the most common sample types and leaves out the
# others; an id list of different sample types is refused.
get "/api/0/profiles/merge?service=X&type=heap&$W" "$T_TMP/mix.pb.gz"
is "$HTTP_CODE" 200 "different sample types in a window: 200"
check "... leaving one out (X-Profd-Merge-Mismatched: 1)" \
    grep -qi '^X-Profd-Merge-Mismatched: 1' "$T_TMP/hdr"
api "/api/0/profiles/$idg+$idd" >/dev/null
is "$HTTP_CODE" 422 "different sample types by ids: 422"
check "... naming both: $BODY" grep -Eq '(objects/count,space/bytes.*inuse_objects/count,inuse_space/bytes|inuse_objects/count,inuse_space/bytes.*objects/count,space/bytes)' <<<"$BODY"
api "/api/0/profiles/$ida+$idd" >/dev/null
is "$HTTP_CODE" 422 "different sample types by ids (cpu + heap): 422 ($BODY)"

# --- clients that hang up mid-merge ---------------------------------------
upload_all "service=big&type=heap&labels=set=big" $G/bigstacks/heap_[AB]_01.pb.gz $G/bigstacks/allocs_[AB]_01.pb.gz
BIG="/api/0/profiles/merge?service=big&type=heap&$W"
t0=$(date +%s%N)
get "$BIG" "$T_TMP/big.pb.gz"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
is "$HTTP_CODE" 200 "merge of 4 bigstacks heap profiles (${ms} ms)"
for i in 1 2 3 4 5 6; do
	curl -s -o /dev/null --max-time 0.0$((i + 2)) "$PROFD_URL$BIG"
done
sleep 0.3
api /api/0/version >/dev/null
is "$HTTP_CODE" 200 "daemon still serving after 6 clients hung up mid-merge"
get "$BIG" "$T_TMP/big2.pb.gz"
if [ "$HTTP_CODE" = 200 ] &&
    cmp -s <(top 3 "$T_TMP/big.pb.gz") <(top 3 "$T_TMP/big2.pb.gz"); then
	ok "the same merge afterwards gives the same inuse_space rows"
else
	not_ok "the same merge afterwards gives the same inuse_space rows ($HTTP_CODE)"
fi
profd_stop

# --- --max-merge-profiles ---------------------------------------------------
PROFD_DIR=
profd_start --workers 2 --max-merge-profiles 5 ||
    { not_ok "second profd starts"; done_testing; }
ids=
upload_all "service=lim&type=cpu&labels=set=lim" $G/cpuburn/cpu_A_0[1-5].pb.gz $G/cpuburn/cpu_B_01.pb.gz
for ID in "${UPLOAD_IDS[@]}"; do ids=$ids${ids:++}$ID; done
api "/api/0/profiles/merge?service=lim&type=cpu&$W" >/dev/null
is "$HTTP_CODE" 200 "a window of 6 matches merges past --max-merge-profiles 5 (window merges are not capped by it)"
api "/api/0/profiles/merge?service=lim&type=cpu&limit=6&$W" >/dev/null
is "$HTTP_CODE" 413 "limit=6 (the newest 6, one by one) over --max-merge-profiles 5: 413"
check "... saying so: $BODY" grep -q 'max-merge-profiles' <<<"$BODY"
api "/api/0/profiles/$ids" >/dev/null
is "$HTTP_CODE" 413 "6 ids over --max-merge-profiles 5: 413 ($BODY)"
get "/api/0/profiles/merge?service=lim&type=cpu&limit=5&$W" "$T_TMP/lim.pb.gz"
is "$HTTP_CODE" 200 "limit=5 brings it under: 200"
newest=$(api "/api/0/profiles?service=lim&type=cpu&limit=5&$W" | jq -r '[.body[].id] | join("+")')
get "/api/0/profiles/$newest" "$T_TMP/lim5.pb.gz"
if [ "$HTTP_CODE" = 200 ] && same_rows lim "$T_TMP/lim.pb.gz" "$T_TMP/lim5.pb.gz" 2; then
	ok "limit=5 merges the 5 newest"
else
	not_ok "limit=5 merges the 5 newest ($HTTP_CODE)"
fi
profd_stop

# A window holding more than 100 times --max-merge-profiles inputs not
# rolled up yet (compaction off here) is refused, not listed.
PROFD_DIR=
profd_start --workers 2 --max-merge-profiles 1 --rollup-delay 0 ||
    { not_ok "third profd starts"; done_testing; }
caps=()
for i in $(seq 1 101); do caps+=("$G/cpuburn/cpu_A_01.pb.gz"); done
upload_all "service=cap&type=cpu" "${caps[@]}"
is "$(printf '%s\n' "${UPLOAD_CODES[@]}" | grep -c '^200$')" 101 "101 uploads"
api "/api/0/profiles/merge?service=cap&type=cpu&$W" >/dev/null
is "$HTTP_CODE" 413 "a window of 101 inputs over 100 x --max-merge-profiles 1: 413"
check "... saying so: $BODY" grep -q 'wait for compaction' <<<"$BODY"

profd_stop

done_testing
