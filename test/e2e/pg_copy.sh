#!/usr/bin/env bash
# profd --copy-to: an embedded store of the whole corpus is copied into
# PostgreSQL (once cut short by SIGKILL, then resumed), checked by the copy
# itself, and served by a collector on PostgreSQL exactly as by the
# original: the same list (ids, times, labels), the same bytes, the same
# merge. Then copied back into a new data directory, the same again.
. "${top_srcdir:-.}/test/lib/e2e.sh"
. "${top_srcdir:-.}/test/e2e/pprof_read.sh"
[ -d "$PROFD_CORPUS" ] || skip_all "corpus not found at $PROFD_CORPUS"
command -v jq >/dev/null || skip_all "jq not installed"
pg_available || skip_all "PostgreSQL server not installed"

W='from=2020-01-01T00:00:00&to=2100-01-01T00:00:00'
pg_start && URI=$(pg_db copydst) || { not_ok "PostgreSQL starts"; done_testing; }

# The source: every good corpus profile, three labels each.
profd_start --workers 2 || { not_ok "profd starts"; done_testing; }
SRC=$PROFD_DIR
# (one curl for all the uploads, one for all the reads: test/lib/e2e.sh,
# batch_run)
files=() k=0
: > "$T_TMP/up.cfg"
while IFS=$'\t' read -r file _ type _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ raw; do
	[ "$raw" = ok ] || continue
	case $type in allocs) type=heap ;; wall) type=other ;; esac
	case $type in cpu|heap|block|mutex|goroutine|threadcreate|other) ;; *) continue ;; esac
	batch_upload "$T_TMP/up.cfg" "$T_TMP/up.$k" "$PROFD_CORPUS/$file" \
	    "service=copy-$type&type=$type&labels=n=$k,host=h$((k % 7)),zone=z$((k % 3))"
	files+=("$file") k=$((k + 1))
done < <(tail -n +2 "$PROFD_CORPUS/MANIFEST.tsv")
mapfile -t codes < <(batch_run "$T_TMP/up.cfg")
replies=()
for k in "${!files[@]}"; do replies+=("$T_TMP/up.$k"); done
mapfile -t ids < <(jq_each '.body.id? // ""' "${replies[@]}")
held=() heldids=()
for k in "${!files[@]}"; do
	[ "${codes[k]:-}" = 200 ] || continue
	held+=("$k") heldids+=("${ids[k]}")
done
n=${#held[@]}
# the bytes the embedded store holds (a legacy gperftools file is stored
# converted)
download_all "$T_TMP/held" "${heldids[@]}"
for i in "${!held[@]}"; do
	k=${held[i]}
	printf '%s\t%s\n' "${ids[k]}" "$T_TMP/held/$i" >> "$T_TMP/files"
	case ${files[k]} in *.prof) ;; *) cmp -s "$T_TMP/held/$i" "$PROFD_CORPUS/${files[k]}" || echo "${files[k]}" >> "$T_TMP/changed" ;; esac
done
check "$n corpus profiles in the embedded store" [ "$n" -ge 100 ]
is "$(cat "$T_TMP/changed" 2>/dev/null | wc -l)" 0 "... each pprof held as uploaded, byte for byte"
# snapshot: every profile of every service, "id service type time size labels".
snapshot() {
	local s
	for s in $(curl -s "$PROFD_URL/api/0/services" | jq -r '.body[]'); do
		curl -s "$PROFD_URL/api/0/profiles?service=$s&$W&limit=100000" |
		    jq -r '.body[] | [.id, .service, .type, .created_at, .size, ([.labels[] | .key + "=" + .value] | join(","))] | @tsv'
	done | sort
}
snapshot > "$T_TMP/src.list"
curl -s -D "$T_TMP/src.h" -o "$T_TMP/src.merge" "$PROFD_URL/api/0/profiles/merge?service=copy-cpu&type=cpu&$W"
profd_stop

