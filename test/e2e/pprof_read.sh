# Helpers the merge tests share for reading profiles with go tool pprof.
# Sourced by the merge, views and timeline tests.

# top INDEX FILE...: the total, then sorted "flat cum name" rows of
# pprof -top for one sample index.
top() {
	local i=$1; shift
	gopprof -top -nodecount=1000000 -nodefraction=0 \
	    -edgefraction=0 -unit=ns -sample_index="$i" "$@" 2>/dev/null |
	    awk '/^Showing nodes accounting for/ {
		sub(/.* of /, ""); print "total", $0 }
	    f { flat=$1; cum=$4; $1=$2=$3=$4=$5=""; sub(/^ +/, "");
		print flat, cum, $0 } /^ *flat +flat%/ { f=1 }' | LC_ALL=C sort
}

# top_each N PREFIX FILE...: what `top I FILE...` prints for every sample
# index I below N, into PREFIX.I, from one pprof run (its interactive
# commands: the profiles are read once, not once per index).
top_each() {
	local n=$1 prefix=$2 i cmds
	shift 2
	cmds=$'nodecount=1000000\nnodefraction=0\nedgefraction=0\nunit=ns'
	for ((i = 0; i < n; i++)); do
		rm -f "$prefix.$i"
		cmds+=$'\n'"sample_index=$i"$'\ntop'
	done
	GOPPROF_INPUT=$cmds gopprof "$@" 2>/dev/null | awk -v p="$prefix." '
	    { sub(/^(\(pprof\) )+/, "") }
	    /^Showing nodes accounting for/ {
		if (out != "") close(out)
		out = p (i++); f = 0
		sub(/.* of /, ""); print "total", $0 > out; next }
	    f && NF { flat=$1; cum=$4; $1=$2=$3=$4=$5=""; sub(/^ +/, "");
		print flat, cum, $0 > out }
	    /^ *flat +flat%/ { f = 1 }'
	for ((i = 0; i < n; i++)); do
		[ -f "$prefix.$i" ] && LC_ALL=C sort -o "$prefix.$i" "$prefix.$i"
	done
}

# names_of FILE: the sample type names, in order (pprof -raw's header).
names_of() {
	gopprof -raw "$1" 2>/dev/null |
	    awk '/^Samples:/ { getline; for (i = 1; i <= NF; i++) {
		sub(/\/.*/, "", $i); print $i }; exit }'
}

# ntypes FILE: number of sample types (pprof -raw's line after "Samples:").
ntypes() {
	gopprof -raw "$1" 2>/dev/null |
	    awk '/^Samples:/ { getline; print NF; exit }'
}

# keys FILE...: distinct symbolized location keys (every line's function,
# file and line, without address or mapping).
keys() {
	local f
	for f in "$@"; do
		gopprof -raw "$f" 2>/dev/null | awk '
		    /^Locations/ { on = 1; next }
		    /^Mappings/ { on = 0 }
		    !on { next }
		    /^ +[0-9]+: / { if (k != "") print k; k = ""
			$1 = ""; $2 = ""; $3 = "" }
		    { sub(/ s=[0-9]+$/, ""); sub(/^ +/, ""); k = k "|" $0 }
		    END { if (k != "") print k }'
	done | LC_ALL=C sort -u | wc -l
}

# compare_merged LABEL OURS FILE...: checks the merged profile OURS against
# go tool pprof's merge of the same files: for every sample index its
# function rows (flat, cum) equal those pprof -top shows for FILE..., and
# its total the sum of the inputs' samples (test/lib/pprof_totals.py, as
# `go tool pprof -top FILE...` states it). One pprof run reads the files
# and prints the top of every index (top_each); pprof's total is not
# compared (its -proto merge drops samples without a location, and a
# merge of gperftools files may not have it). Inputs that are no pprof
# (legacy gperftools files and their binary) get pprof -top's total and
# pprof -raw's number of sample types. One TAP line per index. Leaves the
# number of sample types in CMP_N (0 when it could not compare) and each
# index's rows in $T_TMP/top.ours.I.
compare_merged() {
	local label=$1 ours=$2 theirs=$T_TMP/theirs.pb.gz i want got n
	shift 2
	CMP_N=0
	python3 "${top_srcdir:-.}/test/lib/pprof_totals.py" \
	    --cache "$PROFD_PPROF_CACHE/totals" "$@" \
	    >"$T_TMP/totals" 2>/dev/null || : >"$T_TMP/totals"
	# The number of sample types: the inputs' and ours, read by
	# pprof_totals.py, else by pprof -raw of pprof's -proto merge (no
	# pprof inputs; -raw prints every sample: slow on large merges).
	CMP_N=$(wc -l <"$T_TMP/totals")
	if [ "$CMP_N" = 0 ]; then
		rm -f "$theirs"
		if ! gopprof -proto "$@" >"$theirs" 2>/dev/null; then
			not_ok "$label: go tool pprof -proto failed"
			return
		fi
		CMP_N=$(ntypes "$theirs")
	fi
	n=$(python3 "${top_srcdir:-.}/test/lib/pprof_totals.py" "$ours" 2>/dev/null | wc -l)
	[ "$n" -gt 0 ] || n=$(ntypes "$ours")
	if [ -z "$CMP_N" ] || [ "$CMP_N" != "$n" ]; then
		not_ok "$label: sample types ($CMP_N vs $n)"
		CMP_N=0
		return
	fi
	top_each "$CMP_N" "$T_TMP/top.ours" "$ours"
	top_each "$CMP_N" "$T_TMP/top.theirs" "$@"
	for ((i = 0; i < CMP_N; i++)); do
		got=$(sed -n 's/^total \([-0-9.]*\).*/\1/p' "$T_TMP/top.ours.$i" 2>/dev/null)
		want=$(sed -n "$((i + 1))s/ .*//p" "$T_TMP/totals")
		[ -n "$want" ] || want=$(top "$i" "$@" |
		    sed -n 's/^total \([-0-9.]*\).*/\1/p')
		if [ -z "$want" ]; then
			not_ok "$label: no total of the inputs for index $i"
		elif [ ! -f "$T_TMP/top.ours.$i" ] || [ ! -f "$T_TMP/top.theirs.$i" ]; then
			not_ok "$label: index $i: pprof printed no top"
		elif ! grep -v '^total ' "$T_TMP/top.ours.$i" |
		    cmp -s - <(grep -v '^total ' "$T_TMP/top.theirs.$i"); then
			not_ok "$label: index $i: functions differ from pprof's merge"
			grep -v '^total ' "$T_TMP/top.ours.$i" |
			    diff - <(grep -v '^total ' "$T_TMP/top.theirs.$i") | head -10 | sed 's/^/# /'
		elif [ "$got" != "$want" ]; then
			not_ok "$label: index $i: total $got, the inputs' $want"
		else
			ok "$label ($# files): index $i, $(($(wc -l <"$T_TMP/top.ours.$i") - 1)) functions identical, $(grep '^total ' "$T_TMP/top.ours.$i")"
		fi
	done
}
