#!/usr/bin/env bash
# Bad requests to Pyroscope's query API get Connect's error, with the code
# and HTTP status Connect's protocol gives it, never a 500: unknown and
# left-out methods and selectors, malformed protobuf, JSON of the wrong
# shape (types, int64 forms, enums), invalid selectors (with the offset)
# and profile type ids, steps and windows past the limits, missing and
# weak tokens, wrong content types and methods, bodies past the bound
# (also inflated ones), and what Connect's own Node.js client reads of
# them; the legacy render API's 400s; 304 requests mutated from valid ones
# of every method (binary as protobuf-es encodes them, JSON, gzipped) get
# no 5xx and every refusal is a Connect error. /metrics then shows no 500
# on the route. Then busy (unavailable), late (deadline_exceeded) and past
# --merge-memory (resource_exhausted).
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
# More of each kind, a line each: what, method, body, HTTP status,
# Connect code, a word of the message ('|' between them; the bodies are
# Connect JSON).
SMS="\"profileTypeID\":\"$ID\""
while IFS='|' read -r what m body st code word; do
	call x "$m" $J "$body" "${R[@]}"
	expect "$what" "$st" "$code" "$word"
done <<EOF
JSON: int64 not a number|Series|{"start":"abc"}|400|invalid_argument|start
JSON: int64 a fraction|Series|{"start":1.5}|400|invalid_argument|start
JSON: int64 past 64 bits|Series|{"end":"18446744073709551616"}|400|invalid_argument|end
JSON: an unknown enum name|SelectMergeStacktraces|{$SMS,"format":"NOPE"}|400|invalid_argument|format
JSON: a number for a string|SelectMergeStacktraces|{$SMS,"labelSelector":5}|400|invalid_argument|labelSelector
JSON: a number in a string list|SelectSeries|{$SMS,"groupBy":[1]}|400|invalid_argument|groupBy
JSON: null for the message|Series|null|400|invalid_argument|JSON
JSON: an empty body|Series||400|invalid_argument|JSON
JSON: a string for a message|Diff|{"left":"x"}|400|invalid_argument|left
selector: an unterminated string|SelectMergeStacktraces|{$SMS,"labelSelector":"{a=\"x}"}|400|invalid_argument|offset
selector: ==|SelectMergeStacktraces|{$SMS,"labelSelector":"{a==\"x\"}"}|400|invalid_argument|offset
selector: a name starting with a digit|SelectMergeStacktraces|{$SMS,"labelSelector":"{1a=\"x\"}"}|400|invalid_argument|offset
selector: text after the braces|SelectSeries|{$SMS,"labelSelector":"{a=\"x\"} b"}|400|invalid_argument|offset
selector: a bad matcher of LabelNames|LabelNames|{"matchers":["{a="]}|400|invalid_argument|offset
selector: a bad regex of LabelValues|LabelValues|{"name":"a","matchers":["{a=~\"[\"}"]}|400|invalid_argument|regex
profile type id: an empty part|SelectMergeStacktraces|{"profileTypeID":"process_cpu::nanoseconds:cpu:nanoseconds"}|400|invalid_argument|five
profile type id: six parts|SelectMergeProfile|{"profileTypeID":"$ID:x"}|400|invalid_argument|five
profile type id: none|SelectSeries|{}|400|invalid_argument|empty
profile type id: Diff's right side|Diff|{"left":{$SMS},"right":{"profileTypeID":"x:y"}}|400|invalid_argument|five
Diff without a right side|Diff|{"left":{$SMS}}|400|invalid_argument|right
SelectSeries: step NaN|SelectSeries|{$SMS,"step":"NaN"}|400|invalid_argument|step
SelectSeries: step past a year|SelectSeries|{$SMS,"step":1e300}|400|invalid_argument|step
a window past year 2262|SelectMergeStacktraces|{$SMS,"end":"9223372036854775807"}|400|invalid_argument|milliseconds
left out: profile_id_selector|SelectMergeStacktraces|{$SMS,"profileIdSelector":["x"]}|501|unimplemented|selector
left out: trace_id_selector|SelectMergeProfile|{$SMS,"traceIdSelector":["x"]}|501|unimplemented|selector
left out: span_selector|SelectMergeStacktraces|{$SMS,"spanSelector":["x"]}|501|unimplemented|selector
a method spelt in lower case|selectMergeStacktraces|{}|501|unimplemented|no method
no method|||501|unimplemented|no method
EOF
call x LabelNames "$J; charset=utf-8" '{}' "${R[@]}"
is "$CODE" 200 "Content-Type application/json; charset=utf-8 is JSON"
call x Series $P $'\x08\x01' "${R[@]}"
expect "protobuf: a varint for a string field" 400 invalid_argument "in protobuf"
# The legacy render API answers profd's JSON errors.
for u in "render" "render?query=bad" "render?query=$ID%7Ba=%7D" \
    "render?query=$ID%7B%7D&from=now&until=now-1h" \
    "render?query=$ID%7B%7D&from=abc" \
    "render?query=$ID%7B%7D&max-nodes=-3" \
    "render-diff?leftQuery=$ID%7B%7D" \
    "render-diff?leftQuery=$ID%7B%7D&rightQuery=$ID%7Bb=%7D"; do
	api "/pyroscope/$u" "${R[@]}" >/dev/null
	is "$HTTP_CODE $(jq -r .code <<<"$BODY")" "400 400" \
	    "/pyroscope/$u: 400 ($(jq -r .error <<<"$BODY"))"
