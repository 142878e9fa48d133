#!/usr/bin/env bash
# profd --rebuild-meta: meta.db rebuilt from the metadata every blob
# carries. Real corpus profiles (re-dated to now) of several services,
# types and labels (UTF-8 too) are uploaded; after `rm meta.db*` profd
# refuses to start and names --rebuild-meta; the rebuild prints its
# summary and exits; then list, META, services, labels, merges (their
# pprof -top rows) and downloads answer exactly as before (same ids,
# labels and times; bytes identical). Also: a rebuild refuses a meta.db with rows and leaves it
# alone; blobs moved to orphans/ (an empty meta.db beside them) come back;
# a blob written before blobs carried metadata comes back under service
# "unknown"; after kill -9 during uploads every acknowledged upload is
# rebuilt; retention leaves no file of an expired profile behind.
. "${top_srcdir:-.}/test/lib/e2e.sh"
RETIME=${top_srcdir:-.}/test/lib/retime.py
C=$PROFD_CORPUS
[ -d "$C/go" ] || skip_all "corpus not found at $C"
command -v jq >/dev/null || skip_all "jq not installed"
command -v python3 >/dev/null || skip_all "needs python3"
. "${top_srcdir:-.}/test/e2e/pprof_read.sh"
export PPROF_TMPDIR=$T_TMP/pprof

W='from=2000-01-01T00:00:00&to=now%2B24h&limit=100000'
SERVICES=("api" "caf%C3%A9" "node-svc")

# dated SRC NAME WHEN: SRC re-dated to WHEN (retime.py) as $T_TMP/NAME.
dated() { python3 "$RETIME" "$C/$1" "$T_TMP/$2" "$3"; }
dated go/cpuburn/cpu_A_01.pb.gz cpu1 now-50m
dated go/cpuburn/cpu_A_02.pb.gz cpu2 now-40m
dated go/cpuburn/cpu_A_03.pb.gz cpu3 0		# no time: arrival time
dated go/cpuburn/heap_A_01.pb.gz heap1 now-30m
dated go/contention/mutex_A_01.pb.gz mutex1 now-20m
dated go/goroutines/goroutine_A_03.pb.gz gr1 now-10m
dated node/google/wall_01.pb.gz wall1 now-5m
UPLOADS=(
	"cpu1 service=api&type=cpu&labels=host=h1,region=%C3%A9t%C3%A9"
	"cpu2 service=api&type=cpu&labels=host=h2,region=hiver"
	"cpu3 service=api&type=cpu&labels=host=h1"
	"heap1 service=api&type=heap&labels=host=h1,ver=%E4%BA%8C"
	"mutex1 service=caf%C3%A9&type=mutex&labels=zone=eu"
	"gr1 service=api&type=goroutine"
	"wall1 service=node-svc&type=other&labels=ver=%E4%B8%80%E7%89%88,empty="
)

# count_files DIR: regular files under DIR/xx/.
count_files() { find "$1" -mindepth 2 -maxdepth 2 -type f 2>/dev/null | wc -l; }

# snapshot OUT: everything the API says about the stored profiles, with
# every download's and merge's checksum, into OUT.
snapshot() {
	local s id
	{
		api /api/0/services
		for s in "${SERVICES[@]}"; do
			api "/api/0/profiles?service=$s&$W" | jq -S .
			api "/api/0/labels?service=$s"
		done
		api /api/0/labels
		api "/api/0/labels?key=host"
		api "/api/0/labels?key=region"
		api "/api/0/labels?key=ver"
		for id in $(cut -f1 "$T_TMP/ids"); do
			printf '%s ' "$id"
			curl -s "$PROFD_URL/api/0/profiles/$id" | md5sum
		done
		merged "merge?service=api&type=cpu&$W"
		merged "merge?service=api&type=cpu&labels=host=h1&$W"
		merged "$(cut -f1 "$T_TMP/ids" | head -n 2 | paste -sd+)"
	} > "$1"
}

