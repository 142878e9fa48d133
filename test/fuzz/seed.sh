#!/bin/sh
# seed.sh TARGET OUTDIR FUZZDIR CORPUS: fills OUTDIR with a seed corpus for
# one fuzz target. Every target gets its regression inputs
# (FUZZDIR/regress/TARGET); pprof gets the corpus's bad/ inputs and a
# few small Go and Node profiles, inflated (so mutations reach the decoder)
# and as uploaded; merge and merge_mem get pairs of those profiles in their
# input format (4-byte little-endian length of A, A, B), FUZZDIR/seeds/TARGET
# (small bombs) and fresh bombs from the generators (gen_sample_bomb.py,
# gen_label_bomb.py) when python3 is there; query and config get
# FUZZDIR/seeds/TARGET; folded gets stacks collapsed from a few of the
# small profiles; ingest and otlp their seeds; gperf its seeds and the corpus's
# legacy CPU profile; delta pairs of successive cumulative profiles. Existing files in OUTDIR (a grown corpus) stay.
set -eu
target=$1 out=$2 fuzzdir=$3 corpus=$4
mkdir -p "$out"
if [ -d "$fuzzdir/regress/$target" ]; then
	cp "$fuzzdir/regress/$target"/* "$out"/ 2>/dev/null || true
fi

# small profiles, one per program and kind, plus Node's
small() {
	[ -d "$corpus" ] || return 0
	{ find "$corpus/go" -name '*_A_01.pb.gz' -size -8k
	  find "$corpus/node" -name '*_01.pb.gz' -size -8k; } 2>/dev/null | sort
}

# le32 N: N as 4 little-endian bytes on stdout.
le32() {
	n=$1
	for i in 0 1 2 3; do
		printf "\\$(printf %03o $(( (n >> (8 * i)) & 255 )))"
	done
}

case $target in
pprof)
	[ -d "$corpus/bad" ] && for f in "$corpus"/bad/*; do
		case $f in *.tsv) continue;; esac
		# the 256 MiB bomb is kept; the target caps inflation at 4 MiB
		cp "$f" "$out/bad_$(basename "$f")"
	done
	for f in $(small); do
		name=$(echo "${f#$corpus/}" | tr / _)
		gzip -dc "$f" > "$out/raw_${name%.gz}"
	done
	for f in $(small | head -n 4); do
		cp "$f" "$out/gz_$(echo "${f#$corpus/}" | tr / _)"
	done
	;;
merge|merge_mem)
	# hand-made inputs: the label-sort and tiny-sample bombs, small
	cp "$fuzzdir/seeds/$target"/* "$out"/ 2>/dev/null || true
	if command -v python3 >/dev/null; then
		python3 "$fuzzdir/gen_sample_bomb.py" --fuzz 5000000 \
		    > "$out/gen_sample_bomb_5m"
		python3 "$fuzzdir/gen_label_bomb.py" 20000 \
		    > "$out/gen_label_bomb_20k"
	fi
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	for f in $(small); do
		name=$(echo "${f#$corpus/}" | tr / _)
		gzip -dc "$f" > "$tmp/${name%.gz}"
	done
	# pairs of the same kind from different programs merge; mixed kinds
	# mismatch; a profile with itself doubles every value
	set -- "$tmp"/*
	prev=
	for a in "$@"; do
		kind=$(basename "$a" | sed 's/.*_\([a-z]*\)_[A-Z0-9_]*\.pb$/\1/')
		for b in "$tmp"/*"_${kind}_"*; do
			[ "$a" = "$b" ] || [ ! -f "$b" ] && continue
			{ le32 "$(wc -c < "$a")"; cat "$a" "$b"; } \
			    > "$out/pair_$(basename "$a" .pb)+$(basename "$b" .pb)"
			break
		done
		{ le32 "$(wc -c < "$a")"; cat "$a" "$a"; } \
		    > "$out/self_$(basename "$a" .pb)"
		if [ -n "$prev" ]; then
			{ le32 "$(wc -c < "$prev")"; cat "$prev" "$a"; } \
			    > "$out/mixed_$(basename "$a" .pb)"
		fi
		prev=$a
	done
	;;
query|config|ingest|otlp)
	cp "$fuzzdir/seeds/$target"/* "$out"/
	;;
delta)
	# a cumulative profile and an earlier one of the same process, and
	# the same profile twice (4-byte little-endian length of the first)
	cp "$fuzzdir/seeds/$target"/* "$out"/ 2>/dev/null || true
	for p in go/allocheavy/allocs_A go/contention/mutex_A; do
		[ -f "$corpus/${p}_01.pb.gz" ] || continue
		a=$corpus/${p}_02.pb.gz b=$corpus/${p}_01.pb.gz
		{ le32 "$(wc -c < "$a")"; cat "$a" "$b"; } > "$out/pair_$(basename "$p")"
		{ le32 "$(wc -c < "$b")"; cat "$b" "$b"; } > "$out/self_$(basename "$p")"
	done
	;;
gperf)
	# the corpus's legacy profile, whole and cut after its records (the
	# maps text is most of it)
	cp "$fuzzdir/seeds/$target"/* "$out"/
	if [ -f "$corpus/gperftools/cworker.cpu.prof" ]; then
		cp "$corpus/gperftools/cworker.cpu.prof" "$out/cworker.prof"
		head -c 4096 "$corpus/gperftools/cworker.cpu.prof" \
		    > "$out/cworker_head.prof"
	fi
	;;
folded)
	# the regression inputs, and folded stacks of small real profiles
	# (go tool pprof -traces, collapsed) when go is there
	command -v go >/dev/null 2>&1 && for f in $(small | head -n 6); do
		go tool pprof -traces "$f" 2>/dev/null | awk '
		    /^-----/ { if (n) { s = st[n]; for (i = n - 1; i >= 1; i--) s = s ";" st[i]; print s, v }
			       n = 0; next }
		    NF >= 2 && $1 ~ /^[0-9]/ && n == 0 { v = NR; st[++n] = $NF; next }
		    NF >= 1 && n > 0 { st[++n] = $NF }' \
		    > "$out/traces_$(echo "${f#$corpus/}" | tr / _).txt" || true
	done
	;;
*)
	echo "seed.sh: unknown target $target" >&2
	exit 1
	;;
esac
