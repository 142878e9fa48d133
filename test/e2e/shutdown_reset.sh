#!/usr/bin/env bash
# SIGTERM right after a client reset its connection in the middle of a
# download: profd must stop at once, not wait out --request-timeout for a
# reply that can never be written (libevent frees such a request without
# telling us; the shutdown now asks the connections what is left to write).
. "${top_srcdir:-.}/test/lib/e2e.sh"
command -v python3 >/dev/null || skip_all "needs python3"

profd_start --request-timeout 30 || { not_ok "profd starts"; done_testing; }
# 24 MiB stored as a trace (kept as is): more than the socket buffers hold
head -c $((24 * 1024 * 1024)) /dev/urandom > "$T_TMP/big"
id=$(curl -s --data-binary @"$T_TMP/big" \
	"$PROFD_URL/api/0/profiles?service=big&type=trace" | jq -r '.body.id // empty')
[ -n "$id" ] && ok "a 24 MiB trace is stored" || not_ok "a 24 MiB trace is stored"
port=${PROFD_URL##*:}
# read the headers and 64 KB of the body, then reset (SO_LINGER 0)
python3 - "$port" "$id" <<'PY'
import socket, struct, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(("GET /api/0/profiles/%s HTTP/1.1\r\nHost: x\r\n\r\n" % sys.argv[2]).encode())
got = 0
while got < 65536:
    b = s.recv(65536 - got)
    if not b:
        break
    got += len(b)
time.sleep(0.2)
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()
PY
ok "a client read 64 KB of it and reset the connection"
sleep 0.5
t0=$(date +%s%N)
kill -TERM "$PROFD_PID"
wait "$PROFD_PID"; rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
PROFD_PID=
is "$rc" 0 "profd exits cleanly on SIGTERM"
[ "$ms" -lt 5000 ] && ok "... within 5 s ($ms ms), not after --request-timeout" ||
	not_ok "... within 5 s (took $ms ms)"
grep -q 'giving up' "$PROFD_LOG" && not_ok "no 'giving up' in the log: $(grep 'giving up' "$PROFD_LOG")" ||
	ok "no 'giving up on ... replies' in the log"
done_testing
