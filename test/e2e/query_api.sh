#!/usr/bin/env bash
# Pyroscope's query API (Connect) by clients profd did not write: Connect's
# Node.js client (@connectrpc/connect-node) with messages protoc-gen-es
# generated from proto/ (test/protojs/query.mjs), in binary protobuf and
# in Connect JSON, plain curl with JSON, and `buf curl` (npm @bufbuild/buf);
# every method answers the same to all of them (and to a gzipped request).
# For every kind of corpus profile and every sample type, the flame graph's
# total and self per function equal `go tool pprof -top`'s of the same
# stored files; SelectMergeProfile's and the PPROF format's profiles open in
# go tool pprof with the same top; SelectSeries' points equal
# /api/0/timeline's (steps 1 and 10 s); the tree bytes
# decode to the same totals; max_nodes and call sites; group_by and limit;
# Diff's ticks are both sides' totals; ProfileTypes,
# LabelNames, LabelValues and Series list exactly what was uploaded; the
# legacy render endpoints. Errors are test/e2e/query_errors.sh's.
. "${top_srcdir:-.}/test/lib/e2e.sh"
. "${top_srcdir:-.}/test/e2e/pprof_read.sh"
. "${top_srcdir:-.}/test/lib/qjs.sh"

C=$PROFD_CORPUS
G=$C/go
JS=${top_srcdir:-.}/test/protojs
command -v go >/dev/null 2>&1 || skip_all "go tool pprof not installed"
command -v jq >/dev/null 2>&1 || skip_all "jq not installed"
command -v node >/dev/null 2>&1 || skip_all "node not installed"
[ -d "$JS/node_modules/@connectrpc/connect-node" ] ||
    skip_all "test/protojs's npm packages not installed (tools/deps.sh --test)"
[ -d "$G" ] || skip_all "corpus not found at $C"
"$JS/gen.sh" "${top_srcdir:-.}" >"$T_TMP/gen.log" 2>&1 ||
    { sed 's/^/# /' "$T_TMP/gen.log"; skip_all "buf generate failed"; }

tokens=$T_TMP/tokens
printf 'reader-0123456789 read\nwriter-0123456789 write\n' >"$tokens"
profd_start --auth-file "$tokens" || { not_ok "profd starts"; done_testing; }
R=(-H 'Authorization: Bearer reader-0123456789')
W=(-H 'Authorization: Bearer writer-0123456789')
TOKEN=reader-0123456789
BUF=$JS/node_modules/.bin/buf
WIN="from=2000-01-01T00:00:00&to=2100-01-01T00:00:00"
START=946684800000	# 2000-01-01, ms
END=4102444800000	# 2100-01-01

# q METHOD JSON [FLAGS...]: the method through connect-node (binary;
# --json: Connect JSON), one node process for every call (test/lib/qjs.sh).
qjs_start "$JS" "$PROFD_URL" "$TOKEN"
# qcurl METHOD JSON: the method through curl, Connect JSON.
qcurl() {
	curl -s -H 'Content-Type: application/json' "${R[@]}" -d "$2" \
	    "$PROFD_URL/querier.v1.QuerierService/$1"
}
# selfs FILE: "self name" per function of a flame graph answer, sorted.
selfs() {
	jq -r '.flamegraph as $f | ($f.levels // [])[1:][] | .values |
	    [range(0; length; 4) as $i | "\(.[$i+2])\t\($f.names[.[$i+3] |
	    tonumber])"] | .[]' "$1" | awk -F'\t' '{ s[$2] += $1 }
	    END { for (n in s) if (s[n] != 0) printf "%.0f %s\n", s[n], n }' |
	    LC_ALL=C sort
}
# types_of FILE: "name unit" per sample type (pprof -raw's header).
types_of() {
	gopprof -raw "$1" 2>/dev/null | awk '/^Samples:/ { getline;
	    for (i = 1; i <= NF; i++) { split($i, a, "/");
	    sub(/\[dflt\]$/, "", a[2]); print a[1], a[2] }
	    exit }'
}
# ptid TYPE NAME UNIT: the profile type id profd lists.
ptid() {
	case $1 in
	cpu) echo "process_cpu:$2:$3:cpu:nanoseconds" ;;
	heap) echo "memory:$2:$3:space:bytes" ;;
	mutex|block) echo "$1:$2:$3:contentions:count" ;;
	goroutine) echo "goroutines:$2:$3:goroutine:count" ;;
	*) echo "$1:$2:$3:$2:$3" ;;
	esac
}

