#!/usr/bin/env bash
# libprofd-agent in forked processes: after fork without exec the child
# starts its own agent (thread, timers, ring, uploads). (1) forker forks 4
# workers that burn CPU: profd receives profiles from the 4 worker pids and
# the parent, each labelled pid=PID and exe=forker, samples in worker_burn
# from the workers. (2) nginx, master + 2 workers (gzip on; reuseport, so
# the kernel spreads wrk's 32 connections over both: all on one worker
# has odds 2^-31, where 8 had 1 in 128) under wrk:
# profiles with samples come from at least 2 worker pids. Every profile's
# mapping 1 is the main executable.
. "${top_srcdir:-.}/test/lib/e2e.sh"

B=${top_builddir:-.}
SO=$B/agent/.libs/libprofd-agent.so
FORKER=$B/agent/examples/forker
[ -f "$SO" ] && [ -x "$FORKER" ] || skip_all "agent not built"
command -v go >/dev/null || skip_all "go tool pprof not installed"
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0"
# A sanitizer-built agent cannot be forked safely: the sanitizer's
# allocator locks are not reset in a fork child (GCC 12's libasan), so a
# child whose parent's agent thread was allocating at fork() deadlocks at
# its first allocation (seen: forker's children hung in LeakSanitizer's
# exit check). glibc's malloc is fork-safe; these checks are for plain
# builds.
nm -D "$SO" 2>/dev/null | grep -qE '__(asan|tsan|msan)_init' &&
    skip_all "sanitizer build: its allocator is not fork-safe"
pprof() { gopprof "$@" 2>/dev/null; }
# fetch PATH FILE: GET into FILE; status in $HTTP_CODE.
fetch() { HTTP_CODE=$(curl -s -o "$2" -w '%{http_code}' "$PROFD_URL$1"); }

# 1. forker against the real collector.
if [ -x "$PROFD" ] && profd_start; then
	timeout 60 env LD_PRELOAD="$SO" PROFD_SERVICE=forker PROFD_COLLECTOR="$PROFD_URL" \
	    PROFD_LABELS=env=fork PROFD_WINDOW=1 PROFD_PERIOD=1 \
	    "$FORKER" -n 4 -s 2.5 >"$T_TMP/out" 2>"$T_TMP/err"
	rc=$?
	# LeakSanitizer, at a fork child's exit, may name a thread of the
	# parent it could not suspend: the sanitizer's line, not the agent's.
	sed -i '/^==[0-9]*==Running thread [0-9]* was not suspended/d' "$T_TMP/err"
	is "$rc/$(wc -c <"$T_TMP/err")" "0/0" "forker: exits 0, agent quiet"
	parent=$(awk '/^parent/ { print $2 }' "$T_TMP/out")
	workers=$(awk '/^worker/ { print $2 }' "$T_TMP/out" | sort -n)
	api "/api/0/profiles?service=forker&type=cpu&labels=env=fork" >/dev/null
	is "$HTTP_CODE" 200 "forker: profiles listed"
	list=$BODY
	pids=$(jq -r '.body[].labels[] | select(.key == "pid") | .value' \
	    <<<"$list" | sort -nu)
	diag "parent $parent, workers $(echo $workers), pids labelled: $(echo $pids)"
	n=0
	for w in $workers; do grep -qx "$w" <<<"$pids" && n=$((n + 1)); done
	is "$n" 4 "profiles arrived from the 4 worker pids"
	check "and from the parent ($parent)" grep -qx "$parent" <<<"$pids"
	is "$(jq '[.body[] | select(([.labels[] | select(.key == "exe")
	    | .value] | first) != "forker")] | length' <<<"$list")" 0 \
	    "every profile is labelled exe=forker"
	is "$(jq '[.body[] | select([.labels[] | select(.key == "pid")]
	    | length != 1)] | length' <<<"$list")" 0 \
	    "every profile has one pid label"
	w1=$(head -n 1 <<<"$workers")
	id=$(jq -r --arg p "$w1" '[.body[] | select(any(.labels[];
	    .key == "pid" and .value == $p))][0].id' <<<"$list")
	fetch "/api/0/profiles/$id" "$T_TMP/w1.pb.gz"
	is "$HTTP_CODE" 200 "a worker's profile downloads"
	check "the worker's samples are in worker_burn" \
	    grep -q worker_burn <(pprof -traces "$T_TMP/w1.pb.gz")
	check "mapping 1 of the worker's profile is forker" \
	    grep -q '^1: .*/forker ' <(pprof -raw "$T_TMP/w1.pb.gz")
	profd_stop
