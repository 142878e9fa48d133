#!/usr/bin/env bash
# The UI's query endpoints against `go tool pprof` on the same stored corpus
# profiles: for every kind of corpus profile and every sample type,
# /api/0/top lists the functions of `go tool pprof -top` of the input files
# with the same flat and cum (pprof's " (inline)" marks aside) and the same
# total; /api/0/flamegraph's root value is that total and the sum of self
# per function name is pprof's flat; max_nodes keeps every parent exact;
# focus and hide agree with pprof's -focus and -hide; /api/0/diff carries
# both selections' totals; /api/0/sample_types lists the stored types.
# Then bad parameters (400), an empty window (200, total 0) and auth.
. "${top_srcdir:-.}/test/lib/e2e.sh"
. "${top_srcdir:-.}/test/e2e/pprof_read.sh"

C=$PROFD_CORPUS
G=$C/go
command -v go >/dev/null 2>&1 || skip_all "go tool pprof not installed"
command -v jq >/dev/null 2>&1 || skip_all "jq not installed"
[ -d "$G" ] || skip_all "corpus not found at $C"

tokens=$T_TMP/tokens
printf 'reader-0123456789 read\nwriter-0123456789 write\n' >"$tokens"
profd_start --auth-file "$tokens" || { not_ok "profd starts"; done_testing; }
R=(-H 'Authorization: Bearer reader-0123456789')
W=(-H 'Authorization: Bearer writer-0123456789')
WIN="from=2000-01-01T00:00:00&to=2100-01-01T00:00:00"

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

# check_kind LABEL SERVICE TYPE FILE...: every sample type of the files.
check_kind() {
	local label=$1 svc=$2 type=$3 i name total ptotal root
	shift 3
	i=0
	for name in $(names_of "$1"); do
		top "$i" "$@" >"$T_TMP/pp"
		ptotal=$(sed -n 's/^total \([0-9]*\).*/\1/p' "$T_TMP/pp")
		grep -v '^total ' "$T_TMP/pp" |
		    sed -E 's/ \((partial-)?inline\)$//; s/^([0-9]+)[a-zA-Z]* ([0-9]+)[a-zA-Z]* /\1 \2 /' |
		    LC_ALL=C sort >"$T_TMP/pp.rows"
		api "/api/0/top?service=$svc&type=$type&$WIN&sample_type=$name&limit=1000000" \
		    "${R[@]}" >"$T_TMP/top.json"
		# (one jq a reply: the total, then the rows)
		jq -r '.body.total, (.body.rows[] | "\(.flat) \(.cum) \(.name)")' \
		    "$T_TMP/top.json" >"$T_TMP/top.lines"
		total=$(head -n 1 "$T_TMP/top.lines")
		tail -n +2 "$T_TMP/top.lines" | LC_ALL=C sort >"$T_TMP/ours.rows"
		if [ "$HTTP_CODE" != 200 ]; then
			not_ok "$label $name: top answered $HTTP_CODE"
		elif [ "$total" != "$ptotal" ]; then
			not_ok "$label $name: total $total, pprof $ptotal"
		elif ! cmp -s "$T_TMP/ours.rows" "$T_TMP/pp.rows"; then
			not_ok "$label $name: rows differ from pprof -top"
			diff "$T_TMP/ours.rows" "$T_TMP/pp.rows" | head -8 |
			    sed 's/^/# /'
		else
			ok "$label $name: top = pprof -top ($(wc -l <"$T_TMP/ours.rows") functions, total $total)"
		fi
		api "/api/0/flamegraph?service=$svc&type=$type&$WIN&sample_type=$name&max_nodes=1000000" \
		    "${R[@]}" >"$T_TMP/fg.json"
		# the root's value, then every node below it (self, name);
		# awk sums self per name (bigstacks' graph has some 140,000
		# nodes: jq's group_by took seconds over them)
		jq -r '.body.root.value, (.body.root | recurse(.children[]?) |
		    select(.name != "total") | "\(.self)\t\(.name)")' \
		    "$T_TMP/fg.json" >"$T_TMP/fg.lines"
		root=$(head -n 1 "$T_TMP/fg.lines")
		tail -n +2 "$T_TMP/fg.lines" | awk -F'\t' '{ s[$2] += $1 }
		    END { for (n in s) if (s[n] != 0) printf "%.0f %s\n", s[n], n }' |
		    LC_ALL=C sort >"$T_TMP/fg.self"
		awk '$1 != 0 { f = $1; $1 = ""; $2 = ""; sub(/^ +/, ""); print f, $0 }' \
		    "$T_TMP/pp.rows" | LC_ALL=C sort >"$T_TMP/pp.flat"
		if [ "$root" != "$ptotal" ]; then
			not_ok "$label $name: flame graph root $root, pprof total $ptotal"
		elif ! cmp -s "$T_TMP/fg.self" "$T_TMP/pp.flat"; then
			not_ok "$label $name: flame graph self per function differs from pprof's flat"
			diff "$T_TMP/fg.self" "$T_TMP/pp.flat" | head -6 | sed 's/^/# /'
		else
			ok "$label $name: flame graph root = total, self per function = flat"
		fi
		i=$((i + 1))
	done
}