# merged WHAT: a digest of the merge /api/0/profiles/WHAT: its status and
# pprof -top rows for both sample indexes (the bytes may differ from run to
# run: the order in which pool workers combine inputs shapes the tables).
merged() {
	local code
	code=$(curl -s -o "$T_TMP/merged" -w '%{http_code}' "$PROFD_URL/api/0/profiles/$1")
	printf 'merge %s: %s ' "$1" "$code"
	if command -v go >/dev/null; then
		{ top 0 "$T_TMP/merged"; top 1 "$T_TMP/merged"; } | md5sum
	else
		echo "(no go tool pprof)"
	fi
}

# run_profd LOG [ARGS...]: profd in the foreground for at most 10 s; sets RC.
run_profd() {
	local log=$1; shift
	RC=0
	timeout 10 "$PROFD" --addr 127.0.0.1:0 --data-dir "$PROFD_DIR" "$@" \
	    2>"$log" || RC=$?
}

# rebuild OUT: profd --rebuild-meta on PROFD_DIR; summary in OUT, log in
# OUT.log; sets RC.
rebuild() {
	RC=0
	"$PROFD" --rebuild-meta --data-dir "$PROFD_DIR" >"$1" 2>"$1.log" || RC=$?
	sed 's/^/# /' "$1"
}

# --- 1. upload, lose meta.db, refused, rebuild, same answers ----------------
PROFD_DIR=$T_TMP/d1
profd_start --retention 7d || { not_ok "profd starts"; done_testing; }
: > "$T_TMP/ids"
n=0
for u in "${UPLOADS[@]}"; do
	upload "$T_TMP/${u%% *}" "${u#* }" >/dev/null
	if [ "$HTTP_CODE" = 200 ]; then
		n=$((n + 1))
		printf '%s\t%s\n' "$(jq -r .body.id <<<"$BODY")" "${u%% *}" >> "$T_TMP/ids"
	else
		diag "upload ${u%% *}: $HTTP_CODE $BODY"
	fi
done
is "$n" "${#UPLOADS[@]}" "${#UPLOADS[@]} profiles uploaded (services, types, UTF-8 labels)"
snapshot "$T_TMP/before"
check "the snapshot lists them all" [ "$(grep -c '"id"' "$T_TMP/before")" -ge "$n" ]
grep '^merge' "$T_TMP/before" | sed 's/^/# /'
profd_stop
rm -f "$PROFD_DIR"/meta.db*
run_profd "$T_TMP/refused.log" --retention 7d
check "start without meta.db refused (status $RC)" [ "$RC" -ne 0 -a "$RC" -ne 124 ]
check "the refusal names profd --rebuild-meta" grep -q -- '--rebuild-meta --data-dir' "$T_TMP/refused.log"
check "no meta.db created" [ ! -e "$PROFD_DIR/meta.db" ]
rebuild "$T_TMP/rb1"
is "$RC" 0 "profd --rebuild-meta exits 0"
check "it says how many profiles it rebuilt" grep -q "rebuilt .*meta.db: $n profiles" "$T_TMP/rb1"
check "and that it deleted nothing" grep -q "skipped 0 blobs; nothing deleted" "$T_TMP/rb1"
profd_start --retention 7d || { not_ok "profd starts after the rebuild"; done_testing; }
check "the start after it finds no orphan and no missing blob" \
    bash -c "! grep -qE 'orphan|no blob' '$PROFD_LOG'"
snapshot "$T_TMP/after"
if cmp -s "$T_TMP/before" "$T_TMP/after"; then
	ok "list, META, services, labels, downloads and merges answer exactly as before"
else
	not_ok "list, META, services, labels, downloads and merges answer exactly as before"
	diff "$T_TMP/before" "$T_TMP/after" | head -20 | sed 's/^/# /'
fi
bad=0
while IFS=$'\t' read -r id f; do
	curl -s -o "$T_TMP/down" "$PROFD_URL/api/0/profiles/$id"
	cmp -s "$T_TMP/down" "$T_TMP/$f" || bad=$((bad + 1))
