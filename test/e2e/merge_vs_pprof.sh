#!/bin/bash
# merge_vs_pprof.sh: the merge engine against `go tool pprof -proto`.
#
# For every kind of corpus profile, merges the same files with merge_files
# (merge/merge_run.c) and with `go tool pprof -proto`, then checks that
# `go tool pprof -top` of both lists the same functions with the same flat
# and cum values, exactly (-unit=ns prints raw integers), for every sample
# index; and that its total equals that of `go tool pprof -top` of the
# inputs themselves. (pprof's -proto output loses samples with an empty
# stack, such as threadcreate's, as a side effect of its focus filter, so
# its merged file has a smaller total than pprof shows for the inputs;
# profd keeps them.) The other merge tests take the inputs' total from
# test/lib/pprof_totals.py, which sums the files' samples without reading
# them once per sample index: here, on every kind of the corpus, that sum
# must be pprof -top's. Then checks that builds A and B merge location for
# location: fewer locations than pprof's, exactly one per distinct
# symbolized location key.

. "${top_srcdir:-.}/test/lib/e2e.sh"

MF=${top_builddir:-.}/test/lib/merge_files
C=$PROFD_CORPUS
command -v go >/dev/null 2>&1 || skip_all "go tool pprof not installed"
[ -d "$C/go" ] || skip_all "corpus not found at $C"
[ -x "$MF" ] || skip_all "merge_files not built"

. "${top_srcdir:-.}/test/e2e/pprof_read.sh"

# compare NAME [-j N] FILE...: one test per sample index.
compare() {
	local name=$1 jobs=; shift
	if [ "$1" = -j ]; then jobs="-j $2"; shift 2; fi
	local ours=$T_TMP/ours.pb.gz
	rm -f "$ours"
	if ! $MF $jobs "$ours" "$@" 2>"$T_TMP/mf.err"; then
		not_ok "$name: merge_files failed: $(cat "$T_TMP/mf.err")"
		return
	fi
	compare_merged "$name" "$ours" "$@"
	# pprof_totals.py's sum against pprof -top of the inputs
	local i want got
	for ((i = 0; i < CMP_N; i++)); do
		want=$(top "$i" "$@" | sed -n 's/^total \([-0-9.]*\).*/\1/p')
		got=$(sed -n "$((i + 1))s/ .*//p" "$T_TMP/totals")
		is "$got" "$want" "$name: index $i: pprof_totals.py sums the inputs as pprof -top does"
	done
}

G=$C/go
compare "cpuburn cpu A+B" $G/cpuburn/cpu_[AB]_0*.pb.gz
compare "cpuburn cpu A+B, 2 workers" -j 2 $G/cpuburn/cpu_[AB]_0*.pb.gz
compare "cpuburn heap" $G/cpuburn/heap_[AB]_0[1-4].pb.gz
compare "allocheavy heap" $G/allocheavy/heap_[AB]_0*.pb.gz
compare "allocheavy allocs" $G/allocheavy/allocs_[AB]_0*.pb.gz
compare "allocheavy cpu" $G/allocheavy/cpu_[AB]_0[1-3].pb.gz
compare "contention block" $G/contention/block_[AB]_0*.pb.gz
compare "contention mutex" $G/contention/mutex_[AB]_0*.pb.gz
compare "contention cpu" $G/contention/cpu_[AB]_0*.pb.gz
compare "goroutines goroutine" $G/goroutines/goroutine_[AB]_0*.pb.gz
compare "goroutines cpu" $G/goroutines/cpu_[AB]_0*.pb.gz
compare "threadcreate, all programs" $G/*/threadcreate_[AB]_0[12].pb.gz
compare "bigstacks cpu" $G/bigstacks/cpu_A_01.pb.gz $G/bigstacks/cpu_B_01.pb.gz
compare "node datadog wall" $C/node/datadog/wall_*.pb.gz
compare "node datadog heap" $C/node/datadog/heap_*.pb.gz
compare "node google wall" $C/node/google/wall_*.pb.gz
compare "node google heap" $C/node/google/heap_*.pb.gz
compare "gperftools cpu x3" $C/gperftools/cworker.cpu.pb.gz \
    $C/gperftools/cworker.cpu.pb.gz $C/gperftools/cworker.cpu.pb.gz

# A mutex profile with no samples merges into a valid empty profile.
if $MF -v "$T_TMP/empty.pb.gz" $G/cpuburn/mutex_A_0[12].pb.gz 2>"$T_TMP/v" &&
    grep -q 'samples=0 ' "$T_TMP/v" &&
    gopprof -raw "$T_TMP/empty.pb.gz" >/dev/null 2>&1; then
	ok "zero-sample profiles merge into a valid empty profile"
else
	not_ok "zero-sample profiles merge into a valid empty profile"
fi

locs() { sed -n 's/.*locations=\([0-9]*\).*/\1/p' "$T_TMP/v"; }

A=$G/cpuburn/cpu_A_01.pb.gz
B=$G/cpuburn/cpu_B_01.pb.gz
$MF -v "$T_TMP/ab.pb.gz" "$A" "$B" 2>"$T_TMP/v"
ab=$(locs)
gopprof -proto "$A" "$B" >"$T_TMP/ab-pprof.pb.gz" 2>/dev/null
theirs=$(gopprof -raw "$T_TMP/ab-pprof.pb.gz" 2>/dev/null |
    awk '/^Locations/{on=1; next} /^Mappings/{on=0} on && /^ +[0-9]+: /' | wc -l)
check "A+B: $ab locations, fewer than pprof's $theirs" test "$ab" -lt "$theirs"
want=$(keys "$A" "$B")
is "$ab" "$want" "A+B: one location per distinct symbolized key ($want)"
$MF -v "$T_TMP/a.pb.gz" "$A" 2>"$T_TMP/v"
is "$(locs)" "$(keys "$A")" "A alone: one location per distinct key"

done_testing