else
	diag "profd is not available; forker checks skipped"
fi

# 2. nginx: master + 2 workers under wrk.
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
if ! [ -x "$NGINX" ] || ! command -v wrk >/dev/null; then
	diag "nginx or wrk not installed; nginx checks skipped"
	done_testing
fi
N=$T_TMP/nginx
mkdir -p "$N/out" "$N/www" "$N/logs"
chmod 777 "$N/out"	# workers run as nobody when the master is root
chmod 755 "$T_TMP" "$N" "$N/www"
python3 -c '
import random
r = random.Random(7)
w = ["".join(r.choice("abcdefghij") for _ in range(r.randint(2, 8))) for _ in range(3000)]
print(" ".join(r.choice(w) for _ in range(60000)))' >"$N/www/page.txt"
chmod 644 "$N/www/page.txt"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$N/nginx.conf" <<CONF
master_process on;
worker_processes 2;
daemon off;
pid $N/nginx.pid;
error_log $N/logs/error.log;
env PROFD_SERVICE;
env PROFD_OUTPUT_DIR;
env PROFD_WINDOW;
env PROFD_PERIOD;
events { worker_connections 128; }
http {
	access_log off;
	client_body_temp_path $N/tmp_body;
	proxy_temp_path $N/tmp_proxy;
	fastcgi_temp_path $N/tmp_fcgi;
	uwsgi_temp_path $N/tmp_uwsgi;
	scgi_temp_path $N/tmp_scgi;
	gzip on;
	gzip_comp_level 9;
	gzip_types text/plain;
	gzip_min_length 0;
	server {
		listen 127.0.0.1:$port reuseport;
		root $N/www;
		location / { default_type text/plain; }
	}
}
CONF
env LD_PRELOAD="$SO" PROFD_SERVICE=nginx PROFD_OUTPUT_DIR="$N/out" \
    PROFD_WINDOW=1 PROFD_PERIOD=1 "$NGINX" -c "$N/nginx.conf" -p "$N" \
    >"$N/stdout" 2>"$N/stderr" &
master=$!
for i in $(seq 1 50); do
	curl -s -o /dev/null "http://127.0.0.1:$port/page.txt" && break
	sleep 0.1
done
wpids=$(pgrep -P "$master" | sort -n)
wrk -t2 -c32 -d4s -H 'Accept-Encoding: gzip' \
    "http://127.0.0.1:$port/page.txt" >"$N/wrk.txt" 2>&1
grep -E 'Requests/sec' "$N/wrk.txt" | sed 's/^/# wrk: /'
# Each worker's CPU (clock ticks) and threads, to tell an idle worker
# from an unprofiled one.
for w in $wpids; do
	diag "worker $w: utime $(awk '{ print $14 }' /proc/$w/stat 2>/dev/null) ticks, $(ls /proc/$w/task 2>/dev/null | wc -l) threads"
done
kill -QUIT "$master"
wait "$master"
sed 's/^/# nginx: /' "$N/stderr" | head -n 5
is "$(echo $wpids | wc -w)" 2 "nginx started 2 workers ($(echo $wpids))"
n=0
for w in $wpids; do
	set -- "$N"/out/nginx-cpu-"$w"-*.pb.gz
	[ -f "$1" ] || continue
	s=$(pprof -top "$@" | sed -n 's/.*Total samples = \([0-9.]*\)\(m\{0,1\}s\).*/\1 \2/p')
	diag "worker $w: $# profiles, $s"
	[ -n "$s" ] && n=$((n + 1))
done
check "profiles with samples from at least 2 nginx worker pids ($n)" \
    test "$n" -ge 2
set -- "$N"/out/*.pb.gz
pprof -top "$@" | sed -n '6,11p' | sed 's/^/# top: /'
check "the workers' samples include gzip (zlib)" \
    grep -Eq 'deflate|longest_match|libz' <(pprof -traces "$@")
bad=0
for f in "$@"; do
	pprof -raw "$f" | grep -q '^1: .*/nginx ' || bad=$((bad + 1))
done
is "$bad" 0 "mapping 1 of every nginx profile is nginx ($# profiles)"
done_testing
