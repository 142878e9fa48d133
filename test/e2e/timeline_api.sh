#!/usr/bin/env bash
# GET /api/0/timeline against `go tool pprof` on the same stored corpus
# profiles: for every kind of corpus profile and every sample type, the
# timeline's total (and the sum of its points) is pprof's total of the
# files, over a long window (automatic step), one day in minutes and one
# in 7-second buckets; one and two label pairs; a window cut to the
# nanosecond between two profiles of the same minute; ids; the points'
# times. Then a store of the previous schema (no totals): the timeline is
# partial at start, the background backfill completes it. Bad parameters
# (400), an empty window (200, total 0) and auth.
. "${top_srcdir:-.}/test/lib/e2e.sh"
. "${top_srcdir:-.}/test/e2e/pprof_read.sh"

C=$PROFD_CORPUS
G=$C/go
command -v go >/dev/null 2>&1 || skip_all "go tool pprof not installed"
command -v jq >/dev/null 2>&1 || skip_all "jq not installed"
command -v sqlite3 >/dev/null 2>&1 || skip_all "sqlite3 not installed"
[ -d "$G" ] || skip_all "corpus not found at $C"

printf 'reader-0123456789 read\nwriter-0123456789 write\n' >"$T_TMP/tokens"
profd_start --auth-file "$T_TMP/tokens" || { not_ok "profd starts"; done_testing; }
R=(-H 'Authorization: Bearer reader-0123456789')
W=(-H 'Authorization: Bearer writer-0123456789')
WIN="from=2000-01-01T00:00:00&to=2100-01-01T00:00:00"

# put SERVICE TYPE LABELS FILE...: uploads the files.
put() {
	local svc=$1 type=$2 labels=$3 f bad=0
	shift 3
	for f in "$@"; do
		upload "$f" "service=$svc&type=$type&labels=$labels" "${W[@]}" \
		    >/dev/null
		[ "$HTTP_CODE" = 200 ] || bad=$((bad + 1))
	done
	is "$bad" 0 "$svc $type: $# uploads"
}

# ptotal INDEX FILE...: pprof's total of one sample index.
ptotal() {
	top "$@" | sed -n 's/^total \([0-9]*\).*/\1/p'
}

# tls QUERY...: the timeline's "total profiles sum-of-points" (or the
# code) of each QUERY, a line each (one curl, one jq: api_each); the
# replies stay in $T_TMP/each.N.
tls() {
	local code line
	while IFS=$'\t' read -r code line; do
		if [ "$code" = 200 ]; then
			echo "${line%%$'\037'*}"
		else
			echo "HTTP $code ${line#*$'\037'}"
		fi
	done < <(api_each '"\(.body.total) \(.body.profiles) \([(.body.points // [])[][1]] | add // 0)\u001f\(.error)"' \
	    "header = \"${R[1]}\"" /api/0/timeline? "$@")
}
# tl QUERY: tls of one QUERY; its reply in $T_TMP/tl.json.
tl() {
	tls "$1"
	mv -f "$T_TMP/each.0" "$T_TMP/tl.json"
}

# The three windows: long (automatic step), three days in minutes, a day
# in 9-second buckets.
WINDOWS=("$WIN" "from=2026-11-21T00:00:00Z&to=2026-11-24T00:00:00Z&step=60"
    "from=2026-11-22T00:00:00Z&to=2026-11-23T00:00:00Z&step=9")
# in_windows QUERY...: tls of each QUERY in each window, QUERY by QUERY.
in_windows() {
	local q w qs=()
	for q in "$@"; do
		for w in "${WINDOWS[@]}"; do qs+=("$q&$w"); done
	done
	tls "${qs[@]}"
}

# check_kind LABEL SERVICE TYPE FILE...: every sample type, three windows.
check_kind() {
	local label=$1 svc=$2 type=$3 i=0 name want q
	shift 3
	for name in $(names_of "$1"); do
		want=$(ptotal "$i" "$@")
		want="$want $# $want"
		mapfile -t got < <(in_windows "service=$svc&type=$type&sample_type=$name")
		for q in 0 1 2; do
			is "${got[q]}" "$want" "$label $name, ${WINDOWS[q]##*&}: total = pprof's, points sum to it"
		done
		i=$((i + 1))
	done
}

