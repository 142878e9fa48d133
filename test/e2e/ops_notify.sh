#!/usr/bin/env bash
# End-to-end test of the systemd notify protocol, with notify_listen playing
# systemd: READY=1 arrives once the port answers (the listener probes
# /healthz the moment it gets READY=1, at the address READY's STATUS names),
# WATCHDOG=1 comes every WATCHDOG_USEC/2, STOPPING=1 on SIGTERM; abstract
# '@' sockets work; WATCHDOG_PID of another process turns the watchdog
# off; a bad NOTIFY_SOCKET is logged and profd runs on.
. "${top_srcdir:-.}/test/lib/e2e.sh"
LISTEN=${top_builddir:-.}/test/lib/notify_listen
[ -x "$LISTEN" ] || skip_all "notify_listen not built"

OUT=$T_TMP/notify.out
LPID=
# listen SOCKET: starts notify_listen and waits until it is bound.
listen() {
	: > "$OUT"
	"$LISTEN" "$1" 30 > "$OUT" &
	LPID=$!
	local i
	for i in $(seq 1 100); do grep -q listening "$OUT" && return 0; sleep 0.05; done
	return 1
}
# wait_line PATTERN: waits up to 10 s for a line matching PATTERN.
wait_line() {
	local i
	for i in $(seq 1 200); do grep -qE "$1" "$OUT" && return 0; sleep 0.05; done
	return 1
}

# --- a socket path, watchdog on ---------------------------------------------------
listen "$T_TMP/notify.sock" || { not_ok "notify_listen binds"; done_testing; }
export NOTIFY_SOCKET=$T_TMP/notify.sock WATCHDOG_USEC=200000
profd_start --retention 0 || { not_ok "profd starts"; done_testing; }
unset NOTIFY_SOCKET WATCHDOG_USEC
wait_line ' READY=1$' && ok "READY=1 received" || not_ok "READY=1 received"
port=${PROFD_URL##*:}
grep -q " STATUS=listening on 127.0.0.1:$port$" "$OUT" &&
	ok "STATUS names the bound address (port $port)" || not_ok "STATUS names the bound address"
grep -qE ' probe HTTP/1.[01] 200 OK$' "$OUT" &&
	ok "the port answered /healthz at the moment of READY=1" ||
	{ not_ok "the port answered /healthz at the moment of READY=1"; sed 's/^/# /' "$OUT"; }
ready_ms=$(awk '$2 == "READY=1" { print $1; exit }' "$OUT")
sleep 1.1
n=$(awk -v r="$ready_ms" '$2 == "WATCHDOG=1" && $1 > r' "$OUT" | wc -l)
[ "$n" -ge 6 ] && [ "$n" -le 14 ] && ok "WATCHDOG=1 every 100 ms ($n in 1.1 s)" ||
	not_ok "WATCHDOG=1 every 100 ms (got $n in 1.1 s)"
gaps=$(awk '$2 == "WATCHDOG=1" { if (p) print $1 - p; p = $1 }' "$OUT" | sort -n | tail -n 1)
[ "${gaps:-999}" -le 200 ] && ok "no watchdog gap over 200 ms (max $gaps)" || not_ok "watchdog gap $gaps ms"
grep -q STOPPING "$OUT" && not_ok "no STOPPING=1 before SIGTERM" || ok "no STOPPING=1 before SIGTERM"
profd_stop
wait "$LPID"
grep -q ' STOPPING=1$' "$OUT" && ok "STOPPING=1 on SIGTERM" || not_ok "STOPPING=1 on SIGTERM"
stop_ms=$(awk '$2 == "STOPPING=1" { print $1; exit }' "$OUT")
[ -n "$stop_ms" ] && [ "$stop_ms" -gt "$ready_ms" ] && ok "STOPPING=1 after READY=1" || not_ok "STOPPING=1 after READY=1"
grep -q 'timeout' "$OUT" && not_ok "listener saw the end" || ok "listener exited on STOPPING=1"

# --- an abstract socket, watchdog meant for another process -----------------------
name="@profd-test-$$-$RANDOM"
listen "$name" || { not_ok "notify_listen binds $name"; done_testing; }
export NOTIFY_SOCKET=$name WATCHDOG_USEC=100000 WATCHDOG_PID=1
PROFD_DIR=
profd_start --retention 0 || { not_ok "profd starts"; done_testing; }
unset NOTIFY_SOCKET WATCHDOG_USEC WATCHDOG_PID
wait_line ' READY=1$' && ok "READY=1 over an abstract socket" || not_ok "READY=1 over an abstract socket"
grep -qE ' probe HTTP/1.[01] 200 OK$' "$OUT" && ok "the port answered at READY=1" || not_ok "the port answered at READY=1"
sleep 0.5
is "$(grep -c WATCHDOG "$OUT")" 0 "no WATCHDOG=1 when WATCHDOG_PID is another process"
profd_stop
wait "$LPID"
grep -q ' STOPPING=1$' "$OUT" && ok "STOPPING=1 over an abstract socket" || not_ok "STOPPING=1 over an abstract socket"

# --- a NOTIFY_SOCKET that cannot work ---------------------------------------------
export NOTIFY_SOCKET=relative/path
PROFD_DIR=
profd_start --retention 0 || not_ok "profd starts with a bad NOTIFY_SOCKET"
unset NOTIFY_SOCKET
grep -q 'systemd notify disabled: NOTIFY_SOCKET "relative/path"' "$PROFD_LOG" &&
	ok "a bad NOTIFY_SOCKET is logged" || not_ok "a bad NOTIFY_SOCKET is logged"
is "$(curl -s "$PROFD_URL/healthz")" ok "and profd runs on"
# a socket nobody listens on: sends fail quietly, profd runs on
export NOTIFY_SOCKET=$T_TMP/nobody.sock
profd_stop
profd_start --retention 0 || not_ok "profd starts with nobody on NOTIFY_SOCKET"
unset NOTIFY_SOCKET
is "$(curl -s "$PROFD_URL/healthz")" ok "profd runs when nobody listens on NOTIFY_SOCKET"
done_testing