done < "$T_TMP/ids"
is "$bad" 0 "every download is byte-identical to the uploaded file"
profd_stop

# --- 2. a meta.db with rows is never replaced --------------------------------
sum_db() { md5sum < "$PROFD_DIR/meta.db"; }
db_before=$(sum_db)
rebuild "$T_TMP/rb2"
check "a rebuild over a meta.db with rows is refused (status $RC)" [ "$RC" -ne 0 ]
check "... saying it holds $n profiles and what to do" \
    grep -q "holds $n profiles: --rebuild-meta never replaces metadata; .*move meta.db" "$T_TMP/rb2.log"
is "$(sum_db)" "$db_before" "... and meta.db is untouched"
check "... and no meta.db.rebuild is left" [ ! -e "$PROFD_DIR/meta.db.rebuild" ]

# --- 3. orphans come back ----------------------------------------------------
# An empty meta.db beside the blobs (say, a start with the blobs moved
# away): the next start moves the blobs to orphans/ and serves nothing.
mv "$PROFD_DIR/blobs" "$PROFD_DIR/blobs.away"
rm -f "$PROFD_DIR"/meta.db*
profd_start --retention 7d || { not_ok "profd starts empty"; done_testing; }
profd_stop
rmdir "$PROFD_DIR/blobs" && mv "$PROFD_DIR/blobs.away" "$PROFD_DIR/blobs"
profd_start --retention 7d || { not_ok "profd starts beside the blobs"; done_testing; }
api "/api/0/profiles?service=api&$W" >/dev/null
is "$(jq '.body | length' <<<"$BODY")" 0 "the blobs went to orphans/: nothing listed"
profd_stop
is "$(count_files "$PROFD_DIR/orphans")" "$n" "$n blobs in orphans/"
rebuild "$T_TMP/rb3"
is "$RC" 0 "the rebuild over the empty meta.db exits 0"
check "it brought the $n orphans back" grep -q "$n profiles, .*($n moved back from orphans/" "$T_TMP/rb3"
is "$(count_files "$PROFD_DIR/orphans")" 0 "orphans/ is empty"
profd_start --retention 7d || { not_ok "profd starts after the rebuild"; done_testing; }
snapshot "$T_TMP/after3"
if cmp -s "$T_TMP/before" "$T_TMP/after3"; then
	ok "everything answers as before again"
else
	not_ok "everything answers as before again"
	diff "$T_TMP/before" "$T_TMP/after3" | head -20 | sed 's/^/# /'
fi
profd_stop

# --- 4. a blob written before blobs carried metadata ----------------------------
# Older profd wrote the uploaded bytes alone; put one in as it would have.
legacy=06h0f800000000000000
mkdir -p "$PROFD_DIR/blobs/06"
cp "$T_TMP/cpu1" "$PROFD_DIR/blobs/06/$legacy"
printf 'garbage without header' > "$PROFD_DIR/blobs/06/06h0f800000000000001"
rm -f "$PROFD_DIR"/meta.db*
rebuild "$T_TMP/rb4"
is "$RC" 0 "rebuild with a blob of an older version"
check "it counts the blob without metadata" grep -q "$((n + 1)) profiles, .*1 without metadata" "$T_TMP/rb4"
check "it skips the garbage and says why" grep -q "06h0f800000000000001: skipped: no metadata, and not a pprof" "$T_TMP/rb4.log"
check "... moving it to orphans/" [ -f "$PROFD_DIR/orphans/06/06h0f800000000000001" ]
profd_start --retention 7d || { not_ok "profd starts"; done_testing; }
api "/api/0/profiles?service=api&type=cpu&labels=region=%C3%A9t%C3%A9&$W" >/dev/null
want=$(jq -r '.body[0].created_at' <<<"$BODY")	# cpu1's own time
api "/api/0/profiles?service=unknown&$W" >/dev/null
is "$(jq -r '.body[0].id + " " + .body[0].type' <<<"$BODY" 2>/dev/null)" "$legacy cpu" \
    "listed under service \"unknown\" as a cpu profile"