# The corpus was recorded on 2026-11-22; the day windows above rely on it.
is "$(awk -F'\t' 'NR > 1 && $1 ~ /^go\/cpuburn\/cpu_A/ { print int($17 / 86400e9); exit }' "$C/MANIFEST.tsv")" \
    20779 "corpus cpuburn profiles are of 2026-11-22"

# cpuburn: builds A and B, hosts h0 and h1 alternating.
A=($G/cpuburn/cpu_A_0*.pb.gz) B=($G/cpuburn/cpu_B_0*.pb.gz)
H0=() H1=() bad=0 k=0
for f in "${A[@]}" "${B[@]}"; do
	b=A
	case $f in *cpu_B_*) b=B ;; esac
	upload "$f" "service=cpuburn&type=cpu&labels=build=$b,host=h$((k % 2))" "${W[@]}" >/dev/null
	[ "$HTTP_CODE" = 200 ] || bad=$((bad + 1))
	if [ $((k % 2)) = 0 ]; then H0+=("$f"); else H1+=("$f"); fi
	k=$((k + 1))
done
is "$bad" 0 "cpuburn: $k uploads"
put allocheavy heap build=A $G/allocheavy/heap_A_0*.pb.gz
put allocs heap build=A $G/allocheavy/allocs_A_0*.pb.gz
put contention mutex build=A $G/contention/mutex_[AB]_0*.pb.gz
put goroutines goroutine build=A $G/goroutines/goroutine_[AB]_0*.pb.gz
put nodewall other build=A $C/node/datadog/wall_0*.pb.gz

check_kind "cpuburn cpu" cpuburn cpu "${A[@]}" "${B[@]}"
check_kind "allocheavy heap" allocheavy heap $G/allocheavy/heap_A_0*.pb.gz
check_kind "contention mutex" contention mutex $G/contention/mutex_[AB]_0*.pb.gz
check_kind "goroutines goroutine" goroutines goroutine $G/goroutines/goroutine_[AB]_0*.pb.gz
check_kind "node wall" nodewall other $C/node/datadog/wall_0*.pb.gz

# Default sample type: the newest profile's default, else its last.
tl "service=cpuburn&type=cpu&$WIN" >/dev/null
is "$(jq -r '.body.sample_type + " " + .body.unit' "$T_TMP/tl.json")" \
    "cpu nanoseconds" "default sample type of cpu: cpu nanoseconds"
tl "service=allocs&type=heap&$WIN" >/dev/null
is "$(jq -r .body.sample_type "$T_TMP/tl.json")" \
    "$(awk -F'\t' '$1 == "go/allocheavy/allocs_A_01.pb.gz" { print $11 }' "$C/MANIFEST.tsv")" \
    "allocs: the profile's default sample type (MANIFEST), as the flame graph"
api "/api/0/flamegraph?service=allocs&type=heap&$WIN&max_nodes=1" "${R[@]}" >/dev/null
is "$(jq -r .body.total "$T_TMP/tl.json")" "$(echo "$BODY" | jq -r .body.total)" \
    "allocs: timeline total = flame graph total (default sample type)"

# Label pairs: one (minute rows) and two (profile rows), three windows.
both=()
for f in "${H0[@]}"; do case $f in *cpu_A_*) both+=("$f") ;; esac; done
tb=$(ptotal 1 "${B[@]}") th=$(ptotal 1 "${H1[@]}") tboth=$(ptotal 1 "${both[@]}")
mapfile -t got < <(in_windows "service=cpuburn&type=cpu&labels=build=B" \
    "service=cpuburn&type=cpu&labels=host=h1" "service=cpuburn&type=cpu&labels=build=A,host=h0")
for i in 0 1 2; do
	q=${WINDOWS[i]}
	is "${got[i]}" "$tb ${#B[@]} $tb" "labels build=B, ${q##*&}"
	is "${got[i + 3]}" "$th ${#H1[@]} $th" "labels host=h1, ${q##*&}"
	is "${got[i + 6]}" "$tboth ${#both[@]} $tboth" \
	    "labels build=A,host=h0 (${#both[@]} profiles), ${q##*&}"
