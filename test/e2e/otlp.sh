#!/usr/bin/env bash
# OTLP/HTTP profiles (POST /v1development/profiles): the corpus's profiles
# converted to OTLP (protobuf and JSON, gzipped and not) by a test-side
# converter built on the messages protoc-gen-es generated from proto/
# (test/protojs/otlp.mjs), posted with curl, stored one profile per
# (resource, OTLP profile), and merged equal to `go tool pprof -top` of
# the originals for every sample type (through the query API's flame
# graph: total and self per function). Then bad bodies: out-of-range
# references in every table, nesting and table bombs, truncated protobuf,
# JSON of the wrong shape, wrong content types: 400 (415), nothing stored.
# And the partial success: a profile dated outside --retention is counted
# as rejected while the others of its request are stored.
. "${top_srcdir:-.}/test/lib/e2e.sh"
. "${top_srcdir:-.}/test/e2e/pprof_read.sh"

C=$PROFD_CORPUS
G=$C/go
JS=${top_srcdir:-.}/test/protojs
command -v go >/dev/null 2>&1 || skip_all "go tool pprof not installed"
command -v jq >/dev/null 2>&1 || skip_all "jq not installed"
command -v node >/dev/null 2>&1 || skip_all "node not installed"
[ -d "$JS/node_modules/@bufbuild/protobuf" ] ||
    skip_all "test/protojs's npm packages not installed (tools/deps.sh --test)"
[ -d "$G" ] || skip_all "corpus not found at $C"
"$JS/gen.sh" "${top_srcdir:-.}" >"$T_TMP/gen.log" 2>&1 ||
    { sed 's/^/# /' "$T_TMP/gen.log"; skip_all "buf generate failed"; }

profd_start || { not_ok "profd starts"; done_testing; }
START=946684800000
END=4102444800000

# post FILE CONTENT-TYPE [CURL ARGS...]: sets CODE and leaves the answer
# in $T_TMP/ans.
post() {
	CODE=$(curl -s -o "$T_TMP/ans" -w '%{http_code}' -H "Content-Type: $2" \
	    "${@:3}" --data-binary "@$1" "$PROFD_URL/v1development/profiles")
}
# stored: how many profiles the store holds.
stored() { store_sql "SELECT count(*) FROM profiles"; }
# types_of FILE: "name unit" per sample type.
types_of() {
	gopprof -raw "$1" 2>/dev/null | awk '/^Samples:/ { getline;
	    for (i = 1; i <= NF; i++) { split($i, a, "/");
	    sub(/\[dflt\]$/, "", a[2]); print a[1], a[2] } exit }'
}
# selfs FILE: "self name" per function of a flame graph answer, sorted.
selfs() {
	jq -r '.flamegraph as $f | ($f.levels // [])[1:][] | .values |
	    [range(0; length; 4) as $i | "\(.[$i+2])\t\($f.names[.[$i+3] |
	    tonumber])"] | .[]' "$1" | awk -F'\t' '{ s[$2] += $1 }
	    END { for (n in s) if (s[n] != 0) printf "%.0f %s\n", s[n], n }' |
	    LC_ALL=C sort
}

# kind SERVICE TYPE PTNAME PERIOD FILE1 FILE2 FILE3: the first two files in
# one protobuf request, the third as gzipped JSON; then every sample type
# merged against pprof.
kind() {
	local svc=$1 type=$2 ptname=$3 period=$4 i=0 name unit id total ptotal
	shift 4
	node "$JS/otlp.mjs" convert "$T_TMP/$svc.pb" proto "$svc" "$1" "$2" &&
	    node "$JS/otlp.mjs" convert "$T_TMP/$svc.json" json "$svc" "$3" ||
	    { not_ok "$svc: the converter runs"; return; }
	post "$T_TMP/$svc.pb" application/x-protobuf
	is "$CODE $(od -An -tx1 "$T_TMP/ans" | tr -d ' \n')" "200 " \
	    "$svc: protobuf request stored (an empty ExportProfilesServiceResponse)"
	gzip -c "$T_TMP/$svc.json" >"$T_TMP/$svc.json.gz"
	post "$T_TMP/$svc.json.gz" application/json -H 'Content-Encoding: gzip'
	is "$CODE $(cat "$T_TMP/ans")" "200 {}" "$svc: gzipped JSON stored"
	while read -r name unit; do
		id="$ptname:$name:$unit:${period:-$name:$unit}"
		top "$i" "$@" >"$T_TMP/pp"
		ptotal=$(sed -n 's/^total \([0-9]*\).*/\1/p' "$T_TMP/pp")
		grep -v '^total ' "$T_TMP/pp" |
		    sed -E 's/ \((partial-)?inline\)$//; s/^([0-9]+)[a-zA-Z]* ([0-9]+)[a-zA-Z]* /\1 \2 /' |
		    awk '$1 != 0 { f = $1; $1 = ""; $2 = ""; sub(/^ +/, "");
		    print f, $0 }' | LC_ALL=C sort >"$T_TMP/pp.flat"
		curl -s -H 'Content-Type: application/json' -d "{\"profileTypeID\":\"$id\",\"labelSelector\":\"{service_name=\\\"$svc\\\"}\",\"start\":\"$START\",\"end\":\"$END\",\"maxNodes\":\"1000000\"}" \
		    "$PROFD_URL/querier.v1.QuerierService/SelectMergeStacktraces" \
		    >"$T_TMP/fg.json"
		total=$(jq -r '.flamegraph.total // "0"' "$T_TMP/fg.json")
		selfs "$T_TMP/fg.json" >"$T_TMP/fg.self"
		if [ "$total" = "$ptotal" ] &&
		    cmp -s "$T_TMP/fg.self" "$T_TMP/pp.flat"; then
			ok "$svc $name: merged = pprof -top of the originals (total $total, $(wc -l <"$T_TMP/fg.self") functions)"
		else
			not_ok "$svc $name: total $total, pprof $ptotal"
			diff "$T_TMP/fg.self" "$T_TMP/pp.flat" | head -5 |
			    sed 's/^/# /'
		fi
		i=$((i + 1))
	done < <(types_of "$1")
	api "/api/0/profiles?service=$svc&type=$type&from=2000-01-01T00:00:00&to=2100-01-01T00:00:00&limit=1000" >/dev/null
	is "$(jq '.body | length' <<<"$BODY")" "$((3 * $(types_of "$1" | wc -l)))" \
	    "$svc: one stored $type profile per file and sample type"
}