is "$(jq -r '.body[0].created_at' <<<"$BODY")" "$want" "at the profile's own time ($want)"
curl -s -o "$T_TMP/down" "$PROFD_URL/api/0/profiles/$legacy"
check "its download is the file as it was" cmp -s "$T_TMP/down" "$T_TMP/cpu1"
profd_stop

# --- 5. kill -9 during uploads, then rebuild ---------------------------------
PROFD_DIR=$T_TMP/d5
profd_start --retention 7d --workers 2 || { not_ok "profd starts"; done_testing; }
# uploader N: uploads in turn, at most 10 a second (as fast as a curl
# and a jq each went), by one curl that stops at the first upload
# without a reply (the kill); its replies (stream_upload) in $T_TMP/ok5.N.
uploader() {
	local u=$1 i f cfg=$T_TMP/up5.$1.cfg
	: > "$cfg"
	for ((i = 1; i <= 100; i++)); do
		f=${UPLOADS[$((i % ${#UPLOADS[@]}))]}
		stream_upload "$cfg" "$PROFD_URL" "service=k9&type=other&labels=u=$u,i=$i" "$T_TMP/${f%% *}"
	done
	curl -s --fail-early --rate 10/s -K "$cfg" > "$T_TMP/ok5.$u" 2>/dev/null
}
for u in 1 2 3; do uploader "$u" & done
sleep 1.5
kill -KILL "$PROFD_PID"
wait "$PROFD_PID" 2>/dev/null
PROFD_PID=
wait
# "id<TAB>name" of every 200
stream_acked "$T_TMP"/ok5.* | sed 's|\t.*/|\t|' > "$T_TMP/ok5"
acked=$(wc -l < "$T_TMP/ok5")
check "uploads were acknowledged before the kill ($acked)" [ "$acked" -ge 5 ]
rm -f "$PROFD_DIR"/meta.db*
rebuild "$T_TMP/rb5"
is "$RC" 0 "rebuild after kill -9 exits 0"
profd_start --retention 7d || { not_ok "profd starts after the rebuild"; done_testing; }
api "/api/0/profiles?service=k9&$W" >/dev/null
jq -r '.body[].id' <<<"$BODY" | sort > "$T_TMP/listed5"
is "$(cut -f1 "$T_TMP/ok5" | sort | comm -23 - "$T_TMP/listed5" | wc -l)" 0 \
    "every acknowledged upload is rebuilt and listed"
bad=0
while IFS=$'\t' read -r id f; do
	curl -s -o "$T_TMP/down" "$PROFD_URL/api/0/profiles/$id"
	cmp -s "$T_TMP/down" "$T_TMP/$f" || bad=$((bad + 1))
done < "$T_TMP/ok5"
is "$bad" 0 "and reads back byte-identical ($acked)"
check "the start after the rebuild removed no orphan" bash -c "! grep -q 'removed [1-9]' '$PROFD_LOG'"
profd_stop

# --- 6. retention leaves no file of an expired profile -----------------------
PROFD_DIR=$T_TMP/d6
profd_start --retention 2s --retention-interval 200ms || { not_ok "profd starts"; done_testing; }
dated go/cpuburn/cpu_A_04.pb.gz short now
upload "$T_TMP/short" "service=short&type=cpu&labels=a=b" >/dev/null
id=$(jq -r .body.id <<<"$BODY")
is "$HTTP_CODE" 200 "a profile stored with --retention 2s"
for _ in $(seq 1 50); do
	[ -z "$(find "$PROFD_DIR" -name "*$id*")" ] && break
	sleep 0.1
done
is "$(find "$PROFD_DIR" -name "*$id*" | wc -l)" 0 "after the sweep no file of it is left (its metadata lives in its blob)"
profd_stop

done_testing
