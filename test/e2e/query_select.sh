#!/usr/bin/env bash
# What Pyroscope's query API selects (docs: the contract of issue #32), on
# corpus profiles re-dated to known times, through Connect's Node.js
# client (test/protojs/query.mjs): windows inclusive at both ends, by the
# store's plans and by rows; the default window (end: now, start: an hour
# before); SelectSeries' buckets, sums and means per profile against
# /api/0/timeline, group_by with a group lacking the label, limit;
# selectors: "" and != "" for labels a profile lacks, anchored regexes,
# quotes, backquotes and escapes, spaces, matchers[] as an OR; profile
# type ids by profd's names and Pyroscope's, periods ignored, a sample
# type nobody has (empty answers, no error); an empty selection's flame
# graph; the listings' windows and label sets; the legacy render API's
# times; the answers' content types. Totals come from the files
# (test/lib/pprof_totals.py).
. "${top_srcdir:-.}/test/lib/e2e.sh"
. "${top_srcdir:-.}/test/lib/qjs.sh"

C=$PROFD_CORPUS
G=$C/go
JS=${top_srcdir:-.}/test/protojs
LIB=${top_srcdir:-.}/test/lib
command -v jq >/dev/null 2>&1 || skip_all "jq not installed"
command -v node >/dev/null 2>&1 || skip_all "node not installed"
command -v python3 >/dev/null 2>&1 || skip_all "python3 not installed"
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
qjs_start "$JS" "$PROFD_URL" reader-0123456789

CPU=process_cpu:cpu:nanoseconds:cpu:nanoseconds
GOR=goroutines:goroutine:count:goroutine:count
NOW=$(date +%s)
# An hour's start four hours ago: timed's profiles at H + k * 900 s.
H=$(( NOW / 3600 * 3600 - 4 * 3600 ))

# total FILE NAME/UNIT: the sum of that sample type over FILE.
total() {
	python3 "$LIB/pprof_totals.py" "$1" | awk -v t="$2" '$2 == t { print $1 }'
}
# put FILE WHEN SERVICE TYPE LABELS: FILE re-dated to WHEN (Unix seconds),
# uploaded.
N_UP=0
put() {
	local f=$T_TMP/up.$N_UP.pb.gz
	N_UP=$((N_UP + 1))
	python3 "$LIB/retime.py" "$1" "$f" "${2}000000000" &&
	    upload "$f" "service=$3&type=$4&labels=$5" "${W[@]}" >/dev/null
	[ "$HTTP_CODE" = 200 ] || diag "upload of $1 at $2: $HTTP_CODE $BODY"
	[ "$HTTP_CODE" = 200 ]
}
# sum K...: the sum of TOT[K] over the Ks.
sum() {
	local k s=0
	for k in "$@"; do s=$((s + TOT[k])); done
	echo "$s"
}
# fg SELECTOR START END [ID]: SelectMergeStacktraces' total ("error ..."
# on an error). START/END "" leave the field out.
fg() {
	local id=${4:-$CPU} sel
	sel=$(jq -n --arg s "$1" '$s')
	q SelectMergeStacktraces "{\"profileTypeID\":\"$id\",\"labelSelector\":$sel${2:+,\"start\":\"$2\"}${3:+,\"end\":\"$3\"}}" >"$T_TMP/fg.json" ||
	    { cat "$T_TMP/fg.json"; return; }
	jq -r '.flamegraph.total // "0"' "$T_TMP/fg.json"
}

# --- the profiles ------------------------------------------------------------
# timed (cpu): six at H + k * 900 s; k even: build=A,env=prod; k odd: build=B
files=($G/cpuburn/cpu_A_0[1-5].pb.gz $G/cpuburn/cpu_B_01.pb.gz)
bad=0
TOT=()
for k in 0 1 2 3 4 5; do
	if ((k % 2 == 0)); then labels=build=A,env=prod; else labels=build=B; fi
	put "${files[k]}" $((H + k * 900)) timed cpu "$labels" || bad=$((bad + 1))
	TOT[k]=$(total "${files[k]}" cpu/nanoseconds)
