#!/usr/bin/env bash
# Bad requests to Pyroscope's query API get Connect's error, with the code
# and HTTP status Connect's protocol gives it, never a 500: unknown and
# left-out methods, malformed protobuf, JSON of the wrong shape, invalid
# selectors and profile type ids, windows past the limits, missing and
# weak tokens, wrong content types and methods, bodies past the bound
# (also inflated ones), and what Connect's own Node.js client reads of
# them. /metrics then shows no 500 on the route.
. "${top_srcdir:-.}/test/lib/e2e.sh"

C=$PROFD_CORPUS
G=$C/go
JS=${top_srcdir:-.}/test/protojs
command -v jq >/dev/null 2>&1 || skip_all "jq not installed"
[ -d "$G" ] || skip_all "corpus not found at $C"

tokens=$T_TMP/tokens
printf 'reader-0123456789 read\nwriter-0123456789 write\n' >"$tokens"
profd_start --auth-file "$tokens" --max-merge-profiles 3 ||
    { not_ok "profd starts"; done_testing; }
R=(-H 'Authorization: Bearer reader-0123456789')
W=(-H 'Authorization: Bearer writer-0123456789')
ID=process_cpu:cpu:nanoseconds:cpu:nanoseconds
START=946684800000
END=4102444800000
for f in $G/cpuburn/cpu_A_0[1-5].pb.gz; do
	upload "$f" "service=cpuburn&type=cpu&labels=build=A" "${W[@]}" >/dev/null
done
is "$HTTP_CODE" 200 "five profiles stored"
# 61 more small ones of another service: past 20 times
# --max-merge-profiles (60 rows), what a listing reads row by row.
cfg=$T_TMP/batch.cfg
: >"$cfg"
for i in $(seq 1 61); do
	batch_add "$cfg" "$T_TMP/b.$i" \
	    "/api/0/profiles?service=many&type=goroutine&labels=n=$i,zone=z$((i % 3))" \
	    "data-binary = \"@$G/goroutines/goroutine_A_01.pb.gz\"" \
	    'header = "Content-Type: application/octet-stream"' \
	    'header = "Authorization: Bearer writer-0123456789"'
done
is "$(batch_run "$cfg" | sort -u | tr '\n' ' ')" "200 " "61 more stored"

# call NAME METHOD CT BODY [CURL ARGS...]: sets CODE (HTTP), CCODE
# (Connect's code) and MSG from the answer.
call() {
	local name=$1 method=$2 ct=$3 body=$4
	shift 4
	curl -s -o "$T_TMP/ans" -w '%{http_code}' -H "Content-Type: $ct" \
	    "$@" --data-binary "$body" \
	    "$PROFD_URL/querier.v1.QuerierService/$method" >"$T_TMP/code"
	CODE=$(cat "$T_TMP/code")
	CCODE=$(jq -r .code "$T_TMP/ans" 2>/dev/null)
	MSG=$(jq -r .message "$T_TMP/ans" 2>/dev/null)
}
# expect NAME HTTP CONNECT_CODE [WORD]: the last call's answer.
expect() {
	if [ "$CODE $CCODE" = "$2 $3" ] &&
	    { [ -z "$4" ] || grep -qF -- "$4" <<<"$MSG"; }; then
		ok "$1: $2 $3 ($MSG)"
	else
		not_ok "$1: got $CODE $CCODE ($MSG), want $2 $3 ${4:+($4)}"
	fi
}
J=application/json
P=application/proto

call x Nope $J '{}' "${R[@]}"
expect "unknown method" 501 unimplemented "no method"
for m in SelectMergeSpanProfile SelectHeatmap GetProfileStats AnalyzeQuery; do
	call x $m $J '{}' "${R[@]}"
	expect "left out: $m" 501 unimplemented "not served"
