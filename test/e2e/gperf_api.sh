#!/usr/bin/env bash
# Legacy gperftools CPU profiles (the binary format CPUPROFILE= writes),
# made here by Debian's libprofiler (libgoogle-perftools-dev) under a test
# program and under Debian's own xz, gzip, perl and sqlite3 (python3
# execs, and an exec under libprofiler's timer dies of SIGPROF): uploaded as they
# are, each is stored as the pprof `go tool pprof -proto` makes of it
# (the same samples, period, locations and mappings, checked line for line
# against go tool pprof -raw -symbolize=none), listed with
# converted_from=gperftools; gzipped, big-endian and 32-bit variants too;
# merges equal go tool pprof's; damaged ones get a 400 naming the record
# and store nothing.
. "${top_srcdir:-.}/test/lib/e2e.sh"
. "${top_srcdir:-.}/test/e2e/pprof_read.sh"
command -v go >/dev/null 2>&1 || skip_all "go tool pprof not installed"
command -v jq >/dev/null 2>&1 || skip_all "jq not installed"
LIBPROF=$(ls /usr/lib/*/libprofiler.so.0 2>/dev/null | head -n 1)
[ -n "$LIBPROF" ] || skip_all "libprofiler (libgoogle-perftools-dev) not installed"
command -v cc >/dev/null 2>&1 || skip_all "no C compiler"

W='from=2020-01-01T00:00:00&to=2100-01-01T00:00:00'
profd_start || { not_ok "profd starts"; done_testing; }
# profile NAME CMD...: runs CMD under libprofiler into $T_TMP/NAME.prof.
profile() {
	local name=$1
	shift
	LD_PRELOAD=$LIBPROF CPUPROFILE=$T_TMP/$name.prof CPUPROFILE_FREQUENCY=${HZ:-250} "$@" > /dev/null 2>&1
	[ -s "$T_TMP/$name.prof" ]
}
# put FILE SERVICE: uploads FILE as a cpu profile; ID and META set.
put() {
	META=$(curl -s --data-binary "@$1" "$PROFD_URL/api/0/profiles?service=$2&type=cpu&labels=run=$(basename "$1")")
	ID=$(jq -r '.body.id // empty' <<<"$META")
}
# raw FILE: go tool pprof -raw, unsymbolized.
raw() { gopprof -raw -symbolize=none "$1" 2>/dev/null; }

cat > "$T_TMP/burn.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
volatile unsigned long sink;
__attribute__((noinline)) void hash_block(unsigned n) { for (unsigned i = 0; i < n; i++) sink = sink * 31 + i; }
__attribute__((noinline)) void compress_block(unsigned n) { for (unsigned i = 0; i < n; i++) sink ^= sink << 3 | i; hash_block(n / 4); }
int main(int argc, char **argv) {
	long rounds = argc > 1 ? atol(argv[1]) : 3000;
	for (long r = 0; r < rounds; r++) { hash_block(100000); compress_block(100000); }
	printf("%lu\n", sink);
	return 0;
}
C
cc -O1 -g -o "$T_TMP/burn" "$T_TMP/burn.c" || { not_ok "the test program builds"; done_testing; }
# Random bytes: 30 MB for gzip (about a second of it), the first 4 MB for
# xz, which takes some 15 times as long a byte (a few seconds: hundreds of
# samples at 250 Hz).
head -c 30000000 /dev/urandom > "$T_TMP/rand"
head -c 4000000 "$T_TMP/rand" > "$T_TMP/rand4"
profile burn "$T_TMP/burn" 3000; check "libprofiler profiles the test program" [ -s "$T_TMP/burn.prof" ]
profile xz xz -T1 -6 -k -c "$T_TMP/rand4"; check "... and Debian's xz" [ -s "$T_TMP/xz.prof" ]
profile perl perl -e 'my %h; for my $i (1..2000000) { $h{$i % 50000} .= "x" x ($i % 7) } print scalar(keys %h), "\n"'
check "... and Debian's perl" [ -s "$T_TMP/perl.prof" ]
profile gzip gzip -9 -c "$T_TMP/rand"; check "... and Debian's gzip" [ -s "$T_TMP/gzip.prof" ]
if command -v sqlite3 >/dev/null 2>&1; then
	profile sqlite3 sqlite3 ':memory:' 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT sum(x * x % 7), count(DISTINCT x % 1000) FROM c;'
	check "... and Debian's sqlite3" [ -s "$T_TMP/sqlite3.prof" ]
fi

for f in "$T_TMP"/*.prof; do
	n=$(basename "$f" .prof)
	put "$f" gp
	is "$(jq -r .code <<<"$META")" 200 "$n: the legacy profile is taken ($(wc -c < "$f") bytes)"
	is "$(jq -c '[.body.sample_types, (.body.labels | map(.key + "=" + .value) | join(","))]' <<<"$META")" \
	    '[["samples/count","cpu/nanoseconds"],"converted_from=gperftools,run='"$n"'.prof"]' "$n: ... as cpu samples and time, labelled converted_from=gperftools"
	curl -s -o "$T_TMP/$n.pb.gz" "$PROFD_URL/api/0/profiles/$ID"
	raw "$f" > "$T_TMP/$n.theirs"
	raw "$T_TMP/$n.pb.gz" > "$T_TMP/$n.ours"
	check "$n: stored as go tool pprof -proto makes it ($(grep -c '^ .*: ' "$T_TMP/$n.ours") samples and locations, $(sed -n '/^Mappings/,$p' "$T_TMP/$n.ours" | grep -c '^[0-9]') mappings; -raw line for line)" \
	    cmp -s "$T_TMP/$n.ours" "$T_TMP/$n.theirs"
	is "$(sed -n 's/^Period: //p' "$T_TMP/$n.ours")" $((1000000000 / 250)) "$n: ... the period from the header (250 Hz)"
done
check "the test program's own functions are in its profile" grep -q hash_block <<<"$(gopprof -top "$T_TMP/burn.pb.gz" 2>/dev/null)"

# Gzipped, big-endian and 32-bit words: read as pprof reads them.
gzip -c "$T_TMP/xz.prof" > "$T_TMP/xz.prof.gz"
put "$T_TMP/xz.prof.gz" gpv
curl -s -o "$T_TMP/v.pb.gz" "$PROFD_URL/api/0/profiles/$ID"
check "a gzipped legacy profile: the same as the raw one" cmp -s <(raw "$T_TMP/v.pb.gz") "$T_TMP/xz.ours"
for k in 64b 32l 32b; do
	python3 "${top_srcdir:-.}/test/lib/gperf_recode.py" "$k" "$T_TMP/burn.prof" "$T_TMP/burn.$k"
	put "$T_TMP/burn.$k" gpv
	curl -s -o "$T_TMP/v.pb.gz" "$PROFD_URL/api/0/profiles/$ID"
	check "words $k: as go tool pprof reads them ($(raw "$T_TMP/v.pb.gz" | grep -c '^ .*: ') lines)" \
	    cmp -s <(raw "$T_TMP/v.pb.gz") <(raw "$T_TMP/burn.$k")
done

# Through Pyroscope's /ingest too (a pprof body; the type from its samples).
code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary "@$T_TMP/burn.prof" "$PROFD_URL/ingest?name=burnsvc&format=pprof")
is "$code/$(api "/api/0/profiles?service=burnsvc&$W" | jq -r '.body[0] | .type + " " + .labels[0].value')" "200/cpu gperftools" "/ingest takes a legacy profile: cpu, converted"

# Merges of converted profiles equal go tool pprof's of the legacy files
# (given the binary first, as go tool pprof wants it with legacy files).
for f in "$T_TMP/burn.prof" "$T_TMP/burn.64b"; do put "$f" gpm; done
HZ=250 profile burn2 "$T_TMP/burn" 2000
put "$T_TMP/burn2.prof" gpm
curl -s -o "$T_TMP/m.pb.gz" "$PROFD_URL/api/0/profiles/merge?service=gpm&type=cpu&$W"
compare_merged "a merge of three converted profiles" "$T_TMP/m.pb.gz" "$T_TMP/burn" "$T_TMP/burn.prof" "$T_TMP/burn.64b" "$T_TMP/burn2.prof"

# Damaged: 400 naming what is wrong, nothing stored.
n0=$(api "/api/0/profiles?$W&limit=1000" | jq '.body | length')
head -c 1003 "$T_TMP/burn.prof" > "$T_TMP/cut"
put "$T_TMP/cut" gpbad
check "cut mid-record: 400 ($(jq -r .error <<<"$META"))" grep -q '"code":400.*gperftools CPU profile: record' <<<"$META"
python3 -c 'import struct,sys; sys.stdout.buffer.write(struct.pack("<5Q", 0, 3, 0, 4000, 0) + struct.pack("<2Q", 5, 1 << 40))' > "$T_TMP/deep"
put "$T_TMP/deep" gpbad
check "a depth past the file: 400 ($(jq -r .error <<<"$META"))" grep -q '"code":400.*more than the bytes left' <<<"$META"
python3 -c 'import struct,sys; sys.stdout.buffer.write(struct.pack("<5Q", 0, 3, 0, 1 << 62, 0))' > "$T_TMP/period"
put "$T_TMP/period" gpbad
check "an absurd period: 400 ($(jq -r .error <<<"$META"))" grep -q '"code":400.*period' <<<"$META"
is "$(api "/api/0/profiles?$W&limit=1000" | jq '.body | length')" "$n0" "the damaged ones stored nothing"
python3 -c 'import struct,sys; sys.stdout.buffer.write(struct.pack("<5Q", 0, 3, 0, 10000, 0) + struct.pack("<3Q", 0, 1, 0))' > "$T_TMP/empty"
put "$T_TMP/empty" gpe
is "$(jq -r .body.samples <<<"$META")" 0 "a profile of no samples is taken as one (as pprof reads it)"
profd_stop
done_testing