kind otlp-cpu cpu process_cpu cpu:nanoseconds $G/cpuburn/cpu_A_0[1-3].pb.gz
kind otlp-heap heap memory space:bytes $G/allocheavy/allocs_A_0[1-3].pb.gz
kind otlp-mutex mutex mutex contentions:count $G/contention/mutex_A_0[1-3].pb.gz
kind otlp-goroutine goroutine goroutines goroutine:count \
    $G/goroutines/goroutine_A_0[1-3].pb.gz
kind otlp-wall other other "" $C/node/datadog/wall_0[1-3].pb.gz
api "/api/0/profiles?service=otlp-cpu&type=cpu&from=2000-01-01T00:00:00&limit=1" >/dev/null
is "$(jq -r '[.body[0].labels[] | .key] | join(",")' <<<"$BODY")" \
    "converted_from,host.name" "labels: the resource's attributes, and converted_from"

# --- bad bodies: 400 (or 415), nothing stored ---------------------------------
before=$(stored)
for k in stack_index location function string mapping attribute depth bomb \
    samples_bomb; do
	node "$JS/otlp.mjs" bad "$T_TMP/bad.$k" "$k"
	post "$T_TMP/bad.$k" application/x-protobuf
	msg=$(jq -r .error "$T_TMP/ans" 2>/dev/null)
	if [ "$CODE" = 400 ] && [ -n "$msg" ]; then
		ok "bad $k: 400 ($msg)"
	else
		not_ok "bad $k: $CODE $(head -c 200 "$T_TMP/ans")"
	fi
done
node "$JS/otlp.mjs" bad "$T_TMP/bad.json" stack_index json
post "$T_TMP/bad.json" application/json
is "$CODE" 400 "bad stack_index in JSON: 400"
head -c 1000 "$T_TMP/otlp-cpu.pb" >"$T_TMP/cut.pb"
post "$T_TMP/cut.pb" application/x-protobuf
is "$CODE" 400 "truncated protobuf: 400 ($(jq -r .error "$T_TMP/ans"))"
printf '{"resourceProfiles":{"resource":1}}' >"$T_TMP/shape.json"
post "$T_TMP/shape.json" application/json
is "$CODE" 400 "JSON of the wrong shape: 400 ($(jq -r .error "$T_TMP/ans"))"
printf '{"resourceProfiles":[' >"$T_TMP/cut.json"
post "$T_TMP/cut.json" application/json
is "$CODE" 400 "truncated JSON: 400"
post "$T_TMP/otlp-cpu.pb" text/plain
is "$CODE" 415 "Content-Type text/plain: 415"
post "$T_TMP/otlp-cpu.pb" application/x-protobuf -H 'Content-Encoding: br'
is "$CODE" 415 "Content-Encoding br: 415"
printf 'not gzip' >"$T_TMP/ng"
post "$T_TMP/ng" application/x-protobuf -H 'Content-Encoding: gzip'
is "$CODE" 400 "a gzip body that is not: 400"
is "$(stored)" "$before" "nothing stored by any of them"

# --- partial success ---------------------------------------------------------
node "$JS/otlp.mjs" bad "$T_TMP/partial.pb" partial
post "$T_TMP/partial.pb" application/x-protobuf
is "$CODE" 200 "a request with one profile past --max-future: 200"
node -e '
import("'"$JS"'/node_modules/@bufbuild/protobuf/dist/esm/index.js").then(async (pb) => {
  const m = await import("'"$JS"'/gen/opentelemetry/proto/collector/profiles/v1development/profiles_service_pb.js");
  const r = pb.fromBinary(m.ExportProfilesServiceResponseSchema,
      require("fs").readFileSync(process.argv[1]));
  console.log(`${r.partialSuccess?.rejectedProfiles} ${r.partialSuccess?.errorMessage}`);
});' "$T_TMP/ans" >"$T_TMP/ps" 2>&1
check "partial_success: 1 rejected, the reason named ($(cat "$T_TMP/ps"))" \
    grep -q '^1 resource_profiles\[0\].scope_profiles\[0\].profiles\[1\]: .*max-future' "$T_TMP/ps"
is "$(stored)" "$((before + 1))" "...and the other profile stored"
node "$JS/otlp.mjs" bad "$T_TMP/partial.json" partial json
post "$T_TMP/partial.json" application/json
is "$CODE $(jq -r .partialSuccess.rejectedProfiles "$T_TMP/ans")" "200 1" \
    "the same in JSON: partialSuccess.rejectedProfiles 1 (an int64 as a string)"
done_testing
