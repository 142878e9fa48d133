#!/usr/bin/env bash
# Pyroscope's POST /ingest (and /pyroscope/ingest) with curl, as its SDKs
# send it: folded stacks (the default) and lines converted to pprof with
# the type's sample type and the period from sampleRate; pprof as the body
# (gzipped or raw) or as the part "profile" of a multipart body; the name
# "APP.TYPE{k=v}" giving service, type and labels, a bare name taking its
# type from the sample types or sample_type_config's display names;
# cumulative sample types taken from prev_profile (equal to go tool pprof
# -base); from/until in s, ms, us, ns or YYYYMMDD.
# 200 with an empty body; bad input 400 (415 for jfr) naming the problem
# and storing nothing; merges equal `go tool pprof`'s.
. "${top_srcdir:-.}/test/lib/e2e.sh"
. "${top_srcdir:-.}/test/e2e/pprof_read.sh"
command -v go >/dev/null 2>&1 || skip_all "go tool pprof not installed"
command -v jq >/dev/null 2>&1 || skip_all "jq not installed"

W='from=2020-01-01T00:00:00&to=2100-01-01T00:00:00'
C=$PROFD_CORPUS
profd_start || { not_ok "profd starts"; done_testing; }
# ingest QUERY [CURL ARGS...]: posts to /ingest; HTTP_CODE and BODY set.
ingest() {
	local q=$1
	shift
	BODY=$(curl -s -w '\n%{http_code}' "$@" "$PROFD_URL${INGEST_PATH:-/ingest}?$q")
	HTTP_CODE=$(tail -n 1 <<<"$BODY")
	BODY=$(sed '$d' <<<"$BODY")
}
# last SERVICE: the META of SERVICE's profile uploaded last (ids grow),
# read by one jq: M_ID, M_TYPE, M_ST (the sample types, as JSON),
# M_SAMPLES, M_LABELS (k=v,...), M_AT (created_at), M_DUR (duration_ns).
# HTTP_CODE stays the last ingest's.
last() {
	IFS=$'\037' read -r M_ID M_TYPE M_ST M_SAMPLES M_LABELS M_AT M_DUR < <(
	    curl -s "$PROFD_URL/api/0/profiles?service=$1&$W&limit=1000" |
	    jq -r '.body | max_by(.id) | [.id, .type, (.sample_types | tojson),
		.samples, (.labels | map(.key + "=" + .value) | join(",")),
		.created_at, .duration_ns] | map(tostring) | join("\u001f")')
}
printf 'main;work;hash 3\nmain;work 2\nmain;idle 5\nmain;work;hash 1\n' > "$T_TMP/f.txt"

# --- folded, the default --------------------------------------------------
ingest 'name=shop.cpu%7Benv%3Dprod%2Cregion%3Deu%7D&from=1764000000&until=1764000010&sampleRate=50&spyName=pyspy' \
    --data-binary "@$T_TMP/f.txt"
is "$HTTP_CODE" 200 "folded stacks (no format): 200"
is "$BODY" "" "... with an empty body, as Pyroscope answers"
last shop
is "$M_TYPE" cpu "APP.cpu: type cpu"
is "$M_LABELS" "converted_from=folded,env=prod,region=eu,spy=pyspy" "labels from the braces, spyName as spy, converted_from=folded"
is "$M_AT/$M_DUR" "2025-11-24T16:00:00Z/10000000000" "from is the time, until - from the duration"
is "$M_ST" '["samples/count","cpu/nanoseconds"]' "samples and cpu time"
curl -s -o "$T_TMP/one.pb.gz" "$PROFD_URL/api/0/profiles/$M_ID"
is "$(gopprof -raw "$T_TMP/one.pb.gz" 2>/dev/null | sed -n 's/^Period: //p')" 20000000 "the period is 1 s / sampleRate"
is "$(gopprof -top -sample_index=cpu "$T_TMP/one.pb.gz" 2>/dev/null | sed -n 's/.*% of \([0-9a-z.]*\) total/\1/p')" 220ms "11 samples at 20 ms: 220 ms"

