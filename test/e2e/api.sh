#!/usr/bin/env bash
# End-to-end test of the /api/0 surface against the real daemon: every
# corpus profile round-trips byte-exact with the right META, every bad input
# is refused and leaves nothing behind, list queries (service, type, every
# time format, labels with out-of-order arrivals, limit), error paths,
# parallel uploaders, and clients that vanish mid-request.
. "${top_srcdir:-.}/test/lib/e2e.sh"
[ -d "$PROFD_CORPUS" ] || skip_all "corpus not found at $PROFD_CORPUS"
command -v jq >/dev/null || skip_all "jq not installed"

profd_start --workers 2 --retention 0 || { not_ok "profd starts"; done_testing; }
ok "profd starts and listens on a free port"

rows() { store_sql 'SELECT count(*) FROM profiles' 2>/dev/null; }
blobs() { store_blobs; }
W='from=2020-01-01T00:00:00&to=2100-01-01T00:00:00'

# --- every good corpus profile round-trips ---------------------------------
# MANIFEST types map onto profd's: allocs are heap profiles, node's wall
# profiles are "other". Uploaded one after another, then read back (one
# curl for all the uploads, one for all the reads, one jq for all the
# replies: test/lib/e2e.sh, batch_run).
files=() types=() want_st=() want_n=()
while IFS=$'\t' read -r file producer ptype stypes samples _; do
	[ "$file" = file ] && continue
	case $ptype in
	allocs) type=heap ;;
	wall*) type=other ;;
	*) type=$ptype ;;
	esac
	files+=("$file") types+=("$type") want_st+=("$stypes") want_n+=("$samples")
done < "$PROFD_CORPUS/MANIFEST.tsv"
mkdir -p "$T_TMP/up"
: > "$T_TMP/up.cfg"
for i in "${!files[@]}"; do
	batch_upload "$T_TMP/up.cfg" "$T_TMP/up/$i" "$PROFD_CORPUS/${files[i]}" \
	    "service=corpus&type=${types[i]}&labels=file=${files[i]##*/}"
done
mapfile -t codes < <(batch_run "$T_TMP/up.cfg")
replies=()
for i in "${!files[@]}"; do replies+=("$T_TMP/up/$i"); done
mapfile -t metas < <(jq_each '(.body // {}) as $b |
    [$b.id // "", $b.type // "", ($b.sample_types // [] | join(",")),
     $b.samples // "", $b.size // "", ($b.labels // [])[0].value // ""] |
    map(tostring) | join("|")' \
    "${replies[@]}")
mapfile -t sizes < <(cd "$PROFD_CORPUS" && stat -c %s "${files[@]}")
bad_meta=0 bad_bytes=0 uploaded=0 legacy_ok=0 stored=() stored_ids=()
for i in "${!files[@]}"; do
	file=${files[i]}
	IFS='|' read -r id mtype mst mn msize mlabel <<<"${metas[i]:-}"
	if [ "$file" = gperftools/cworker.cpu.prof ]; then
		# the legacy (non-protobuf) gperftools format is converted
		# (test/e2e/gperf_api.sh checks how)
		[ "${codes[i]:-}" = 200 ] && [ "$mlabel $mn" = "gperftools 598" ] && legacy_ok=1
		continue
	fi
	if [ "${codes[i]:-}" != 200 ]; then
		diag "upload $file: ${codes[i]:-} $(cat "$T_TMP/up/$i")"; bad_meta=$((bad_meta + 1)); continue
	fi
	uploaded=$((uploaded + 1))
	got="$mtype $mst $mn $msize"
	want="${types[i]} ${want_st[i]} ${want_n[i]} ${sizes[i]}"
	if [ "$got" != "$want" ]; then
		diag "META of $file: got [$got] want [$want]"; bad_meta=$((bad_meta + 1))
	fi
	stored+=("$i") stored_ids+=("$id")
done
download_all "$T_TMP/down" "${stored_ids[@]}"
for k in "${!stored[@]}"; do
	i=${stored[k]}
	cmp -s "$T_TMP/down/$k" "$PROFD_CORPUS/${files[i]}" || { diag "bytes differ: ${files[i]}"; bad_bytes=$((bad_bytes + 1)); }
done
is "$uploaded" 425 "425 protobuf corpus profiles accepted"
is "$bad_meta" 0 "META has the right type, sample types, samples and size"
is "$bad_bytes" 0 "every profile reads back byte-identical"
is "$legacy_ok" 1 "the legacy gperftools .prof is converted (598 samples, as go tool pprof reads it)"
n=$(api "/api/0/profiles?service=corpus&$W&limit=100000" | jq '.body | length')
is "$n" 426 "list finds all 426"
is "$(rows)" 426 "426 rows in the store"
is "$(blobs)" 426 "426 blob files"
first=$(api "/api/0/profiles?service=corpus&$W&limit=1" | jq -r '.body[0].created_at')
newest=$(api "/api/0/profiles?service=corpus&$W&limit=100000" | jq -r '[.body[].created_at] | sort | last')
is "$first" "$newest" "list is newest first"
created=$(api "/api/0/profiles?service=corpus&$W&labels=file=cpu_A_01.pb.gz&type=cpu" | jq -r '.body[] | select(.samples==198) | .created_at' | head -1)
is "$created" "$(date -u -d @1795307233.638768938 +%Y-%m-%dT%H:%M:%S.638768938Z)" "created_at is the profile's time_nanos (RFC 3339, UTC)"

# --- bad inputs --------------------------------------------------------------
r0=$(rows) b0=$(blobs)
bfiles=() bexpect=() breplies=()
: > "$T_TMP/bad.cfg"
while IFS=$'\t' read -r file expect _ _ _ desc; do
	[ "$file" = file ] && continue
	batch_upload "$T_TMP/bad.cfg" "$T_TMP/bad.${#bfiles[@]}" "$PROFD_CORPUS/$file" "service=bad&type=cpu"
	breplies+=("$T_TMP/bad.${#bfiles[@]}") bfiles+=("$file") bexpect+=("$expect")
done < "$PROFD_CORPUS/bad/MANIFEST.tsv"
mapfile -t codes < <(batch_run "$T_TMP/bad.cfg")
mapfile -t msgs < <(jq_each '.error? // ""' "${breplies[@]}")
for i in "${!bfiles[@]}"; do
	file=${bfiles[i]} expect=${bexpect[i]} code=${codes[i]:-} msg=${msgs[i]:-}
	case $expect in
	valid*) is "$code" 200 "$file is stored ($expect)" ;;
	*)
		case $code in
		4??) [ -n "$msg" ] && ok "$file refused: $code $msg" || not_ok "$file: no error message" ;;
		*) not_ok "$file refused with 4xx (got $code)" ;;
		esac ;;
	esac