done
# recent (goroutine): at now-50m and now-10m (the default window), and
# now-2h
rfiles=($G/goroutines/goroutine_A_0[1-3].pb.gz)
put "${rfiles[0]}" $((NOW - 3000)) recent goroutine build=A || bad=$((bad + 1))
put "${rfiles[1]}" $((NOW - 600)) recent goroutine build=A || bad=$((bad + 1))
put "${rfiles[2]}" $((NOW - 7200)) recent goroutine build=A || bad=$((bad + 1))
GT=()
for k in 0 1 2; do GT[k]=$(total "${rfiles[k]}" goroutine/count); done
# quoted (heap): a label value with a quote, a backslash and a comma
put $G/allocheavy/allocs_A_01.pb.gz $((NOW - 3 * 3600)) quoted heap \
    'note=a%22b%5Cc%2Cx' || bad=$((bad + 1))
QT=$(total $G/allocheavy/allocs_A_01.pb.gz inuse_space/bytes)
is "$bad" 0 "ten profiles stored (timed from $(date -u -d @$H +%H:%M), recent, quoted)"
check "their totals, from the files: each above 0 (${TOT[*]}; ${GT[*]}; $QT)" \
    test "$(printf '%s\n' "${TOT[@]}" "${GT[@]}" "$QT" | grep -c '^[1-9][0-9]*$')" = 10

S=$((H * 1000))		# ms
E=$(( (H + 5400) * 1000 ))
ALL=$(sum 0 1 2 3 4 5)

# --- windows -------------------------------------------------------------------
# by the store's plans (service_name only), then by rows (a regex)
for sel in '{service_name="timed"}' '{service_name="timed",build=~".+"}'; do
	is "$(fg "$sel" $((S + 900000)) $((S + 2700000)))" "$(sum 1 2 3)" \
	    "$sel [H+15m, H+45m]: both ends inclusive (k = 1, 2, 3)"
	is "$(fg "$sel" $((S + 900000)) $((S + 2700000 - 1)))" "$(sum 1 2)" \
	    "$sel end a millisecond earlier: k = 1, 2"
	is "$(fg "$sel" $((S + 900001)) $((S + 2700000)))" "$(sum 2 3)" \
	    "$sel start a millisecond later: k = 2, 3"
done
RSEL='{service_name="recent"}'
is "$(fg "$RSEL" "" "" $GOR)" $((GT[0] + GT[1])) \
    "no start, no end: the last hour (now-50m, now-10m; not now-2h)"
is "$(fg "$RSEL" "" $(( (NOW - 2400) * 1000 )) $GOR)" "${GT[0]}" \
    "end now-40m, no start: the hour before it (now-50m only)"
is "$(fg "$RSEL" $(( (NOW - 3 * 3600) * 1000 )) "" $GOR)" \
    $((GT[0] + GT[1] + GT[2])) "start now-3h, no end: until now (all three)"
q ProfileTypes "{\"start\":\"$(( (NOW - 4200) * 1000 ))\"}" >"$T_TMP/pt.json"
is "$(jq -c '[.profileTypes[]?.ID]' "$T_TMP/pt.json")" "[\"$GOR\"]" \
    "ProfileTypes of the last 70 minutes: recent's only"
q LabelValues "{\"name\":\"service_name\"}" >"$T_TMP/lv.json"
is "$(jq -c '.names // []' "$T_TMP/lv.json")" '["recent"]' \
    "LabelValues service_name, default window: recent"

# --- SelectSeries against /api/0/timeline ---------------------------------------
# pts FILE: "timestamp value" per point of the first series (jq's numbers)
pts() { jq -r '.series[0].points[]? | "\(.timestamp) \(.value // 0)"' "$1"; }
# tl STEP FILTER: /api/0/timeline's buckets with profiles, FILTER giving the
# value from the point [t, sum, profiles]
tl() {
	api "/api/0/timeline?service=timed&type=cpu&sample_type=cpu&from=$H&to=$((H + 5400))&step=$1" \
	    "${R[@]}" >"$T_TMP/tl.json"
	jq -r ".body.points[] | select(.[2] > 0) | \"\(.[0] * 1000) \($2)\"" \
	    "$T_TMP/tl.json"
}
SS="\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{service_name=\\\"timed\\\"}\",\"start\":\"$S\",\"end\":\"$E\""
q SelectSeries "{$SS,\"step\":900}" >"$T_TMP/ss.json"
want=$(for k in 0 1 2 3 4 5; do echo "$(( (H + k * 900) * 1000 )) ${TOT[k]}"; done)
is "$(pts "$T_TMP/ss.json")" "$want" "SelectSeries step 900: a point per profile at its bucket's start, its total"
is "$(tl 900 '.[1]')" "$want" "/api/0/timeline step 900: the same"
q SelectSeries "{$SS,\"step\":3600}" >"$T_TMP/ss.json"
is "$(pts "$T_TMP/ss.json")" "$S $(sum 0 1 2 3)
$((S + 3600000)) $(sum 4 5)" "SelectSeries step 3600: two buckets' sums"
is "$(tl 3600 '.[1]')" "$(pts "$T_TMP/ss.json")" "= /api/0/timeline's"
# no step: about 200 buckets over the window (90 minutes: about 27 s)
q SelectSeries "{$SS}" >"$T_TMP/ss.json"
is "$(pts "$T_TMP/ss.json" | awk -v h=$S '{ k = NR - 1; t = (h + k * 900000)
    print ($1 <= t && $1 > t - 54000) ? "in" : "out:" $1, $2 }')" \
    "$(for k in 0 1 2 3 4 5; do echo "in ${TOT[k]}"; done)" \
    "no step: a point per profile, its bucket's start at most 54 s before it"
