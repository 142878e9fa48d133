#!/bin/bash
# Replays every input under test/fuzz/regress/<target>/ (crashes, leaks and
# hangs the fuzzers found, kept after the fix) and the committed seeds
# through the plain replay drivers built from the same fuzz targets. Each
# file is one TAP test: it passes if the driver exits 0 within 20 s (a
# sanitizer report, a failed property or a crash make it fail).
. "${top_srcdir:-.}/test/lib/e2e.sh"

fuzzdir=${top_srcdir:-.}/test/fuzz
bindir=${top_builddir:-.}/test/fuzz
n=0
for target in pprof merge merge_mem query config folded ingest gperf delta \
    otlp; do
	drv=$bindir/replay_$target
	if [ ! -x "$drv" ]; then
		not_ok "$target: replay driver $drv missing"
		continue
	fi
	for f in "$fuzzdir/regress/$target"/* "$fuzzdir/seeds/$target"/*; do
		[ -f "$f" ] || continue
		n=$((n + 1))
		if timeout 20 "$drv" "$f" > "$T_TMP/out" 2>&1; then
			ok "$target: ${f#$fuzzdir/}"
		else
			not_ok "$target: ${f#$fuzzdir/} (exit $?)"
			tail -n 30 "$T_TMP/out" | sed 's/^/# /'
		fi
	done
done
# The corpus's bad inputs (test/corpus/bad), as the fuzzers' first seeds.
if [ -d "$PROFD_CORPUS/bad" ]; then
	if timeout 60 "$bindir/replay_pprof" "$PROFD_CORPUS/bad" \
	    > "$T_TMP/out" 2>&1; then
		ok "pprof: every file in the corpus's bad/"
	else
		not_ok "pprof: every file in the corpus's bad/"
		tail -n 30 "$T_TMP/out" | sed 's/^/# /'
	fi
fi
[ "$n" -gt 0 ] || not_ok "no regression inputs found under $fuzzdir"
done_testing