put cpuburn cpu build=A $G/cpuburn/cpu_A_0*.pb.gz
put cpuburn cpu build=B $G/cpuburn/cpu_B_0*.pb.gz
put allocheavy heap build=A $G/allocheavy/heap_A_0*.pb.gz
put allocs heap build=A $G/allocheavy/allocs_A_0*.pb.gz
put contention mutex build=A $G/contention/mutex_[AB]_0*.pb.gz
put contention block build=A $G/contention/block_[AB]_0*.pb.gz
put goroutines goroutine build=A $G/goroutines/goroutine_[AB]_0*.pb.gz
put bigstacks cpu build=A $G/bigstacks/cpu_A_01.pb.gz
put nodewall other build=A $C/node/datadog/wall_0*.pb.gz

check_kind "cpuburn cpu" cpuburn cpu $G/cpuburn/cpu_[AB]_0*.pb.gz
check_kind "allocheavy heap" allocheavy heap $G/allocheavy/heap_A_0*.pb.gz
check_kind "contention mutex" contention mutex $G/contention/mutex_[AB]_0*.pb.gz
check_kind "contention block" contention block $G/contention/block_[AB]_0*.pb.gz
check_kind "goroutines goroutine" goroutines goroutine $G/goroutines/goroutine_[AB]_0*.pb.gz
check_kind "bigstacks cpu" bigstacks cpu $G/bigstacks/cpu_A_01.pb.gz
check_kind "node wall" nodewall other $C/node/datadog/wall_0*.pb.gz

# Default sample type: pprof's (the last for cpu; heap's names inuse_space).
api "/api/0/top?service=cpuburn&type=cpu&$WIN&limit=1" "${R[@]}" >/dev/null
is "$(echo "$BODY" | jq -r '.body.sample_type + " " + .body.unit')" \
    "cpu nanoseconds" "default sample type of cpu: cpu nanoseconds"
api "/api/0/top?service=allocheavy&type=heap&$WIN&limit=1" "${R[@]}" >/dev/null
is "$(echo "$BODY" | jq -r .body.sample_type)" inuse_space \
    "heap (no default sample type in the profile): the last, inuse_space"
api "/api/0/top?service=allocs&type=heap&$WIN&limit=1" "${R[@]}" >/dev/null
is "$(echo "$BODY" | jq -r .body.sample_type)" \
    "$(awk -F'\t' '$1 == "go/allocheavy/allocs_A_01.pb.gz" { print $11 }' "$C/MANIFEST.tsv")" \
    "allocs: the profile's default sample type (MANIFEST), not the last"
is "$(echo "$BODY" | jq -r .body.profiles)" 5 "the body counts the profiles merged"

# max_nodes: at most that many named nodes, every parent exact.
api "/api/0/flamegraph?service=cpuburn&type=cpu&$WIN&max_nodes=20" "${R[@]}" >"$T_TMP/small.json"
n=$(jq '[.. | objects | select(has("self")) | select(.name != "other" and .name != "total")] | length' "$T_TMP/small.json")
check "max_nodes=20: $n nodes besides total and other" test "$n" -le 20 -a "$n" -gt 0
bad=$(jq '[.. | objects | select(has("children")) | select((.children | length) > 0)
    | select(.value != .self + (.children | map(.value) | add))] | length' "$T_TMP/small.json")
is "$bad" 0 "max_nodes=20: every parent's value is its self plus its children's"
is "$(jq .body.root.value "$T_TMP/small.json")" \
    "$(jq .body.total "$T_TMP/small.json")" "max_nodes=20: the root keeps the total"

