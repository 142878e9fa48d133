#!/usr/bin/env bash
# At the open-file limit: with `ulimit -n 256` and the default
# --max-connections 1024, 300 idle clients must not make profd spin on
# accept() or flood its log. profd fits the connection cap under the limit
# (saying so once), pauses accepting at the cap, and serves again once
# clients leave.
. "${top_srcdir:-.}/test/lib/e2e.sh"
command -v python3 >/dev/null || skip_all "needs python3"
real=$PROFD
PROFD=$T_TMP/profd-256
printf '#!/bin/sh\nulimit -n 256 || exit 99\nexec "%s" "$@"\n' "$real" > "$PROFD"
chmod +x "$PROFD"
profd_start || { not_ok "profd starts under ulimit -n 256"; done_testing; }
ok "profd starts under ulimit -n 256"
n=$(grep -c 'open-file limit 256' "$PROFD_LOG")
is "$n" 1 "it says once that the limit lowers --max-connections"
port=${PROFD_URL##*:}
cpu() { awk '{ print $14 + $15 }' "/proc/$PROFD_PID/stat"; }

# 300 idle connections, held open until the fifo says go
mkfifo "$T_TMP/go"
python3 - "$port" "$T_TMP/go" "$T_TMP/held" <<'PY' &
import socket, sys
socks = []
for i in range(300):
    try:
        socks.append(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5))
    except OSError:
        break
open(sys.argv[3], "w").write("%d\n" % len(socks))
open(sys.argv[2]).read()          # wait for the word
for s in socks[:250]:
    s.close()
open(sys.argv[2]).read()
PY
hold=$!
for _ in $(seq 1 100); do [ -s "$T_TMP/held" ] && break; sleep 0.1; done
ok "300 clients connect ($(cat "$T_TMP/held") sockets, the rest wait in the backlog)"
sleep 0.5
log0=$(stat -c %s "$PROFD_LOG"); c0=$(cpu)
sleep 2
c1=$(cpu); log1=$(stat -c %s "$PROFD_LOG")
ticks=$((c1 - c0))
[ "$ticks" -lt 40 ] && ok "profd idles while they wait (${ticks} CPU ticks in 2 s)" ||
	not_ok "profd idles while they wait (${ticks} CPU ticks in 2 s)"
[ $((log1 - log0)) -lt 2000 ] && ok "the log stays quiet ($((log1 - log0)) bytes in 2 s)" ||
	not_ok "the log stays quiet ($((log1 - log0)) bytes in 2 s)"
is "$(grep -c 'Error from accept' "$PROFD_LOG")" 0 "no line per failed accept"
echo go > "$T_TMP/go"		# 250 clients leave
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$PROFD_URL/healthz")
is "$code" 200 "after they leave, a new client is served"
echo go > "$T_TMP/go"
wait "$hold"
done_testing
