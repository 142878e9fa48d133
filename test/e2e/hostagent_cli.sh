#!/usr/bin/env bash
# profd-hostagent's command line, failures and operations (issue #30):
#  - bad options and a missing privilege: exit 1 with one line naming
#    what is wrong or missing (run unprivileged with setpriv);
#  - --output-dir writes SERVICE-cpu-N.pb.gz (a dry run), --exe limits
#    what is profiled;
#  - --token-file: uploads accepted by a collector with tokens, a wrong
#    token's 401s counted as rejected;
#  - HTTPS with a client certificate (mutual TLS); the wrong CA said;
#  - a collector that is away: the queue drops the oldest profiles, the
#    drop is logged once, SIGTERM still exits 0 in --exit-timeout;
#  - systemd: READY=1 once sampling, STOPPING=1; the unit verifies; the
#    man page formats and documents every option of --help.
. "${top_srcdir:-.}/test/lib/e2e.sh"

S=${top_srcdir:-.}
B=${top_builddir:-.}
HA=$B/agent/host/profd-hostagent
LISTEN=$B/test/lib/notify_listen
UNIT=$B/tools/profd-hostagent.service
MAN=$S/tools/man/profd-hostagent.8
[ -x "$HA" ] || skip_all "profd-hostagent not built"
cc -O1 -o "$T_TMP/hot" "$S/test/hostagent/hot.c" ||
    { not_ok "the test program builds"; done_testing; }
cp "$T_TMP/hot" "$T_TMP/ht-cli-$$"

# fails NAME PATTERN ARGS...: exit 1, one line on stderr matching PATTERN.
fails() {
	local name=$1 pat=$2 rc=0
	shift 2
	"$@" > "$T_TMP/out" 2> "$T_TMP/err" || rc=$?
	is "$rc" 1 "$name: exit 1"
	is "$(wc -l < "$T_TMP/err")" 1 "$name: one line"
	check "$name: it says $pat" grep -qE -e "$pat" "$T_TMP/err"
	diag "$(cat "$T_TMP/err")"
}
fails "no collector" 'collector URL is required' "$HA"
fails "--hz 0" '^profd-hostagent: --hz 0: ' "$HA" --collector http://127.0.0.1:1 --hz 0
fails "--period 0s" '--period 0s: at least 1000 ms' "$HA" --collector http://127.0.0.1:1 --period 0s
fails "--service-from" '"pod" is not one of env, unit, container, exe' \
    "$HA" --collector http://127.0.0.1:1 --service-from env,pod
fails "--labels" 'is not key=value' "$HA" --collector http://127.0.0.1:1 --labels a=b,c
fails "a bad URL" '^profd-hostagent: --collector ftp://x: ' "$HA" --collector ftp://x
fails "a missing token file" 'token-file /nonexistent: No such file' \
    "$HA" --collector http://127.0.0.1:1 --token-file /nonexistent
if command -v setpriv >/dev/null 2>&1; then
	fails "without privileges" 'needs (CAP_PERFMON|CAP_SYS_PTRACE)' \
	    setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
	    --bounding-set=-all "$HA" --collector http://127.0.0.1:1
else
	ok "# SKIP setpriv not installed"
fi

