#!/usr/bin/env bash
# Crash consistency: four uploaders hammer profd while it is killed with
# SIGKILL at random moments (ROUNDS times, restarted on the same data
# directory each time). Afterwards every upload that got a 200 must be
# listed and read back byte-identical, meta.db and blobs/ must hold exactly
# the same ids (no row without a blob, no blob without a row), no start may
# have reported a profile without its blob, and SQLite's integrity_check
# must say ok. Finally meta.db is removed and rebuilt from the blobs
# (profd --rebuild-meta): the same rows come back, every acknowledged
# upload among them, and beside them only the whole blobs of
# unacknowledged uploads that the starts had moved to orphans/.
. "${top_srcdir:-.}/test/lib/e2e.sh"
[ -d "$PROFD_CORPUS" ] || skip_all "corpus not found at $PROFD_CORPUS"
command -v jq >/dev/null || skip_all "jq not installed"
command -v sqlite3 >/dev/null || skip_all "sqlite3 not installed"

ROUNDS=${CRASH_ROUNDS:-24}
UPLOADERS=4
W='from=2020-01-01T00:00:00&to=2100-01-01T00:00:00'

# Files to upload: small and mid-sized profiles of several kinds.
files=()
for f in go/cpuburn/cpu_A_01 go/cpuburn/heap_B_02 go/contention/mutex_A_01 \
    go/contention/block_B_01 go/goroutines/goroutine_A_03 \
    go/allocheavy/allocs_B_04 go/bigstacks/cpu_A_01 node/google/wall_01 \
    node/datadog/heap_02 go/allocheavy/cpu_B_02; do
	[ -f "$PROFD_CORPUS/$f.pb.gz" ] && files+=("$PROFD_CORPUS/$f.pb.gz")
done
[ "${#files[@]}" -ge 4 ] || skip_all "corpus files missing"

URLFILE=$T_TMP/url
STOP=$T_TMP/stop

# Log lines in which a start reported profiles without their blob.
missing_reports=0
# check_start_log: counts reports of rows with no blob in this start's log.
check_start_log() {
	local n
	n=$(grep -cE 'has no blob|[1-9][0-9]* profiles have no blob' "$PROFD_LOG")
	if [ "$n" -gt 0 ]; then
		missing_reports=$((missing_reports + n))
		grep -E 'no blob' "$PROFD_LOG" | head -5 | sed 's/^/# /'
	fi
}

start_fails=0
begin=$(date +%s)
profd_start --workers 2 || { not_ok "profd starts"; done_testing; }
echo "$PROFD_URL" > "$URLFILE"
# (stream_uploader: ten uploads a curl, at most 10 a second: when each
# upload was a curl and a jq of its own, an uploader managed some 9 a
# second on two busy cores and spent more CPU than profd)
for u in $(seq 1 $UPLOADERS); do
	stream_uploader "$u" "$URLFILE" "$STOP" "service=crash&type=other" "${files[@]}" &
done
orphans_removed=0
for r in $(seq 1 "$ROUNDS"); do
	# let the uploaders run 0.15 to 0.9 s, then kill without warning
	sleep "0.$(( 15 + RANDOM % 75 ))"
	kill -KILL "$PROFD_PID"
	wait "$PROFD_PID" 2>/dev/null
	PROFD_PID=
	cp "$PROFD_LOG" "$T_TMP/round.$r.log"
	if ! profd_start --workers 2; then
		start_fails=$((start_fails + 1))
		break
	fi
	echo "$PROFD_URL" > "$URLFILE"
	check_start_log
	n=$(sed -n 's/.*removed \([0-9]*\) orphan blobs.*/\1/p' "$PROFD_LOG")
	orphans_removed=$((orphans_removed + ${n:-0}))
done
sleep 0.3
touch "$STOP"
wait $(jobs -p | grep -v "^$PROFD_PID\$") 2>/dev/null
# wait above also reaped profd if it was a job: restart to be sure it runs
if ! kill -0 "$PROFD_PID" 2>/dev/null; then
	PROFD_PID=
	profd_start --workers 2 || start_fails=$((start_fails + 1))
	check_start_log
fi
elapsed=$(( $(date +%s) - begin ))
is "$start_fails" 0 "profd restarted after each of $ROUNDS SIGKILLs"
diag "$ROUNDS rounds in ${elapsed}s; $orphans_removed orphan blobs removed at starts"

# "id<TAB>file" of every 200
stream_acked "$T_TMP"/replies.* > "$T_TMP/ok"
acked=$(wc -l < "$T_TMP/ok")
attempts=$(cat "$T_TMP"/replies.* | wc -l)
others=$(cut -f2 "$T_TMP"/replies.* | grep -cvE '^(200|000)$')
diag "$attempts upload attempts, $acked got 200"
check "uploads succeeded between kills ($acked)" [ "$acked" -ge 10 ]
is "$others" 0 "every upload got 200 or no reply (no error status)"
is "$(cut -f1 "$T_TMP/ok" | sort | uniq -d | wc -l)" 0 "no id was handed out twice"