done
is "$(tl "service=cpuburn&type=cpu&labels=host=nosuch&$WIN")" "0 0 0" \
    "a label pair never stored: total 0"

# A window cut to the nanosecond: the profiles of build A were recorded
# about a second apart, in one minute; from the 2nd oldest to the 2nd
# newest, inclusive, in minute steps (the partial minutes are read from
# the profile rows).
api "/api/0/profiles?service=cpuburn&type=cpu&$WIN&labels=build=A" "${R[@]}" >"$T_TMP/list.json"
mapfile -t times < <(jq -r '.body[].created_at' "$T_TMP/list.json" | LC_ALL=C sort)
mapfile -t inside < <(jq -r --arg a "${times[1]}" --arg b "${times[-2]}" \
    '.body[] | select(.created_at >= $a and .created_at <= $b) | .id' "$T_TMP/list.json")
diag "window ${times[1]} .. ${times[-2]}: ${#inside[@]} profiles"
sum=0
for id in "${inside[@]}"; do
	curl -s "${R[@]}" -o "$T_TMP/one.pb.gz" "$PROFD_URL/api/0/profiles/$id"
	v=$(ptotal 1 "$T_TMP/one.pb.gz")
	sum=$((sum + v))
done
for step in 60 1; do
	is "$(tl "service=cpuburn&type=cpu&labels=build=A&from=${times[1]}&to=${times[-2]}&step=$step")" \
	    "$sum ${#inside[@]} $sum" "window to the ns, step $step: the ${#inside[@]} profiles inside, no more"
done

# ids: the points of the profiles named, at their seconds.
id1=$(jq -r '.body[0].id' "$T_TMP/list.json")
id2=$(jq -r '.body[1].id' "$T_TMP/list.json")
curl -s "${R[@]}" -o "$T_TMP/two.pb.gz" "$PROFD_URL/api/0/profiles/$id1+$id2"
is "$(tl "ids=$id1+$id2&sample_type=samples")" \
    "$(ptotal 0 "$T_TMP/two.pb.gz") 2 $(ptotal 0 "$T_TMP/two.pb.gz")" "ids: two profiles' samples"
t1=$(jq -r '.body[0].created_at' "$T_TMP/list.json")
s1=$(date -u -d "$t1" +%s)
tl "ids=$id1&step=10" >/dev/null
is "$(jq -c '[.body.points[] | select(.[2] > 0) | .[0]]' "$T_TMP/tl.json")" \
    "[$((s1 / 10 * 10))]" "ids, step 10: the profile's point starts at its second, rounded down to 10"

# An empty window, an unknown service.
is "$(tl "service=cpuburn&type=cpu&from=2001-01-01T00:00:00&to=2001-01-02T00:00:00")" "0 0 0" \
    "an empty window: 200, total 0"
is "$(jq '.body.points | length' "$T_TMP/tl.json")" 145 \
    "... with every bucket: a day in 10 min, and the one starting at to (inclusive)"
is "$(tl "service=nosuch&type=cpu&$WIN")" "0 0 0" "an unknown service: total 0"

# Bad parameters: 400 with the envelope (one curl, one jq).
badq=("service=cpuburn&type=cpu&$WIN&sample_type=nope" \
    "service=cpuburn&type=cpu&$WIN&step=0" "service=cpuburn&type=cpu&$WIN&step=-5" \
    "service=cpuburn&type=cpu&$WIN&step=x" "service=cpuburn&type=cpu&$WIN&step=1" \
    "service=cpuburn&type=cpu&$WIN&step=99999999999" \
    "type=cpu&$WIN" "service=cpuburn&$WIN" "ids=nope" "ids=%2B%2B" \
    "service=cpuburn&type=cpu&from=bogus")
mapfile -t got < <(api_each .code "header = \"${R[1]}\"" /api/0/timeline? "${badq[@]}")
for i in "${!badq[@]}"; do
	is "${got[i]/$'\t'/ }" "400 400" "timeline?${badq[i]}: 400"
done
api "/api/0/timeline?ids=0000000000000000000v" "${R[@]}" >/dev/null
is "$HTTP_CODE" 404 "ids of no stored profile: 404"

