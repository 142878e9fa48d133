#!/usr/bin/env bash
# Collector-directed pacing (/api/0/agents/poll) against the real daemon,
# with curl long polls:
#  - at --profile-rate 60 (1 s apart), with --read-timeout 2 and
#    --request-timeout 2: bad parameters 400 naming the parameter; the first
#    poll granted at once as a bare JSON object; a busy poll held to the
#    window's end plus 2 s and a poll of an instance in its window answered
#    wait 0 after its wait=2, neither cut by the timeouts; five concurrent
#    polls granted one a second in arrival order, then, polling again in
#    reverse order, the oldest grant first;
#  - at --profile-rate 6 (10 s apart): the busy poll's curl killed cancels
#    the slot and the next instance is granted at once (not 10 s later),
#    profd_pacing_cancelled_total 1; 50 concurrent polls, one granted and
#    the rest held while uploads stay fast; the metrics' values; a held
#    curl killed leaves the count; SIGTERM answers held polls 503 at once;
#  - with --auth-file: 401 without a token, 403 with a read token, the
#    write and admin tokens polled.
. "${top_srcdir:-.}/test/lib/e2e.sh"
command -v jq >/dev/null || skip_all "jq not installed"
P=/api/0/agents/poll
declare -A PID START

now_ms() { date +%s%3N; }
# poll_bg N QUERY [CURL ARGS]: a POST poll in the background (its curl's
# pid in PID[N]); poll_end N waits for it and sets CODE, BODYN and END
# (epoch ms of its answer).
poll_bg() {
	local n=$1 q=$2
	shift 2
	START[$n]=$(now_ms)
	curl -s -X POST -o "$T_TMP/p.$n.b" -w '%{http_code} %{time_total}' \
	    "$@" "$PROFD_URL$P?$q" > "$T_TMP/p.$n" 2>/dev/null &
	PID[$n]=$!
}
poll_end() {
	local c t
	wait "${PID[$1]}" 2>/dev/null
	read -r c t < "$T_TMP/p.$1"
	CODE=$c
	BODYN=$(cat "$T_TMP/p.$1.b" 2>/dev/null)
	END=$(awk -v s="${START[$1]}" -v t="${t:-0}" 'BEGIN { printf "%.0f", s + t * 1000 }')
}
# running N: true while poll N has no answer.
running() { kill -0 "${PID[$1]}" 2>/dev/null; }
# between X LO HI: LO <= X <= HI (integers).
between() { [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }

# --- default: pacing off, agents keep their own schedules -----------------
profd_start || { not_ok "profd starts"; done_testing; }
api "$P?service=s&instance=i&types=cpu&wait=1" -X POST >/dev/null
if [ "$HTTP_CODE" = 404 ] && echo "$BODY" | jq -e \
    '.error | contains("profile-rate 0")' >/dev/null; then
	ok "default --profile-rate 0: a poll is answered 404 (pacing off)"
else
	not_ok "default --profile-rate 0: a poll is answered 404"
	diag "got $HTTP_CODE $BODY"
fi
profd_stop

# --- rate 60: parameters, answers, holds, fairness ------------------------
profd_start --profile-rate 60 --read-timeout 2 --request-timeout 2 ||
	{ not_ok "profd starts"; done_testing; }
bad() {	# bad QUERY WORD DESC: 400 whose error names WORD
	api "$P?$1" -X POST >/dev/null
	if [ "$HTTP_CODE" = 400 ] && echo "$BODY" | jq -e --arg w "$2" \
	    '.code == 400 and (.error | contains($w))' >/dev/null; then
		ok "400 naming $2: $3"
	else
		not_ok "400 naming $2: $3"; diag "got $HTTP_CODE $BODY"
	fi
}
bad "instance=i&types=cpu" service "no service"
bad "service=%01&instance=i&types=cpu" service "a control character in service"
bad "service=s&types=cpu" instance "no instance"
bad "service=s&instance=a%20b&types=cpu" instance "a space in instance"
bad "service=s&instance=$(printf 'x%.0s' $(seq 129))&types=cpu" instance "an instance of 129 characters"
bad "service=s&instance=i" types "no types"
bad "service=s&instance=i&types=cpu,wall" wall "an unknown type"
bad "service=s&instance=i&types=cpu," types "an empty type"
bad "service=s&instance=i&types=cpu&window=0" window "window 0"
bad "service=s&instance=i&types=cpu&window=301" window "window 301"
bad "service=s&instance=i&types=cpu&wait=0" wait "wait 0"
bad "service=s&instance=i&types=cpu&wait=121" wait "wait 121"
bad "service=s&instance=i&types=cpu&slot=12ab" slot "a slot that is no number"
bad "service=s&instance=i&types=cpu&labels=noequals" labels "bad labels"
bad "service=s&instance=i&types=cpu&labels=a=1,a=2" labels "a label key twice"
api "$P?service=s&instance=i&types=cpu" -X PUT >/dev/null
is "$HTTP_CODE" 405 "PUT: 405"
is "$(metric profd_pacing_instances)" 0 "refused polls leave no instance"

# The first poll (GET works too) is granted at once.
t0=$(now_ms)
hdr=$(curl -s -D - -o "$T_TMP/first" "$PROFD_URL$P?service=a&instance=a1&types=cpu&window=3&labels=env=test" | tr -d '\r')
first=$(cat "$T_TMP/first")
echo "$hdr" | grep -q '^HTTP/1.1 200' && echo "$hdr" | grep -qi '^Content-Type: application/json' &&
	ok "the first poll: 200 application/json" || { not_ok "the first poll: 200 application/json"; diag "$hdr"; }
is "$(echo "$first" | jq -c '[.action, .type, .duration_s, (.slot | type)]')" '["profile","cpu",3,"string"]' \
	"it is granted a window at once: $first"
slot=$(echo "$first" | jq -r .slot)
[[ $slot =~ ^[0-9]+$ ]] && ok "the slot is a decimal number" || not_ok "the slot is a decimal number: $slot"

# Its busy poll is held to the window's end + 2 s (5 s: past the read and
# request timeouts of 2 s); meanwhile a poll of a1 for another type, in
# its window, is answered wait 0 when its wait=2 runs out.
poll_bg busy "service=a&instance=a1&types=cpu&slot=$slot&wait=60"
poll_bg held "service=a&instance=a1&types=heap&wait=2"
sleep 0.5
is "$(metric profd_pacing_polls_held)" 2 "profd_pacing_polls_held 2 (a busy poll, a poll held)"
poll_end held
is "$CODE $BODYN" '200 {"action":"wait","delay_ms":0}' "a poll of an instance in its window: wait 0 when its wait runs out"
check "... after 2 s ($(( END - START[held] )) ms)" between $(( END - START[held] )) 1800 3500
api "$P?service=a&instance=a1&types=cpu&slot=999" -X POST >/dev/null
is "$BODY" '{"action":"wait","delay_ms":0}' "a busy poll of an unknown slot: wait 0 at once"

# Five instances poll at once: one grant a second, in arrival order.
for i in 1 2 3 4 5; do poll_bg "f$i" "service=f&instance=f$i&types=cpu&window=1&wait=30"; sleep 0.1; done
sleep 0.4
n=0; for i in 1 2 3 4 5; do running "f$i" || n=$((n + 1)); done
# (one grant a second: on a loaded machine the five curls may take longer
# than a second to start, and then a second grant is due; more than that
# is a fault)
el=$(( $(now_ms) - START[f1] ))
if [ "$el" -lt 950 ]; then
	is "$n" 1 "five concurrent polls: one granted at once, four held"
else
	check "five concurrent polls: one granted at once, the rest held ($n granted in $el ms: at most one a second)" \
	    between "$n" 1 $(( 1 + el / 1000 ))
fi
order= ends=()
for i in 1 2 3 4 5; do
	poll_end "f$i"
	[ "$(echo "$BODYN" | jq -r .action)" = profile ] || diag "f$i: $CODE $BODYN"
	ends+=("$END f$i")
done
sorted=$(printf '%s\n' "${ends[@]}" | sort -n)
order=$(echo "$sorted" | awk '{ printf "%s ", $2 }')
is "$order" "f1 f2 f3 f4 f5 " "all five granted in turn, in arrival order"
gaps=$(echo "$sorted" | awk 'NR > 1 { printf "%d ", $1 - p } { p = $1 }')
check "one grant per second (gaps: $gaps ms)" awk -v g="$gaps" 'BEGIN { n = split(g, a, " "); for (i = 1; i <= n; i++) if (a[i] < 850 || a[i] > 1600) exit 1; exit n != 4 }'

poll_end busy
is "$CODE $BODYN" '200 {"action":"wait","delay_ms":0}' "the busy poll: wait 0 at the window's end"
check "... 5 s after the grant, past --read-timeout and --request-timeout ($(( END - t0 )) ms)" between $(( END - t0 )) 4700 6500

# Again, in reverse order, once their windows (1 s + 2 s) are over: the
# first to come takes the grant due; then the oldest grants go first.
sleep 3.2
for i in 5 4 3 2 1; do poll_bg "g$i" "service=f&instance=f$i&types=cpu&window=1&wait=30"; sleep 0.1; done
ends=()
for i in 5 4 3 2 1; do poll_end "g$i"; ends+=("$END f$i"); done
order=$(printf '%s\n' "${ends[@]}" | sort -n | awk '{ printf "%s ", $2 }')
is "$order" "f5 f1 f2 f3 f4 " "polling again in reverse order: f5 (came first, grant due), then the oldest grant first"
is "$(metric 'profd_pacing_grants_total{type="cpu"}')" 11 "profd_pacing_grants_total{type=\"cpu\"} 11"
is "$(metric 'profd_pacing_grants_total{type="heap"}')" 0 "profd_pacing_grants_total{type=\"heap\"} 0"
is "$(metric profd_pacing_cancelled_total)" 0 "nothing cancelled"
is "$(metric profd_pacing_instances)" 6 "profd_pacing_instances 6"
is "$(metric 'profd_http_requests_total{route="poll",code="400"}')" 15 "/metrics counts the route poll (15 400s)"
profd_stop

# --- rate 6: cancellation, many held polls, shutdown -----------------------
PROFD_DIR=
profd_start --profile-rate 6 || { not_ok "profd starts"; done_testing; }
api "$P?service=c&instance=c1&types=cpu&window=30" -X POST >/dev/null
slot=$(echo "$BODY" | jq -r .slot)
is "$(echo "$BODY" | jq -r .action)" profile "rate 6: c1 granted"
poll_bg c1busy "service=c&instance=c1&types=cpu&slot=$slot&wait=60"
poll_bg c2 "service=c&instance=c2&types=cpu&wait=60"
sleep 1.5
check "c2 is held (the next grant is 10 s away)" running c2
kill "${PID[c1busy]}"; tkill=$(now_ms)
poll_end c2
is "$(echo "$BODYN" | jq -r .action)" profile "c1's busy poll killed: its slot is cancelled and c2 granted"
check "... at once ($(( END - tkill )) ms after the kill, $(( END - START[c2] )) ms after c2 came)" between $(( END - tkill )) -500 1000
check "profd_pacing_cancelled_total 1" wait_metric profd_pacing_cancelled_total 1 2
poll_bg c2busy "service=c&instance=c2&types=cpu&slot=$(echo "$BODYN" | jq -r .slot)&wait=60"

for i in $(seq 1 50); do poll_bg "m$i" "service=m&instance=m-$i.x:1&types=cpu,heap&window=5&wait=60"; done
sleep 1.5
granted=() types=
for i in $(seq 1 50); do running "m$i" || granted+=("$i"); done
is "${#granted[@]}" 2 "50 concurrent polls of cpu,heap: two granted (one a type), 48 held"
for i in "${granted[@]}"; do
	poll_end "m$i"
	types="$types $(echo "$BODYN" | jq -r .type)"
	poll_bg "busy$i" "service=m&instance=m-$i.x:1&types=cpu&slot=$(echo "$BODYN" | jq -r .slot)&wait=60"
done
is "$(echo $types | tr ' ' '\n' | sort | tr '\n' ' ')" "cpu heap " "... one cpu, one heap window"
sleep 0.3
is "$(metric profd_pacing_polls_held)" 51 "profd_pacing_polls_held 51 (48 polls, 3 busy polls)"
is "$(metric profd_pacing_instances)" 52 "profd_pacing_instances 52"
is "$(metric 'profd_pacing_grants_total{type="cpu"}') $(metric 'profd_pacing_grants_total{type="heap"}')" "3 1" \
	"profd_pacing_grants_total: cpu 3 (c1, c2, one of m), heap 1"
if [ -f "$PROFD_CORPUS/go/cpuburn/cpu_A_01.pb.gz" ]; then
	worst=0 codes=
	for i in $(seq 1 20); do
		t=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --data-binary "@$PROFD_CORPUS/go/cpuburn/cpu_A_01.pb.gz" \
		    "$PROFD_URL/api/0/profiles?service=up&type=cpu")
		codes="$codes ${t% *}"
		worst=$(awk -v a="$worst" -v b="${t#* }" 'BEGIN { print (b > a) ? b : a }')
	done
	is "$(echo $codes | tr ' ' '\n' | sort -u)" 200 "20 uploads stored while 51 polls are held"
	check "... each fast (worst ${worst}s < 1s)" awk -v w="$worst" 'BEGIN { exit !(w < 1) }'
