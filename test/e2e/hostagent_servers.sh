#!/usr/bin/env bash
# profd-hostagent on servers under load and on a build (issue #30), all
# started after the agent, unmodified, from Debian's packages:
#  - nginx, a master and 2 workers, under wrk: both workers' pids in the
#    samples of its service (PROFD_SERVICE in the master's environment,
#    which the workers inherit), its request path named;
#  - redis-server under redis-benchmark: processCommand named, stacks
#    reach main;
#  - make -j2 of a small C project: at least 90% of its samples under a
#    named executable (cc1, as, ld, make, sh...), cc1's C++ names
#    demangled, its hundred-odd
#    short-lived processes in one profile a period, not one each;
#  - a program running libprofd-agent is left to it: the collector holds
#    only the in-process agent's profiles of its service;
#  - every location lies inside its mapping.
. "${top_srcdir:-.}/test/lib/e2e.sh"

S=${top_srcdir:-.}
B=${top_builddir:-.}
HA=$B/agent/host/profd-hostagent
SO=$B/agent/.libs/libprofd-agent.so
HOTAPP=$B/agent/examples/hotapp
STACKS=$S/test/lib/pprof_stacks.py
[ -x "$HA" ] || skip_all "profd-hostagent not built"
[ "$(uname -m)" = x86_64 ] || skip_all "the host agent is x86-64 only"
for c in nginx wrk redis-server redis-benchmark redis-cli make cc; do
	command -v "$c" >/dev/null ||
	    skip_all "$c not installed (tools/deps.sh --test)"
done
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0"
profd_start || { not_ok "profd started"; done_testing; }
t=$$
w=$T_TMP/w
mkdir -p "$w/www" "$w/proj"
freeport() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# A small C project: 8 files of arithmetic the optimizer works on.
for i in 1 2 3 4 5 6 7 8; do
	python3 - "$i" > "$w/proj/f$i.c" <<'PY'
import sys
i = int(sys.argv[1])
print("#include <string.h>")
for k in range(120):
    print("int f%d_%d(int *v, int n) { int s = %d; for (int j = 0; j < n; j++)"
          " { s += v[j] * %d ^ (s >> 3); if (s %% 7 == %d) memmove(v, v + 1, 4); }"
          " return s; }" % (i, k, k, k + 3, k % 7))
PY
done
printf 'int main(void) { return 0; }\n' > "$w/proj/main.c"
cat > "$w/proj/Makefile" <<'MK'
OBJS = main.o f1.o f2.o f3.o f4.o f5.o f6.o f7.o f8.o
prog: $(OBJS)
	$(CC) -o $@ $(OBJS)
%.o: %.c
	$(CC) -O2 -c -o $@ $<
MK

"$HA" --collector "$PROFD_URL" --hz 99 --period 3s --verbose \
    >"$T_TMP/ha.log" 2>&1 &
hpid=$!
for i in $(seq 1 100); do
	grep -q 'sampling' "$T_TMP/ha.log" && break
	kill -0 "$hpid" 2>/dev/null || break
	sleep 0.1
done
check "the host agent started" grep -q 'sampling' "$T_TMP/ha.log"

# nginx: a master and 2 workers.
np=$(freeport)
head -c 65536 /dev/urandom > "$w/www/blob"
cat > "$w/nginx.conf" <<NG
worker_processes 2;
daemon off;
pid $w/nginx.pid;
error_log $w/nginx.err;
events { worker_connections 256; }
http {
	access_log off;
	server {
		listen 127.0.0.1:$np;
		root $w/www;
	}
}
NG
PROFD_SERVICE=ht-nginx-$t nginx -c "$w/nginx.conf" -p "$w" &
npid=$!
for i in $(seq 1 100); do
	curl -s -o /dev/null "http://127.0.0.1:$np/blob" && break
	sleep 0.05
done
workers=$(pgrep -P "$npid" | sort | tr '\n' ' ')
wrk -t2 -c16 -d4s "http://127.0.0.1:$np/blob" > "$T_TMP/wrk.out" 2>&1
is "$?" 0 "wrk against nginx: exit 0"
kill -QUIT "$npid"
wait "$npid"

# redis-server under redis-benchmark.
rp=$(freeport)
PROFD_SERVICE=ht-redis-$t redis-server --port "$rp" --bind 127.0.0.1 \
    --save '' --appendonly no --daemonize no --dir "$w" \
    > "$T_TMP/redis.log" 2>&1 &
rpid=$!
for i in $(seq 1 100); do
	redis-cli -p "$rp" ping 2>/dev/null | grep -q PONG && break
	sleep 0.05
done
redis-benchmark -p "$rp" -n 100000 -c 20 -q -t set,get,incr,lpush \
    > "$T_TMP/bench" 2>&1
is "$?" 0 "redis-benchmark: exit 0"
redis-cli -p "$rp" shutdown nosave > /dev/null 2>&1
wait "$rpid"

# make -j2; and a program running libprofd-agent beside it.
LD_PRELOAD=$SO PROFD_SERVICE=ht-agent-$t PROFD_COLLECTOR=$PROFD_URL \
    PROFD_WINDOW=2 PROFD_PERIOD=2 "$HOTAPP" 4 > /dev/null 2>&1 &
