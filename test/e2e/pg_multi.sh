#!/usr/bin/env bash
# Stateless collectors: three profd processes on one PostgreSQL database
# behind nginx (Debian's, round-robin on loopback). Four uploaders send
# profiles through nginx while one collector is killed with SIGKILL and
# restarted on the same port, twice. Afterwards every upload that got a
# 200 is listed by every collector and reads back byte-identical through
# every collector; a merge through any collector counts every stored
# profile; no request got a 500; the database holds a row for every blob
# and a blob for every row. Then the three run compaction: one takes the
# lock and compacts, another takes over when it is killed, and merges
# through all three read the rollups.
. "${top_srcdir:-.}/test/lib/e2e.sh"
[ -d "$PROFD_CORPUS" ] || skip_all "corpus not found at $PROFD_CORPUS"
command -v jq >/dev/null || skip_all "jq not installed"
pg_available || skip_all "PostgreSQL server not installed"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || skip_all "nginx not installed"

W='from=2020-01-01T00:00:00&to=2100-01-01T00:00:00'
files=()
for f in go/cpuburn/cpu_A_01 go/cpuburn/cpu_A_02 go/bigstacks/cpu_A_01 \
    go/allocheavy/cpu_B_02 go/cpuburn/cpu_A_03; do
	[ -f "$PROFD_CORPUS/$f.pb.gz" ] && files+=("$PROFD_CORPUS/$f.pb.gz")
done
[ "${#files[@]}" -ge 3 ] || skip_all "corpus files missing"

pg_start && URI=$(pg_db multi) || { not_ok "PostgreSQL starts"; done_testing; }
ok "PostgreSQL 15 started in a temporary directory"

# free_port: a TCP port nothing listens on now.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
P=("" "$(free_port)" "$(free_port)" "$(free_port)")
LB=$(free_port)
PIDS=("" "" "" "")

# collector K: starts collector K (1..3) on its port; waits until it serves.
collector() {
	local k=$1 i
	"$PROFD" --addr "127.0.0.1:${P[$k]}" --store "$URI" --retention 0 \
	    --rollup-delay "${ROLL:-0}" --workers 2 2>>"$T_TMP/c$k.log" &
	PIDS[$k]=$!
	for i in $(seq 1 200); do
		curl -s -o /dev/null "http://127.0.0.1:${P[$k]}/api/0/version" && return 0
		kill -0 "${PIDS[$k]}" 2>/dev/null || break
		sleep 0.05
	done
	sed 's/^/# /' "$T_TMP/c$k.log"
	return 1
}
for k in 1 2 3; do
	collector "$k" || { not_ok "collector $k starts"; done_testing; }
done
ok "three collectors share the database (ports ${P[1]} ${P[2]} ${P[3]})"

mkdir -p "$T_TMP/nginx"
chmod 777 "$T_TMP/nginx"
# As root, nginx's worker would run as nobody, which cannot enter $T_TMP.
user=
[ "$(id -u)" -eq 0 ] && user="user root;"
cat > "$T_TMP/nginx/nginx.conf" <<EOF
$user
worker_processes 1;
pid $T_TMP/nginx/nginx.pid;
error_log $T_TMP/nginx/error.log;
events { worker_connections 512; }
http {
	access_log off;
	client_body_temp_path $T_TMP/nginx/body;
	proxy_temp_path $T_TMP/nginx/proxy;
	fastcgi_temp_path $T_TMP/nginx/fastcgi;
	uwsgi_temp_path $T_TMP/nginx/uwsgi;
	scgi_temp_path $T_TMP/nginx/scgi;
	client_max_body_size 64m;
	upstream profd {
		server 127.0.0.1:${P[1]} max_fails=0;
		server 127.0.0.1:${P[2]} max_fails=0;
		server 127.0.0.1:${P[3]} max_fails=0;
	}
	server {
		listen 127.0.0.1:$LB;
		location / {
			proxy_pass http://profd;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
		}
	}
}
EOF
"$NGINX" -p "$T_TMP/nginx" -c "$T_TMP/nginx/nginx.conf" -e "$T_TMP/nginx/error.log" -g 'daemon on;' ||
	{ not_ok "nginx starts"; done_testing; }
