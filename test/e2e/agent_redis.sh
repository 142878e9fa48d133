#!/usr/bin/env bash
# libprofd-agent in Debian's redis-server under redis-benchmark (issue
# #12): redis is built without frame pointers, and the frame-pointer walk
# gave 68% of samples a garbage caller (an address in no mapping). Now:
#  - no location of any profile lies outside its mapping;
#  - the server's stacks reach main (aeMain's caller) in most samples;
#  - the command path (processCommand) and the socket writes are seen;
#  - the server is unharmed: redis-benchmark's requests all succeed.
. "${top_srcdir:-.}/test/lib/e2e.sh"

B=${top_builddir:-.}
SO=$B/agent/.libs/libprofd-agent.so
STACKS=${top_srcdir:-.}/test/lib/pprof_stacks.py
[ -f "$SO" ] || skip_all "agent not built"
command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
    skip_all "redis-server and redis-benchmark not installed (tools/deps.sh --test)"
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0"
out=$T_TMP/profiles
mkdir -p "$out"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

LD_PRELOAD=$SO PROFD_SERVICE=redis PROFD_OUTPUT_DIR=$out PROFD_WINDOW=2 \
    PROFD_PERIOD=2 redis-server --port "$port" --bind 127.0.0.1 --save '' \
    --appendonly no --daemonize no --dir "$T_TMP" >"$T_TMP/redis.log" 2>&1 &
rpid=$!
for i in $(seq 1 100); do
	redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break
	sleep 0.05
done
redis-benchmark -p "$port" -n 150000 -c 20 -q -t set,get,incr,lpush \
    >"$T_TMP/bench" 2>&1
rc=$?
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1
wait "$rpid"
is "$rc" 0 "redis-benchmark against redis-server with the agent: exit 0"
check "... every test reports its requests per second" \
    [ "$(tr '\r' '\n' < "$T_TMP/bench" | grep -c 'requests per second')" -eq 4 ]
ls "$out"/*.pb.gz >/dev/null 2>&1 || { not_ok "profiles were written"; done_testing; }
s=$(python3 "$STACKS" --has '^processCommand$' --has '^(__write|write|writev|__writev|_writeToClient|writeToClient)$' "$out"/*.pb.gz)
diag "$(printf '%s' "$s" | cut -c 1-600)"
samples=$(printf '%s' "$s" | jq .samples)
check "profiles hold samples ($samples)" [ "$samples" -ge 100 ]
is "$(printf '%s' "$s" | jq .bad_frames)" 0 "no location lies outside its mapping (no garbage frames)"
reach=$(printf '%s' "$s" | jq .reach)
check "stacks reach main in at least 80% of samples ($reach)" \
    awk -v r="$reach" 'BEGIN { exit !(r >= 0.8) }'
pc=$(printf '%s' "$s" | jq '.functions["^processCommand$"]')
check "processCommand is on the stack of some samples ($pc)" \
    awk -v r="$pc" 'BEGIN { exit !(r > 0.02) }'
done_testing
