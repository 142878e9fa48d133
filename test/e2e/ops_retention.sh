#!/usr/bin/env bash
# End-to-end test of retention: profiles older than --retention disappear
# from list, get (404), merge (by query and by ids), meta.db and the blob
# directory, in batches of 500, while younger ones stay; the metrics count
# the deletions; --retention 2s expires a profile stored at its arrival
# time; --retention 0 keeps everything.
. "${top_srcdir:-.}/test/lib/e2e.sh"
[ -d "$PROFD_CORPUS" ] || skip_all "corpus not found at $PROFD_CORPUS"
command -v jq >/dev/null || skip_all "jq not installed"
command -v sqlite3 >/dev/null || skip_all "sqlite3 not installed"

# cworker.cpu.pb.gz has time_nanos 0, so created_at decides its age.
F=$PROFD_CORPUS/gperftools/cworker.cpu.pb.gz
rows() { sqlite3 "$PROFD_DIR/meta.db" "SELECT count(*) FROM profiles ${1:-}" 2>/dev/null; }
blob() { echo "$PROFD_DIR/blobs/${1:0:2}/$1"; }
code() { api "$1" -o /dev/null >/dev/null; echo "$HTTP_CODE"; }
rows_are() { [ "$(rows)" = "$1" ]; }
# wait_for CMD...: retries CMD for up to 20 s.
wait_for() { local i; for i in $(seq 1 200); do "$@" && return 0; sleep 0.1; done; return 1; }

# Everything is uploaded while retention is off, so one sweep meets it all.
profd_start --retention 0 --workers 2 || { not_ok "profd starts"; done_testing; }
ok "profd starts with --retention 0"

# 1001 old profiles (three batches of at most 500) in one curl run over one connection.
urls=()
for i in $(seq 1 1001); do
	urls+=("$PROFD_URL/api/0/profiles?service=ret&type=cpu&created_at=now-1h&labels=age=old,i=$i")
done
t0=$(date +%s%N)
curl -s -w '\n@@%{http_code}\n' --data-binary "@$F" "${urls[@]}" | sed -n 's/^@@//p' > "$T_TMP/old.codes"
t1=$(date +%s%N)
is "$(sort "$T_TMP/old.codes" | uniq -c | awk '{print $2":"$1}')" "200:1001" "1001 old profiles uploaded"
diag "1001 uploads in $(( (t1 - t0) / 1000000 )) ms"
old1=$(upload "$F" "service=ret&type=cpu&created_at=now-2h&labels=age=old,i=a" | jq -r .body.id)
old2=$(upload "$F" "service=ret&type=cpu&created_at=now-31m&labels=age=old,i=b" | jq -r .body.id)
young1=$(upload "$F" "service=ret&type=cpu&created_at=now-1m&labels=age=young" | jq -r .body.id)
young2=$(upload "$F" "service=ret&type=cpu&created_at=now-29m&labels=age=young" | jq -r .body.id)
young3=$(upload "$F" "service=ret&type=cpu&labels=age=young" | jq -r .body.id)
sleep 1.2
is "$(rows)" 1006 "--retention 0: nothing swept"
profd_stop
profd_start --retention 30m --retention-interval 1s --workers 2 ||
	{ not_ok "profd restarts with --retention 30m"; done_testing; }
check "blob files of old profiles exist before the sweep" test -f "$(blob "$old1")"

wait_for rows_are 3 && ok "the sweep leaves only the 3 young rows" ||
	{ not_ok "the sweep leaves only the 3 young rows (have $(rows))"; }