done
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

# Connect's own client reads those errors as their codes; requests
# mutated from valid ones of every method (binary, as protobuf-es encodes
# them, Connect JSON, gzipped) never get a 5xx.
if [ -d "$JS/node_modules/@connectrpc/connect-node" ] &&
    "$JS/gen.sh" "${top_srcdir:-.}" >/dev/null 2>&1; then
	. "${top_srcdir:-.}/test/lib/qjs.sh"
	qjs_start "$JS" "$PROFD_URL" reader-0123456789
	out=$(q SelectMergeStacktraces '{"profileTypeID":"bad"}')
	is "$(cut -d' ' -f1-2 <<<"$out")" "error InvalidArgument" \
	    "connect-node: invalid_argument"
	out=$(q SelectHeatmap '{}' --json)
	is "$(cut -d' ' -f2 <<<"$out")" Unimplemented "connect-node: unimplemented"
	out=$(node "$JS/query.mjs" "$PROFD_URL" Series '{}')
	is "$(cut -d' ' -f2 <<<"$out")" Unauthenticated \
	    "connect-node: unauthenticated"
	out=$(q SelectMergeProfile "{\"profileTypeID\":\"$ID\",\"labelSelector\":\"{build!=\\\"x\\\"}\",\"start\":\"$START\",\"end\":\"$END\"}")
	is "$(cut -d' ' -f2 <<<"$out")" ResourceExhausted \
	    "connect-node: resource_exhausted"

	SEL="\"labelSelector\":\"{service_name=\\\"cpuburn\\\",build=\\\"A\\\"}\""
	WIN="\"start\":\"$START\",\"end\":\"$END\""
	M="\"matchers\":[\"{service_name=\\\"cpuburn\\\"}\"]"
	ONE="{\"profileTypeID\":\"$ID\",$SEL,$WIN,\"maxNodes\":\"100\",\"stackTraceSelector\":{\"callSite\":[{\"name\":\"main.main\"}]}}"
	: >"$T_TMP/fz.list"
	bad=0
	for call in "ProfileTypes {$WIN}" "LabelNames {$M,$WIN}" \
	    "LabelValues {\"name\":\"build\",$M,$WIN}" \
	    "Series {$M,\"labelNames\":[\"build\"],$WIN}" \
	    "SelectMergeStacktraces ${ONE%\}},\"format\":\"PROFILE_FORMAT_TREE\"}" \
	    "SelectMergeProfile $ONE" \
	    "SelectSeries {\"profileTypeID\":\"$ID\",$SEL,$WIN,\"step\":2592000,\"groupBy\":[\"build\"],\"aggregation\":\"TIME_SERIES_AGGREGATION_TYPE_AVERAGE\",\"limit\":\"5\"}" \
	    "Diff {\"left\":$ONE,\"right\":$ONE}"; do
		m=${call%% *}
		printf '%s' "${call#* }" >"$T_TMP/fz.$m.json"
		q "$m" "${call#* }" --encode --out "$T_TMP/fz.$m.pb" >/dev/null ||
		    bad=$((bad + 1))
		# (the valid requests themselves first: not all refused)
		printf '%s %s %s\n' "$m" "$T_TMP/fz.$m.pb" "$T_TMP/fz.$m.json" \
		    >>"$T_TMP/fz.list"
	done
	is "$bad" 0 "protobuf-es encodes a valid request of each method"
	python3 - "$T_TMP" "$T_TMP/fz.list" >"$T_TMP/fz.cfg" <<'EOF'
# Mutants of each method's valid request, and a curl config sending them
# all (the originals first); deterministic (seeded).
import gzip, random, sys
tmp = sys.argv[1]
rnd = random.Random(32)
def mutate(b, alphabet):
    b = bytearray(b)
    for _ in range(rnd.randint(1, 3)):
        op = rnd.randrange(5)
        i = rnd.randrange(len(b) + 1)
        if op == 0 and b:
            b[min(i, len(b) - 1)] = rnd.choice(alphabet)
        elif op == 1:
            b[i:i] = bytes(rnd.choice(alphabet) for _ in range(rnd.randint(1, 4)))
        elif op == 2:
            del b[i:i + rnd.randint(1, 8)]
        elif op == 3:
            b = b[:i]
        else:
            j = rnd.randrange(len(b) + 1)
            b[i:i] = b[min(i, j):max(i, j)][:64]
    return bytes(b)
