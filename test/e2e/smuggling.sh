#!/usr/bin/env bash
# Request smuggling (RFC 9112 6.3): a request whose body length is ambiguous
# (two different Content-Length values, Content-Length with
# Transfer-Encoding, a HEAD with a body) is answered 400 and its connection
# closed, so what follows it is never answered as a request and nothing is
# stored; an HTTP/1.1 request without Host is 400. Raw sockets, since curl
# will not send such requests.
. "${top_srcdir:-.}/test/lib/e2e.sh"
command -v python3 >/dev/null || skip_all "python3 not installed"

SMUGGLED='GET /api/0/version HTTP/1.1\r\nHost: x\r\n\r\n'
req=$T_TMP/req
W='from=2020-01-01T00:00:00&to=2100-01-01T00:00:00'

profd_start || { not_ok "profd starts"; done_testing; }
port=${PROFD_URL##*:}
prof=$PROFD_CORPUS/go/cpuburn/cpu_A_01.pb.gz
[ -f "$prof" ] || { not_ok "corpus profile $prof"; done_testing; }
plen=$(wc -c < "$prof")
slen=$(printf "$SMUGGLED" | wc -c)

# (a) Content-Length: the profile, then Content-Length: profile + a request.
{ printf 'POST /api/0/profiles?service=smug&type=cpu HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\nContent-Length: %d\r\n\r\n' \
    "$plen" $((plen + slen)); cat "$prof"; printf "$SMUGGLED"; } > "$req"
is "$(raw "$req")" "1 400 closed" "two Content-Length values: one reply, 400, connection closed"
check "the 400 names the problem" grep -q '"error":"[^"]*Content-Length' "$T_TMP/raw.out"
is "$(api "/api/0/profiles?service=smug&$W" | jq '.body | length')" 0 "the refused upload stored nothing"

# Identical duplicates are one value (RFC 9110 8.6): accepted.
{ printf 'POST /api/0/profiles?service=dup&type=cpu HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\nContent-Length: %d\r\n\r\n' \
    "$plen" "$plen"; cat "$prof"; } > "$req"
is "$(raw "$req")" "1 200 open" "two equal Content-Length values: accepted as one"

# (b) Content-Length and Transfer-Encoding.
printf "POST /api/0/profiles?service=smug&type=cpu HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n$SMUGGLED" > "$req"
is "$(raw "$req")" "1 400 closed" "Content-Length with Transfer-Encoding: chunked: 400, closed"
printf "POST /api/0/profiles?service=smug&type=cpu HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: gzip\r\n\r\n12345$SMUGGLED" > "$req"
is "$(raw "$req")" "1 400 closed" "Content-Length with Transfer-Encoding: gzip: 400, closed"

# A HEAD's body is never read by libevent: refused rather than parsed as
# the next request.
printf "HEAD /api/0/version HTTP/1.1\r\nHost: x\r\nContent-Length: $slen\r\n\r\n$SMUGGLED" > "$req"
is "$(raw "$req")" "1 400 closed" "HEAD with a body: 400, closed"

# (c) HTTP/1.1 without Host: 400; the framing is sound, so the connection
# stays open as libevent keeps it.
printf 'GET /api/0/version HTTP/1.1\r\n\r\n' > "$req"
is "$(raw "$req")" "1 400 open" "HTTP/1.1 without Host: 400"
check "the 400 names the problem" grep -q '"error":"[^"]*Host' "$T_TMP/raw.out"

# (d) Normal requests, pipelined, are still served.
printf "$SMUGGLED$SMUGGLED" > "$req"
is "$(raw "$req")" "2 200,200 open" "two pipelined normal requests: 200, 200"
upload "$prof" "service=smug&type=cpu" >/dev/null
is "$HTTP_CODE" 200 "a normal upload: 200"
is "$(api "/api/0/profiles?service=smug&$W" | jq '.body | length')" 1 "and it is stored"

# (e) HTTP/1.0 needs no Host.
printf 'GET /api/0/version HTTP/1.0\r\n\r\n' > "$req"
is "$(raw "$req")" "1 200 closed" "HTTP/1.0 without Host: 200"
done_testing