# put SERVICE TYPE LABELS FILE...: uploads the files.
put() {
	local svc=$1 type=$2 labels=$3 f bad=0
	shift 3
	for f in "$@"; do
		upload "$f" "service=$svc&type=$type&labels=$labels" "${W[@]}" \
		    >/dev/null
		[ "$HTTP_CODE" = 200 ] || bad=$((bad + 1))
	done
	is "$bad" 0 "$svc $type: $# uploads"
}

put cpuburn cpu build=A $G/cpuburn/cpu_A_0[1-4].pb.gz
put cpuburn cpu build=B $G/cpuburn/cpu_B_0[1-4].pb.gz
put allocs heap build=A $G/allocheavy/allocs_A_0[1-3].pb.gz
put contention mutex build=A $G/contention/mutex_A_0[1-3].pb.gz
put contention block build=B $G/contention/block_B_0[1-3].pb.gz
put goroutines goroutine build=A $G/goroutines/goroutine_A_0[1-3].pb.gz
put nodewall other build=A $C/node/datadog/wall_0[1-3].pb.gz

# series_vs_timeline SERVICE TYPE ID SAMPLE_TYPE STEP: SelectSeries of
# the service's window (LO_S to HI_S) against /api/0/timeline's buckets
# that hold profiles.
series_vs_timeline() {
	local svc=$1 type=$2 id=$3 st=$4 step=$5
	api "/api/0/timeline?service=$svc&type=$type&sample_type=$st&from=$LO_S&to=$HI_S&step=$step" \
	    "${R[@]}" >"$T_TMP/tl.json"
	jq -r '.body.points[] | select(.[2] > 0) | "\(.[0] * 1000) \(.[1])"' \
	    "$T_TMP/tl.json" >"$T_TMP/tl.pts"
	q SelectSeries "{\"profileTypeID\":\"$id\",\"labelSelector\":\"{service_name=\\\"$svc\\\"}\",\"start\":\"$((LO_S * 1000))\",\"end\":\"$((HI_S * 1000))\",\"step\":$step}" |
	    jq -r '.series[]?.points[] | "\(.timestamp) \(.value // 0)"' \
	    >"$T_TMP/ss.pts"
	if [ -s "$T_TMP/tl.pts" ] && cmp -s "$T_TMP/ss.pts" "$T_TMP/tl.pts"; then
		ok "$svc $id: SelectSeries step $step: $(wc -l <"$T_TMP/ss.pts") points = /api/0/timeline's"
	else
		not_ok "$svc $id: SelectSeries step $step differs from /api/0/timeline"
		diff "$T_TMP/ss.pts" "$T_TMP/tl.pts" | head -4 | sed 's/^/# /'
	fi
}