apid=$!
m0=$SECONDS
PROFD_SERVICE=ht-make-$t make -s -j2 -C "$w/proj" > "$T_TMP/make.log" 2>&1
is "$?" 0 "make -j2 of the project: exit 0"
periods=$(((SECONDS - m0) / 3 + 2))	# --period 3s: those it touched
wait "$apid"
sleep 0.5
kill -TERM "$hpid"
wait "$hpid"
is "$?" 0 "the host agent exits 0 on SIGTERM"
diag "$(tail -n 1 "$T_TMP/ha.log")"
check "no sanitizer report" sh -c "! grep -qE 'runtime error|Sanitizer' '$T_TMP/ha.log'"
check "samples in processes running libprofd-agent were left to it" \
    sh -c "grep -q ' [1-9][0-9]* in processes running libprofd-agent' '$T_TMP/ha.log'"

merged() {
	curl -s -o "$T_TMP/$1.pb.gz" -w '%{http_code}' \
	    "$PROFD_URL/api/0/profiles/merge?service=$1&type=cpu&from=now-10m"
}
summary() {
	local s=$1
	shift
	python3 "$STACKS" --label pid --label exe "$@" "$T_TMP/$s.pb.gz"
}

# nginx
code=$(merged "ht-nginx-$t")
is "$code" 200 "nginx: profiles"
[ "$code" = 200 ] || grep "exe=nginx" "$T_TMP/ha.log" | head -5 | sed "s/^/# /"
s=$(summary "ht-nginx-$t" --has '^ngx_')
diag "nginx: $(printf '%s' "$s" | jq -c '{samples, reach, top: .top[:4], labels, bad_frames}' | cut -c 1-700)"
diag "nginx workers: $workers"
for p in $workers; do
	check "nginx: worker $p in the samples" \
	    [ "$(printf '%s' "$s" | jq --arg p "$p" '.labels.pid[$p] // 0 | . > 0.05')" = true ]
done
check "nginx: its own functions (.dynsym: Debian's nginx is stripped) on the stacks" \
    awk -v r="$(printf '%s' "$s" | jq '.functions["^ngx_"]')" 'BEGIN { exit !(r >= 0.1) }'
check "nginx: stacks reach main in at least 90% of samples" \
    awk -v r="$(printf '%s' "$s" | jq .reach)" 'BEGIN { exit !(r >= 0.9) }'
is "$(printf '%s' "$s" | jq .bad_frames)" 0 "nginx: no location outside its mapping"

# redis
is "$(merged "ht-redis-$t")" 200 "redis: profiles"
s=$(summary "ht-redis-$t" --has '^processCommand$')
diag "redis: $(printf '%s' "$s" | jq -c '{samples, reach, top: .top[:4], bad_frames}' | cut -c 1-600)"
check "redis: processCommand on the stacks" \
    awk -v r="$(printf '%s' "$s" | jq '.functions["^processCommand$"]')" 'BEGIN { exit !(r >= 0.05) }'
check "redis: stacks reach main or a thread's start in at least 90% of samples" \
    awk -v r="$(summary "ht-redis-$t" --root '^(main|__libc_start_main|__libc_start_call_main|_start|start_thread|clone3?)$' | jq .reach)" 'BEGIN { exit !(r >= 0.9) }'
is "$(printf '%s' "$s" | jq .bad_frames)" 0 "redis: no location outside its mapping"

# make -j2
is "$(merged "ht-make-$t")" 200 "make: profiles"
s=$(summary "ht-make-$t" --has "^(main|toplev::main.*)$")
diag "make: $(printf '%s' "$s" | jq -c '{samples, reach, top: .top[:3], labels: .labels.exe, bad_frames}' | cut -c 1-700)"
named=$(printf '%s' "$s" | jq '[.labels.exe | to_entries[] | select(.key | test("^(cc1|as|ld|collect2|make|sh|dash|bash|cc|gcc|gcc-12|lto-wrapper|x86_64-linux-gnu-(gcc-12|as|ld|ld\\.bfd))$")) | .value] | add')
check "make: at least 90% of samples under a named executable ($named)" \
    awk -v r="$named" 'BEGIN { exit !(r >= 0.9) }'
check "make: cc1's stacks reach main in most samples" \
    awk -v r="$(printf '%s' "$s" | jq .reach)" 'BEGIN { exit !(r >= 0.8) }'
check "make: C++ names demangled ($(printf '%s' "$s" | jq .cxx_names) with a signature)" \
    [ "$(printf '%s' "$s" | jq .cxx_names)" -ge 20 ]
is "$(printf '%s' "$s" | jq .mangled)" 0 "make: no name left mangled"
check "make: cc1 has most of them" \
    awk -v r="$(printf '%s' "$s" | jq '.labels.exe.cc1 // 0')" 'BEGIN { exit !(r >= 0.5) }'
check "make: its processes' pids in the samples (several)" \
    [ "$(printf '%s' "$s" | jq '.labels.pid | length')" -ge 5 ]
api "/api/0/profiles?service=ht-make-$t&type=cpu&from=now-10m" > /dev/null
n=$(printf '%s' "$BODY" | jq '.body | length')
check "make: one profile a period for all its processes ($n profiles, $periods periods)" \
    [ "$n" -le "$periods" ]
is "$(printf '%s' "$s" | jq .bad_frames)" 0 "make: no location outside its mapping"

# The process running libprofd-agent.
api "/api/0/profiles?service=ht-agent-$t&type=cpu&from=now-10m" > /dev/null
n=$(printf '%s' "$BODY" | jq '.body | length')
check "libprofd-agent's profiles arrived ($n)" [ "$n" -ge 1 ]
is "$(printf '%s' "$BODY" | jq '[.body[].labels[] | select(.key == "host")] | length')" 0 \
    "none of them from the host agent (no host label)"
profd_stop
done_testing