# start_ha LOG ARGS...: starts the agent, waits until it samples.
start_ha() {
	local log=$1 i
	shift
	"$HA" "$@" > "$log" 2>&1 &
	HPID=$!
	for i in $(seq 1 100); do
		grep -q sampling "$log" && return 0
		kill -0 "$HPID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# The dry run, limited to one executable; systemd notifications.
if [ -x "$LISTEN" ]; then
	"$LISTEN" "$T_TMP/notify.sock" 30 > "$T_TMP/notify.out" &
	for i in $(seq 1 100); do grep -q listening "$T_TMP/notify.out" && break; sleep 0.05; done
fi
mkdir -p "$T_TMP/dry"
NOTIFY_SOCKET=$T_TMP/notify.sock start_ha "$T_TMP/dry.log" \
    --output-dir "$T_TMP/dry" --exe "ht-cli-$$" --hz 99 --period 1s ||
    { not_ok "the agent starts"; cat "$T_TMP/dry.log"; done_testing; }
"$T_TMP/ht-cli-$$" 2
"$T_TMP/hot" 1
kill -TERM "$HPID"
wait "$HPID"
is "$?" 0 "dry run: exit 0 on SIGTERM"
n=$(ls "$T_TMP/dry" | grep -c "^ht-cli-$$-cpu-[0-9]*\.pb\.gz$")
check "dry run: profiles written as SERVICE-cpu-N.pb.gz ($n)" [ "$n" -ge 2 ]
is "$(ls "$T_TMP/dry" | grep -vc "^ht-cli-$$-cpu-")" 0 "--exe: nothing else profiled"
s=$(python3 "$S/test/lib/pprof_stacks.py" --has '^hot_exported$' "$T_TMP"/dry/*.pb.gz)
# (2 s of CPU at 99 Hz is some 200 samples on an idle machine; the suite
# runs four tests at a time on two cores)
check "dry run: the profiles hold the program's samples ($(printf '%s' "$s" | jq .samples))" \
    [ "$(printf '%s' "$s" | jq .samples)" -ge 20 ]
check "dry run: its function named" \
    awk -v r="$(printf '%s' "$s" | jq '.functions["^hot_exported$"]')" 'BEGIN { exit !(r >= 0.2) }'
if [ -x "$LISTEN" ]; then
	check "systemd: READY=1 once sampling" grep -q ' READY=1$' "$T_TMP/notify.out"
	check "systemd: STATUS says what it samples" grep -q ' STATUS=sampling [0-9]* CPUs at 99 Hz$' "$T_TMP/notify.out"
	check "systemd: STOPPING=1 at SIGTERM" grep -q ' STOPPING=1$' "$T_TMP/notify.out"
fi

# Tokens.
printf 'writer-0123456789 write\n' > "$T_TMP/tokens"
printf 'writer-0123456789\n' > "$T_TMP/good"
printf 'wrong-0123456789\n' > "$T_TMP/bad"
profd_start --auth-file "$T_TMP/tokens" || { not_ok "profd starts"; done_testing; }
start_ha "$T_TMP/tok.log" --collector "$PROFD_URL" --token-file "$T_TMP/good" \
    --exe "ht-cli-$$" --hz 99 --period 1s || not_ok "the agent starts (token)"
"$T_TMP/ht-cli-$$" 2
kill -TERM "$HPID"
wait "$HPID"
diag "$(tail -n 1 "$T_TMP/tok.log")"
check "token: profiles sent, none rejected" \
    grep -qE ' [1-9][0-9]* sent, 0 dropped, 0 rejected$' "$T_TMP/tok.log"
start_ha "$T_TMP/bad.log" --collector "$PROFD_URL" --token-file "$T_TMP/bad" \
    --exe "ht-cli-$$" --hz 99 --period 1s || not_ok "the agent starts (bad token)"
"$T_TMP/ht-cli-$$" 2
kill -TERM "$HPID"
wait "$HPID"
diag "$(tail -n 1 "$T_TMP/bad.log")"
check "wrong token: the 401s counted as rejected" \
    grep -qE ' 0 sent, 0 dropped, [1-9][0-9]* rejected$' "$T_TMP/bad.log"
profd_stop

# HTTPS with a client certificate for mutual TLS (test/lib/tls_pki.sh),
# and with the wrong CA.
if command -v openssl >/dev/null 2>&1; then
	. "$S/test/lib/tls_pki.sh"
	mkca ca && mkca clients && mkca other && mkcert ca srv 1 localhost &&
	    mkcert clients agent 1 agents "$TLS_CLIENT_EXT" ||
	    not_ok "openssl made the test PKI"
	printf 'cert write agents\n' > "$T_TMP/auth"
	profd_start --tls-cert "$P/srv.pem" --tls-key "$P/srv.key" \
	    --tls-client-ca "$P/clients.pem" --auth-file "$T_TMP/auth" ||
	    not_ok "profd starts with TLS"
	url=https://localhost:${PROFD_URL##*:}
	start_ha "$T_TMP/tls.log" --collector "$url" --ca-file "$P/ca.pem" \
	    --cert-file "$P/agent.pem" --key-file "$P/agent.key" \
	    --exe "ht-cli-$$" --hz 99 --period 1s || not_ok "the agent starts (TLS)"
	"$T_TMP/ht-cli-$$" 2
	kill -TERM "$HPID"
	wait "$HPID"
	diag "$(tail -n 1 "$T_TMP/tls.log")"
	check "TLS with a client certificate: profiles sent, none rejected" \
	    grep -qE ' [1-9][0-9]* sent, 0 dropped, 0 rejected$' "$T_TMP/tls.log"
	start_ha "$T_TMP/tlsbad.log" --collector "$url" --ca-file "$P/other.pem" \
	    --cert-file "$P/agent.pem" --key-file "$P/agent.key" \
	    --exe "ht-cli-$$" --hz 99 --period 1s --exit-timeout 1s ||
	    not_ok "the agent starts (wrong CA)"
	"$T_TMP/ht-cli-$$" 2
	kill -TERM "$HPID"
	wait "$HPID"
	diag "$(grep -m 1 -i certificate "$T_TMP/tlsbad.log")"
	check "the wrong CA: nothing sent, the verification failure said" \
	    sh -c "grep -qE ' 0 sent, ' '$T_TMP/tlsbad.log' && grep -qi 'certificate verify failed' '$T_TMP/tlsbad.log'"
	profd_stop
fi

# A collector that is away: a port nothing listens on.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start_ha "$T_TMP/away.log" --collector "http://127.0.0.1:$port" --hz 99 \
    --period 1s --queue 1 --max-groups 2 --exit-timeout 2s ||
    not_ok "the agent starts (collector away)"
"$T_TMP/hot" 5
t0=$(date +%s%N)
kill -TERM "$HPID"
wait "$HPID"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
is "$rc" 0 "collector away: exit 0 on SIGTERM"
check "collector away: exit within --exit-timeout ($ms ms)" [ "$ms" -lt 4000 ]
diag "$(grep -c 'oldest waiting ones are dropped' "$T_TMP/away.log") drop lines; $(tail -n 1 "$T_TMP/away.log")"
is "$(grep -c 'oldest waiting ones are dropped' "$T_TMP/away.log")" 1 \
    "collector away: the drop is logged once"
check "collector away: the dropped profiles are counted" \
    grep -qE ' [1-9][0-9]* dropped, 0 rejected$' "$T_TMP/away.log"

# The unit and the man page.
if [ -f "$UNIT" ]; then
	check "no @...@ left in the unit" sh -c '! grep -q "@[a-z]*@" "$1"' _ "$UNIT"
	for kv in Type=notify NoNewPrivileges=yes ProtectSystem=strict \
	    'CapabilityBoundingSet=CAP_PERFMON CAP_SYS_PTRACE CAP_SYSLOG CAP_IPC_LOCK CAP_DAC_READ_SEARCH'; do
		check "unit sets $kv" grep -qxF "$kv" "$UNIT"
	done
	if command -v systemd-analyze >/dev/null 2>&1; then
		mkdir -p "$T_TMP/unit"
		sed 's|^ExecStart=[^ ]*|ExecStart=/bin/true|' "$UNIT" > "$T_TMP/unit/profd-hostagent.service"
		rc=0
		systemd-analyze verify --man=no "$T_TMP/unit/profd-hostagent.service" > "$T_TMP/verify.out" 2>&1 || rc=$?
		is "$rc" 0 "systemd-analyze verify accepts the unit"
		check "systemd-analyze verify prints no warning" test ! -s "$T_TMP/verify.out"
	fi
else
	not_ok "tools/profd-hostagent.service was generated"
fi
if command -v groff >/dev/null 2>&1; then
	groff -man -ww -z "$MAN" > "$T_TMP/groff.out" 2>&1
	check "man page formats without warnings" test ! -s "$T_TMP/groff.out"
fi
flags=$("$HA" --help | sed -n 's/^  --\([a-z][a-z-]*\).*/\1/p')
documented=" $(sed -n 's/^\.BI* *\\-\\-\([a-z\\-]*\).*/\1/p' "$MAN" | sed 's/\\-/-/g' | tr '\n' ' ')"
undoc=
for k in $flags; do
	case $documented in *" $k "*) ;; *) undoc="$undoc $k" ;; esac
done
is "$undoc" "" "the man page documents every option of --help"
check "--help lists the options" [ "$(printf '%s\n' "$flags" | wc -l)" -ge 15 ]
done_testing