# check_kind SERVICE TYPE FILE...: every sample type of the files: the
# flame graph and SelectMergeProfile against pprof, SelectSeries against
# /api/0/timeline.
check_kind() {
	local svc=$1 type=$2 i=0 name unit id req total ptotal lo hi
	shift 2
	api "/api/0/profiles?service=$svc&type=$type&$WIN&limit=100" "${R[@]}" \
	    >"$T_TMP/list.json"
	lo=$(jq -r '[.body[].created_at] | min' "$T_TMP/list.json")
	hi=$(jq -r '[.body[].created_at] | max' "$T_TMP/list.json")
	LO_S=$(date -u -d "$lo" +%s)
	HI_S=$(( $(date -u -d "$hi" +%s) + 1 ))
	while read -r name unit; do
		id=$(ptid "$type" "$name" "$unit")
		top "$i" "$@" >"$T_TMP/pp"
		ptotal=$(sed -n 's/^total \([0-9]*\).*/\1/p' "$T_TMP/pp")
		grep -v '^total ' "$T_TMP/pp" |
		    sed -E 's/ \((partial-)?inline\)$//; s/^([0-9]+)[a-zA-Z]* ([0-9]+)[a-zA-Z]* /\1 \2 /' |
		    awk '$1 != 0 { f = $1; $1 = ""; $2 = ""; sub(/^ +/, "");
		    print f, $0 }' | LC_ALL=C sort >"$T_TMP/pp.flat"
		req="{\"profileTypeID\":\"$id\",\"labelSelector\":\"{service_name=\\\"$svc\\\"}\",\"start\":\"$START\",\"end\":\"$END\",\"maxNodes\":\"1000000\"}"
		q SelectMergeStacktraces "$req" >"$T_TMP/fg.json"
		total=$(jq -r '.flamegraph.total // "0"' "$T_TMP/fg.json")
		selfs "$T_TMP/fg.json" >"$T_TMP/fg.self"
		if [ "$total" != "$ptotal" ]; then
			not_ok "$svc $id: flame graph total $total, pprof $ptotal"
			head -c 300 "$T_TMP/fg.json" | sed 's/^/# /'; echo
		elif [ "$(jq -c '[.flamegraph.names[0], (.flamegraph.levels[0].values | map(tonumber))]' "$T_TMP/fg.json")" != "[\"total\",[0,$total,0,0]]" ]; then
			not_ok "$svc $id: the first level is not the root total"
			jq -c '[.flamegraph.names[0], .flamegraph.levels[0]]' \
			    "$T_TMP/fg.json" | sed 's/^/# /'
		elif ! cmp -s "$T_TMP/fg.self" "$T_TMP/pp.flat"; then
			not_ok "$svc $id: self per function differs from pprof's flat"
			diff "$T_TMP/fg.self" "$T_TMP/pp.flat" | head -6 |
			    sed 's/^/# /'
		else
			ok "$svc $id: flame graph total and self per function = pprof -top ($(wc -l <"$T_TMP/fg.self") functions)"
		fi
		# SelectMergeProfile: the one sample type, a value a sample,
		# none 0; pprof's top again.
		q SelectMergeProfile "$req" --out "$T_TMP/smp.pb" >"$T_TMP/smp.json"
		top 0 "$T_TMP/smp.pb" >"$T_TMP/smp.top"
		shape=$(jq -c '[(.sampleType | length),
		    .stringTable[.sampleType[0].type // "0" | tonumber],
		    ([.sample[].value | length] | unique),
		    ([.sample[].value[] | select(. == "0")] | length)]' \
		    "$T_TMP/smp.json")
		if [ "$shape" != "[1,\"$name\",[1],0]" ]; then
			not_ok "$svc $id: SelectMergeProfile: [sample types, its name, values a sample, zero values] $shape"
		elif cmp -s "$T_TMP/smp.top" "$T_TMP/pp"; then
			ok "$svc $id: SelectMergeProfile's pprof: $name only, no zero samples, pprof's top"
		else
			not_ok "$svc $id: SelectMergeProfile's top differs"
			diff "$T_TMP/smp.top" "$T_TMP/pp" | head -4 | sed 's/^/# /'
		fi
		series_vs_timeline "$svc" "$type" "$id" "$name" 1
		series_vs_timeline "$svc" "$type" "$id" "$name" 10
		i=$((i + 1))
	done < <(types_of "$1")
}

check_kind cpuburn cpu $G/cpuburn/cpu_[AB]_0[1-4].pb.gz
check_kind allocs heap $G/allocheavy/allocs_A_0[1-3].pb.gz
check_kind contention mutex $G/contention/mutex_A_0[1-3].pb.gz
check_kind contention block $G/contention/block_B_0[1-3].pb.gz
check_kind goroutines goroutine $G/goroutines/goroutine_A_0[1-3].pb.gz
check_kind nodewall other $C/node/datadog/wall_0[1-3].pb.gz