LBURL="http://127.0.0.1:$LB"
stop_all() {
	[ -f "$T_TMP/nginx/nginx.pid" ] && kill "$(cat "$T_TMP/nginx/nginx.pid")" 2>/dev/null
	for k in 1 2 3; do [ -n "${PIDS[$k]}" ] && kill -KILL "${PIDS[$k]}" 2>/dev/null; done
}
trap 'stop_all; _cleanup' EXIT
for _ in $(seq 1 100); do
	curl -s -o /dev/null "$LBURL/api/0/version" && break
	sleep 0.05
done
ok "nginx balances round-robin over the three"

STOP=$T_TMP/stop
# the uploaders: through nginx until $STOP exists (stream_uploader: ten
# uploads a curl, at most 10 a second each)
echo "$LBURL" > "$T_TMP/lburl"
for u in 1 2 3 4; do
	stream_uploader "$u" "$T_TMP/lburl" "$STOP" "service=multi&type=cpu" "${files[@]}" &
done
upids=$(jobs -p)
restarts=0
for round in 1 2; do
	sleep 1.5
	kill -KILL "${PIDS[2]}"
	wait "${PIDS[2]}" 2>/dev/null
	sleep 0.5
	collector 2 && restarts=$((restarts + 1))
done
sleep 1.5
touch "$STOP"
for p in $upids; do
	case " ${PIDS[*]} " in *" $p "*) continue ;; esac
	wait "$p" 2>/dev/null
done
is "$restarts" 2 "collector 2 killed with SIGKILL and restarted twice during the uploads"

stream_acked "$T_TMP"/replies.* > "$T_TMP/ok"
cut -f2 "$T_TMP"/replies.* > "$T_TMP/codes"
acked=$(wc -l < "$T_TMP/ok")
attempts=$(wc -l < "$T_TMP/codes")
diag "$attempts upload attempts, $acked got 200; other codes: $(grep -v '^200$' "$T_TMP/codes" | sort | uniq -c | tr '\n' ' ')"
check "uploads went through nginx ($acked)" [ "$acked" -ge 30 ]
is "$(grep -c '^500$' "$T_TMP/codes")" 0 "no upload got a 500"
is "$(cut -f1 "$T_TMP/ok" | sort | uniq -d | wc -l)" 0 "no id was handed out twice"
cut -f1 "$T_TMP/ok" | sort > "$T_TMP/acked"

total=$(pg_sql multi 'SELECT count(*) FROM profiles')
for k in 1 2 3; do
	url="http://127.0.0.1:${P[$k]}"
	curl -s "$url/api/0/profiles?service=multi&type=cpu&$W&limit=100000" |
	    jq -r '.body[].id' | sort > "$T_TMP/listed.$k"
	is "$(comm -23 "$T_TMP/acked" "$T_TMP/listed.$k" | wc -l)" 0 \
	    "collector $k lists every acknowledged upload"
	is "$(wc -l < "$T_TMP/listed.$k")" "$total" "collector $k lists every stored row ($total)"
	# (read back by one curl)
	PROFD_URL=$url download_all "$T_TMP/down" $(cut -f1 "$T_TMP/ok")
	bad=0 n=0
	while IFS=$'\t' read -r id f; do
		cmp -s "$T_TMP/down/$n" "$f" || { bad=$((bad + 1)); [ $bad -le 3 ] && diag "differs via $k: $id ($f)"; }
		n=$((n + 1))
	done < "$T_TMP/ok"
	is "$bad" 0 "every acknowledged upload reads back byte-identical through collector $k"
	code=$(curl -s -D "$T_TMP/h.$k" -o "$T_TMP/m.$k" -w '%{http_code}' \
	    "$url/api/0/profiles/merge?service=multi&type=cpu&$W")
	n=$(tr -d '\r' < "$T_TMP/h.$k" | sed -n 's/^X-Profd-Merge-Profiles: //Ip')
	is "$code/$n" "200/$total" "a merge through collector $k takes all $total profiles"
