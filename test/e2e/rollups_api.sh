#!/usr/bin/env bash
# Rollups (docs/DESIGN.md, "Rollups") against `go tool pprof -proto` on the
# same raw files. Corpus profiles of every kind are re-timestamped
# (test/lib/merge_files -R) over eight hours across a midnight, nine or
# ten instances a minute, labelled instance_id, region and env, and
# uploaded to a profd that does not compact (--rollup-delay 0). The store
# is copied; then profd compacts the original into minute, hour and day
# rollups, and every time-window merge (no label, one pair, a pair every
# profile carries, two pairs; windows cut inside minutes, an hour, across
# midnight) must equal pprof's merge of the files in the window, while
# reading rollups (X-Profd-Merge-Inputs). Then: late arrivals into
# compacted minutes, hours and days are counted once, and rolled up again
# once none has arrived for --rollup-delay; the copy is
# compacted under repeated kill -9 and still merges exactly, with no
# orphan blob; retention cutting the data in the middle of an hour and a
# day removes the rollups over it; /metrics shows the figures.
. "${top_srcdir:-.}/test/lib/e2e.sh"
. "${top_srcdir:-.}/test/e2e/pprof_read.sh"

C=$PROFD_CORPUS
G=$C/go
MF=${top_builddir:-.}/test/lib/merge_files
command -v go >/dev/null 2>&1 || skip_all "go tool pprof not installed"
command -v jq >/dev/null 2>&1 || skip_all "jq not installed"
on_postgresql || command -v sqlite3 >/dev/null 2>&1 || skip_all "sqlite3 not installed"
[ -d "$G" ] || skip_all "corpus not found at $C"
[ -x "$MF" ] || skip_all "test/lib/merge_files not built"

T0=1795204800		# 2026-11-20T20:00:00Z; midnight is T0 + 4 h
S=1000000000
INDEX=$T_TMP/index.tsv	# file, unix seconds, instance, region, kind
: >"$INDEX"

# make KIND INSTANCES SLOTS STEP FILE...: re-timestamped copies of the
# files: slot s, instance i at T0 + s * STEP + i seconds (cycling the
# files), indexed.
make_kind() {
	local kind=$1 inst=$2 slots=$3 step=$4 s i t dir
	shift 4
	for ((s = 0; s < slots; s++)); do
		t=$((T0 + s * step))
		dir=$T_TMP/files/$kind/$s
		mkdir -p "$dir"
		"$MF" -R "$((t * S)),$S,$inst" "$dir" "$@" || return 1
		for ((i = 0; i < inst; i++)); do
			printf '%s\t%d\t%d\tr%d\t%s\n' "$dir/$(printf %05d "$i").pb.gz" \
			    $((t + i)) "$i" $((i % 2)) "$kind" >>"$INDEX"
		done
	done
}

