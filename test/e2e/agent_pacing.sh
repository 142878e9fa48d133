#!/usr/bin/env bash
# Collector-directed pacing with real agents: 20 hotapp processes of one
# service (LD_PRELOAD libprofd-agent, each working 4% of the time, own
# schedule a 2 s window every 10 s) against one collector at
# --profile-rate 12 (a window every 5 s for the whole service), for
# about 2.5 minutes, beside 2 processes of another service with
# PROFD_PACING=off as the yardstick. Checked:
#  - each agent says once that the collector paces it;
#  - the stored CPU profiles per whole minute stay at the rate (12 +- 1);
#  - every instance gets profiled (fair rotation);
#  - a paced process is profiled far less than one on its own schedule:
#    windows per process and the CPU time its samples covered, from the
#    stored profiles, and the agent thread's own CPU time;
#  - an agent killed with SIGKILL right after its grant frees its slot:
#    the next grant comes within 3 s (not the 5 s spacing) and
#    profd_pacing_cancelled_total counts it;
#  - an agent against a collector with pacing off (404) keeps its own
#    schedule and says so once; PROFD_PACING=off never polls.
. "${top_srcdir:-.}/test/lib/e2e.sh"

B=${top_builddir:-.}
SO=$B/agent/.libs/libprofd-agent.so
HOTAPP=$B/agent/examples/hotapp
[ -f "$SO" ] && [ -x "$HOTAPP" ] || skip_all "agent not built"
command -v jq >/dev/null || skip_all "jq not installed"
# 2.5 minutes of 22 processes: run in the plain suite only (it ran clean
# under ASan+UBSan when it was written; CI's time is better spent there on
# the rest).
nm -D "$SO" 2>/dev/null | grep -qE '__(asan|tsan|msan)_init' &&
	skip_all "sanitizer build: the fleet test runs in the plain suite"
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0"

N=20 DUR=150 RATE=12

# now_ms: monotonic-ish wall clock in ms.
now_ms() { date +%s%3N; }
# grants: profd_pacing_grants_total for cpu.
grants() { curl -s "$PROFD_URL/metrics" |
	awk '$1 == "profd_pacing_grants_total{type=\"cpu\"}" { print $2 }'; }