# focus and hide against pprof -focus / -hide (function names).
files=($G/cpuburn/cpu_[AB]_0*.pb.gz)
for f in 'focus=main%5C.fib:-focus=main\.fib' 'hide=runtime%5C.:-hide=runtime\.' \
    'focus=strings&hide=indexbytebody:-focus=strings -hide=indexbytebody'; do
	q=${f%%:*} flags=${f#*:}
	# shellcheck disable=SC2086
	gopprof -top -nodecount=1000000 -nodefraction=0 -edgefraction=0 \
	    -unit=ns $flags "${files[@]}" 2>/dev/null | awk '
	    f { flat=$1; cum=$4; $1=$2=$3=$4=$5=""; sub(/^ +/, "");
		sub(/ \((partial-)?inline\)$/, ""); sub(/ns$/, "", flat);
		sub(/ns$/, "", cum); print flat, cum, $0 }
	    /^ *flat +flat%/ { f=1 }' | LC_ALL=C sort >"$T_TMP/pp.f"
	api "/api/0/top?service=cpuburn&type=cpu&$WIN&$q&limit=1000000" "${R[@]}" >/dev/null
	echo "$BODY" | jq -r '.body.rows[] | "\(.flat) \(.cum) \(.name)"' |
	    LC_ALL=C sort >"$T_TMP/ours.f"
	if [ -s "$T_TMP/pp.f" ] && cmp -s "$T_TMP/ours.f" "$T_TMP/pp.f"; then
		ok "$q: top = pprof -top $flags ($(wc -l <"$T_TMP/ours.f") functions)"
	else
		not_ok "$q: top differs from pprof -top $flags"
		diff "$T_TMP/ours.f" "$T_TMP/pp.f" | head -6 | sed 's/^/# /'
	fi
done

# diff: build=B against build=A.
api "/api/0/diff?service=cpuburn&type=cpu&$WIN&labels=build=B&base_labels=build=A" "${R[@]}" >"$T_TMP/diff.json"
is "$HTTP_CODE" 200 "diff answers 200"
tb=$(top 1 $G/cpuburn/cpu_B_0*.pb.gz | sed -n 's/^total \([0-9]*\).*/\1/p')
ta=$(top 1 $G/cpuburn/cpu_A_0*.pb.gz | sed -n 's/^total \([0-9]*\).*/\1/p')
is "$(jq -r '"\(.body.total) \(.body.base_total)"' "$T_TMP/diff.json")" "$tb $ta" \
    "diff: total and base_total are the two selections' pprof totals"
is "$(jq -r '"\(.body.root.value) \(.body.root.base_value)"' "$T_TMP/diff.json")" "$tb $ta" \
    "diff: the root carries value and base_value"
n=$(jq '[.. | objects | select(has("self")) | select(has("base_value") | not)] | length' "$T_TMP/diff.json")
is "$n" 0 "diff: every node has base_value"
ids=$(api "/api/0/profiles?service=cpuburn&type=cpu&$WIN&labels=build=A" "${R[@]}" | jq -r '[.body[].id] | join("+")')
api "/api/0/diff?ids=$ids&base_ids=$ids" "${R[@]}" >"$T_TMP/d2.json"
is "$(jq -r '"\(.body.total) \(.body.base_total)"' "$T_TMP/d2.json")" "$ta $ta" \
    "diff by ids: the same ids on both sides give equal totals"

# sample_types
api "/api/0/sample_types?service=allocheavy&type=heap&$WIN" "${R[@]}" >/dev/null
is "$(echo "$BODY" | jq -r '[.body.sample_types[] | .type + "/" + .unit] | join(",")')" \
    "alloc_objects/count,alloc_space/bytes,inuse_objects/count,inuse_space/bytes" \
    "sample_types lists the stored types with units"

# An empty window: 200 with total 0.
api "/api/0/flamegraph?service=cpuburn&type=cpu&from=2001-01-01T00:00:00&to=2001-01-02T00:00:00" "${R[@]}" >/dev/null
is "$HTTP_CODE $(echo "$BODY" | jq -c '[.body.total, .body.profiles, .body.root.value, (.body.root.children | length)]')" \
    "200 [0,0,0,0]" "an empty window: 200, total 0, no children"
api "/api/0/top?service=nosuch&type=cpu" "${R[@]}" >/dev/null
is "$HTTP_CODE $(echo "$BODY" | jq -c '.body.rows')" "200 []" "an unknown service: 200 with no rows"

# Bad parameters: 400 with the envelope (all in one curl, the envelopes
# read by one jq).
badq=("service=cpuburn&type=cpu&$WIN&sample_type=nope" \
    "service=cpuburn&type=cpu&$WIN&focus=(" \
    "service=cpuburn&type=cpu&$WIN&hide=%5B" \
    "service=cpuburn&type=cpu&$WIN&max_nodes=0" \
    "service=cpuburn&type=cpu&$WIN&max_nodes=1000001" \
    "service=cpuburn&type=cpu&$WIN&focus=(a*)%5C1" \
    "service=cpuburn&type=cpu&$WIN&hide=$(printf 'a%.0s' $(seq 257))" \
    "service=cpuburn&type=cpu&$WIN&max_nodes=x" \
    "service=cpuburn&type=cpu&$WIN&limit=-1" \
    "type=cpu&$WIN" "service=cpuburn&$WIN" "ids=nope" "ids=%2B%2B" \
    "service=cpuburn&type=cpu&from=bogus")
mapfile -t got < <(api_each .code "header = \"${R[1]}\"" /api/0/flamegraph? "${badq[@]}")
for i in "${!badq[@]}"; do
	is "${got[i]/$'\t'/ }" "400 400" "flamegraph?${badq[i]}: 400"
done
api "/api/0/diff?ids=$ids" "${R[@]}" >/dev/null
is "$HTTP_CODE" 400 "a diff of ids without base_ids: 400"
api "/api/0/top?service=cpuburn&type=trace&$WIN" "${R[@]}" >/dev/null
is "$HTTP_CODE" 400 "traces cannot be shown: 400"

# Auth: the read scope is needed.
for path in flamegraph top diff sample_types; do
	api "/api/0/$path?service=cpuburn&type=cpu&$WIN" >/dev/null
	is "$HTTP_CODE" 401 "$path without a token: 401"
done
api "/api/0/top?service=cpuburn&type=cpu&$WIN&limit=1" "${W[@]}" >/dev/null
is "$HTTP_CODE" 403 "a write-only token cannot read: 403"

profd_stop
done_testing
