# Helpers the merge tests share for reading profiles with go tool pprof.
# Sourced by test/e2e/merge_vs_pprof.sh and test/e2e/merge_api.sh.

# top INDEX FILE...: the total, then sorted "flat cum name" rows of
# pprof -top for one sample index.
top() {
	local i=$1; shift
	go tool pprof -top -nodecount=1000000 -nodefraction=0 \
	    -edgefraction=0 -unit=ns -sample_index="$i" "$@" 2>/dev/null |
	    awk '/^Showing nodes accounting for/ {
		sub(/.* of /, ""); print "total", $0 }
	    f { flat=$1; cum=$4; $1=$2=$3=$4=$5=""; sub(/^ +/, "");
		print flat, cum, $0 } /^ *flat +flat%/ { f=1 }' | LC_ALL=C sort
}

# ntypes FILE: number of sample types (pprof -raw's line after "Samples:").
ntypes() {
	go tool pprof -raw "$1" 2>/dev/null |
	    awk '/^Samples:/ { getline; print NF; exit }'
}

# keys FILE...: distinct symbolized location keys (every line's function,
# file and line, without address or mapping).
keys() {
	local f
	for f in "$@"; do
		go tool pprof -raw "$f" 2>/dev/null | awk '
		    /^Locations/ { on = 1; next }
		    /^Mappings/ { on = 0 }
		    !on { next }
		    /^ +[0-9]+: / { if (k != "") print k; k = ""
			$1 = ""; $2 = ""; $3 = "" }
		    { sub(/ s=[0-9]+$/, ""); sub(/^ +/, ""); k = k "|" $0 }
		    END { if (k != "") print k }'
	done | LC_ALL=C sort -u | wc -l
}