done
nvalid=$(grep -c $'\tvalid' "$PROFD_CORPUS/bad/MANIFEST.tsv")
is "$(( $(rows) - r0 ))" "$nvalid" "bad inputs left no row (only the $nvalid valid ones)"
is "$(( $(blobs) - b0 ))" "$nvalid" "bad inputs left no blob"
is "$(find "$PROFD_DIR" -name '*.tmp*' | wc -l)" 0 "no temp files left"
upload "$PROFD_CORPUS/bad/zero_samples.pb.gz" "service=zero&type=cpu" >/dev/null; reply=$BODY
is "$(echo "$reply" | jq .body.samples)" 0 "zero-sample profile stored with samples=0"

# --- parameters and error paths -------------------------------------------
f=$PROFD_CORPUS/go/cpuburn/cpu_A_01.pb.gz
upload "$f" "type=cpu" >/dev/null; is "$HTTP_CODE" 400 "upload without service: 400"
upload "$f" "service=x" >/dev/null; is "$HTTP_CODE" 400 "upload without type: 400"
upload "$f" "service=x&type=wall" >/dev/null; reply=$BODY
is "$HTTP_CODE" 400 "unknown type: 400"
echo "$reply" | jq -e '.code == 400 and (.error | test("type"))' >/dev/null && ok "error envelope names the parameter" || not_ok "error envelope"
upload "$f" "service=x&type=cpu&labels=bad" >/dev/null; is "$HTTP_CODE" 400 "label without '=': 400"
upload "$f" "service=x&type=cpu&labels=1a=b" >/dev/null; is "$HTTP_CODE" 400 "bad label key: 400"
upload "$f" "service=x&type=cpu&labels=a=1,a=2" >/dev/null; is "$HTTP_CODE" 400 "duplicate label key: 400"
labels=$(seq -s, 1 65 | sed 's/\([0-9]*\)/k\1=v/g')
upload "$f" "service=x&type=cpu&labels=$labels" >/dev/null; is "$HTTP_CODE" 400 "65 labels: 400"
upload "$f" "service=x&type=cpu&created_at=yesterday" >/dev/null; is "$HTTP_CODE" 400 "bad created_at: 400"
is "$(rows)" "$((r0 + nvalid + 1))" "refused uploads stored nothing"
api /api/0/profiles/0123456789abcdefghij >/dev/null; is "$HTTP_CODE" 404 "unknown id: 404"
api /api/0/profiles/not-an-id >/dev/null; is "$HTTP_CODE" 400 "malformed id: 400"
api /api/0/nothing >/dev/null; is "$HTTP_CODE" 404 "unknown endpoint: 404"
api /api/0/profiles -X DELETE >/dev/null; is "$HTTP_CODE" 405 "DELETE /api/0/profiles: 405"
api /api/0/services -X POST >/dev/null; is "$HTTP_CODE" 405 "POST /api/0/services: 405"
api "/api/0/profiles?type=cpu" >/dev/null; is "$HTTP_CODE" 400 "list without service: 400"
api "/api/0/profiles?service=x&from=garbage" >/dev/null; is "$HTTP_CODE" 400 "list with bad from: 400"
api "/api/0/profiles?service=x&limit=-1" >/dev/null; is "$HTTP_CODE" 400 "list with bad limit: 400"
api "/api/0/profiles?service=nobody" | jq -e '.code == 200 and .body == []' >/dev/null &&
	ok "empty list is 200 with []" || not_ok "empty list is 200 with []"