# --- every encoding, on cpuburn's cpu --------------------------------------
ID=process_cpu:cpu:nanoseconds:cpu:nanoseconds
REQ="{\"profileTypeID\":\"$ID\",\"labelSelector\":\"{service_name=\\\"cpuburn\\\"}\",\"start\":\"$START\",\"end\":\"$END\",\"maxNodes\":\"1000000\"}"
q SelectMergeStacktraces "$REQ" >"$T_TMP/bin.json"
selfs "$T_TMP/bin.json" >"$T_TMP/bin.self"
q SelectMergeStacktraces "$REQ" --json >"$T_TMP/json.json"
selfs "$T_TMP/json.json" >"$T_TMP/json.self"
check "connect-node, Connect JSON: the same flame graph as binary" \
    cmp -s "$T_TMP/json.self" "$T_TMP/bin.self"
# curl: original field names, start as a number, end as a string
qcurl SelectMergeStacktraces "{\"profile_typeID\":\"$ID\",\"label_selector\":\"{service_name=\\\"cpuburn\\\"}\",\"start\":$START,\"end\":\"$END\",\"max_nodes\":1000000}" >"$T_TMP/curl.json"
selfs "$T_TMP/curl.json" >"$T_TMP/curl.self"
check "curl, JSON with original names and numbers: the same flame graph" \
    cmp -s "$T_TMP/curl.self" "$T_TMP/bin.self"
is "$(jq -r '.flamegraph.total | type' "$T_TMP/curl.json")" string \
    "int64 answered as a JSON string"
if "$BUF" curl --schema "$JS/schema" --protocol connect \
    --http2-prior-knowledge=false -H "Authorization: Bearer $TOKEN" \
    -d "$REQ" "$PROFD_URL/querier.v1.QuerierService/SelectMergeStacktraces" \
    >"$T_TMP/buf.json" 2>"$T_TMP/buf.err"; then
	selfs "$T_TMP/buf.json" >"$T_TMP/buf.self"
	check "buf curl (binary protobuf by default): the same flame graph" \
	    cmp -s "$T_TMP/buf.self" "$T_TMP/bin.self"
else
	not_ok "buf curl works"; sed 's/^/# /' "$T_TMP/buf.err" | head -5
fi
"$BUF" curl --schema "$JS/schema" --protocol connect -H \
    "Authorization: Bearer $TOKEN" -d "{\"start\":\"$START\",\"end\":\"$END\"}" \
    "$PROFD_URL/querier.v1.QuerierService/ProfileTypes" >"$T_TMP/buf.pt" 2>&1
is "$(jq -r '.profileTypes | length' "$T_TMP/buf.pt" 2>/dev/null)" 13 \
    "buf curl ProfileTypes"

