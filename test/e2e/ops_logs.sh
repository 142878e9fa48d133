#!/usr/bin/env bash
# End-to-end test of log rotation: with --log-file, after the file is
# renamed (as logrotate does) SIGHUP makes profd open a new file at the
# path; new lines go there, the renamed file keeps the old ones, the daemon
# keeps serving, and a second rotation works as well.
. "${top_srcdir:-.}/test/lib/e2e.sh"

# profd_start reads the port from $PROFD_DIR.log; log straight into it.
PROFD_DIR=$(mktemp -d "$T_TMP/data.XXXXXX")
LOG=$PROFD_DIR.log
profd_start --log-file "$LOG" --log-level debug --retention 0 ||
	{ not_ok "profd starts with --log-file"; done_testing; }
ok "profd logs to --log-file"
curl -s "$PROFD_URL/no-such-path-1" >/dev/null
grep -q 'no-such-path-1' "$LOG" && ok "request lines go to the log file" || not_ok "request lines in the log file"

# wait_grep PATTERN FILE: waits up to 5 s for PATTERN in FILE.
wait_grep() { local i; for i in $(seq 1 100); do grep -q "$1" "$2" 2>/dev/null && return 0; sleep 0.05; done; return 1; }

mv "$LOG" "$LOG.1"
curl -s "$PROFD_URL/no-such-path-2" >/dev/null
wait_grep 'no-such-path-2' "$LOG.1" && ok "before SIGHUP, lines still go to the renamed file" || not_ok "renamed file gets lines before SIGHUP"
kill -HUP "$PROFD_PID"
wait_grep 'SIGHUP: reopening log file' "$LOG.1" && ok "SIGHUP is logged in the old file" || not_ok "SIGHUP logged"
for i in $(seq 1 100); do [ -e "$LOG" ] && break; sleep 0.05; done
check "SIGHUP creates a new file at the --log-file path" test -e "$LOG"
curl -s "$PROFD_URL/no-such-path-3" >/dev/null
wait_grep 'no-such-path-3' "$LOG" && ok "new lines go to the new file" || not_ok "new lines in the new file"
grep -q 'no-such-path-3' "$LOG.1" && not_ok "the old file gets no new lines" || ok "the old file gets no new lines"
grep -q 'no-such-path-1' "$LOG" && not_ok "the new file starts empty" || ok "the new file starts empty"
is "$(curl -s "$PROFD_URL/healthz")" ok "profd serves after SIGHUP"

mv "$LOG" "$LOG.2"
kill -HUP "$PROFD_PID"
for i in $(seq 1 100); do [ -e "$LOG" ] && break; sleep 0.05; done
curl -s "$PROFD_URL/no-such-path-4" >/dev/null
wait_grep 'no-such-path-4' "$LOG" && ok "a second rotation works too" || not_ok "second rotation"
profd_stop
wait_grep 'stopped' "$LOG" && ok "the shutdown is logged in the newest file" || not_ok "shutdown logged in the newest file"
done_testing