done
call x Series $P $'\x0a\xff\xff' "${R[@]}"
expect "malformed protobuf" 400 invalid_argument "in protobuf"
call x Series $P $'\x12\x05ab' "${R[@]}"
expect "truncated protobuf" 400 invalid_argument "in protobuf"
call x SelectMergeStacktraces $J '{"start":{"a":1}}' "${R[@]}"
expect "JSON: object for an int64" 400 invalid_argument "start: not an integer"
call x Series $J '{"matchers":"{}"}' "${R[@]}"
expect "JSON: string for a list" 400 invalid_argument "matchers: not an array"
call x Series $J '[1,2]' "${R[@]}"
expect "JSON: an array for the message" 400 invalid_argument "not an object"
call x Series $J '{"matchers":["{}"' "${R[@]}"
expect "JSON: truncated" 400 invalid_argument "bad JSON"
call x SelectMergeStacktraces $J "{\"profileTypeID\":\"$ID\",\"labelSelector\":\"{a=~\\\"(\\\"}\"}" "${R[@]}"
expect "selector: bad regex" 400 invalid_argument "bad regex"
call x SelectMergeStacktraces $J "{\"profileTypeID\":\"$ID\",\"labelSelector\":\"service_name=\\\"x\\\"\"}" "${R[@]}"
expect "selector: no braces" 400 invalid_argument "label selector"
call x Series $J '{"matchers":["{a=\"\\xff\"}"]}' "${R[@]}"
expect "selector: not UTF-8" 400 invalid_argument "matchers[0]"
call x SelectMergeStacktraces $J '{"profileTypeID":"process_cpu:cpu"}' "${R[@]}"
expect "profile type id: two parts" 400 invalid_argument "five"
call x SelectSeries $J '{"profileTypeID":"wall:a:b:c:d"}' "${R[@]}"
expect "profile type id: unknown name" 400 invalid_argument "unknown profile name"
call x SelectMergeProfile $J "{\"profileTypeID\":\"$ID\",\"start\":\"5\",\"end\":\"4\"}" "${R[@]}"
expect "start after end" 400 invalid_argument "after"
call x SelectMergeStacktraces $J "{\"profileTypeID\":\"$ID\",\"maxNodes\":\"-1\"}" "${R[@]}"
expect "max_nodes negative" 400 invalid_argument "max_nodes"
call x SelectMergeStacktraces $J "{\"profileTypeID\":\"$ID\",\"format\":\"PROFILE_FORMAT_DOT\"}" "${R[@]}"
expect "format DOT" 501 unimplemented "DOT"
call x SelectSeries $J "{\"profileTypeID\":\"$ID\",\"start\":\"$START\",\"end\":\"$END\",\"step\":1}" "${R[@]}"
expect "SelectSeries: too many points" 400 invalid_argument "points"
call x SelectMergeStacktraces $J "{\"profileTypeID\":\"$ID\",\"labelSelector\":\"{build=~\\\"A|B\\\"}\",\"start\":\"$START\",\"end\":\"$END\"}" "${R[@]}"
expect "window past --max-merge-profiles (a regex reads rows)" 429 \
    resource_exhausted "max-merge-profiles"
call x SelectMergeStacktraces $J "{\"profileTypeID\":\"$ID\",\"labelSelector\":\"{build=\\\"A\\\"}\",\"start\":\"$START\",\"end\":\"$END\"}" "${R[@]}"
is "$CODE $(jq -r '.flamegraph.total | length > 0' "$T_TMP/ans")" "200 true" \
    "the same window by name=\"value\" (the store's plan) merges"
# Listings past the rows a listing reads: ProfileTypes from the plans,
# LabelNames/LabelValues from the label tables, Series refused.
call x ProfileTypes $J "{\"start\":\"$START\",\"end\":\"$END\"}" "${R[@]}"
is "$CODE $(jq -c '[.profileTypes[].ID]' "$T_TMP/ans")" \
    '200 ["goroutines:goroutine:count:goroutine:count","process_cpu:cpu:nanoseconds:cpu:nanoseconds","process_cpu:samples:count:cpu:nanoseconds"]' \
    "ProfileTypes over 66 rows: from the plans"
call x LabelNames $J "{\"start\":\"$START\",\"end\":\"$END\"}" "${R[@]}"
is "$CODE $(jq -c .names "$T_TMP/ans")" \
    '200 ["__name__","__profile_type__","build","n","service_name","zone"]' \
    "LabelNames past the rows: from the label tables"
call x LabelValues $J "{\"name\":\"zone\",\"matchers\":[\"{service_name=\\\"many\\\"}\"],\"start\":\"$START\",\"end\":\"$END\"}" "${R[@]}"
is "$CODE $(jq -c .names "$T_TMP/ans")" '200 ["z0","z1","z2"]' \
    "LabelValues past the rows: from the label tables"
call x LabelValues $J "{\"name\":\"service_name\",\"start\":\"$START\",\"end\":\"$END\"}" "${R[@]}"
is "$CODE $(jq -c .names "$T_TMP/ans")" '200 ["cpuburn","many"]' \
    "LabelValues service_name past the rows"
call x Series $J "{\"start\":\"$START\",\"end\":\"$END\"}" "${R[@]}"
expect "Series past the rows" 429 resource_exhausted "max-merge-profiles"