# kinds: name, profd type, files. cpu gets 20 instances every 40 minutes
# for eight hours (so its minutes have rollups of their own: more than
# STORE_ROLLUP_REFS, 16; its hours alternate two slots and one, so a
# region's hour has a rollup or only references), the others nine every
# 40 minutes for four hours.
KINDS=(cpu heap allocs mutex block goroutine threadcreate nodeheap nodewall)
ptype() { case $1 in nodeheap|allocs) echo heap ;; nodewall) echo other ;; *) echo "$1" ;; esac; }
# (one producer's node profiles: the two name their sample types apart)
files_of() {
	case $1 in
	nodeheap) ls "$C"/node/google/heap_*.pb.gz ;;
	nodewall) ls "$C"/node/google/wall_0*.pb.gz ;;
	*) ls "$G"/*/"$1"_*.pb.gz ;;
	esac
}
for k in "${KINDS[@]}"; do
	mapfile -t fs < <(files_of "$k")
	if [ "$k" = cpu ]; then
		make_kind cpu 20 12 2400 "${fs[@]}" || skip_all "merge_files -R failed"
	else
		make_kind "$k" 9 6 2400 "${fs[@]}" || skip_all "merge_files -R failed"
	fi
done
diag "$(wc -l <"$INDEX") files"

# up FILE T INSTANCE REGION KIND: uploads one file.
up() {
	upload "$1" "service=roll-$5&type=$(ptype "$5")&labels=instance_id=$3,region=$4,env=prod" \
	    >/dev/null
	[ "$HTTP_CODE" = 200 ]
}

profd_start --rollup-delay 0 || { not_ok "profd starts"; done_testing; }
bad=0
while IFS=$'\t' read -r f t i r k; do up "$f" "$t" "$i" "$r" "$k" || bad=$((bad + 1)); done <"$INDEX"
is "$bad" 0 "$(wc -l <"$INDEX") uploads"
profd_stop
# The store as the schema before rollups left it, migrated when opened
# (meta.db's version 2; the database's version 1 on PostgreSQL).
if on_postgresql; then
	OLDV=1 NEWV=2
	store_sql "DROP INDEX profiles_loose; DROP TABLE rollups, rollup_buckets,
	    profd_rollup_totals; DROP SEQUENCE rollup_rid;
	    UPDATE profd_schema SET version = 1"
	schema_version() { store_sql 'SELECT version FROM profd_schema'; }
else
	OLDV=2 NEWV=3
	store_sql "DROP INDEX profiles_loose; DROP TABLE rollups;
	    DROP TABLE rollup_buckets; ALTER TABLE profiles DROP COLUMN rolled;
	    PRAGMA user_version = 2;"
	schema_version() { store_sql 'PRAGMA user_version'; }
fi
is "$(schema_version)" "$OLDV" "the store turned back into schema $OLDV"
KILLDIR=$T_TMP/killdir
RETDIR=$T_TMP/retdir
store_copy "$PROFD_DIR" "$KILLDIR"
store_copy "$PROFD_DIR" "$RETDIR"

# compacted: waits until nothing is left to compact (0 if so).
compacted() {
	local i
	for i in $(seq 1 600); do
		[ "$(metric profd_rollup_lag_seconds)" = 0.000 ] &&
		    [ "$(metric profd_rollup_buckets_waiting)" = 0 ] && return 0
		sleep 0.2
	done
	return 1
}

profd_start --rollup-delay 1s || { not_ok "profd restarts"; done_testing; }
is "$(schema_version)" "$NEWV" "a schema $OLDV store is migrated to $NEWV at open"
check "compaction finishes" compacted
for l in minute hour day; do
	n=$(curl -s "$PROFD_URL/metrics" | awk -v l="profd_rollups{level=\"$l\"}" '$1 == l { print $2 }')
	check "/metrics: $n $l rollups" [ "${n:-0}" -gt 0 ]
done
check "/metrics: rollup bytes $(metric profd_rollup_bytes)" [ "$(metric profd_rollup_bytes)" -gt 0 ]

# select KIND FROM TO LABELS: the indexed files of the window (seconds,
# inclusive) and labels ("instance_id=3,region=r1", "" for all).
select_files() {
	awk -F'\t' -v k="$1" -v a="$2" -v b="$3" -v l="$4" '
	    BEGIN { n = split(l, p, ",") }
	    $5 == k && $2 >= a && $2 <= b {
		for (j = 1; j <= n; j++) {
			split(p[j], kv, "=")
			if (kv[1] == "instance_id" && kv[2] != $3) next
			if (kv[1] == "region" && kv[2] != $4) next
			if (kv[1] == "env" && kv[2] != "prod") next
		}
		print $1 }' "$INDEX"
}

# window KIND FROM TO LABELS [MIN_ROLLUPS]: the window's merge equals
# pprof's of its files, holds as many profiles, and read rollups. TO is
# inclusive (to the second): a bucket fits a window when the window
# reaches its end, [T0 + 7200, T0 + 10800] holds the third hour.
window() {
	local kind=$1 from=$2 to=$3 l=$4 min=${5:-1} what q inputs rollups
	what="$kind [$((from - T0)), $((to - T0))]${l:+ $l}"
	mapfile -t fs < <(select_files "$kind" "$from" "$to" "$l")
	q="service=roll-$kind&type=$(ptype "$kind")&from=$from&to=$to${l:+&labels=$l}"
	curl -s -D "$T_TMP/h" -o "$T_TMP/ours.pb.gz" -w '%{http_code}' \
	    "$PROFD_URL/api/0/profiles/merge?$q" >"$T_TMP/code"
	if [ ${#fs[@]} -eq 0 ]; then
		is "$(cat "$T_TMP/code")" 404 "$what: no files, 404"
		return
	fi
	if [ "$(cat "$T_TMP/code")" != 200 ]; then
		not_ok "$what: merge answered $(cat "$T_TMP/code")"
		return
	fi
	inputs=$(tr -d '\r' <"$T_TMP/h" | sed -n 's/^X-Profd-Merge-Inputs: //Ip')
	rollups=$(sed -n 's/.*(\([0-9]*\) rollups)/\1/p' <<<"$inputs")
	is "$(tr -d '\r' <"$T_TMP/h" | sed -n 's/^X-Profd-Merge-Profiles: //Ip')" \
	    "${#fs[@]}" "$what: holds ${#fs[@]} profiles (inputs: $inputs)"
	check "$what: reads at least $min rollups" [ "${rollups:-0}" -ge "$min" ]
	compare_merged "$what" "$T_TMP/ours.pb.gz" "${fs[@]}"
}

END=$((T0 + 8 * 3600))
# Every kind: all of it, and a window cut inside minutes with one pair
# (one instance's few profiles: recorded as references, no rollup blob).
for k in "${KINDS[@]}"; do
	window "$k" 0 4102444800 "" 1
	window "$k" $((T0 + 1234)) $((T0 + 3 * 3600 + 5)) "instance_id=4" 0
done
# cpu: the label filters over windows of every shape.
for l in "" "region=r1" "env=prod" "instance_id=3,region=r1" "instance_id=3,region=r0"; do
	case $l in instance*) min=0 ;; *) min=1 ;; esac
	window cpu $((T0 + 7200)) $((T0 + 10800)) "$l" $min
	window cpu $((T0 + 3 * 3600 + 600)) $((T0 + 5 * 3600 + 1)) "$l" $min
	window cpu $((T0 + 4 * 3600)) $((T0 + 8 * 3600 - 1)) "$l" $min
done
window cpu $((T0 + 2)) $((T0 + 2400 + 5)) "" 0
window cpu $((T0 + 2)) $((T0 + 2400 + 5)) "instance_id=3,region=r1" 0
window cpu "$T0" $((T0 + 1260)) "" 1
n=$(store_sql "SELECT count(*) FROM rollups WHERE level = 2 AND service = 'roll-cpu'")
check "cpu has day rollups ($n)" [ "$n" -gt 0 ]

# --- late arrivals ------------------------------------------------------
# Into a compacted minute (slot 2), an hour with no profile in that
# minute, and a compacted day. With --rollup-delay 1h (the data is days
# old: compaction goes on) they stay loose and count once; then, with
# 1s, none arriving for that long heals them: their minutes are reopened
# and rolled up again.
profd_stop
profd_start --rollup-delay 1h || { not_ok "profd restarts (1h)"; done_testing; }
mapfile -t cpufs < <(files_of cpu)
late=0
for off in $((2 * 2400 + 30)) $((2 * 3600 + 1500)) $((5 * 3600 + 45)) $((7 * 3600 + 3000)); do
	t=$((T0 + off))
	dir=$T_TMP/files/late/$off
	mkdir -p "$dir"
	"$MF" -R "$((t * S)),$S,2" "$dir" "${cpufs[@]:$late:2}"
	for i in 0 1; do
		printf '%s\t%d\t%d\tr%d\tcpu\n' "$dir/0000$i.pb.gz" $((t + i)) $((i + 7)) $(((i + 7) % 2)) >>"$INDEX"
		up "$dir/0000$i.pb.gz" $((t + i)) $((i + 7)) r$(((i + 7) % 2)) cpu || not_ok "late upload"
	done
	late=$((late + 2))
done
for i in $(seq 1 100); do
	[ "$(store_sql "SELECT count(*) FROM profiles WHERE rolled = 0")" = "$late" ] && break
	sleep 0.2
done
is "$(store_sql "SELECT count(*) FROM profiles WHERE rolled = 0")" "$late" \
    "the $late late profiles are flagged and stay out of rollups (rolled = 0)"
window cpu 0 4102444800 "" 1
window cpu $((T0 + 2 * 3600)) $((T0 + 3 * 3600)) "" 1
window cpu $((T0 + 2 * 2400)) $((T0 + 2 * 2400 + 60)) "region=r1" 0
window cpu $((T0 + 4 * 3600)) $((T0 + 8 * 3600 - 1)) "instance_id=7" 0
profd_stop
profd_start --rollup-delay 1s || { not_ok "profd restarts (1s)"; done_testing; }
for i in $(seq 1 150); do
	[ "$(store_sql "SELECT count(*) FROM profiles WHERE rolled = 0")" = 0 ] && break
	sleep 0.2
done
is "$(store_sql "SELECT count(*) FROM profiles WHERE rolled = 0")" 0 \
    "quiet for --rollup-delay: the late profiles are reopened ..."
check "... and compacted again" compacted
is "$(store_sql "SELECT count(*) FROM profiles WHERE rolled <= 0")" 0 \
    "... into rollups (no profile left loose)"
check "the log says so" grep -q "arrived late reopened" "$PROFD_LOG"
window cpu 0 4102444800 "" 1
window cpu $((T0 + 2 * 3600)) $((T0 + 3 * 3600)) "" 1
window cpu $((T0 + 2 * 2400)) $((T0 + 2 * 2400 + 60)) "" 1
window cpu $((T0 + 4 * 3600)) $((T0 + 8 * 3600 - 1)) "instance_id=7" 0
blobs=$(store_rollup_blobs "$PROFD_DIR")
rows=$(store_sql "SELECT count(*) FROM rollups WHERE profile IS NULL")
is "$blobs" "$rows" "after healing every rollup blob has its row and every row its blob"
profd_stop

# --- kill -9 during compaction --------------------------------------------
# A fresh copy of the uncompacted store, killed at random moments of its
# compaction until one run finishes it.
runs=0 complete=0
for runs in 1 2 3 4 5 6 7 8 9 10; do
	# A pause between jobs spreads the work over seconds.
	PROFD_DIR=$KILLDIR profd_start --rollup-delay 1s --compact-pause 100ms || break
	sleep "$((1 + RANDOM % 3)).$((RANDOM % 10))$((RANDOM % 10))"
	kill -KILL "$PROFD_PID"
	wait "$PROFD_PID" 2>/dev/null
	PROFD_PID=
	done_rows=$(store_sql_at "$KILLDIR" "SELECT count(*) FROM rollup_buckets WHERE done = 1")
	waiting=$(store_sql_at "$KILLDIR" "SELECT count(*) FROM rollup_buckets WHERE done = 0")
	fresh=$(store_sql_at "$KILLDIR" "SELECT count(*) FROM profiles WHERE rolled = -1")
	diag "kill $runs: $done_rows buckets done, $waiting waiting, $fresh profiles fresh"
	if [ "$fresh" = 0 ] && [ "$waiting" = 0 ]; then
		complete=1
		break
	fi
done
check "kill -9 interrupted the compaction at least once before it ended ($runs runs)" [ "$runs" -gt 1 ]
PROFD_DIR=$KILLDIR profd_start --rollup-delay 1s || { not_ok "profd starts after kill -9"; done_testing; }
check "compaction finishes after the kills" compacted
blobs=$(store_rollup_blobs "$KILLDIR")
rows=$(store_sql_at "$KILLDIR" "SELECT count(*) FROM rollups WHERE profile IS NULL")
is "$blobs" "$rows" "after the kills every rollup blob has its row and every row its blob"
INDEX_ALL=$INDEX
grep -v '/late/' "$INDEX_ALL" >"$T_TMP/index.nolate"
INDEX=$T_TMP/index.nolate
window cpu 0 4102444800 "" 1
window cpu $((T0 + 3 * 3600 + 600)) $((T0 + 5 * 3600 + 1)) "region=r1" 1
window heap 0 4102444800 "instance_id=4" 0
window goroutine $((T0 + 1234)) $((T0 + 3 * 3600 + 5)) "" 1
profd_stop

# --- retention through rollups -----------------------------------------
# The cutoff falls at T0 + 5 h 10 min: inside hour 5 and the second day,
# between two cpu slots.
cut=$((T0 + 5 * 3600 + 600))
PROFD_DIR=$RETDIR profd_start --rollup-delay 1s || { not_ok "profd starts (retention)"; done_testing; }
check "compaction finishes (retention store)" compacted
profd_stop
PROFD_DIR=$RETDIR profd_start --rollup-delay 1s --retention "$(( $(date +%s) - cut ))s" \
    --retention-interval 1s || { not_ok "profd starts with retention"; done_testing; }
for i in $(seq 1 100); do
	[ "$(store_sql_at "$RETDIR" "SELECT count(*) FROM profiles WHERE created_at < $cut * $S")" = 0 ] && break
	sleep 0.2
done
sleep 1
awk -F'\t' -v c="$cut" '$2 >= c' "$INDEX" >"$T_TMP/index.kept"
INDEX=$T_TMP/index.kept
n=$(store_sql_at "$RETDIR" "SELECT count(*) FROM rollups WHERE bucket < $cut")
is "$n" 0 "retention removed every rollup of a bucket starting before the cutoff"
n=$(store_sql_at "$RETDIR" "SELECT count(*) FROM rollup_buckets WHERE bucket < $cut")
is "$n" 0 "... and their buckets' marks"
blobs=$(store_rollup_blobs "$RETDIR")
rows=$(store_sql_at "$RETDIR" "SELECT count(*) FROM rollups WHERE profile IS NULL")
is "$blobs" "$rows" "... and their blobs"
window cpu 0 4102444800 "" 1
window cpu $((T0 + 4 * 3600)) $((T0 + 8 * 3600 - 1)) "region=r0" 1
profd_stop

done_testing