done
check "the three merges are the same bytes" cmp -s "$T_TMP/m.1" "$T_TMP/m.2"
check "... and the third too" cmp -s "$T_TMP/m.1" "$T_TMP/m.3"

is "$(pg_sql multi 'SELECT count(*) FROM profiles p WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE b.id = p.id)')" 0 "no row without its blob"
is "$(pg_sql multi 'SELECT count(*) FROM blobs b WHERE NOT EXISTS (SELECT 1 FROM profiles p WHERE p.id = b.id)')" 0 "no blob without its row"
is "$(pg_sql multi 'SELECT count(*) FROM profiles p WHERE (SELECT count(*) FROM profile_labels l WHERE l.profile_pk = p.pk) != 2')" 0 \
    "every profile kept both its labels"
is "$(pg_sql multi 'SELECT profiles FROM profd_totals')" "$total" "profd_totals counts every row"
is "$(pg_sql multi "SELECT refs FROM service_labels sl JOIN labels l USING (label_id) WHERE l.key = 'uploader' AND l.value = '1'")" \
    "$(pg_sql multi "SELECT count(*) FROM profile_labels pl JOIN labels l USING (label_id) WHERE l.key = 'uploader' AND l.value = '1'")" \
    "service_labels counts match the rows after concurrent writers"
m=$(curl -s "http://127.0.0.1:${P[1]}/metrics" | awk '$1 == "profd_profiles_stored" { print $2 }')
is "$m" "$total" "/metrics of collector 1 counts what all three stored"

# --- rollups: one collector compacts at a time ---------------------------
# The three restarted with compaction on: exactly one takes the lock and
# compacts what they all stored; killed, another takes over; merges
# through every collector read the rollups and take every profile.
for k in 1 2 3; do
	kill -TERM "${PIDS[$k]}"
	wait "${PIDS[$k]}"
	is "$?" 0 "collector $k exits cleanly on SIGTERM"
	PIDS[$k]=
	: > "$T_TMP/c$k.log"
done
for k in 1 2 3; do
	ROLL=1s collector "$k" || { not_ok "collector $k restarts compacting"; done_testing; }
