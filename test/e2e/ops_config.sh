#!/usr/bin/env bash
# End-to-end test of profd's command line: --version and --help exit 0,
# an unknown setting or a bad value in the config file stops the start with
# exit status 2 and a message naming the file and line, bad flags likewise,
# and on a running daemon flags win over the file while the file sets the
# rest.
. "${top_srcdir:-.}/test/lib/e2e.sh"
command -v jq >/dev/null || skip_all "jq not installed"

out=$("$PROFD" --version); rc=$?
is "$rc $out" "0 profd 0.1.0" "--version prints the version, exit 0"
out=$("$PROFD" --help); rc=$?
is "$rc" 0 "--help exits 0"
echo "$out" | grep -q -- '--retention ' && echo "$out" | grep -q -- '--config FILE' &&
	ok "--help lists the options" || not_ok "--help lists the options"
echo "$out" | grep -q retention-interval && not_ok "--help hides test options" || ok "--help hides test options"

# start_fails DESC WANT ARGS...: profd exits 2 at once, stderr holds WANT.
start_fails() {
	local desc=$1 want=$2 rc=0; shift 2
	timeout 10 "$PROFD" --data-dir "$T_TMP/never" "$@" > "$T_TMP/out" 2> "$T_TMP/err" || rc=$?
	if [ "$rc" = 2 ] && grep -qF -- "$want" "$T_TMP/err"; then
		ok "$desc"
	else
		not_ok "$desc (status $rc)"; sed 's/^/# /' "$T_TMP/err"
	fi
}
conf=$T_TMP/profd.conf
printf '# profd\naddr = 127.0.0.1:0\n\nretention = 14d\nretentoin = 7d\n' > "$conf"
start_fails "unknown setting: exit 2 naming file and line 5" \
	"profd: $conf:5: unknown setting \"retentoin\"" --config "$conf"
printf 'workers = 2\nmax-body = lots\n' > "$conf"
start_fails "bad value: exit 2 naming file and line 2" "profd: $conf:2: max-body:" --config "$conf"
printf 'log-level = chatty\n' > "$conf"
start_fails "bad log level: exit 2 naming line 1" "profd: $conf:1: log-level: unknown level \"chatty\"" --config "$conf"
printf 'just some words\n' > "$conf"
start_fails "line without '=': exit 2 naming line 1" "profd: $conf:1: want name = value" --config "$conf"
start_fails "missing config file: exit 2 naming it" "cannot open config $T_TMP/none.conf" --config "$T_TMP/none.conf"
start_fails "unknown flag: exit 2" "unknown option --colour" --colour red
start_fails "bad flag value: exit 2" "--retention: bad duration" --retention soon
[ -e "$T_TMP/never" ] && not_ok "a refused start creates no data directory" || ok "a refused start creates no data directory"

# Flags win over the file: the file's addr would fail (port 1 is
# privileged, or taken) and its workers and retention are overridden by
# flags before and after --config; its log-level and max-labels apply.
cat > "$conf" <<CONF
# a config file with comments
addr = 127.0.0.1:1
workers = 1
retention = 1d
log-level = debug
max-labels = 2
CONF
profd_start --workers 3 --config "$conf" --retention 2h ||
	{ not_ok "profd starts with --config and flags"; done_testing; }
ok "flags win over the file's addr"
grep -q '3 workers' "$PROFD_LOG" && ok "--workers 3 before --config wins over the file" || not_ok "--workers wins"
r=$(curl -s "$PROFD_URL/metrics" | awk '$1 == "profd_retention_seconds" { print $2 }')
is "$r" 7200 "--retention 2h after --config wins over the file"
api "/api/0/profiles?service=x&type=cpu&labels=a=1,b=2,c=3" --data-binary x >/dev/null
is "$HTTP_CODE" 400 "the file's max-labels = 2 applies"
echo "$BODY" | grep -q 'more than 2' && ok "and is the limit named in the error" || not_ok "max-labels error: $BODY"
grep -q 'debug: ' "$PROFD_LOG" && ok "the file's log-level = debug applies" || not_ok "log-level debug"
done_testing
