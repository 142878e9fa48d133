#!/usr/bin/env bash
# Startup never destroys blobs it cannot account for. With meta.db removed
# (rm meta.db*), profd must refuse to start (non-zero exit, a message
# naming the data directory, the blob count and the remedy) and leave every
# blob and no new meta.db. With meta.db present but far more blobs with no
# row than a crash can leave, those are moved to DATA_DIR/orphans/xx/ID,
# none deleted, and the known profiles stay readable. A handful of orphans
# (what a crash leaves) is still removed; an empty meta.db beside a few
# blobs (a crash before the first commit) moves them aside.
. "${top_srcdir:-.}/test/lib/e2e.sh"
[ -d "$PROFD_CORPUS" ] || skip_all "corpus not found at $PROFD_CORPUS"
command -v jq >/dev/null || skip_all "jq not installed"

W='from=2020-01-01T00:00:00&to=2100-01-01T00:00:00'
FAKES=700	# more than 64 + io threads (32) + retention batch (500)

# count_blobs DIR: regular files under DIR/xx/.
count_files() { find "$1" -mindepth 2 -maxdepth 2 -type f 2>/dev/null | wc -l; }

# upload_five: five real profiles into the running daemon.
upload_five() {
	local f n=0
	for f in "$PROFD_CORPUS"/go/cpuburn/cpu_A_0[1-5].pb.gz; do
		upload "$f" "service=md&type=cpu&labels=f=$(basename "$f")" >/dev/null
		[ "$HTTP_CODE" = 200 ] && n=$((n + 1))
	done
	is "$n" 5 "five profiles uploaded"
}

# fake_id: sets ID to a valid random id (20 characters of [0-9a-v]).
fake_id() {
	local a=0123456789abcdefghijklmnopqrstuv i
	ID=
	for ((i = 0; i < 20; i++)); do ID+=${a:$((RANDOM % 32)):1}; done
}

# add_fakes N SRC: N new orphans under $PROFD_DIR/blobs/xx/ID, copies of
# blob SRC (one tee writes them all), listed as xx/ID in $T_TMP/fakes.
add_fakes() {
	local n=0 paths=() dirs=()
	declare -A seen=()
	: > "$T_TMP/fakes"
	while [ "$n" -lt "$1" ]; do
		fake_id
		[ -e "$PROFD_DIR/blobs/${ID:0:2}/$ID" ] && continue
		[ -n "${seen[$ID]:-}" ] && continue
		seen[$ID]=1
		dirs+=("$PROFD_DIR/blobs/${ID:0:2}")
		paths+=("$PROFD_DIR/blobs/${ID:0:2}/$ID")
		echo "${ID:0:2}/$ID" >> "$T_TMP/fakes"
		n=$((n + 1))
	done
	mkdir -p "${dirs[@]}"
	tee "${paths[@]}" < "$2" > /dev/null
	chmod --reference="$2" "${paths[@]}"
}

# run_profd LOG [ARGS...]: starts profd in the foreground for at most 10 s
# (a profd that does start is stopped by the timeout); sets RC.
run_profd() {
	local log=$1; shift
	RC=0
	timeout 10 "$PROFD" --addr 127.0.0.1:0 --data-dir "$PROFD_DIR" \
	    --retention 0 "$@" 2>"$log" || RC=$?
}

# --- 1. meta.db removed ------------------------------------------------------
PROFD_DIR=$T_TMP/d1
profd_start || { not_ok "profd starts"; done_testing; }
upload_five
profd_stop
before=$(count_files "$PROFD_DIR/blobs")
is "$before" 5 "five blobs on disk"
(cd "$PROFD_DIR/blobs" && find . -type f | sort) > "$T_TMP/list1"
rm -f "$PROFD_DIR"/meta.db*
run_profd "$T_TMP/start1.log"
check "start refused (exit status $RC, not 0 or 124)" \
    [ "$RC" -ne 0 -a "$RC" -ne 124 ]
sed 's/^/# /' "$T_TMP/start1.log" | head -5
check "message names the data directory" grep -qF "$PROFD_DIR/meta.db" "$T_TMP/start1.log"
check "message names the blob count" grep -q "holds 5 profile blobs" "$T_TMP/start1.log"
check "message gives the remedy" grep -q "restore meta.db" "$T_TMP/start1.log"
check "no orphan blob removed" bash -c "! grep -q 'removed .*orphan' '$T_TMP/start1.log'"
is "$(count_files "$PROFD_DIR/blobs")" 5 "every blob still on disk"
(cd "$PROFD_DIR/blobs" && find . -type f | sort) > "$T_TMP/list1b"
check "the same blobs" cmp -s "$T_TMP/list1" "$T_TMP/list1b"
check "no new meta.db created" [ ! -e "$PROFD_DIR/meta.db" ]
run_profd "$T_TMP/start1b.log"
check "a second start is refused too (exit status $RC)" \
    [ "$RC" -ne 0 -a "$RC" -ne 124 ]
is "$(count_files "$PROFD_DIR/blobs")" 5 "every blob still on disk after the second start"

# --- 2. many orphans beside a present meta.db --------------------------------
PROFD_DIR=$T_TMP/d2
profd_start || { not_ok "profd starts"; done_testing; }
upload_five
profd_stop
src=$(find "$PROFD_DIR/blobs" -mindepth 2 -type f | head -n 1)
add_fakes "$FAKES" "$src"
is "$(count_files "$PROFD_DIR/blobs")" $((FAKES + 5)) "$FAKES fake orphans added"
profd_start || { not_ok "profd starts with many orphans"; done_testing; }
ok "profd starts with many orphans"
sed -n '/orphan/s/^/# /p' "$PROFD_LOG" | head -3
api "/api/0/profiles?service=md&$W" >/dev/null
is "$(jq '.body | length' <<<"$BODY" 2>/dev/null)" 5 "the five profiles are still listed"
profd_stop
is "$(count_files "$PROFD_DIR/blobs")" 5 "only the known blobs stay under blobs/"
is "$(count_files "$PROFD_DIR/orphans")" "$FAKES" "every orphan moved to orphans/"
missing=0
while read -r p; do [ -f "$PROFD_DIR/orphans/$p" ] || missing=$((missing + 1)); done < "$T_TMP/fakes"
is "$missing" 0 "each orphan under orphans/xx/ID, none deleted"
check "the move is logged with the count and the place" \
    grep -q "moved $FAKES .*$PROFD_DIR/orphans" "$PROFD_LOG"

# --- 3. a few orphans (a crash) are still removed ----------------------------
add_fakes 3 "$src"
profd_start || { not_ok "profd starts"; done_testing; }
profd_stop
is "$(count_files "$PROFD_DIR/blobs")" 5 "three crash orphans removed"
is "$(count_files "$PROFD_DIR/orphans")" "$FAKES" "orphans/ untouched"

# --- 4. empty meta.db, a few blobs: moved aside, start --------------------------
PROFD_DIR=$T_TMP/d4
profd_start || { not_ok "profd starts"; done_testing; }
profd_stop
add_fakes 2 "$src"
profd_start || { not_ok "profd starts beside an empty meta.db"; done_testing; }
profd_stop
is "$(count_files "$PROFD_DIR/orphans")" 2 "blobs beside an empty meta.db moved aside"

done_testing
