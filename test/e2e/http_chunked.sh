#!/usr/bin/env bash
# Chunked request bodies (issue #11): libevent 2.1 reads the chunk size
# with strtoll and failed any chunk extension with 413, and it buffered a
# chunk-size line that never ends, rescanning it on every read (one such
# client held a core and grew the heap without bound). profd now checks
# each chunk-size line whole (collector/http/chunkline.c via evhooks.c):
#  - a real profile sent in chunks carrying every form of extension, and a
#    trailer, is stored byte-identical, on a keep-alive connection;
#  - malformed chunk-size lines get 400 naming them, and nothing is stored;
#  - a line of the chunked body longer than 4096 bytes gets 400 at once:
#    little CPU, no growth, and other requests are answered meanwhile.
. "${top_srcdir:-.}/test/lib/e2e.sh"
command -v python3 >/dev/null || skip_all "python3 not installed"
chunked=${top_srcdir:-.}/test/lib/chunked.py
req=$T_TMP/req
W='from=2020-01-01T00:00:00&to=2100-01-01T00:00:00'
prof=$PROFD_CORPUS/go/cpuburn/cpu_A_01.pb.gz
[ -f "$prof" ] || skip_all "corpus profile $prof missing"

# cpu_ticks: the daemon's user+system CPU time so far, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$PROFD_PID/stat"; }
# stored SERVICE: how many profiles of SERVICE are stored.
stored() { api "/api/0/profiles?service=$1&$W" | jq '.body | length'; }

profd_start || { not_ok "profd starts"; done_testing; }
port=${PROFD_URL##*:}
UP='POST /api/0/profiles?service=SVC&type=cpu HTTP/1.1\r\nHost: x\r\n'

# 1. Every form of extension, a trailer, then a second request on the same
#    connection.
python3 "$chunked" frame "$prof" "$req" "${UP/SVC/ext}" 700
printf 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n' >> "$req"
is "$(raw "$req")" "2 200,200 open" \
    "a profile in chunks with extensions and a trailer: 200; the next request on the connection: 200"
id=$(sed -n 's/.*"id":"\([^"]*\)".*/\1/p' "$T_TMP/raw.out" | head -n 1)
curl -s -o "$T_TMP/back" "$PROFD_URL/api/0/profiles/$id"
check "... it reads back byte-identical ($(wc -c < "$prof") bytes, id $id)" \
    cmp -s "$prof" "$T_TMP/back"
printf "${UP/SVC/ext}Transfer-Encoding: chunked\r\n\r\n0;only=last\r\n\r\n" > "$req"
is "$(raw "$req")" "1 400 open" "an empty body whose last chunk has an extension: the handler's 400 (empty profile)"
check "... from the handler, not the framing" grep -q '"error":"[^"]*profile' "$T_TMP/raw.out"

# 2. Malformed chunk-size lines: 400 naming the line, nothing stored.
n=0
for line in '5 junk' '5;' '5;=v' '5;a=' '5;a="open' '5;a=b c' 'x5' '-5' '+5' \
    '5;a=b;' $'5;a="ctl\001"' '5,6'; do
	printf "${UP/SVC/bad}Transfer-Encoding: chunked\r\n\r\n%s\r\nhello\r\n0\r\n\r\n" "$line" > "$req"
	r=$(raw "$req")
	if [ "$r" = "1 400 closed" ] && grep -q '"error":"malformed chunk-size line in the chunked body"' "$T_TMP/raw.out"; then
		n=$((n + 1))
	else
		diag "chunk-size line '$line': $r"
	fi
done
is "$n" 12 "12 malformed chunk-size lines: each 400 naming the line, closed"
is "$(stored bad)" 0 "... nothing of them is stored"

# 3. A line that never ends: 400 at once, without the CPU or the memory.
t0=$(cpu_ticks)
hwm0=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$PROFD_PID/status")
out=$(python3 "$chunked" endless "$port" "${UP/SVC/endless}" '5' 64000000 2>/dev/null)
is "${out%% *}" 400 "a chunk-size line of up to 64 MB with no end: 400 ($out)"
out=$(python3 "$chunked" endless "$port" "${UP/SVC/endless}" '5\r\nhello\r\n0\r\nX-T: ' 64000000 2>/dev/null)
is "${out%% *}" 400 "a trailer line of up to 64 MB with no end: 400 ($out)"
t1=$(cpu_ticks)
check "... the daemon spent under 2 s of CPU on both ($(( (t1 - t0) * 10 )) ms)" \
    [ $((t1 - t0)) -lt 200 ]
hwm=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$PROFD_PID/status")
mem_check "... and its peak memory grew by under 16 MB ($(( (hwm - hwm0) / 1024 )) MB)" \
    $((hwm - hwm0)) 16384
# Two such clients at once, held open, while others are served.
python3 "$chunked" endless "$port" "${UP/SVC/endless}" '5;ext=' 3000 10 >/dev/null 2>&1 &
p1=$!
python3 "$chunked" endless "$port" "${UP/SVC/endless}" '5' 3000 10 >/dev/null 2>&1 &
p2=$!
sleep 0.5
api "/api/0/profiles?service=ext&$W" >/dev/null
is "$HTTP_CODE" 200 "a list while two clients hold unfinished chunk-size lines: 200"
upload "$prof" "service=during&type=cpu" >/dev/null
is "$HTTP_CODE" 200 "... and an upload: 200"
kill "$p1" "$p2" 2>/dev/null; wait "$p1" "$p2" 2>/dev/null
is "$(stored endless)" 0 "nothing of the endless lines is stored"

profd_stop
done_testing