else
	diag "corpus not found: uploads skipped"
fi
for victim in $(seq 1 50); do running "m$victim" && break; done
kill "${PID[m$victim]}"
check "a held poll's curl killed: profd_pacing_polls_held 50" wait_metric profd_pacing_polls_held 50 2
is "$(metric profd_pacing_cancelled_total)" 1 "... and nothing cancelled"
t=$(now_ms)
profd_stop
stop=$(( $(now_ms) - t ))
n=0
for i in $(seq 1 50); do
	[ "$i" = "$victim" ] || [ "$i" = "${granted[0]}" ] || [ "$i" = "${granted[1]}" ] && continue
	poll_end "m$i"
	[ "$CODE" = 503 ] && n=$((n + 1))
done
for i in c2busy "busy${granted[0]}" "busy${granted[1]}"; do
	poll_end "$i"
	[ "$CODE" = 503 ] && n=$((n + 1))
done
is "$n" 50 "SIGTERM: every held poll (47) and busy poll (3) answered 503"
check "... and profd stopped at once ($stop ms)" test "$stop" -lt 3000

# --- tokens: the write scope ----------------------------------------------
PROFD_DIR=
printf 'reader-0123456789 read\nwriter-0123456789 write\nadmin-0123456789 admin\n' > "$T_TMP/tokens"
profd_start --auth-file "$T_TMP/tokens" --profile-rate 600 || { not_ok "profd starts"; done_testing; }
Q="$P?service=t&types=cpu&instance"
api "$Q=t1" -X POST >/dev/null; is "$HTTP_CODE" 401 "no token: 401"
hdr=$(curl -s -D - -o /dev/null -X POST "$PROFD_URL$Q=t1" | tr -d '\r' | grep -i '^WWW-Authenticate:')
is "$hdr" 'WWW-Authenticate: Bearer realm="profd"' "401 carries WWW-Authenticate"
api "$Q=t1" -X POST -H 'Authorization: Bearer nope-0123456789' >/dev/null; is "$HTTP_CODE" 401 "unknown token: 401"
api "$Q=t1" -X POST -H 'Authorization: Bearer reader-0123456789' >/dev/null; is "$HTTP_CODE" 403 "read token: 403"
echo "$BODY" | grep -q 'write scope' && ok "403 names the write scope" || not_ok "403 names the write scope: $BODY"
api "$Q=t1" -X POST -H 'Authorization: Bearer writer-0123456789' >/dev/null
is "$HTTP_CODE $(echo "$BODY" | jq -r .action)" "200 profile" "write token: granted"
api "$Q=t2" -H 'Authorization: Bearer admin-0123456789' >/dev/null
is "$HTTP_CODE $(echo "$BODY" | jq -r .action)" "200 profile" "admin token (GET): granted"
done_testing
