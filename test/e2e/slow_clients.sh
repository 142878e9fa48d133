#!/usr/bin/env bash
# Slow clients and the connection cap: hundreds of connections trickling a
# request a byte at a time are cut off after --read-timeout while a normal
# client is served with normal latency; --max-connections holds.
. "${top_srcdir:-.}/test/lib/e2e.sh"
command -v python3 >/dev/null || skip_all "python3 not installed"
H=$top_srcdir/test/lib

profd_start --read-timeout 2 --max-connections 1000 || { not_ok "profd starts"; done_testing; }
port=${PROFD_URL##*:}
python3 "$H/slowloris.py" "$port" 300 8 > "$T_TMP/slow.out" &
slow=$!
sleep 0.5
worst=0
for i in $(seq 1 20); do
	t=$(curl -s -o /dev/null -w '%{time_total}' "$PROFD_URL/api/0/version")
	worst=$(awk -v a="$worst" -v b="$t" 'BEGIN { print (b > a) ? b : a }')
	sleep 0.1
done
check "a normal client is served while 300 slow clients trickle (worst of 20: ${worst}s < 0.5s)" \
	awk -v w="$worst" 'BEGIN { exit !(w < 0.5) }'
upload "$PROFD_CORPUS/go/cpuburn/cpu_A_01.pb.gz" "service=normal&type=cpu" >/dev/null
is "$HTTP_CODE" 200 "a normal upload succeeds meanwhile"
wait "$slow"
is "$(cat "$T_TMP/slow.out")" 300 "all 300 slow connections cut off after --read-timeout 2"
is "$(store_sql "SELECT count(*) FROM profiles WHERE service='slow'")" 0 "slow uploads stored nothing"
profd_stop

PROFD_DIR=
profd_start --max-connections 20 || { not_ok "profd starts"; done_testing; }
port=${PROFD_URL##*:}
socks() { ls -l "/proc/$PROFD_PID/fd" 2>/dev/null | grep -c 'socket:'; }
base=$(socks)
python3 "$H/hold.py" "$port" 60 3 &
hold=$!
sleep 1.5
held=$(( $(socks) - base ))
check "--max-connections 20 holds with 60 clients (profd has $held open)" test "$held" -le 20 -a "$held" -ge 15
t=$(curl -s -o /dev/null -m 10 -w '%{http_code} %{time_total}' "$PROFD_URL/api/0/version")
diag "a client beyond the cap: $t"
wait "$hold"
sleep 0.5
api /api/0/version >/dev/null
is "$HTTP_CODE" 200 "accepting again once the clients left"
sleep 0.5
is "$(( $(socks) - base ))" 0 "no connection left open"
done_testing
