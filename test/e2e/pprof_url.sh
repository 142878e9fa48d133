#!/usr/bin/env bash
# `go tool pprof URL` on what profd serves, as a new user runs it: (1) a
# legacy gperftools profile is stored converted, its mappings with
# addresses and no names: pprof posts them to /symbolz on profd, which
# answers as a server without symbols (200, "num_symbols: 0"), and pprof
# goes on with addresses (it exited 1 with no output on a 404); (2) a
# window merge of libprofd-agent's profiles of Debian's xz (two threads)
# is named after xz (pprof names a profile by its first mapping: the merge
# puts first the main executable most of its inputs had first, even when
# no sample passes through it, not libc); (3) /symbolz needs no token,
# and its body is held to --max-body.
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
# -raw and -traces fetch and symbolize the same way: addresses, exit 0.
HOME=$T_TMP go tool pprof -raw "$PROFD_URL/api/0/profiles/$id" \
    >"$T_TMP/raw" 2>"$T_TMP/raw.err"
is "$?" 0 "go tool pprof -raw URL exits 0"
check "...with the samples and the mappings, locations by address" \
    grep -qE '^ +[0-9]+: 0x[0-9a-f]+ M=1 *$' "$T_TMP/raw"
HOME=$T_TMP go tool pprof -traces "$PROFD_URL/api/0/profiles/$id" \
    >"$T_TMP/traces" 2>"$T_TMP/traces.err"
is "$?" 0 "go tool pprof -traces URL exits 0"
check "...with stacks of unnamed frames: [libc.so.6] [cworker]" \
    grep -qE '^ +[0-9.]+m?s +\[libc\.so\.6\]$' "$T_TMP/traces"
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
	# Two threads: xz's samples start in libc's thread entry and run in
	# liblzma, seldom or never through xz itself, whose mapping each
	# profile still lists first (a merge that wrote only the mappings
	# its samples use, in the order met, was named after libc).
	head -c 6000000 /dev/urandom | base64 >"$T_TMP/xz.in"
	for i in 1 2; do
		env LD_PRELOAD="$PRE" PROFD_COLLECTOR="$PROFD_URL" \
		    ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0:detect_leaks=0" \
		    PROFD_SERVICE=xzrun PROFD_WINDOW=1 PROFD_PERIOD=1 \
		    xz -6 -T2 -c "$T_TMP/xz.in" >/dev/null 2>"$T_TMP/xz.err"
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
	n=$(go tool pprof -raw "$T_TMP/m.pb.gz" 2>/dev/null | grep -cE '^ +[0-9]+: 0x[0-9a-f]+ M=1( |$)')
	diag "locations in xz's own mapping: $n"
fi
profd_stop

# (3) With tokens, /symbolz needs none (pprof sends none, the answer
# holds no data) while /api/0 does; its body is held to --max-body.
# (`go tool pprof` fetches a URL with a client of its own, without token
# or client certificate: it opens profd's URLs only where profd wants no
# credentials, or through a proxy that adds them.)
printf 'reader-0123456789 read\nwriter-0123456789 write\n' >"$T_TMP/tokens"
PROFD_DIR=
profd_start --auth-file "$T_TMP/tokens" --max-body 4096 ||
    { not_ok "profd starts with --auth-file"; done_testing; }
api /api/0/version >/dev/null
is "$HTTP_CODE" 401 "with --auth-file, /api/0 without a token: 401"
api /symbolz >/dev/null
is "$HTTP_CODE $BODY" "200 num_symbols: 0" "GET /symbolz without a token: 200"
api /symbolz --data-binary '0x1+0x2' >/dev/null
is "$HTTP_CODE $BODY" "200 num_symbols: 0" "POST /symbolz without a token: 200"
head -c 5000 /dev/zero | tr '\0' '+' >"$T_TMP/big"
api /symbolz --data-binary "@$T_TMP/big" >/dev/null
is "$HTTP_CODE" 413 "POST /symbolz past --max-body: 413"
api /symbolz -H 'Transfer-Encoding: chunked' --data-binary "@$T_TMP/big" \
    >/dev/null
is "$HTTP_CODE" 413 "...chunked too"
api /symbolz -X PUT >/dev/null
is "$HTTP_CODE" 405 "PUT /symbolz: 405"
api /symbolz -I >/dev/null
is "$HTTP_CODE" 200 "HEAD /symbolz: 200"
done_testing