INGEST_PATH=/pyroscope/ingest ingest 'name=shop.cpu%7Benv%3Dprod%7D&from=1764000060&until=1764000070&sampleRate=50' --data-binary "@$T_TMP/f.txt"
is "$HTTP_CODE" 200 "/pyroscope/ingest takes the same"
ingest 'name=shop%7Benv%3Dprod%7D&from=1764000120' --data-binary "@$T_TMP/f.txt"
last shop
is "$HTTP_CODE/$M_TYPE" 200/cpu "a bare name with folded stacks is cpu"
curl -s -o "$T_TMP/m.pb.gz" "$PROFD_URL/api/0/profiles/merge?service=shop&type=cpu&$W"
gopprof -top -sample_index=samples "$T_TMP/m.pb.gz" 2>/dev/null > "$T_TMP/mtop"
check "the three merge: hash 12 of its own ($(grep hash "$T_TMP/mtop" | head -n 1))" grep -Eq '^ +12 .* hash$' "$T_TMP/mtop"
i=0
for id in $(api "/api/0/profiles?service=shop&type=cpu&$W" | jq -r '.body[].id'); do
	i=$((i + 1))
	curl -s -o "$T_TMP/shop.$i.pb.gz" "$PROFD_URL/api/0/profiles/$id"
done
compare_merged "the merge of the converted folded profiles" "$T_TMP/m.pb.gz" "$T_TMP"/shop.*.pb.gz

# --- types and units -----------------------------------------------------
ingest 'name=shop.alloc_space&units=bytes&aggregationType=sum&from=1764000000' --data-binary "@$T_TMP/f.txt"
last shop
is "$HTTP_CODE/$M_TYPE/$M_ST" '200/heap/["alloc_space/bytes"]' "alloc_space: heap, in bytes"
ingest 'name=shop.inuse_objects&aggregationType=average&format=lines&from=1764000000' --data-binary $'a;b\na;b\na;c\n'
last shop
is "$HTTP_CODE/$M_TYPE/$M_ST/$M_SAMPLES" '200/heap/["inuse_objects/count"]/2' "format=lines: one count a line"
ingest 'name=shop.wall&from=1764000000&sampleRate=1000' --data-binary "@$T_TMP/f.txt"
last shop
is "$M_TYPE/$M_ST" 'other/["samples/count","wall/nanoseconds"]' "wall: type other, with wall time"
ingest 'name=shop.lock_duration&units=lock_nanoseconds&from=1764000000' --data-binary "@$T_TMP/f.txt"
last shop
is "$M_TYPE/$M_ST" 'mutex/["delay/nanoseconds"]' "lock_duration: mutex delay"
ingest 'name=shop.goroutines&from=1764000000' --data-binary "@$T_TMP/f.txt"
last shop
is "$M_TYPE" goroutine "goroutines: goroutine"
for t in 1764000000000:ms 1764000000000000:us 1764000000000000000:ns 20251124:YYYYMMDD; do
	ingest "name=times.cpu&from=${t%%:*}" --data-binary "@$T_TMP/f.txt"
	last times
	is "$HTTP_CODE/$M_AT" 200/$([ "${t#*:}" = YYYYMMDD ] && echo 2025-11-24T00:00:00Z || echo 2025-11-24T16:00:00Z) "from in ${t#*:}"
done

# --- pprof ---------------------------------------------------------------
f=$C/go/cpuburn/cpu_A_01.pb.gz
ingest 'name=gosvc%7Bpod%3Da%7D&format=pprof&sampleRate=17&from=1764000000' --data-binary "@$f" -H 'Content-Type: application/octet-stream'
last gosvc
is "$HTTP_CODE/$M_TYPE" 200/cpu "a gzipped pprof body with a bare name: type cpu from its sample types"
curl -s -o "$T_TMP/s.pb.gz" "$PROFD_URL/api/0/profiles/$M_ID"
check "... stored byte for byte" cmp -s "$f" "$T_TMP/s.pb.gz"
is "$(gopprof -raw "$T_TMP/s.pb.gz" 2>/dev/null | sed -n 's/^Period: //p')" "$(gopprof -raw "$f" 2>/dev/null | sed -n 's/^Period: //p')" "... its own period wins over sampleRate=17"
gzip -dc "$C/node/datadog/wall_01.pb.gz" > "$T_TMP/raw.pb"
ingest 'name=nodesvc&format=pprof' --data-binary "@$T_TMP/raw.pb"
last nodesvc
is "$HTTP_CODE/$M_TYPE" 200/other "a raw (not gzipped) Node wall profile: type other"
ingest 'name=nodesvc&format=pprof' --data-binary "@$C/node/google/heap_01.pb.gz"
last nodesvc
is "$HTTP_CODE/$M_TYPE" 200/heap "a Node heap profile (objects, space): heap"
ingest 'name=gosvc.alloc_objects&format=pprof' --data-binary "@$C/go/allocheavy/$(ls "$C/go/allocheavy" | head -n 1)"
last gosvc
is "$HTTP_CODE/$M_TYPE" 200/heap "APP.alloc_objects with a pprof: heap"