q SelectSeries "{$SS,\"step\":3600,\"aggregation\":\"TIME_SERIES_AGGREGATION_TYPE_AVERAGE\"}" >"$T_TMP/avg.json"
is "$(pts "$T_TMP/avg.json")" "$(tl 3600 '.[1] / .[2]')" \
    "AVERAGE: the mean per profile = the timeline's sum / profiles"
q SelectSeries "{$SS,\"step\":3600,\"groupBy\":[\"env\"]}" >"$T_TMP/grp.json"
is "$(jq -r '.series[] | "\([.labels[]? | "\(.name)=\(.value)"] | join(",")) \([.points[].value] | add)"' "$T_TMP/grp.json" | LC_ALL=C sort)" \
    "$(LC_ALL=C sort <<<" $(sum 1 3 5)
env=prod $(sum 0 2 4)")" \
    "group_by env: env=prod, and the profiles without env as a group without it"
q SelectSeries "{$SS,\"step\":3600,\"groupBy\":[\"build\"],\"limit\":\"1\"}" >"$T_TMP/lim.json"
if (( $(sum 0 2 4) > $(sum 1 3 5) )); then big=A; else big=B; fi
is "$(jq -c '[.series[] | .labels[] | "\(.name)=\(.value)"]' "$T_TMP/lim.json")" \
    "[\"build=$big\"]" "group_by build, limit 1: the build with the larger sum"
q SelectSeries "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{service_name=\\\"timed\\\",env=\\\"\\\"}\",\"start\":\"$S\",\"end\":\"$E\",\"step\":900}" >"$T_TMP/ss.json"
is "$(pts "$T_TMP/ss.json" | cut -d' ' -f2 | paste -sd' ')" \
    "${TOT[1]} ${TOT[3]} ${TOT[5]}" 'SelectSeries env="": the profiles without env'

# --- selectors ----------------------------------------------------------------
for c in "{service_name=\"timed\",env=\"\"}#1 3 5#a label a profile lacks is \"\"" \
    "{service_name=\"timed\",env!=\"\"}#0 2 4#!= \"\": those carrying it" \
    "{service_name=~\"tim\"}##regexes are anchored: tim matches no service" \
    "{service_name=~\"tim.*\"}#0 1 2 3 4 5#tim.* all" \
    "{service_name=\"timed\",build=~\"A\"}#0 2 4#=~ anchored on labels" \
    "{service_name=\"timed\",build!~\"A|B\"}##!~ A|B: none" \
    "{ service_name = \"timed\" , build = \"B\" }#1 3 5#spaces around names, operators, commas" \
    "{service_name='timed',build='B'}#1 3 5#single quotes" \
    "{service_name=\`timed\`,build=\`B\`}#1 3 5#backquotes" \
    "{}#0 1 2 3 4 5#{}: everything" \
    "#0 1 2 3 4 5#an empty selector: everything"; do
	IFS='#' read -r sel ks what <<<"$c"
	is "$(fg "$sel" $S $E)" "$(sum $ks)" "$what: $sel"
done
HEAP=memory:inuse_space:bytes:space:bytes
q LabelValues "{\"name\":\"note\",\"start\":\"$S\"}" >"$T_TMP/lv.json"
is "$(jq -r '.names[]' "$T_TMP/lv.json")" 'a"b\c,x' 'the label value as uploaded'
for sel in '{note="a\"b\\c,x"}' "{note='a\"b\\\\c,x'}" '{note=`a"b\c,x`}' \
    '{note=~"a\"b\\\\c,.*"}'; do
	is "$(fg "$sel" $S "" $HEAP)" "$QT" "escapes: $sel"
