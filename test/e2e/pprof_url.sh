#!/usr/bin/env bash
# `go tool pprof URL` on what profd serves, as a new user runs it: (1) a
# legacy gperftools profile is stored converted, its mappings with
# addresses and no names: pprof posts them to /symbolz on profd, which
# answers as a server without symbols (200, "num_symbols: 0"), and pprof
# goes on with addresses (it exited 1 with no output on a 404); (2) a
# window merge of libprofd-agent's profiles of Debian's xz is named after
# xz (pprof names a profile by its first mapping: the merge puts first the
# main executable most of its inputs had first, not libc).
. "${top_srcdir:-.}/test/lib/e2e.sh"

C=$PROFD_CORPUS
B=${top_builddir:-.}
SO=$B/agent/.libs/libprofd-agent.so
command -v go >/dev/null 2>&1 || skip_all "go tool pprof not installed"
command -v jq >/dev/null 2>&1 || skip_all "jq not installed"
[ -f "$C/gperftools/cworker.cpu.prof" ] || skip_all "corpus not found at $C"

profd_start || { not_ok "profd starts"; done_testing; }

# (1) gperftools, converted, through pprof's URL fetch.
upload "$C/gperftools/cworker.cpu.prof" "service=cworker&type=cpu" >/dev/null
id=$(jq -r .body.id <<<"$BODY")
is "$HTTP_CODE" 200 "a gperftools profile stored"
HOME=$T_TMP go tool pprof -top "$PROFD_URL/api/0/profiles/$id" \
    >"$T_TMP/top" 2>"$T_TMP/top.err"
rc=$?
is "$rc" 0 "go tool pprof -top URL exits 0"
check "...and shows the profile: File: cworker, rows by mapping" \
    grep -q '^File: cworker' "$T_TMP/top"
check "...with its samples (rows under the header)" \
    grep -qE '^ +[0-9.]+m?s +[0-9.]+% .*\[cworker\]' "$T_TMP/top"
is "$(curl -s -X POST --data-binary '0x401000+0x402000' "$PROFD_URL/symbolz")" \
    "num_symbols: 0" "POST /symbolz: no symbols, status 200"
is "$(curl -s -o /dev/null -w '%{http_code}' "$PROFD_URL/symbolz")" 200 \
    "GET /symbolz: 200"

# (2) the agent's profiles of xz, merged over their window.
if [ ! -f "$SO" ] || ! command -v xz >/dev/null 2>&1; then
	diag "agent or xz missing: the merge's name not checked"
else
	# A sanitizer build's runtime must come first in LD_PRELOAD.
	PRE=$SO
	asan=$(ldd "$SO" 2>/dev/null | awk '/libasan/ { print $3 }')
	[ -z "$asan" ] || PRE=$asan:$SO
	head -c 6000000 /dev/urandom | base64 >"$T_TMP/xz.in"
	for i in 1 2; do
		env LD_PRELOAD="$PRE" PROFD_COLLECTOR="$PROFD_URL" \
		    ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0:detect_leaks=0" \
		    PROFD_SERVICE=xzrun PROFD_WINDOW=1 PROFD_PERIOD=1 \
		    xz -6 -T1 -c "$T_TMP/xz.in" >/dev/null 2>"$T_TMP/xz.err"
	done
	api "/api/0/profiles?service=xzrun&type=cpu&limit=100" >/dev/null
	n=$(jq '.body | length' <<<"$BODY")
	check "the agent pushed xz's profiles ($n)" test "$n" -ge 2
	now=$(date -u +%s)
	url="$PROFD_URL/api/0/profiles/merge?service=xzrun&type=cpu&from=$((now - 600))&to=$((now + 60))"
	HOME=$T_TMP go tool pprof -top "$url" >"$T_TMP/mtop" 2>"$T_TMP/mtop.err"
	is "$?" 0 "go tool pprof -top on the window merge exits 0"
	is "$(sed -n 's/^File: //p' "$T_TMP/mtop")" xz \
	    "the merge is named after xz, its main executable"
	curl -s "$url" -o "$T_TMP/m.pb.gz"
	first=$(go tool pprof -raw "$T_TMP/m.pb.gz" 2>/dev/null |
	    awk '/^Mappings/ { getline; print; exit }')
	check "the merge's first mapping is xz's ($first)" \
	    grep -q '/xz ' <<<"$first"
fi
done_testing