n = 0
for line in open(sys.argv[2]):
    m, pb, js = line.split()
    sets = [("application/proto", open(pb, "rb").read(), bytes(range(256))),
            ("application/json", open(js, "rb").read(), b'{}[]":,\\0123456789aeE.-+ ')]
    for ct, body, alphabet in sets:
        bodies = [(body, False)]
        bodies += [(mutate(body, alphabet), False) for _ in range(14)]
        bodies += [(mutate(gzip.compress(body, mtime=0), bytes(range(256))), True)
                   for _ in range(2)]
        bodies += [(gzip.compress(mutate(body, alphabet), mtime=0), True)
                   for _ in range(2)]
        for b, gz in bodies:
            f = "%s/fz.%d" % (tmp, n)
            open(f, "wb").write(b)
            if n:
                print("next")
            print('url = "%s"' % ("@URL@/querier.v1.QuerierService/" + m))
            print('data-binary = "@%s"' % f)
            print('header = "Content-Type: %s"' % ct)
            if gz:
                print('header = "Content-Encoding: gzip"')
            print('header = "Authorization: Bearer reader-0123456789"')
            print('output = "%s.out"' % f)
            print('write-out = "%%{http_code} %s %s%s\\n"' % (m, ct, " gzip" if gz else ""))
            n += 1
EOF
	sed -i "s|@URL@|$PROFD_URL|" "$T_TMP/fz.cfg"
	curl -s -K "$T_TMP/fz.cfg" >"$T_TMP/fz.codes"
	n=$(wc -l <"$T_TMP/fz.codes")
	is "$n $(awk '$1 >= 500 || $1 < 200' "$T_TMP/fz.codes" | sort | uniq -c | head -5)" "304 " \
	    "304 requests, mostly mutated: no 5xx (statuses:$(cut -d' ' -f1 "$T_TMP/fz.codes" | sort | uniq -c | tr -s ' \n' ' '))"
	is "$(awk '$1 == 200 { n[$2]++ } END { for (m in n) print m }' "$T_TMP/fz.codes" | wc -l)" 8 \
	    "every method's valid request answered 200 (the mutants start from answered calls)"
	bad=$(paste -d' ' <(cut -d' ' -f1 "$T_TMP/fz.codes") \
	    <(jq_each '.code | type' $(seq -f "$T_TMP/fz.%g.out" 0 $((n - 1)))) |
	    grep -vn '^200 \|^4[0-9][0-9] string$' | head -3)
	is "$bad" "" "every refusal a Connect error ({\"code\":...})"
	qjs_stop
else
	diag "test/protojs's npm packages not installed: connect-node checks left out"
fi
api /healthz >/dev/null
is "$HTTP_CODE" 200 "profd still serves"
api /metrics >"$T_TMP/metrics"
is "$(grep -c 'route="query",code="500"' "$T_TMP/metrics")" 0 \
    "no 500 on the query route"

# Busy and late: the same store again with --max-merges 1 and
# --request-timeout 1; six merges of large heap profiles (a second's work
# on a loaded machine) at once: the first runs (200, or 504
# deadline_exceeded at the timeout), the others are refused at once with
# 503 unavailable. Then --merge-memory 1M: resource_exhausted.
profd_stop
profd_start --auth-file "$tokens" --max-merges 1 --request-timeout 1 ||
    { not_ok "profd starts again"; done_testing; }
bad=0
for f in $G/bigstacks/allocs_[AB]_0[12].pb.gz; do
	upload "$f" "service=big&type=heap" "${W[@]}" >/dev/null
	[ "$HTTP_CODE" = 200 ] || bad=$((bad + 1))
done
is "$bad" 0 "four large heap profiles stored"
BIG="{\"profileTypeID\":\"memory:alloc_space:bytes:space:bytes\",\"labelSelector\":\"{service_name=\\\"big\\\"}\",\"start\":\"$START\",\"end\":\"$END\"}"
cfg=$T_TMP/busy.cfg
: >"$cfg"
for i in 1 2 3 4 5 6; do
	batch_add "$cfg" "$T_TMP/busy.$i" \
	    "/querier.v1.QuerierService/SelectMergeStacktraces" \
	    "data = \"$(sed 's/["\\]/\\&/g' <<<"$BIG")\"" \
	    'header = "Content-Type: application/json"' \
	    'header = "Authorization: Bearer reader-0123456789"'
done
curl -s --no-progress-meter --parallel --parallel-immediate --parallel-max 6 \
    -K "$cfg" >/dev/null 2>&1
ans=$(for i in 1 2 3 4 5 6; do
	jq -r 'if .flamegraph then "200" else .code end' "$T_TMP/busy.$i"
done | sort | uniq -c | awk '{ printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1 }')
check "six merges at once, --max-merges 1: $ans" \
    grep -qE '^((200|deadline_exceeded) x1, )?unavailable x[56]$' <<<"$ans"
profd_stop
profd_start --auth-file "$tokens" --merge-memory 1M ||
    { not_ok "profd starts again"; done_testing; }
call x SelectMergeStacktraces $J "$BIG" "${R[@]}"
expect "a merge past --merge-memory" 429 resource_exhausted "merge-memory"
done_testing