# every method: the same answer from connect-node in binary protobuf, in
# Connect JSON and with a gzipped request, from curl with JSON and from
# buf curl (the last two read back by protobuf-es: --canon)
SEL="\"labelSelector\":\"{service_name=\\\"cpuburn\\\"}\""
W2="\"start\":\"$START\",\"end\":\"$END\""
for call in "ProfileTypes {$W2}" "LabelNames {$W2}" \
    "LabelValues {\"name\":\"build\",$W2}" \
    "Series {\"matchers\":[\"{service_name=\\\"cpuburn\\\"}\"],$W2}" \
    "SelectMergeStacktraces {\"profileTypeID\":\"$ID\",$SEL,$W2}" \
    "SelectMergeProfile {\"profileTypeID\":\"$ID\",$SEL,$W2}" \
    "SelectSeries {\"profileTypeID\":\"$ID\",$SEL,$W2,\"step\":2592000}" \
    "Diff {\"left\":{\"profileTypeID\":\"$ID\",$SEL,$W2},\"right\":{\"profileTypeID\":\"$ID\",$SEL,$W2}}"; do
	m=${call%% *}
	body=${call#* }
	q "$m" "$body" --out "$T_TMP/enc.bin.pb" >"$T_TMP/enc.bin"
	q "$m" "$body" --json --out "$T_TMP/enc.json.pb" >"$T_TMP/enc.json"
	q "$m" "$body" --gzip --out "$T_TMP/enc.gzip.pb" >"$T_TMP/enc.gzip"
	qcurl "$m" "$body" >"$T_TMP/curl.out"
	q "$m" "@$T_TMP/curl.out" --canon \
	    --out "$T_TMP/enc.curl.pb" >"$T_TMP/enc.curl"
	"$BUF" curl --schema "$JS/schema" --protocol connect \
	    --http2-prior-knowledge=false -H "Authorization: Bearer $TOKEN" \
	    -d "$body" "$PROFD_URL/querier.v1.QuerierService/$m" \
	    >"$T_TMP/buf.out" 2>"$T_TMP/buf.err"
	q "$m" "@$T_TMP/buf.out" --canon --out "$T_TMP/enc.buf.pb" \
	    >"$T_TMP/enc.buf"
	if [ "$m" = SelectMergeProfile ]; then
		# each call a merge: the same profile, its tables in
		# another order
		for w in bin json gzip curl buf; do
			top 0 "$T_TMP/enc.$w.pb" >"$T_TMP/enc.$w"
		done
	fi
	bad=
	for w in json gzip curl buf; do
		cmp -s "$T_TMP/enc.bin" "$T_TMP/enc.$w" || bad+=" $w"
	done
	if [ -s "$T_TMP/enc.bin" ] && ! grep -q '^error' "$T_TMP/enc.bin" &&
	    [ -z "$bad" ]; then
		ok "$m: binary, JSON, gzipped, curl and buf curl answer the same ($(wc -c <"$T_TMP/enc.bin") bytes as JSON)"
	else
		not_ok "$m: binary and$bad differ"
		for w in bin $bad; do
			printf '%s: %s\n' "$w" "$(head -c 200 "$T_TMP/enc.$w")"
		done | sed 's/^/# /'
		head -3 "$T_TMP/buf.err" | sed 's/^/# buf curl: /'
	fi
done

# --- formats: PPROF, TREE; max_nodes; call site -----------------------------
q SelectMergeStacktraces "${REQ%\}},\"format\":\"PROFILE_FORMAT_PPROF\"}" \
    --out "$T_TMP/fmt.pb" >/dev/null
top 0 "$T_TMP/fmt.pb" >"$T_TMP/fmt.top"
top 1 $G/cpuburn/cpu_[AB]_0[1-4].pb.gz >"$T_TMP/cpu.top"
check "format PPROF: a pprof with pprof's top of the files" \
    cmp -s "$T_TMP/fmt.top" "$T_TMP/cpu.top"
q SelectMergeStacktraces "${REQ%\}},\"format\":\"PROFILE_FORMAT_TREE\"}" \
    >"$T_TMP/tree.json"
jq -r .tree "$T_TMP/tree.json" | base64 -d >"$T_TMP/tree.bin"
python3 - "$T_TMP/tree.bin" >"$T_TMP/tree.self" <<'EOF'
# Pyroscope's tree bytes: preorder, each node name (uvarint length, bytes),
# self (uvarint), children (uvarint), under a nameless virtual root.
import sys
b = open(sys.argv[1], 'rb').read()
i = 0
def uv():
    global i
    v = s = 0
    while True:
        c = b[i]; i += 1
        v |= (c & 0x7f) << s; s += 7
        if c < 0x80:
            return v
selfs = {}
todo = 1
while todo > 0 and i < len(b):
    n = uv(); name = b[i:i + n].decode(); i += n
    self_ = uv(); kids = uv()
    todo += kids - 1
    if self_:
        selfs[name] = selfs.get(name, 0) + self_
assert i == len(b) and todo == 0, (i, len(b), todo)
for k in sorted(selfs):
    print(selfs[k], k)
EOF
sort "$T_TMP/tree.self" >"$T_TMP/tree.sorted"
LC_ALL=C sort "$T_TMP/tree.self" >"$T_TMP/tree.self2"
check "format TREE: Pyroscope's tree bytes, self per function = the flame graph's" \
    cmp -s "$T_TMP/tree.self2" "$T_TMP/bin.self"
q SelectMergeStacktraces "${REQ/1000000/20}" >"$T_TMP/small.json"
n=$(jq '[.flamegraph.levels[].values | length / 4] | add' "$T_TMP/small.json")
other=$(jq '[.flamegraph.names[] | select(. == "other")] | length' "$T_TMP/small.json")
check "max_nodes 20: $n nodes (at most 20, the root and the others)" \
    test "$n" -le 42 -a "$other" = 1
# Pyroscope's budget: the nodes kept are those whose total is at least the
# 20th largest node total of the whole graph (the root left out)
# nodes FILE: "total name" of every node but the root and the others
nodes() {
	jq -r '.flamegraph as $f | $f.levels[1:][].values |
	    range(0; length; 4) as $i | "\(.[$i+1]) \($f.names[.[$i+3] | tonumber])"' \
	    "$1" | awk '$2 != "other"'
}
cut20=$(nodes "$T_TMP/bin.json" | sort -rn | sed -n 20p | cut -d' ' -f1)
is "$(nodes "$T_TMP/small.json" | sort -n | awk '{ print $1 }' | paste -sd' ')" \
    "$(nodes "$T_TMP/bin.json" | awk -v c="$cut20" '$1 >= c { print $1 }' | sort -n | paste -sd' ')" \
    "max_nodes 20: the nodes kept are the whole graph's of total >= the 20th largest ($cut20)"
is "$(jq -r .flamegraph.total "$T_TMP/small.json")" \
    "$(jq -r .flamegraph.total "$T_TMP/bin.json")" "max_nodes keeps the total"
# call site: the first root child's subtree, by its own total
first=$(jq -r '.flamegraph as $f | $f.levels[1].values as $v |
    "\($v[1])\t\($f.names[$v[3] | tonumber])"' "$T_TMP/bin.json")
cs_total=${first%%$'\t'*}
cs_name=${first#*$'\t'}
q SelectMergeStacktraces "${REQ%\}},\"stackTraceSelector\":{\"callSite\":[{\"name\":\"$cs_name\"}]}}" \
    >"$T_TMP/cs.json"
is "$(jq -r .flamegraph.total "$T_TMP/cs.json")" "$cs_total" \
    "call site $cs_name: total = that node's in the whole graph"
q SelectMergeProfile "${REQ%\}},\"stackTraceSelector\":{\"callSite\":[{\"name\":\"$cs_name\"}]}}" \
    --out "$T_TMP/cs.pb" >/dev/null
is "$(top 0 "$T_TMP/cs.pb" | sed -n 's/^total \([0-9]*\).*/\1/p')" \
    "$cs_total" "SelectMergeProfile with the call site: the same total"

# --- listings ----------------------------------------------------------------
q ProfileTypes "{\"start\":\"$START\",\"end\":\"$END\"}" |
    jq -r '.profileTypes[] | "\(.ID) \(.name) \(.sampleType) \(.sampleUnit)"' \
    >"$T_TMP/pt"
{
	for k in "cpu $G/cpuburn/cpu_A_01.pb.gz" \
	    "heap $G/allocheavy/allocs_A_01.pb.gz" \
	    "mutex $G/contention/mutex_A_01.pb.gz" \
	    "block $G/contention/block_B_01.pb.gz" \
	    "goroutine $G/goroutines/goroutine_A_01.pb.gz" \
	    "other $C/node/datadog/wall_01.pb.gz"; do
		set -- $k
		types_of "$2" | while read -r name unit; do
			id=$(ptid "$1" "$name" "$unit")
			echo "$id ${id%%:*} $name $unit"
		done
	done
} | LC_ALL=C sort >"$T_TMP/pt.want"
check "ProfileTypes: one id per uploaded (type, sample type), $(wc -l <"$T_TMP/pt.want") of them" \
    cmp -s "$T_TMP/pt" "$T_TMP/pt.want"
diff "$T_TMP/pt" "$T_TMP/pt.want" | head -5 | sed 's/^/# /'
is "$(q LabelNames "{\"start\":\"$START\",\"end\":\"$END\"}" | jq -c .names)" \
    '["__name__","__profile_type__","build","service_name"]' "LabelNames"
is "$(q LabelValues "{\"name\":\"service_name\",\"start\":\"$START\",\"end\":\"$END\"}" | jq -c .names)" \
    '["allocs","contention","cpuburn","goroutines","nodewall"]' \
    "LabelValues service_name: every service"
is "$(q LabelValues "{\"name\":\"build\",\"matchers\":[\"{service_name=~\\\"cont.*\\\"}\"],\"start\":\"$START\",\"end\":\"$END\"}" | jq -c .names)" \
    '["A","B"]' "LabelValues build under a regex matcher"
is "$(q LabelValues "{\"name\":\"build\",\"matchers\":[\"{__profile_type__=\\\"block:delay:nanoseconds:contentions:count\\\"}\"],\"start\":\"$START\",\"end\":\"$END\"}" | jq -c .names)" \
    '["B"]' "LabelValues build of one profile type"
q Series "{\"matchers\":[\"{service_name=\\\"cpuburn\\\"}\"],\"labelNames\":[\"build\",\"__profile_type__\"],\"start\":\"$START\",\"end\":\"$END\"}" |
    jq -r '.labelsSet[] | [.labels[] | "\(.name)=\(.value)"] | join(",")' >"$T_TMP/series"
printf '%s\n' "__profile_type__=$ID,build=A" \
    "__profile_type__=$ID,build=B" \
    "__profile_type__=process_cpu:samples:count:cpu:nanoseconds,build=A" \
    "__profile_type__=process_cpu:samples:count:cpu:nanoseconds,build=B" |
    LC_ALL=C sort >"$T_TMP/series.want"
LC_ALL=C sort -o "$T_TMP/series" "$T_TMP/series"
check "Series: the label sets of cpuburn's profiles" \
    cmp -s "$T_TMP/series" "$T_TMP/series.want"
is "$(q Series "{\"matchers\":[\"{service_name=\\\"nope\\\"}\"],\"start\":\"$START\",\"end\":\"$END\"}" | jq -c '.labelsSet // []')" \
    '[]' "Series of an unknown service: none"

# --- SelectSeries against /api/0/timeline ----------------------------------
api "/api/0/profiles?service=cpuburn&type=cpu&$WIN&limit=100" "${R[@]}" >"$T_TMP/list.json"
lo=$(jq -r '[.body[].created_at] | min' "$T_TMP/list.json")
hi=$(jq -r '[.body[].created_at] | max' "$T_TMP/list.json")
lo_s=$(date -u -d "$lo" +%s)
hi_s=$(( $(date -u -d "$hi" +%s) + 1 ))
for step in 1 60 3600; do
	api "/api/0/timeline?service=cpuburn&type=cpu&sample_type=cpu&from=$lo_s&to=$hi_s&step=$step" \
	    "${R[@]}" >"$T_TMP/tl.json"
	jq -r '.body.points[] | select(.[2] > 0) | "\(.[0] * 1000) \(.[1])"' \
	    "$T_TMP/tl.json" >"$T_TMP/tl.pts"
	q SelectSeries "{\"profileTypeID\":\"$ID\",\"labelSelector\":\"{service_name=\\\"cpuburn\\\"}\",\"start\":\"$((lo_s * 1000))\",\"end\":\"$((hi_s * 1000))\",\"step\":$step}" |
	    jq -r '.series[0].points[] | "\(.timestamp) \(.value)"' >"$T_TMP/ss.pts"
	if [ -s "$T_TMP/tl.pts" ] && cmp -s "$T_TMP/ss.pts" "$T_TMP/tl.pts"; then
		ok "SelectSeries step $step: $(wc -l <"$T_TMP/ss.pts") points = /api/0/timeline's"
	else
		not_ok "SelectSeries step $step differs from /api/0/timeline"
		diff "$T_TMP/ss.pts" "$T_TMP/tl.pts" | head -4 | sed 's/^/# /'
	fi
done
q SelectSeries "{\"profileTypeID\":\"$ID\",\"labelSelector\":\"{service_name=\\\"cpuburn\\\", build=~\\\".*\\\"}\",\"start\":\"$((lo_s * 1000))\",\"end\":\"$((hi_s * 1000))\",\"step\":3600,\"groupBy\":[\"build\"]}" >"$T_TMP/grp.json"
is "$(jq -c '[.series[] | .labels[0].value]' "$T_TMP/grp.json")" '["A","B"]' \
    "SelectSeries group_by build: one series per value"
sum_grp=$(jq '[.series[].points[].value] | add' "$T_TMP/grp.json")
sum_tl=$(jq '[.body.points[][1]] | add' "$T_TMP/tl.json")
is "$sum_grp" "$sum_tl" "the groups' sums add up to the timeline's"
q SelectSeries "{\"profileTypeID\":\"$ID\",\"labelSelector\":\"{service_name=\\\"cpuburn\\\"}\",\"start\":\"$((lo_s * 1000))\",\"end\":\"$((hi_s * 1000))\",\"step\":3600,\"groupBy\":[\"build\"],\"limit\":\"1\"}" >"$T_TMP/lim.json"
is "$(jq '.series | length' "$T_TMP/lim.json")" 1 "limit 1: one series"

# --- Diff and the legacy render API ------------------------------------------
A="{\"profileTypeID\":\"$ID\",\"labelSelector\":\"{service_name=\\\"cpuburn\\\",build=\\\"A\\\"}\",\"start\":\"$START\",\"end\":\"$END\"}"
B=${A/build=\\\"A/build=\\\"B}
q Diff "{\"left\":$A,\"right\":$B}" >"$T_TMP/diff.json"
ta=$(q SelectMergeStacktraces "$A" | jq -r .flamegraph.total)
tb=$(q SelectMergeStacktraces "$B" | jq -r .flamegraph.total)
is "$(jq -r '"\(.flamegraph.leftTicks) \(.flamegraph.rightTicks) \(.flamegraph.total)"' "$T_TMP/diff.json")" \
    "$ta $tb $((ta + tb))" "Diff: leftTicks, rightTicks, total"
is "$(jq '[.flamegraph.levels[].values | length % 7] | add' "$T_TMP/diff.json")" 0 \
    "Diff: seven values per node"
QS=$(jq -rn --arg q "$ID{service_name=\"cpuburn\"}" '$q | @uri')
api "/pyroscope/render?query=$QS&from=946684800&until=4102444800&format=json" \
    "${R[@]}" >"$T_TMP/render.json"
is "$HTTP_CODE $(jq -r '.flamebearer.numTicks' "$T_TMP/render.json")" \
    "200 $(jq -r .flamegraph.total "$T_TMP/bin.json")" \
    "/pyroscope/render: numTicks = the merge's total"
is "$(jq '[.timeline.samples[]] | add' "$T_TMP/render.json")" \
    "$(jq -r .flamegraph.total "$T_TMP/bin.json")" \
    "/pyroscope/render: the timeline sums to it"
QA=$(jq -rn --arg q "$ID{service_name=\"cpuburn\",build=\"A\"}" '$q | @uri')
QB=$(jq -rn --arg q "$ID{service_name=\"cpuburn\",build=\"B\"}" '$q | @uri')
api "/pyroscope/render-diff?leftQuery=$QA&leftFrom=946684800&leftUntil=4102444800&rightQuery=$QB&rightFrom=946684800&rightUntil=4102444800" \
    "${R[@]}" >"$T_TMP/rdiff.json"
is "$HTTP_CODE $(jq -r '"\(.leftTicks) \(.rightTicks) \(.metadata.format)"' "$T_TMP/rdiff.json")" \
    "200 $ta $tb double" "/pyroscope/render-diff: both sides' ticks"
qjs_stop
done_testing