done
q Series "{\"matchers\":[\"{service_name=\\\"timed\\\",build=\\\"A\\\"}\",\"{service_name=\\\"recent\\\"}\"],\"labelNames\":[\"service_name\",\"build\"],\"start\":\"$S\"}" >"$T_TMP/or.json"
is "$(jq -r '.labelsSet[] | [.labels[] | "\(.name)=\(.value)"] | sort | join(",")' "$T_TMP/or.json" | LC_ALL=C sort)" \
    "build=A,service_name=recent
build=A,service_name=timed" "matchers[]: an OR of the selectors"

# --- profile type ids -----------------------------------------------------------
is "$(fg '{service_name="timed"}' $S $E cpu:cpu:nanoseconds:cpu:nanoseconds)" "$ALL" \
    "profd's type name cpu for process_cpu"
is "$(fg '{service_name="timed"}' $S $E process_cpu:cpu:nanoseconds:x:y)" "$ALL" \
    "the period type and unit are ignored"
RS=$(( (NOW - 3 * 3600) * 1000 ))
for id in $GOR goroutine:goroutine:count:goroutine:count; do
	is "$(fg "$RSEL" $RS "" $id)" $((GT[0] + GT[1] + GT[2])) "$id"
done
is "$(fg '{}' $RS "" heap:inuse_space:bytes:space:bytes)" "$QT" \
    "heap:inuse_space (memory)"
NOPE=process_cpu:nope:count:cpu:nanoseconds
is "$(fg '{service_name="timed"}' $S $E $NOPE)" 0 \
    "a sample type the profiles lack: total 0, no error"