# multipart/form-data, as the Go, Python and Ruby SDKs post it.
printf '{"alloc_space":{"units":"bytes","aggregation":"sum"}}' > "$T_TMP/stc.json"
ingest 'name=gosvc.cpu%7Bpod%3Db%7D&from=1764000000&until=1764000010' -F "profile=@$f;filename=profile.pprof" -F "sample_type_config=@$T_TMP/stc.json"
last gosvc
is "$HTTP_CODE/$M_TYPE/$M_LABELS" 200/cpu/pod=b "multipart, part profile: 200"
curl -s -o "$T_TMP/s.pb.gz" "$PROFD_URL/api/0/profiles/$M_ID"
check "... the part stored byte for byte" cmp -s "$f" "$T_TMP/s.pb.gz"
ingest 'name=gosvc.cpu&format=pprof' -F "profile=@$f"
is "$HTTP_CODE" 200 "multipart with format=pprof"
curl -s -o "$T_TMP/g.pb.gz" "$PROFD_URL/api/0/profiles/merge?service=gosvc&type=cpu&$W"
gopprof -proto "$f" "$f" "$f" > "$T_TMP/g3.pb.gz" 2>/dev/null
for x in g g3; do
	gopprof -top -nodecount=100000 -nodefraction=0 "$T_TMP/$x.pb.gz" 2>/dev/null | sed -n '/flat%/,$p' | sort > "$T_TMP/$x.top"
done
check "merge of the three equals go tool pprof's ($(wc -l < "$T_TMP/g.top") rows)" cmp -s "$T_TMP/g.top" "$T_TMP/g3.top"

# sample_type_config as the Go SDK sends it: Go's block and mutex profiles
# have the same sample types; the display names tell them apart.
B=$C/go/contention
printf '{"contentions":{"display-name":"block_count","units":"lock_samples"},"delay":{"display-name":"block_duration","units":"lock_nanoseconds"}}' > "$T_TMP/block.json"
printf '{"contentions":{"display-name":"mutex_count","units":"lock_samples"},"delay":{"display-name":"mutex_duration","units":"lock_nanoseconds"}}' > "$T_TMP/mutex.json"
ingest 'name=goapp%7B__session_id__%3Dabc%7D&from=1764000000000000000&until=1764000010000000000&spyName=gospy&sampleRate=0&units=&aggregationType=' \
    -F "profile=@$B/block_A_01.pb.gz;filename=profile.pprof" -F "sample_type_config=@$T_TMP/block.json;filename=sample_type_config.json"
last goapp
is "$HTTP_CODE/$M_TYPE" 200/block "a bare name, block_count in sample_type_config: block (empty units, sampleRate=0 as the Go SDK sends)"
ingest 'name=goapp&from=1764000000000000000&spyName=gospy' \
    -F "profile=@$B/mutex_A_01.pb.gz" -F "sample_type_config=@$T_TMP/mutex.json"
last goapp
is "$HTTP_CODE/$M_TYPE" 200/mutex "... mutex_count: mutex"
last goapp
is "$M_LABELS" "spy=gospy" "... labels: spy"
# cumulative sample types with prev_profile (old SDKs): the delta, which
# equals go tool pprof -base of the two.
A=$C/go/allocheavy
printf '{"alloc_objects":{"units":"objects","cumulative":true},"alloc_space":{"units":"bytes","cumulative":true},"inuse_space":{"units":"bytes","aggregation":"average"}}' > "$T_TMP/cum.json"
ingest 'name=deltaapp&from=1764000000' -F "profile=@$A/allocs_A_02.pb.gz" -F "prev_profile=@$A/allocs_A_01.pb.gz" -F "sample_type_config=@$T_TMP/cum.json"
last deltaapp
is "$HTTP_CODE/$M_TYPE" 200/heap "cumulative alloc_* with prev_profile: 200, heap"
curl -s -o "$T_TMP/d.pb.gz" "$PROFD_URL/api/0/profiles/$M_ID"
for i in 0 1; do
	top "$i" "$T_TMP/d.pb.gz" > "$T_TMP/d.top"
	top "$i" -base "$A/allocs_A_01.pb.gz" "$A/allocs_A_02.pb.gz" > "$T_TMP/b.top"
	check "... $(names_of "$T_TMP/d.pb.gz" | sed -n "$((i + 1))p"): the delta equals go tool pprof -base ($(wc -l < "$T_TMP/d.top") rows, $(sed -n 's/^total //p' "$T_TMP/d.top"))" cmp -s "$T_TMP/d.top" "$T_TMP/b.top"