# every acknowledged upload is listed and reads back byte-identical
api "/api/0/profiles?service=crash&$W&limit=100000" > /dev/null
is "$HTTP_CODE" 200 "list after the last restart"
echo "$BODY" | jq -r '.body[].id' | sort > "$T_TMP/listed"
cut -f1 "$T_TMP/ok" | sort > "$T_TMP/acked"
lost=$(comm -23 "$T_TMP/acked" "$T_TMP/listed" | wc -l)
is "$lost" 0 "every upload that got a 200 is listed"
# (read back by one curl)
download_all "$T_TMP/down" $(cut -f1 "$T_TMP/ok")
bad=0 k=0
while IFS=$'\t' read -r id f; do
	cmp -s "$T_TMP/down/$k" "$f" || { bad=$((bad + 1)); [ $bad -le 3 ] && diag "differs: $id ($f)"; }
	k=$((k + 1))
done < "$T_TMP/ok"
is "$bad" 0 "every acknowledged upload reads back byte-identical ($acked)"

# rows and blobs are the same set of ids
sqlite3 "$PROFD_DIR/meta.db" 'SELECT id FROM profiles' | sort > "$T_TMP/rows"
find "$PROFD_DIR/blobs" -type f -printf '%f\n' | sort > "$T_TMP/blobs"
diag "$(wc -l < "$T_TMP/rows") rows, $(wc -l < "$T_TMP/blobs") blob files"
is "$(comm -23 "$T_TMP/rows" "$T_TMP/blobs" | wc -l)" 0 "no row without a blob"
is "$(comm -13 "$T_TMP/rows" "$T_TMP/blobs" | wc -l)" 0 "no blob without a row (orphans and temp files removed at start)"
is "$(wc -l < "$T_TMP/listed")" "$(wc -l < "$T_TMP/rows")" "the list shows every row"
is "$missing_reports" 0 "no start reported a profile without its blob"
is "$(sqlite3 "$PROFD_DIR/meta.db" 'PRAGMA integrity_check')" ok "PRAGMA integrity_check is ok"
is "$(sqlite3 "$PROFD_DIR/meta.db" 'SELECT count(*) FROM profile_labels WHERE profile_pk NOT IN (SELECT pk FROM profiles)')" 0 \
    "no label link without its profile"
is "$(sqlite3 "$PROFD_DIR/meta.db" 'SELECT count(*) FROM profiles p WHERE (SELECT count(*) FROM profile_labels l WHERE l.profile_pk = p.pk) != 2')" 0 \
    "every profile kept both its labels"

# still a working daemon: a fresh upload and read-back
upload "${files[0]}" "service=crash&type=other" > /dev/null
is "$HTTP_CODE" 200 "upload after the crashes"

# every acknowledged upload can be rebuilt from its blob alone
profd_stop
sqlite3 "$PROFD_DIR/meta.db" 'SELECT id, service, type, created_at, size FROM profiles ORDER BY id' > "$T_TMP/rows.before"
labels_before=$(sqlite3 "$PROFD_DIR/meta.db" 'SELECT count(*) FROM profile_labels')
# (the starts moved the blobs of unacknowledged uploads to orphans/; the
# rebuild brings back those that are whole, as docs/DESIGN.md says: a
# crash between a blob's sync and its row's commit)
find "$PROFD_DIR/orphans" -type f -printf '%f\n' 2>/dev/null | sort > "$T_TMP/orphans"
rm -f "$PROFD_DIR"/meta.db*
"$PROFD" --rebuild-meta --data-dir "$PROFD_DIR" > "$T_TMP/rebuild.out" 2>&1
is "$?" 0 "profd --rebuild-meta after the crashes"
sed -n 's/^profd: /# /p' "$T_TMP/rebuild.out"
sqlite3 "$PROFD_DIR/meta.db" 'SELECT id, service, type, created_at, size FROM profiles ORDER BY id' > "$T_TMP/rows.after"
comm -13 "$T_TMP/rows.before" "$T_TMP/rows.after" | cut -d'|' -f1 | sort > "$T_TMP/back"
back=$(wc -l < "$T_TMP/back")
is "$(comm -23 "$T_TMP/rows.before" "$T_TMP/rows.after" | wc -l)" 0 \
    "the rebuilt meta.db holds every row it held, the same"
is "$(comm -23 "$T_TMP/back" "$T_TMP/orphans" | wc -l)" 0 \
    "...and beside them only uploads whose blobs were in orphans/ ($back of $(wc -l < "$T_TMP/orphans"))"
is "$(sqlite3 "$PROFD_DIR/meta.db" 'SELECT count(*) FROM profile_labels')" \
    "$((labels_before + 2 * back))" "and their labels"
profd_start --workers 2 || { not_ok "profd starts after the rebuild"; done_testing; }
api "/api/0/profiles?service=crash&$W&limit=100000" > /dev/null
echo "$BODY" | jq -r '.body[].id' | sort > "$T_TMP/listed2"
is "$(comm -23 "$T_TMP/acked" "$T_TMP/listed2" | wc -l)" 0 "every acknowledged upload is listed after the rebuild"
done_testing