# A tiny upload naming 20,000 sample types (74 KB gzipped) is stored,
# but its totals are not kept (more than 16 types): before that cap it
# wrote 80,000 timeline rows with three labels.
python3 - "$T_TMP/many.pb.gz" <<'PY'
import gzip, sys
def varint(n):
    out = b""
    while True:
        b, n = n & 0x7f, n >> 7
        if not n:
            return out + bytes([b])
        out += bytes([b | 0x80])
def field(num, wt, v):
    return varint(num << 3 | wt) + (varint(len(v)) + v if wt == 2 else varint(v))
n = 20000
msg = b"".join(field(1, 2, field(1, 0, 2 + i) + field(2, 0, 1)) for i in range(n))
msg += b"".join(field(6, 2, s) for s in [b"", b"u"] + [b"t%d" % i for i in range(n)])
open(sys.argv[1], "wb").write(gzip.compress(msg))
PY
upload "$T_TMP/many.pb.gz" "service=many&type=cpu&labels=a=1,b=2,c=3" "${W[@]}" >/dev/null
is "$HTTP_CODE" 200 "20,000 sample types in $(wc -c <"$T_TMP/many.pb.gz") bytes: stored"
if on_postgresql; then	# no minute table there: timelines read rows
	is "$(store_sql "SELECT totals FROM profiles WHERE service = 'many'")" \
	    "" "... with empty totals"
else
	is "$(store_sql "SELECT count(*) FROM timeline WHERE service = 'many'")/$(store_sql "SELECT totals FROM profiles WHERE service = 'many'")" \
	    "0/" "... with empty totals and no timeline rows"
fi
is "$(tl "service=many&type=cpu&$WIN&sample_type=t7")" "0 0 0" "... and its timeline is empty"

# Auth: none refused, the reader's token taken.
api "/api/0/timeline?service=cpuburn&type=cpu&$WIN" >/dev/null
is "$HTTP_CODE" 401 "no token: 401"

# A store of the previous schema (rows without totals, no timeline):
# partial at start, then the backfill completes it.
full=$(tl "service=cpuburn&type=cpu&$WIN")
profd_stop
if on_postgresql; then
	# Rows whose totals are not known (as a copy from an old store).
	store_sql "UPDATE profiles SET totals = NULL" >/dev/null
	is "$(store_sql 'SELECT count(*) FROM profiles WHERE totals IS NOT NULL')" 0 "every row's totals forgotten"
else
	sqlite3 "$PROFD_DIR/meta.db" "DROP INDEX profiles_no_totals; DROP TABLE timeline;
	    ALTER TABLE profiles DROP COLUMN totals; DROP INDEX profiles_loose;
	    DROP TABLE rollups; DROP TABLE rollup_buckets;
	    ALTER TABLE profiles DROP COLUMN rolled; PRAGMA user_version = 1;"
	is "$(sqlite3 "$PROFD_DIR/meta.db" 'PRAGMA user_version')" 1 "meta.db turned back into schema 1"
fi
profd_start --auth-file "$T_TMP/tokens" || { not_ok "profd restarts"; done_testing; }
pending=$(api "/api/0/timeline?service=cpuburn&type=cpu&$WIN" "${R[@]}" | jq -r .body.pending)
diag "pending right after start: $pending"
for _ in $(seq 100); do
	[ "$(api "/api/0/timeline?service=cpuburn&type=cpu&$WIN" "${R[@]}" | jq -r .body.pending)" = 0 ] && break
	sleep 0.1
done
is "$(tl "service=cpuburn&type=cpu&$WIN")" "$full" "after the backfill, the timeline is whole again"
is "$(jq -r .body.pending "$T_TMP/tl.json")" 0 "nothing pending"
n=$(store_sql 'SELECT count(*) FROM profiles')
check "the log tells the backfill of the $n profiles" grep -q "backfill: totals of $n profiles" "$PROFD_LOG"
on_postgresql ||
	is "$(sqlite3 "$PROFD_DIR/meta.db" 'PRAGMA user_version')" 3 "meta.db migrated to schema 3"

profd_stop
done_testing