done
top 3 "$T_TMP/d.pb.gz" > "$T_TMP/d.top"
top 3 "$A/allocs_A_02.pb.gz" > "$T_TMP/b.top"
check "... inuse_space, not cumulative, as in the later profile" cmp -s "$T_TMP/d.top" "$T_TMP/b.top"

# --- refused, storing nothing ---------------------------------------------
n0=$(api "/api/0/profiles?$W&limit=100000" | jq '.body | length')
# refused CODE WANT QUERY [CURL ARGS...]
refused() {
	local code=$1 want=$2 q=$3 err
	shift 3
	ingest "$q" "$@"
	err=$(jq -r .error <<<"$BODY" 2>/dev/null)
	is "$HTTP_CODE" "$code" "$q: $code ($(head -c 120 <<<"$err"))"
	check "... saying \"$want\"" grep -qF "$want" <<<"$err"
}
D=(--data-binary "@$T_TMP/f.txt")
refused 400 'name is required' 'from=1764000000' "${D[@]}"
refused 400 'not ' 'name=my%20app' "${D[@]}"
refused 400 "has no '='" 'name=app%7Bk%7D' "${D[@]}"
refused 400 "closing" 'name=app%7Bk%3Dv' "${D[@]}"
refused 400 'given twice' 'name=app%7Bk%3Dv%2Ck%3Dw%7D' "${D[@]}"
refused 400 'label key' 'name=app%7B9k%3Dv%7D' "${D[@]}"
refused 400 'profile type' 'name=my.service' "${D[@]}"
refused 400 'parameter from' 'name=app.cpu&from=yesterday' "${D[@]}"
refused 400 'before from' 'name=app.cpu&from=1764000010&until=1764000000' "${D[@]}"
refused 400 'sampleRate' 'name=app.cpu&sampleRate=-5' "${D[@]}"
refused 400 'units' 'name=app.cpu&units=furlongs' "${D[@]}"
refused 400 'aggregationType' 'name=app.cpu&aggregationType=max' "${D[@]}"
refused 415 'not supported yet' 'name=app.cpu&format=jfr' "${D[@]}"
refused 415 'not supported' 'name=app.cpu&format=trie' "${D[@]}"
refused 400 'parameter format' 'name=app.cpu&format=xml' "${D[@]}"
refused 400 'line 1' 'name=app.cpu' --data-binary 'main;work'
refused 400 'invalid profile' 'name=app&format=pprof' --data-binary "@$C/bad/truncated_gzip.pb.gz"
refused 400 'part named "profile"' 'name=app.cpu' -F "other=@$f"
refused 400 'boundary' 'name=app.cpu' -H 'Content-Type: multipart/form-data' --data-binary 'x'
refused 400 'not closed' 'name=app.cpu' -H 'Content-Type: multipart/form-data; boundary=XyZ' --data-binary $'--XyZ\r\nContent-Disposition: form-data; name="profile"\r\n\r\nabc'
refused 400 'empty body' 'name=app.cpu' -X POST
refused 422 'no prev_profile' 'name=app' -F "profile=@$A/allocs_A_02.pb.gz" -F "sample_type_config=@$T_TMP/cum.json"
printf '{"alloc_space": 5}' > "$T_TMP/bad.json"
refused 400 'sample_type_config: "alloc_space"' 'name=app' -F "profile=@$f" -F "sample_type_config=@$T_TMP/bad.json"
printf '{"alloc_space": {' > "$T_TMP/bad.json"
refused 400 'sample_type_config: line 1' 'name=app' -F "profile=@$f" -F "sample_type_config=@$T_TMP/bad.json"
refused 400 'prev_profile: ' 'name=app' -F "profile=@$A/allocs_A_02.pb.gz" -F "prev_profile=@$T_TMP/bad.json" -F "sample_type_config=@$T_TMP/cum.json"
head -c 34000000 /dev/zero > "$T_TMP/huge"
refused 413 'max-body' 'name=app.cpu' --data-binary "@$T_TMP/huge"
is "$(api "/api/0/profiles?$W&limit=100000" | jq '.body | length')" "$n0" "the refused uploads stored nothing"
is "$(curl -s -o /dev/null -w '%{http_code}' "$PROFD_URL/ingest")" 405 "GET /ingest: 405"
profd_stop
done_testing