# empty: names ["total"], one level [0,0,0,0]
empty_fg() {
	jq -c '[.flamegraph.names, [.flamegraph.levels[].values | map(tonumber)],
	    (.flamegraph.total // "0")]' "$1"
}
is "$(empty_fg "$T_TMP/fg.json")" '[["total"],[[0,0,0,0]],"0"]' \
    "... its flame graph: only the root, 0"
fg '{service_name="nope"}' $S $E >/dev/null
is "$(empty_fg "$T_TMP/fg.json")" '[["total"],[[0,0,0,0]],"0"]' \
    "an empty selection: only the root, 0"
q SelectSeries "{\"profileTypeID\":\"$NOPE\",\"labelSelector\":\"{}\",\"start\":\"$S\",\"end\":\"$E\",\"step\":900}" >"$T_TMP/ss.json"
is "$(jq -c '.series // []' "$T_TMP/ss.json")" '[]' \
    "SelectSeries of a sample type the profiles lack: no series"
q SelectMergeProfile "{\"profileTypeID\":\"$NOPE\",\"labelSelector\":\"{}\",\"start\":\"$S\",\"end\":\"$E\"}" >"$T_TMP/smp.json"
is "$(jq -c '.sample // []' "$T_TMP/smp.json")" '[]' \
    "SelectMergeProfile of it: a profile without samples"
q Diff "{\"left\":{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{service_name=\\\"nope\\\"}\",\"start\":\"$S\",\"end\":\"$E\"},\"right\":{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{service_name=\\\"timed\\\"}\",\"start\":\"$S\",\"end\":\"$E\"}}" >"$T_TMP/diff.json"
is "$(jq -r '"\(.flamegraph.leftTicks // "0") \(.flamegraph.rightTicks)"' "$T_TMP/diff.json")" \
    "0 $ALL" "Diff of an empty left: 0 and the right's total"

# --- listings -------------------------------------------------------------------
W1="\"start\":\"$S\""
q LabelNames "{$W1}" >"$T_TMP/ln.json"
is "$(jq -c .names "$T_TMP/ln.json")" \
    '["__name__","__profile_type__","build","env","note","service_name"]' \
    "LabelNames: every name"
q LabelNames "{\"matchers\":[\"{service_name=\\\"recent\\\"}\"],$W1}" >"$T_TMP/ln.json"
is "$(jq -c .names "$T_TMP/ln.json")" \
    '["__name__","__profile_type__","build","service_name"]' \
    "LabelNames of recent: its names only"
q LabelValues "{\"name\":\"__name__\",\"start\":\"$S\"}" >"$T_TMP/lv.json"
is "$(jq -c .names "$T_TMP/lv.json")" '["goroutines","memory","process_cpu"]' \
    "LabelValues __name__"
q LabelValues "{\"name\":\"__profile_type__\",\"matchers\":[\"{service_name=\\\"timed\\\"}\"],\"start\":\"$S\"}" >"$T_TMP/lv.json"
is "$(jq -c .names "$T_TMP/lv.json")" \
    "[\"$CPU\",\"process_cpu:samples:count:cpu:nanoseconds\"]" \
    "LabelValues __profile_type__ of timed"
q LabelValues "{\"name\":\"env\",\"start\":\"$S\"}" >"$T_TMP/lv.json"
is "$(jq -c .names "$T_TMP/lv.json")" '["prod"]' "LabelValues env: no empty value"
q LabelValues "{\"name\":\"service_name\",\"matchers\":[\"{__profile_type__=\\\"$GOR\\\"}\"],\"start\":\"$S\"}" >"$T_TMP/lv.json"
is "$(jq -c .names "$T_TMP/lv.json")" '["recent"]' \
    "LabelValues service_name under a __profile_type__ matcher"
q Series "{\"matchers\":[\"{service_name=\\\"recent\\\"}\"],$W1}" >"$T_TMP/series.json"
is "$(jq -c '[.labelsSet[] | [.labels[] | "\(.name)=\(.value)"] | sort]' "$T_TMP/series.json")" \
    "[[\"__name__=goroutines\",\"__profile_type__=$GOR\",\"build=A\",\"service_name=recent\"]]" \
    "Series without label_names: service_name, __profile_type__, __name__ and the labels"

# --- the legacy render API --------------------------------------------------------
uri() { jq -rn --arg q "$1" '$q | @uri'; }
api "/pyroscope/render?query=$(uri "$GOR{service_name=\"recent\"}")&from=now-1h&until=now" \
    "${R[@]}" >"$T_TMP/r.json"
is "$HTTP_CODE $(jq -r .flamebearer.numTicks "$T_TMP/r.json")" \
    "200 $((GT[0] + GT[1]))" "render from=now-1h until=now"
CQ=$(uri "$CPU{service_name=\"timed\"}")
api "/pyroscope/render?query=$CQ&from=$((H + 900))&until=$((H + 2700))" \
    "${R[@]}" >"$T_TMP/r.json"
is "$HTTP_CODE $(jq -r .flamebearer.numTicks "$T_TMP/r.json")" \
    "200 $(sum 1 2 3)" "render from/until in seconds: inclusive"
api "/pyroscope/render?query=$CQ&from=$((S + 900000))&until=$((S + 2700000 - 1))" \
    "${R[@]}" >"$T_TMP/r.json"
is "$HTTP_CODE $(jq -r .flamebearer.numTicks "$T_TMP/r.json")" \
    "200 $(sum 1 2)" "render from/until in milliseconds"
api "/pyroscope/render?query=$(uri "$CPU{service_name=\"nope\"}")&from=$H&until=$((H + 5400))" \
    "${R[@]}" >"$T_TMP/r.json"
is "$HTTP_CODE $(jq -r .flamebearer.numTicks "$T_TMP/r.json")" "200 0" \
    "render of an empty selection"
api "/pyroscope/render-diff?leftQuery=$(uri "$CPU{service_name=\"timed\",build=\"A\"}")&leftFrom=$H&leftUntil=$((H + 5400))&rightQuery=$(uri "$CPU{service_name=\"timed\",build=\"B\"}")&rightFrom=$H&rightUntil=$((H + 5400))" \
    "${R[@]}" >"$T_TMP/rd.json"
is "$HTTP_CODE $(jq -r '"\(.leftTicks) \(.rightTicks)"' "$T_TMP/rd.json")" \
    "200 $(sum 0 2 4) $(sum 1 3 5)" "render-diff: build A against B"

# --- content types ------------------------------------------------------------------
ctype() {
	curl -s -o /dev/null -D - -H "Content-Type: $1" "${R[@]}" \
	    --data-binary "$2" "$PROFD_URL/querier.v1.QuerierService/$3" |
	    tr -d '\r' | awk -F': *' 'tolower($1) == "content-type" { print $2 }'
}
is "$(ctype application/json '{}' LabelNames)" application/json \
    "a JSON request's answer: application/json"
is "$(ctype application/proto '' LabelNames)" application/proto \
    "a binary request's answer: application/proto"
is "$(ctype application/proto $'\x0a\xff' LabelNames)" application/json \
    "a binary request's error: application/json"
qjs_stop
done_testing