head -c $((33 * 1024 * 1024)) /dev/zero > "$T_TMP/big"
code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary "@$T_TMP/big" "$PROFD_URL/api/0/profiles?service=big&type=cpu")
is "$code" 413 "33 MiB body: 413"
api /api/0/version | jq -e '.body.version and .body.commit and .body.libraries.sqlite' >/dev/null &&
	ok "version reports version, commit and libraries" || not_ok "version"

# --- list queries -------------------------------------------------------------
# Newer-timestamped host=a first, then an older host=b: a label query must
# still find the first (no index that silently misses out-of-order rows).
up() { upload "$f" "service=q&type=$1&created_at=$2&labels=$3" | jq -r .body.id; }
# created_at only applies when the profile has no time of its own, so use
# the zero-time gperftools profile for controlled timestamps.
f=$PROFD_CORPUS/gperftools/cworker.cpu.pb.gz
ida=$(up cpu 2026-01-01T12:00:00Z host=a,zone=z1)
idb=$(up cpu 2026-01-01T10:00:00Z host=b,zone=z1)
idc=$(up heap 2026-01-01T11:00:00Z host=a,zone=z2)
idd=$(up cpu 1767265200 host=a,zone=z2)   # 2026-01-01T11:00:00Z as Unix seconds
q() { api "/api/0/profiles?service=q&$1" | jq -r '[.body[].id] | join(" ")'; }
D='from=2026-01-01T00:00:00&to=2026-01-02T00:00:00'
is "$(q "$D&labels=host=a&type=cpu")" "$ida $idd" "labels=host=a after an older host=b arrived"
is "$(q "$D&labels=host=b")" "$idb" "labels=host=b"
is "$(q "$D&labels=host=a,zone=z2")" "$idd $idc" "labels AND (host=a,zone=z2), newest first"
is "$(q "$D&labels=host=a,zone=nope")" "" "labels AND with a missing value matches nothing"
is "$(q "$D&type=heap")" "$idc" "type filter"
is "$(q "$D")" "$ida $idd $idc $idb" "all types, newest first (ties: later id first)"
is "$(q "$D&limit=2")" "$ida $idd" "limit"
is "$(q "from=2026-01-01T11:00:00&to=2026-01-01T12:00:00")" "$ida $idd $idc" "profefe time format, both ends inclusive"
is "$(q "from=2026-01-01T11:00:00Z&to=2026-01-01T11:00:00%2B00:00")" "$idd $idc" "RFC 3339 (Z and +00:00)"
is "$(q "from=2026-01-01T12:00:00%2B01:00&to=2026-01-01T11:30:00.5Z")" "$idd $idc" "RFC 3339 with offset and fraction"
is "$(q "from=1767261600&to=1767265200")" "$idd $idc $idb" "Unix seconds"
id_now=$(upload "$f" "service=q&type=cpu&labels=host=now" | jq -r .body.id)
is "$(q "from=now-15m&labels=host=now")" "$id_now" "now-15m (default to=now)"
is "$(q "labels=host=now")" "$id_now" "default window is the last hour"
is "$(q "from=now-1h&to=now-30m&labels=host=now")" "" "now-1h..now-30m excludes a profile of now"
inst=$(upload "$f" "service=q&type=cpu&instance_id=pod-7&created_at=2026-01-01T09:00:00Z" | jq -r .body.id)
is "$(q "$D&labels=instance_id=pod-7")" "$inst" "instance_id is a label"
is "$(api "/api/0/labels?service=q&key=host" | jq -r '.body | join(",")')" "a,b,now" "label values of one key"
api "/api/0/labels?service=q" | jq -e '.body | index("host") and index("zone") and index("instance_id")' >/dev/null &&
	ok "label keys of a service" || not_ok "label keys of a service"
