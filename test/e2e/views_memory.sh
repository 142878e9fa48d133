#!/usr/bin/env bash
# The UI's views draw on --merge-memory for what they hold besides their
# merge (the decoded merged profile, the call tree, the JSON): with a small
# limit, a flame graph of every node of a deep profile (143,825 call paths)
# gets 413 naming the flag and max_nodes, the same flame graph pruned to 500
# nodes and the top table answer 200, and the daemon's merges keep working;
# with the default limit the full flame graph answers. Peak RSS stays
# within the small limit plus the daemon's own (plain builds: sanitizers'
# shadow memory inflates RSS).
. "${top_srcdir:-.}/test/lib/e2e.sh"

C=$PROFD_CORPUS
BIG=$C/go/bigstacks/cpu_A_01.pb.gz
command -v jq >/dev/null 2>&1 || skip_all "jq not installed"
[ -f "$BIG" ] || skip_all "corpus not found at $C"
WIN="from=2000-01-01T00:00:00&to=2100-01-01T00:00:00"
SEL="service=deep&type=cpu&$WIN"
sanitized=0
if nm -an "$PROFD" 2>/dev/null | grep -qE '__(asan|tsan)_init' ||
    ldd "$PROFD" 2>/dev/null | grep -qE 'lib(asan|tsan)'; then
	sanitized=1
fi

profd_start --merge-memory 48M || { not_ok "profd starts"; done_testing; }
upload "$BIG" "service=deep&type=cpu" >/dev/null
is "$HTTP_CODE" 200 "the deep profile is stored"

api "/api/0/flamegraph?$SEL&max_nodes=1000000" >/dev/null
is "$HTTP_CODE" 413 "48 MiB: every node of the flame graph: 413"
check "... naming --merge-memory and max_nodes: $(echo "$BODY" | jq -r .error)" \
    grep -q -- '--merge-memory.*max_nodes' <<<"$(echo "$BODY" | jq -r .error)"
api "/api/0/flamegraph?$SEL&max_nodes=500" >/dev/null
is "$HTTP_CODE $(echo "$BODY" | jq -r '.body.root.value > 0')" "200 true" \
    "48 MiB: the flame graph pruned to 500 nodes answers"
api "/api/0/top?$SEL&limit=100" >/dev/null
is "$HTTP_CODE" 200 "48 MiB: the top table answers"
curl -s -o /dev/null -w '%{http_code}' "$PROFD_URL/api/0/profiles/merge?$SEL" >"$T_TMP/code"
is "$(cat "$T_TMP/code")" 200 "48 MiB: the merge itself answers"
rss=$(awk '/^VmHWM:/ { print int($2 / 1024) }' "/proc/$PROFD_PID/status")
diag "peak RSS ${rss} MiB"
if [ "$sanitized" = 0 ]; then
	check "peak RSS ${rss} MiB is under 48 + 64 MiB" test "$rss" -lt 112
else
	ok "# SKIP peak RSS under a sanitizer (${rss} MiB)"
fi
profd_stop

PROFD_DIR=
profd_start || { not_ok "profd starts"; done_testing; }
upload "$BIG" "service=deep&type=cpu" >/dev/null
api "/api/0/flamegraph?$SEL&max_nodes=1000000" >"$T_TMP/fg.json"
n=$(jq '[.. | objects | select(has("self"))] | length' "$T_TMP/fg.json")
is "$HTTP_CODE" 200 "512 MiB (the default): every node of the flame graph answers ($n nodes)"
profd_stop
done_testing