# agent_cpu_us PID: CPU time of the process's profd-agent thread, in us
# (schedstat: nanoseconds on the CPU).
agent_cpu_us() {
	local t
	for t in /proc/"$1"/task/*; do
		[ "$(cat "$t/comm" 2>/dev/null)" = profd-agent ] || continue
		awk '{ printf "%d\n", $1 / 1000 }' "$t/schedstat"
		return
	done
	echo 0
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# --- pacing off on the collector: the agent keeps its own schedule ------
profd_start || { not_ok "profd starts"; done_testing; }
LD_PRELOAD=$SO PROFD_SERVICE=own404 PROFD_COLLECTOR=$PROFD_URL \
    PROFD_WINDOW=1 PROFD_PERIOD=1 PROFD_VERBOSE=1 \
    "$HOTAPP" -s 3.5 >/dev/null 2>"$T_TMP/own404.err"
n=$(grep -c "answered 404: the agent keeps its own schedule" "$T_TMP/own404.err")
is "$n" 1 "pacing off (404): the agent says once that it keeps its own schedule"
list=$(curl -s "$PROFD_URL/api/0/profiles?service=own404&type=cpu&from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z&limit=100")
n=$(echo "$list" | jq '.body | length')
check "pacing off: its own 1 s windows are uploaded ($n in 3.5 s)" [ "$n" -ge 2 ]
LD_PRELOAD=$SO PROFD_SERVICE=own404 PROFD_COLLECTOR=$PROFD_URL \
    PROFD_PACING=bogus "$HOTAPP" -s 0.2 >/dev/null 2>"$T_TMP/bogus.err"
check "PROFD_PACING=bogus is refused with one line naming it" \
    grep -q 'PROFD_PACING="bogus" is not auto or off' "$T_TMP/bogus.err"
profd_stop

# --- a collector that accepts and never answers: the pacing poll holds ---
# --- neither the first window (past 1.5 s) nor the exit --------------------
python3 "${top_srcdir:-.}/test/lib/slow_collector.py" "$T_TMP/hport" hang \
    >"$T_TMP/hconns" 2>/dev/null &
hang=$!
for i in $(seq 1 100); do [ -f "$T_TMP/hport" ] && break; sleep 0.05; done
s0=$(date +%s.%N)
LD_PRELOAD=$SO PROFD_SERVICE=hang PROFD_COLLECTOR=http://127.0.0.1:$(cat "$T_TMP/hport") \
    PROFD_WINDOW=1 PROFD_PERIOD=1 PROFD_EXIT_TIMEOUT=200ms PROFD_VERBOSE=1 \
    "$HOTAPP" -s 3 >/dev/null 2>"$T_TMP/hang.err"
t=$(echo "$(date +%s.%N) - $s0" | bc)
check "hanging collector, pacing auto: the program exits on time (${t}s for a 3 s run)" \
    awk -v t="$t" 'BEGIN { exit !(t < 3.8) }'
check "...its own windows went on after the first poll went unanswered" \
    grep -q 'profile 1:' "$T_TMP/hang.err"
kill "$hang" 2>/dev/null; wait "$hang" 2>/dev/null

# --- the fleet ------------------------------------------------------------
profd_start --profile-rate $RATE --max-connections 256 ||
	{ not_ok "profd starts"; done_testing; }
start=$(now_ms)
declare -a PID
for i in $(seq 1 $N); do
	LD_PRELOAD=$SO PROFD_SERVICE=fleet PROFD_COLLECTOR=$PROFD_URL \
	    PROFD_WINDOW=2 PROFD_PERIOD=10 PROFD_VERBOSE=1 \
	    "$HOTAPP" -s $DUR -d 1 >/dev/null 2>"$T_TMP/a$i.err" &
	PID[$i]=$!
done
for i in 1 2; do
	LD_PRELOAD=$SO PROFD_SERVICE=yardstick PROFD_COLLECTOR=$PROFD_URL \
	    PROFD_WINDOW=2 PROFD_PERIOD=10 PROFD_PACING=off PROFD_VERBOSE=1 \
	    "$HOTAPP" -s $DUR -d 1 >/dev/null 2>"$T_TMP/y$i.err" &
	PID[$((N + i))]=$!
done

# At about a minute in: kill the next agent granted right after its grant.
sleep 55
g0=$(grants); killed= t_kill= t_next=
deadline=$(( $(now_ms) + 20000 ))
declare -A seen
for i in $(seq 1 $N); do seen[$i]=$(grep -c "pacing: granted" "$T_TMP/a$i.err"); done
while [ "$(now_ms)" -lt "$deadline" ] && [ -z "$killed" ]; do
	g=$(grants)
	if [ "${g:-0}" -gt "${g0:-0}" ]; then
		for i in $(seq 1 $N); do
			c=$(grep -c "pacing: granted" "$T_TMP/a$i.err")
			if [ "$c" -gt "${seen[$i]}" ]; then
				kill -KILL "${PID[$i]}"; t_kill=$(now_ms)
				killed=$i; g0=$g; break
			fi
		done
		# The grant's agent had not logged it yet: look again.
		[ -z "$killed" ] && sleep 0.02
	else
		sleep 0.05
	fi
done
if [ -n "$killed" ]; then
	while [ "$(now_ms)" -lt $((t_kill + 10000)) ]; do
		[ "$(grants)" -gt "$g0" ] && { t_next=$(now_ms); break; }
		sleep 0.05
	done
	gap=$(( ${t_next:-$((t_kill + 10000))} - t_kill ))
	check "an agent killed right after its grant frees its slot: the next grant $gap ms after the kill (spacing 5000)" [ "$gap" -lt 3000 ]
	c=$(metric profd_pacing_cancelled_total)
	check "profd_pacing_cancelled_total counts it ($c)" [ "${c:-0}" -ge 1 ]
else
	not_ok "an agent was granted within 20 s at a minute in"
fi

# The agent threads' CPU time, near the end (the processes still run).
sleep $(( DUR - ($(now_ms) - start) / 1000 - 8 ))
for i in $(seq 1 $((N + 2))); do
	[ "$i" = "$killed" ] && continue
	echo "$i $(agent_cpu_us "${PID[$i]}")"
done >"$T_TMP/ticks"
for i in $(seq 1 $((N + 2))); do
	[ "$i" = "$killed" ] || wait "${PID[$i]}"
done
sleep 1

# --- what was stored --------------------------------------------------
list=$(curl -s "$PROFD_URL/api/0/profiles?service=fleet&type=cpu&from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z&limit=1000")
echo "$list" | jq -r '.body[] | [.created_at, (.labels[] | select(.key == "pid") | .value), .duration_ns] | @tsv' >"$T_TMP/stored"
total=$(wc -l <"$T_TMP/stored")
diag "fleet: $total CPU profiles stored in about $DUR s at $RATE a minute"
# Per whole minute from the first profile on (the last partial one aside).
python3 - "$T_TMP/stored" "$RATE" >"$T_TMP/minutes" <<'EOF'
import sys, datetime
rows = [l.split('\t') for l in open(sys.argv[1]) if l.strip()]
ts = sorted(datetime.datetime.fromisoformat(r[0][:26].rstrip('Z')).timestamp() for r in rows)
t0 = ts[0]
counts = {}
for t in ts:
    counts[int((t - t0) // 60)] = counts.get(int((t - t0) // 60), 0) + 1
last = int((ts[-1] - t0) // 60)
for m in sorted(counts):
    if m < last:
        print(m, counts[m])
EOF
while read -r m c; do
	check "minute $((m + 1)): $c CPU profiles stored (rate $RATE +- 1)" \
	    test "$c" -ge $((RATE - 1)) -a "$c" -le $((RATE + 1))
done <"$T_TMP/minutes"
check "at least two whole minutes measured" [ "$(wc -l <"$T_TMP/minutes")" -ge 2 ]
live=0 profiled=0
for i in $(seq 1 $N); do
	[ "$i" = "$killed" ] && continue
	live=$((live + 1))
	n=$(awk -v p="${PID[$i]}" '$2 == p' "$T_TMP/stored" | wc -l)
	[ "$n" -ge 1 ] && profiled=$((profiled + 1))
	echo "$n" >>"$T_TMP/per_paced"
done
is "$profiled" "$live" "every instance was profiled ($profiled of $live)"
said=$(cat "$T_TMP"/a*.err | grep -c "the collector paces this agent's windows")
is "$said" "$N" "each paced agent says once that the collector paces it"
ylist=$(curl -s "$PROFD_URL/api/0/profiles?service=yardstick&type=cpu&from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z&limit=1000")
for i in 1 2; do
	echo "$ylist" | jq --arg p "${PID[$((N + i))]}" '[.body[] | select(any(.labels[]; .key == "pid" and .value == $p))] | length'
done >"$T_TMP/per_own"
pm=$(median <"$T_TMP/per_paced"); om=$(median <"$T_TMP/per_own")
check "windows per process: paced median $pm, own schedule median $om (at least 5x fewer)" \
    awk -v p="$pm" -v o="$om" 'BEGIN { exit !(o >= 5 * p && o >= 10) }'
pt=$(awk -v k="$killed" 'NR <= 20 - (k != "") { print $2 }' "$T_TMP/ticks" | median)
ot=$(tail -2 "$T_TMP/ticks" | awk '{ print $2 }' | median)
diag "agent thread CPU: paced median $pt us, own schedule median $ot us"
check "the agent thread of a paced process uses less than half the CPU it uses on its own schedule ($pt vs $ot us)" \
    awk -v p="$pt" -v o="$ot" 'BEGIN { exit !(2 * p < o) }'
g=$(metric 'profd_pacing_grants_total{type="cpu"}')
check "grants counted in /metrics ($g for $total stored)" [ "${g:-0}" -ge "$total" ]
check "no polls held once the agents are gone" \
    wait_metric profd_pacing_polls_held 0 10
profd_stop
done_testing