call x Series $J '{}'
expect "no token" 401 unauthenticated "bearer token"
call x Series $J '{}' -H 'Authorization: Bearer nope-0123456789'
expect "unknown token" 401 unauthenticated "unknown"
call x Series $J '{}' "${W[@]}"
expect "write-only token" 403 permission_denied "read"
call x Series text/plain '{}' "${R[@]}"
expect "Content-Type text/plain" 415 invalid_argument "Content-Type"
call x Series application/connect+json '{}' "${R[@]}"
expect "Connect's streaming protocol" 415 invalid_argument "Content-Type"
curl -s -o "$T_TMP/ans" -w '%{http_code}' "${R[@]}" \
    "$PROFD_URL/querier.v1.QuerierService/Series" >"$T_TMP/code"
CODE=$(cat "$T_TMP/code"); CCODE=$(jq -r .code "$T_TMP/ans"); MSG=$(jq -r .message "$T_TMP/ans")
expect "GET" 501 unimplemented "POST"
head -c 1100000 /dev/zero | tr '\0' ' ' >"$T_TMP/big"

CODE=$(curl -s -o "$T_TMP/ans" -w '%{http_code}' -H "Content-Type: $J" "${R[@]}" \
    --data-binary "@$T_TMP/big" "$PROFD_URL/querier.v1.QuerierService/Series")
CCODE=$(jq -r .code "$T_TMP/ans"); MSG=$(jq -r .message "$T_TMP/ans")
expect "a body past 1 MiB" 429 resource_exhausted "at most"
printf '{"matchers":[]}' | gzip >"$T_TMP/small.gz"
CODE=$(curl -s -o "$T_TMP/ans" -w '%{http_code}' -H "Content-Type: $J" \
    -H 'Content-Encoding: gzip' "${R[@]}" --data-binary "@$T_TMP/small.gz" \
    "$PROFD_URL/querier.v1.QuerierService/Series")
is "$CODE" 200 "a gzipped request is read"
gzip -c "$T_TMP/big" >"$T_TMP/big.gz"
CODE=$(curl -s -o "$T_TMP/ans" -w '%{http_code}' -H "Content-Type: $J" \
    -H 'Content-Encoding: gzip' "${R[@]}" --data-binary "@$T_TMP/big.gz" \
    "$PROFD_URL/querier.v1.QuerierService/Series")
CCODE=$(jq -r .code "$T_TMP/ans"); MSG=$(jq -r .message "$T_TMP/ans")
expect "a gzip body inflating past 1 MiB ($(wc -c <"$T_TMP/big.gz") bytes)" \
    400 invalid_argument "gzip"
call x Series $J '{}' "${R[@]}" -H 'Content-Encoding: br'
expect "Content-Encoding br" 400 invalid_argument "Content-Encoding"

# Connect's own client reads those errors as their codes.
if [ -d "$JS/node_modules/@connectrpc/connect-node" ] &&
    "$JS/gen.sh" "${top_srcdir:-.}" >/dev/null 2>&1; then
	out=$(node "$JS/query.mjs" "$PROFD_URL" SelectMergeStacktraces \
	    '{"profileTypeID":"bad"}' --token reader-0123456789)
	is "${out%% *} $(cut -d' ' -f2 <<<"$out")" "error InvalidArgument" \
	    "connect-node: invalid_argument"
	out=$(node "$JS/query.mjs" "$PROFD_URL" SelectHeatmap '{}' --token \
	    reader-0123456789 --json)
	is "$(cut -d' ' -f2 <<<"$out")" Unimplemented "connect-node: unimplemented"
	out=$(node "$JS/query.mjs" "$PROFD_URL" Series '{}')
	is "$(cut -d' ' -f2 <<<"$out")" Unauthenticated \
	    "connect-node: unauthenticated"
	out=$(node "$JS/query.mjs" "$PROFD_URL" SelectMergeProfile \
	    "{\"profileTypeID\":\"$ID\",\"labelSelector\":\"{build!=\\\"x\\\"}\",\"start\":\"$START\",\"end\":\"$END\"}" \
	    --token reader-0123456789)
	is "$(cut -d' ' -f2 <<<"$out")" ResourceExhausted \
	    "connect-node: resource_exhausted"
else
	diag "test/protojs's npm packages not installed: connect-node checks left out"
fi
api /healthz >/dev/null
is "$HTTP_CODE" 200 "profd still serves"
api /metrics >"$T_TMP/metrics"
is "$(grep -c 'route="query",code="500"' "$T_TMP/metrics")" 0 \
    "no 500 on the query route"
done_testing