listed=$(api "/api/0/profiles?service=ret&from=now-3h&limit=10000" | jq -r '[.body[].id] | sort | join(" ")')
is "$listed" "$(printf '%s\n' "$young1" "$young2" "$young3" | sort | tr '\n' ' ' | sed 's/ $//')" "list shows only the young profiles"
is "$(code "/api/0/profiles/$old1")" 404 "get of an expired profile: 404"
is "$(code "/api/0/profiles/$old2")" 404 "get of a profile 31 minutes old: 404"
is "$(code "/api/0/profiles/$young2")" 200 "get of a profile 29 minutes old: 200"
is "$(code "/api/0/profiles/$old1+$old2")" 404 "merge by ids of expired profiles: 404"
is "$(code "/api/0/profiles/$young1+$young2")" 200 "merge by ids of young profiles: 200"
is "$(code "/api/0/profiles/merge?service=ret&type=cpu&from=now-3h&to=now-40m")" 404 "merge over the expired window: nothing to merge"
is "$(curl -s -o "$T_TMP/merged.pb.gz" -w '%{http_code}' "$PROFD_URL/api/0/profiles/merge?service=ret&type=cpu&from=now-3h")" 200 "merge over everything: 200"
if command -v go >/dev/null; then
	# the merge holds the 3 young profiles' samples, not the 1003 old ones
	one=$(gopprof -raw "$F" 2>/dev/null | awk '/^Samples:/{s=1;next} /^Locations/{s=0} s && $1 ~ /^[0-9]+$/ {n+=$1} END{print n}')
	got=$(gopprof -raw "$T_TMP/merged.pb.gz" 2>/dev/null | awk '/^Samples:/{s=1;next} /^Locations/{s=0} s && $1 ~ /^[0-9]+$/ {n+=$1} END{print n}')
	is "$got" "$(( one * 3 ))" "merged sample count is that of the 3 young profiles"
fi
gone=0
for id in "$old1" "$old2"; do [ -e "$(blob "$id")" ] && gone=1; done
is "$gone" 0 "blob files of expired profiles are gone"
is "$(find "$PROFD_DIR/blobs" -type f | wc -l)" 3 "3 blob files left"
is "$(sqlite3 "$PROFD_DIR/meta.db" 'SELECT count(*) FROM profile_labels WHERE profile_pk NOT IN (SELECT pk FROM profiles)')" 0 "no label links of deleted rows remain"
is "$(api "/api/0/labels?service=ret" | jq -c .body) $(api "/api/0/labels?service=ret&key=age" | jq -c .body)" '["age"] ["young"]' "label listings forget the expired labels"
is "$(sqlite3 "$PROFD_DIR/meta.db" 'PRAGMA freelist_count')" 0 "freed pages went back to the file system"
is "$(metric profd_retention_deleted_profiles_total)" 1003 "metrics: 1003 deleted"
grep -q 'retention: deleted 1003 profiles .*(3 batches)' "$PROFD_LOG" &&
	ok "the sweep ran in 3 batches" ||
	{ not_ok "the sweep ran in 3 batches"; grep retention "$PROFD_LOG" | sed 's/^/# /'; }
grep -o 'retention: deleted 1003.*' "$PROFD_LOG" | sed 's/^/# /'
# an upload that is already expired is refused, not acknowledged and swept
upload "$F" "service=ret&type=cpu&created_at=now-5h" >/dev/null
is "$HTTP_CODE" 400 "an upload that is already expired is refused"
is "$(rows)" 3 "and nothing was stored"
profd_stop

# --retention 2s: a profile stored at arrival time expires within seconds.
profd_start --retention 2s --retention-interval 500ms || { not_ok "profd restarts"; done_testing; }
new=$(upload "$F" "service=ret2&type=cpu" | jq -r .body.id)
is "$(code "/api/0/profiles/$new")" 200 "a fresh profile is there"
wait_for rows_are 0 && ok "--retention 2s: every profile expires" || not_ok "--retention 2s: every profile expires (rows $(rows))"
is "$(code "/api/0/profiles/$new")" 404 "the fresh profile is gone after 2s"
is "$(find "$PROFD_DIR/blobs" -type f | wc -l)" 0 "no blob files left"
profd_stop

# --retention 0 keeps forever.
profd_start --retention 0 --retention-interval 200ms || { not_ok "profd restarts"; done_testing; }
ancient=$(upload "$F" "service=ret0&type=cpu&created_at=2001-01-01T00:00:00" | jq -r .body.id)
sleep 1
is "$(code "/api/0/profiles/$ancient")" 200 "--retention 0 keeps a profile from 2001"
is "$(metric profd_retention_sweeps_total)" 0 "and runs no sweeps"
done_testing