done
# compacted K: waits until collector K sees nothing left to compact.
compacted() {
	local i
	for i in $(seq 1 300); do
		[ "$(curl -s "http://127.0.0.1:${P[$1]}/metrics" | awk '$1 == "profd_rollup_lag_seconds" { print $2 }')" = 0.000 ] && return 0
		sleep 0.2
	done
	return 1
}
# upload_lb FILE LABELS: one upload through nginx; true on a 200.
upload_lb() {
	[ "$(curl -s -m 20 -o /dev/null -w '%{http_code}' --data-binary "@$1" \
	    "$LBURL/api/0/profiles?service=multi&type=cpu&labels=$2")" = 200 ]
}
# leaders: the collectors whose log says they compact.
leaders() { grep -l 'this collector compacts' "$T_TMP"/c[123].log 2>/dev/null | sed 's/.*c\([123]\)\.log/\1/'; }
check "compaction finishes" compacted 2
is "$(leaders | wc -l)" 1 "exactly one collector compacts ($(leaders | tr '\n' ' '))"
lead=$(leaders | head -n 1)
n=$(pg_sql multi 'SELECT count(*) FROM rollups')
check "it wrote rollups ($n)" [ "$n" -gt 0 ]
is "$(pg_sql multi 'SELECT count(*) FROM profiles WHERE rolled <= 0')" 0 "no profile is left out of rollups"
kill -KILL "${PIDS[$lead]}"
wait "${PIDS[$lead]}" 2>/dev/null
PIDS[$lead]=
for i in $(seq 1 100); do
	[ "$(leaders | grep -vc "^$lead\$")" -ge 1 ] && break
	sleep 0.1
done
check "collector $lead killed: another takes the lock ($(leaders | grep -v "^$lead\$" | tr '\n' ' '))" \
    [ "$(leaders | grep -vc "^$lead\$")" -eq 1 ]
ROLL=1s collector "$lead" || not_ok "collector $lead restarts"
for i in 1 2 3 4 5; do
	upload_lb "$PROFD_CORPUS/go/cpuburn/cpu_A_0$i.pb.gz" "uploader=9,n=$i" || not_ok "an upload after the takeover"
done
total=$((total + 5))
sleep 1.5
other=$(leaders | grep -v "^$lead\$" | head -n 1)
check "the new leader compacts the new uploads" compacted "$other"
# Those landing in a minute compacted already are late: rolled up again
# once none has arrived for the delay. The merges wait for that (the same
# pieces, so the same bytes, through every collector).
for i in $(seq 1 100); do
	[ "$(pg_sql multi 'SELECT count(*) FROM profiles WHERE rolled <= 0')" = 0 ] && break
	sleep 0.2
done
is "$(pg_sql multi 'SELECT count(*) FROM profiles WHERE rolled <= 0')" 0 "... late ones included"
# Then the hours and days holding them are compacted again, one level
# after another (slow under a sanitizer): wait for none to be waiting.
waiting() { curl -s "http://127.0.0.1:${P[$1]}/metrics" | awk '$1 == "profd_rollup_buckets_waiting" { print $2 }'; }
for i in $(seq 1 300); do
	[ "$(waiting "$other")" = 0 ] && break
	sleep 0.2
done
is "$(waiting "$other")" 0 "... and no hour or day waits to be compacted"
# (A bucket that ends meanwhile is compacted between two of the merges:
# they then read other pieces. The three go again then.)
for try in 1 2 3 4 5 6; do
	for k in 1 2 3; do
		curl -s -D "$T_TMP/h.$k" -o "$T_TMP/m.$k" "http://127.0.0.1:${P[$k]}/api/0/profiles/merge?service=multi&type=cpu&$W"
	done
	cmp -s "$T_TMP/m.1" "$T_TMP/m.2" && cmp -s "$T_TMP/m.1" "$T_TMP/m.3" && break
	diag "merges differ (try $try): $(for k in 1 2 3; do tr -d '\r' < "$T_TMP/h.$k" | sed -n 's/^X-Profd-Merge-Inputs: //Ip'; done | tr '\n' ' ')"
	diag "waiting: $(waiting "$other"); rollups: $(pg_sql multi 'SELECT level, count(*) FROM rollups GROUP BY level ORDER BY level' | tr '\n' ' ')"
	sleep 1
done
for k in 1 2 3; do
	n=$(tr -d '\r' < "$T_TMP/h.$k" | sed -n 's/^X-Profd-Merge-Profiles: //Ip')
	r=$(tr -d '\r' < "$T_TMP/h.$k" | sed -n 's/^X-Profd-Merge-Inputs: .*(\([0-9]*\) rollups).*/\1/Ip')
	is "$n" "$total" "a merge through collector $k takes all $total profiles ..."
	check "... reading ${r:-0} rollups" [ "${r:-0}" -gt 0 ]
done
check "the three merges over rollups are the same bytes" cmp -s "$T_TMP/m.1" "$T_TMP/m.2"
check "... and the third too" cmp -s "$T_TMP/m.1" "$T_TMP/m.3"
is "$(pg_sql multi "SELECT count(*) FROM blobs b WHERE b.id ~ '^[A-Z]' AND NOT EXISTS (SELECT 1 FROM rollups r WHERE r.profile IS NULL AND b.id = chr(65 + (r.rid % 26)::int) || chr(65 + (r.rid / 26 % 26)::int) || lpad(r.rid::text, 18, '0'))")" 0 \
    "no rollup blob without its row"
for k in 1 2 3; do
	kill -TERM "${PIDS[$k]}"
	wait "${PIDS[$k]}"
	is "$?" 0 "collector $k exits cleanly on SIGTERM"
	PIDS[$k]=
done
done_testing