# Cut short, then resumed.
"$PROFD" --copy-to "$URI" --data-dir "$SRC" > "$T_TMP/copy0.out" 2> "$T_TMP/copy0.err" &
cpid=$!
sleep 0.3
kill -KILL "$cpid" 2>/dev/null
wait "$cpid" 2>/dev/null
part=$(pg_sql copydst 'SELECT count(*) FROM profiles' 2>/dev/null || echo 0)
diag "the copy was killed after ${part:-0} of $n profiles"
"$PROFD" --copy-to "$URI" --data-dir "$SRC" > "$T_TMP/copy1.out" 2> "$T_TMP/copy1.err"
is "$?" 0 "the copy to PostgreSQL, run again, completes"
diag "$(cat "$T_TMP/copy1.out")"
c=$(sed -n 's/^copied \([0-9]*\) profiles.*/\1/p' "$T_TMP/copy1.out")
t=$(sed -n 's/.*, \([0-9]*\) were there already.*/\1/p' "$T_TMP/copy1.out")
is "$((c + t))" "$n" "... copied plus already there is every profile ($c + $t)"
check "... and its check found every one identical" grep -q "checked $n profiles .*: all identical" "$T_TMP/copy1.out"
"$PROFD" --copy-to "$URI" --data-dir "$SRC" > "$T_TMP/copy2.out" 2>&1
check "a third run copies nothing and checks everything again" \
	grep -q "^copied 0 profiles (0 bytes), $n were there already; checked $n profiles" "$T_TMP/copy2.out"

# Served from PostgreSQL like the original.
PROFD_TEST_STORE=postgresql
PROFD_DIR=$T_TMP/copydst	# profd_start: database copydst
mkdir -p "$PROFD_DIR"
profd_start --workers 2 || { not_ok "profd starts on the copy"; done_testing; }
snapshot > "$T_TMP/pg.list"
is "$(diff "$T_TMP/src.list" "$T_TMP/pg.list" | wc -l)" 0 "the collector on PostgreSQL lists the same profiles (ids, times, sizes, labels)"
# same_bytes: how many profiles do not read back as the source held them.
same_bytes() {
	local id f bad=0 k=0
	download_all "$T_TMP/a" $(cut -f1 "$T_TMP/files")
	while IFS=$'\t' read -r id f; do
		cmp -s "$T_TMP/a/$k" "$f" || bad=$((bad + 1))
		k=$((k + 1))
	done < "$T_TMP/files"
	echo "$bad"
}
is "$(same_bytes)" 0 "every profile reads back from PostgreSQL as the source held it"
curl -s -D "$T_TMP/pg.h" -o "$T_TMP/pg.merge" "$PROFD_URL/api/0/profiles/merge?service=copy-cpu&type=cpu&$W"
if command -v go >/dev/null; then
	a=$(top 1 "$T_TMP/src.merge" | md5sum) b=$(top 1 "$T_TMP/pg.merge" | md5sum)
	check "the merge of the CPU profiles is the same (go tool pprof -top, $(top 1 "$T_TMP/src.merge" | wc -l) rows)" [ "$a" = "$b" ]
fi
is "$(tr -d '\r' < "$T_TMP/pg.h" | sed -n 's/^X-Profd-Merge-Profiles: //Ip')" \
    "$(tr -d '\r' < "$T_TMP/src.h" | sed -n 's/^X-Profd-Merge-Profiles: //Ip')" "... of as many profiles"
profd_stop

# And back into a new data directory.
BACK=$T_TMP/back
"$PROFD" --copy-to "$BACK" --store "$URI" > "$T_TMP/copy3.out" 2> "$T_TMP/copy3.err"
is "$?" 0 "the copy back into a data directory completes"
check "... copied $n, all identical" grep -q "^copied $n profiles .*checked $n profiles .*all identical" "$T_TMP/copy3.out"
PROFD_TEST_STORE=embedded
PROFD_DIR=$BACK
profd_start --workers 2 || { not_ok "profd starts on the copy back"; done_testing; }
snapshot > "$T_TMP/back.list"
is "$(diff "$T_TMP/src.list" "$T_TMP/back.list" | wc -l)" 0 "the copy back lists the same profiles"
is "$(same_bytes)" 0 "every profile of the copy back reads back as the source held it"
profd_stop
"$PROFD" --copy-to "$URI" --store "$URI" > /dev/null 2> "$T_TMP/same.err"
is "$?" 1 "a copy onto itself is refused"
done_testing