api /api/0/services | jq -e '.body | index("q") and index("corpus")' >/dev/null &&
	ok "services lists the services" || not_ok "services"
enc=$(upload "$f" "service=q&type=cpu&created_at=2026-01-01T08:00:00Z&labels=msg=a%20b%3Dc%2Cd" | jq -r .body.id)
is "$(q "$D&labels=msg=a%20b%3Dc%2Cd")" "$enc" "label values with encoded ' ', '=' and ',' round-trip"
is "$(api "/api/0/profiles/$enc" >/dev/null; echo "$HTTP_CODE")" 200 "get by id"

# --- parallel uploaders: 8 x 200, all stored exactly once --------------------
# 8 clients at once, each a curl sending its 200 uploads one after another.
r0=$(rows)
pids=
for w in 1 2 3 4 5 6 7 8; do
	: > "$T_TMP/par$w.cfg"
	for i in $(seq 1 200); do
		printf -v p %02d $(( (i % 50) + 1 ))
		batch_add "$T_TMP/par$w.cfg" /dev/null "/api/0/profiles?service=par&type=cpu&labels=w=$w,i=$i" \
		    "data-binary = \"@$PROFD_CORPUS/bench/pool/cpu_A_$p.pb.gz\""
	done
done
for w in 1 2 3 4 5 6 7 8; do
	batch_run "$T_TMP/par$w.cfg" > "$T_TMP/par.$w" &
	pids="$pids $!"
done
wait $pids
codes=$(cat "$T_TMP"/par.* | sort | uniq -c | awk '{print $2":"$1}' | tr '\n' ' ')
is "$codes" "200:1600 " "8 parallel uploaders x 200: all 200"
is "$(( $(rows) - r0 ))" 1600 "1600 new rows"
distinct=$(api "/api/0/profiles?service=par&$W&limit=100000" | jq '[.body[] | (.labels | map(.key + "=" + .value) | join(","))] | unique | length')
is "$distinct" 1600 "each (worker, i) stored exactly once"
is "$(blobs)" "$(rows)" "one blob per row"

# --- clients that vanish ----------------------------------------------------
port=${PROFD_URL##*:}
for i in 1 2 3 4 5; do
	# half a body, then hang up
	exec 3<>"/dev/tcp/127.0.0.1/$port"
	printf 'POST /api/0/profiles?service=gone&type=cpu HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n' >&3
	head -c 5000 "$PROFD_CORPUS/go/bigstacks/cpu_A_01.pb.gz" >&3
	exec 3>&-
	# a full upload of a large profile, closed before the reply
	exec 3<>"/dev/tcp/127.0.0.1/$port"
	sz=$(stat -c %s "$PROFD_CORPUS/go/bigstacks/heap_B_02.pb.gz")
	{ printf 'POST /api/0/profiles?service=gone2&type=heap HTTP/1.1\r\nHost: x\r\nContent-Length: %s\r\n\r\n' "$sz"; cat "$PROFD_CORPUS/go/bigstacks/heap_B_02.pb.gz"; } >&3
	exec 3>&-
	# a query, closed at once
	exec 3<>"/dev/tcp/127.0.0.1/$port"
	printf 'GET /api/0/profiles?service=corpus&%s&limit=100000 HTTP/1.1\r\nHost: x\r\n\r\n' "$W" >&3
	exec 3>&-
done
sleep 1
api /api/0/version >/dev/null
is "$HTTP_CODE" 200 "daemon serves after clients vanished mid-upload and mid-query"
is "$(store_sql "SELECT count(*) FROM profiles WHERE service='gone'")" 0 "a half-sent upload stored nothing"
kill -0 "$PROFD_PID" && ok "daemon still running" || not_ok "daemon still running"

# --- restart keeps everything ----------------------------------------------
profd_stop	# finishes uploads still in flight (the abandoned ones above)
before=$(rows)
profd_start --workers 2 --retention 0 || not_ok "profd restarts"
is "$(api "/api/0/profiles?service=corpus&$W&limit=100000" | jq '.body | length')" 426 "after restart the corpus is still listed"
is "$(rows)" "$before" "rows unchanged by restart"
grep -q 'no blob\|removed' "$PROFD_LOG" && not_ok "clean restart reports no orphans" || ok "clean restart reports no orphans"
done_testing
