#!/usr/bin/env bash
# The web UI in a real browser: Debian's chromium, headless, driven by
# playwright-core from npm (test/ui/ui_test.mjs; tools/deps.sh --test installs
# both), against profd with auth on and the corpus's cpuburn profiles of
# builds A and B: the page asks for a token and then works, the top
# table's first row and its flat value equal `go tool pprof -top`'s, the
# flame graph canvas is drawn, a click zooms and goes into the URL, search
# highlights and shows a share, diff mode renders, a copied URL restores
# the view (and is drawn in a new tab: its first meaningful paint is
# printed; tools/bench/ui-paint measures it against 1 s),
# and the merged download link is right; the collector runs with
# --max-merges 1, so the page meets real 503s and must wait them out. Screenshots are left in
# the test's temporary directory (UI_SCREENSHOT_DIR to keep them).
. "${top_srcdir:-.}/test/lib/e2e.sh"
. "${top_srcdir:-.}/test/e2e/pprof_read.sh"

S=${top_srcdir:-.}
G=$PROFD_CORPUS/go
command -v go >/dev/null 2>&1 || skip_all "go tool pprof not installed"
command -v node >/dev/null 2>&1 || skip_all "node not installed (tools/deps.sh --test)"
[ -x /usr/bin/chromium ] || skip_all "chromium not installed (tools/deps.sh --test)"
[ -d "$S/test/ui/node_modules/playwright-core" ] ||
    skip_all "playwright-core not installed (tools/deps.sh --test: npm ci --prefix test/ui)"
[ -d "$G" ] || skip_all "corpus not found at $PROFD_CORPUS"

printf 'reader-0123456789 read\nwriter-0123456789 write\n' >"$T_TMP/tokens"
# --max-merges 1: the page asks for its flame graph and its top table at
# once, so the collector answers one of them 503 (Retry-After: 1) again and
# again; the UI must wait those out, never show them (checked at the end
# with profd_merges_refused_total).
profd_start --auth-file "$T_TMP/tokens" --max-merges 1 || { not_ok "profd starts"; done_testing; }
bad=0
for b in A B; do
	for f in $G/cpuburn/cpu_${b}_0*.pb.gz; do
		upload "$f" "service=cpuburn&type=cpu&labels=build=$b" \
		    -H 'Authorization: Bearer writer-0123456789' >/dev/null
		[ "$HTTP_CODE" = 200 ] || bad=$((bad + 1))
	done
done
is "$bad" 0 "corpus profiles uploaded"

# The first row of pprof -top (largest flat; name order among equals).
top 1 $G/cpuburn/cpu_[AB]_0*.pb.gz | grep -v '^total ' |
    sed -E 's/^([0-9]+)[a-z]* ([0-9]+)[a-z]* /\1 \2 /; s/ \((partial-)?inline\)$//' |
    LC_ALL=C sort -k1,1nr -k3 | head -n 1 >"$T_TMP/first"
read -r flat _ name <"$T_TMP/first"
diag "pprof -top's first row: $name, flat $flat ns"

shots=${UI_SCREENSHOT_DIR:-$T_TMP/shots}
mkdir -p "$shots"
PROFD_URL=$PROFD_URL PROFD_TOKEN=reader-0123456789 UI_SERVICE=cpuburn \
UI_WIN_FROM=2000-01-01T00:00:00 UI_WIN_TO=2100-01-01T00:00:00 \
UI_TOP_NAME=$name UI_TOP_FLAT=$flat UI_LABELS=build=B UI_BASE_LABELS=build=A \
UI_SCREENSHOT_DIR=$shots \
    timeout 300 node "$S/test/ui/ui_test.mjs" >"$T_TMP/ui.tap" 2>"$T_TMP/ui.err"
rc=$?
# Its checks, renumbered into this file's stream.
while IFS= read -r line; do
	case $line in
	"ok "*) ok "browser: ${line#ok * - }" ;;
	"not ok "*) not_ok "browser: ${line#not ok * - }" ;;
	"#"*) echo "$line" ;;
	esac
done <"$T_TMP/ui.tap"
grep -q '^1\.\.[0-9]' "$T_TMP/ui.tap" || { not_ok "browser: the test ran to its end (exit $rc)"; sed 's/^/# /' "$T_TMP/ui.err" | head -20; }
is "$rc" 0 "browser test exit status"
for s in flame diff; do
	check "screenshot $s.png saved" test -s "$shots/$s.png"
done
refused=$(curl -sS -H 'Authorization: Bearer reader-0123456789' "$PROFD_URL/metrics" |
    sed -n 's/^profd_merges_refused_total //p')
diag "merges refused with 503 while the browser ran: $refused"
check "the page met real 503s (--max-merges 1) and waited them out: no error shown above" \
    test "${refused:-0}" -gt 0
profd_stop
done_testing
