# import_unit.sh: the operations files. The generated systemd unit passes
# `systemd-analyze verify` (on a copy whose ExecStart is /bin/true, since
# profd is not installed) and keeps its sandbox options; its exposure score
# stays low; the man pages format without groff warnings; every key of
# profd.conf.example is one profd accepts, and profd starts from that file.

. "${top_srcdir:-.}/test/lib/e2e.sh"

UNIT=${top_builddir:-.}/tools/profd.service
CONF=${top_srcdir:-.}/tools/profd.conf.example

# The unit: generated from the .in with configure's paths.
if [ -f "$UNIT" ]; then
	ok "tools/profd.service was generated"
else
	not_ok "tools/profd.service was generated (run make first)"
	done_testing
fi
check "no @...@ left in the unit" sh -c '! grep -q "@[a-z]*@" "$1"' _ "$UNIT"
check "ExecStart runs sbin/profd with --config .../profd/profd.conf" \
	grep -Eq '^ExecStart=/[^ ]*/sbin/profd --config /[^ ]*/profd/profd.conf ' "$UNIT"
for kv in Type=notify 'ExecReload=/bin/kill -HUP $MAINPID' DynamicUser=yes \
	StateDirectory=profd LogsDirectory=profd ProtectSystem=strict ProtectHome=yes \
	NoNewPrivileges=yes PrivateTmp=yes PrivateDevices=yes \
	'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX' SystemCallFilter=@system-service \
	MemoryDenyWriteExecute=yes LockPersonality=yes RestrictRealtime=yes \
	RestrictNamespaces=yes ProtectKernelTunables=yes ProtectKernelModules=yes \
	ProtectKernelLogs=yes ProtectControlGroups=yes WatchdogSec=30 Restart=on-failure; do
	check "unit sets $kv" grep -qxF "$kv" "$UNIT"
done

if command -v systemd-analyze >/dev/null 2>&1; then
	# profd is not installed here: verify a copy that runs /bin/true.
	mkdir -p "$T_TMP/unit"
	sed 's|^ExecStart=[^ ]*|ExecStart=/bin/true|' "$UNIT" >"$T_TMP/unit/profd.service"
	rc=0
	systemd-analyze verify --man=no "$T_TMP/unit/profd.service" >"$T_TMP/verify.out" 2>&1 || rc=$?
	is "$rc" 0 "systemd-analyze verify accepts the unit"
	check "systemd-analyze verify prints no warning" test ! -s "$T_TMP/verify.out"
	sed 's/^/# /' "$T_TMP/verify.out"
	# Exposure: 0 is locked down, 10 is wide open; "OK" is below 5.
	score=$(systemd-analyze security --offline=yes "$T_TMP/unit/profd.service" 2>/dev/null |
		sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
	if [ -n "$score" ]; then
		diag "exposure level $score"
		check "systemd-analyze security exposure is at most 2.0" awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }'
	else
		ok "# SKIP systemd-analyze security --offline not supported"
	fi
else
	ok "# SKIP systemd-analyze not installed"
fi

# Man pages.
if command -v groff >/dev/null 2>&1; then
	for m in profd.8 profd-import.1; do
		groff -man -ww -z "${top_srcdir:-.}/tools/man/$m" >"$T_TMP/groff.out" 2>&1
		check "man page $m formats without warnings" test ! -s "$T_TMP/groff.out"
	done
else
	ok "# SKIP groff not installed"
fi

# The example configuration: every commented "# key = value" line, with the
# comment mark removed, is accepted by profd itself.
keys=$(sed -n 's/^# \([a-z][a-z-]*\) = .*/\1/p' "$CONF" | sort | tr '\n' ' ')
missing=
for k in addr data-dir retention workers max-body max-inflated max-merge-profiles \
	request-timeout log-level log-file auth-file; do
	case " $keys" in *" $k "*) ;; *) missing="$missing $k" ;; esac
done
is "$missing" "" "profd.conf.example has the documented keys"
sed -n 's/^# \([a-z][a-z-]*\) = /\1 = /p' "$CONF" |
	grep -v -e '^data-dir' -e '^log-file' -e '^auth-file' -e '^addr' -e '^tls-' \
	    -e '^store = ' >"$T_TMP/profd.conf"
if [ -x "$PROFD" ] && "$PROFD" --version 2>&1 | grep -q .; then
	# --config, --rebuild-meta and --copy-to exist on the command line only
	flags=$("$PROFD" --help 2>&1 | sed -n 's/^  --\([a-z][a-z-]*\) .*/\1/p' | grep -vx -e config -e rebuild-meta -e copy-to | sort | tr '\n' ' ')
	is "$keys" "$flags" "profd.conf.example has exactly the options of profd --help"
	documented=" $(sed -n 's/^\.BI* *\\-\\-\([a-z\\-]*\).*/\1/p' "${top_srcdir:-.}/tools/man/profd.8" |
		sed 's/\\-/-/g' | tr '\n' ' ')"
	undoc=
	for k in $flags; do
		case $documented in *" $k "*) ;; *) undoc="$undoc $k" ;; esac
	done
	is "$undoc" "" "profd.8 documents every option of profd --help"
	if profd_start --config "$T_TMP/profd.conf"; then
		ok "profd starts with the example's defaults uncommented"
		api /api/0/version >/dev/null
		is "$HTTP_CODE" 200 "and serves /api/0/version"
		profd_stop
	else
		not_ok "profd starts with the example's defaults uncommented"
	fi
	printf 'no-such-key = 1\n' >"$T_TMP/bad.conf"
	rc=0
	"$PROFD" --config "$T_TMP/bad.conf" --addr 127.0.0.1:0 --data-dir "$T_TMP/d2" \
		>"$T_TMP/bad.out" 2>&1 &
	bad_pid=$!
	( sleep 5; kill "$bad_pid" 2>/dev/null ) &
	wait "$bad_pid" || rc=$?
	check "profd refuses a config with an unknown key" test "$rc" -ne 0 -a "$rc" -ne 143
else
	ok "# SKIP profd not built yet"
fi

done_testing
