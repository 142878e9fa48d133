#!/usr/bin/env bash
# profd-hostagent on unmodified programs from Debian's packages (issue
# #30), started once before them, uploading to a real collector:
#  - python3 running a CPU loop: its function hot.hot (Python frames),
#    stacks reach main (Py_BytesMain's callers), the interpreter's
#    functions named;
#  - xz -T2: liblzma on top, its worker threads' samples in the xz
#    service (start_thread on their stacks);
#  - gzip: its deflate functions;
#  - a stripped program: its exported function named from .dynsym, its
#    static one shown as an address, no other name (never garbage);
#  - a Go program built with golang-go: main.hot named, stacks reach
#    runtime.main; the same built stripped (-ldflags=-s -w): named from
#    its .gopclntab;
#  - a program in another mount namespace (unshare + chroot into a
#    directory that holds the only copy of its binary): named, through
#    /proc/PID/root;
#  - a syscall-heavy loop (dd bs=1): kernel frames under [kernel];
#  - the service rule: PROFD_SERVICE in the environment, else the
#    executable's name; labels host and exe; every sample labelled pid;
#  - no location of any profile lies outside its mapping; the merged
#    profile opens in go tool pprof, and in the web UI in chromium;
#  - SIGTERM: the last period is uploaded and it exits 0.
# Every program's profile is found by its own service, so other tests
# running at the same time (the agent samples the whole host) do not
# disturb the checks.
. "${top_srcdir:-.}/test/lib/e2e.sh"

S=${top_srcdir:-.}
B=${top_builddir:-.}
HA=$B/agent/host/profd-hostagent
STACKS=$S/test/lib/pprof_stacks.py
[ -x "$HA" ] || skip_all "profd-hostagent not built"
[ "$(uname -m)" = x86_64 ] || skip_all "the host agent is x86-64 only"
for c in xz gzip go unshare chroot cc strip /usr/bin/python3; do
	command -v "$c" >/dev/null ||
	    skip_all "$c not installed (tools/deps.sh --test)"
done
profd_start || { not_ok "profd started"; done_testing; }
t=$$
w=$T_TMP/w
mkdir -p "$w" "$w/root/bin"

# The programs, built here.
cc -O1 -fno-omit-frame-pointer -o "$w/hot" "$S/test/hostagent/hot.c" &&
cc -O1 -o "$w/ht-strip-$t" "$S/test/hostagent/hot.c" \
    -Wl,--export-dynamic-symbol=hot_exported &&
strip "$w/ht-strip-$t" &&
cc -O1 -g -o "$w/ht-dbg-$t" "$S/test/hostagent/hot.c" \
    -Wl,--build-id=0x$(od -An -tx1 -N20 /dev/urandom | tr -d ' \n') &&
cc -O1 -static -o "$w/root/bin/ht-chroot-$t" "$S/test/hostagent/hot.c" ||
    { not_ok "the test programs build"; done_testing; }
(cd "$w" && cp "$S/test/hostagent/hot.go" . && printf 'module hot\n\ngo 1.19\n' > go.mod &&
    GOFLAGS=-buildvcs=false go build -o hotgo . &&
    GOFLAGS=-buildvcs=false go build -ldflags='-s -w' -o hotgo-s . ) \
    > "$T_TMP/go.log" 2>&1 ||
    { not_ok "the Go program builds"; sed 's/^/# /' "$T_TMP/go.log"; done_testing; }
# Its debug file where debuggers (and the agent) look, by build id.
id=$(readelf -n "$w/ht-dbg-$t" | sed -n 's/.*Build ID: //p')
dbg=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
mkdir -p "${dbg%/*}" && objcopy --only-keep-debug "$w/ht-dbg-$t" "$dbg" &&
    strip "$w/ht-dbg-$t" || { not_ok "the debug file is installed"; done_testing; }
trap 'rm -f "$dbg"; _cleanup' EXIT
check "the stripped program has no .symtab" \
    sh -c "! readelf -S '$w/ht-strip-$t' | grep -q '\.symtab'"
head -c 4000000 /dev/urandom | od -An -tx1 > "$w/data"	# ~12 MB of text

"$HA" --collector "$PROFD_URL" --hz 199 --period 3s --labels env=test \
    >"$T_TMP/ha.log" 2>&1 &
hpid=$!
for i in $(seq 1 100); do
	grep -q 'sampling' "$T_TMP/ha.log" && break
	kill -0 "$hpid" 2>/dev/null || break
	sleep 0.1
done
check "the host agent started" grep -q 'sampling' "$T_TMP/ha.log"
diag "$(head -n 1 "$T_TMP/ha.log")"

# Two programs at a time (two CPUs).
PROFD_SERVICE=ht-py-$t /usr/bin/python3 "$S/test/hostagent/hot.py" 3 &
p1=$!
(PROFD_SERVICE=ht-xz-$t; export PROFD_SERVICE
 end=$((SECONDS + 3)); while [ $SECONDS -lt $end ]; do
	xz -T2 -3 --block-size=1MiB -c "$w/data" > /dev/null; done) &
p2=$!
wait $p1 $p2
(PROFD_SERVICE=ht-gzip-$t; export PROFD_SERVICE
 end=$((SECONDS + 3)); while [ $SECONDS -lt $end ]; do
	gzip -6 -c "$w/data" > /dev/null; done) &
p1=$!
"$w/ht-strip-$t" 3 &
p2=$!
wait $p1 $p2
PROFD_SERVICE=ht-go-$t "$w/hotgo" 3 &
p1=$!
unshare --mount --fork chroot "$w/root" "/bin/ht-chroot-$t" 3 &
p2=$!
wait $p1 $p2
PROFD_SERVICE=ht-dbg-$t "$w/ht-dbg-$t" 2 &
p3=$!
PROFD_SERVICE=ht-gos-$t "$w/hotgo-s" 2 &
p4=$!
PROFD_SERVICE=ht-sys-$t timeout 3 dd if=/dev/zero of=/dev/null bs=1 \
    2>/dev/null &
p1=$!
PROFD_SERVICE=ht-fp-$t "$w/hot" 3 &
p2=$!
wait $p1 $p2 $p3 $p4
sleep 0.5
kill -TERM "$hpid"
wait "$hpid"
is "$?" 0 "the host agent exits 0 on SIGTERM"
diag "$(tail -n 1 "$T_TMP/ha.log")"
grep -E 'ERROR|runtime error|Sanitizer' "$T_TMP/ha.log" | head -20 | sed 's/^/# /'
check "no sanitizer report" sh -c "! grep -qE 'runtime error|Sanitizer' '$T_TMP/ha.log'"

# merged SERVICE: the service's profiles merged, into $T_TMP/SERVICE.pb.gz.
merged() {
	curl -s -o "$T_TMP/$1.pb.gz" -w '%{http_code}' \
	    "$PROFD_URL/api/0/profiles/merge?service=$1&type=cpu&from=now-10m"
}
# summary SERVICE ARGS...: pprof_stacks.py on the merged profile.
summary() {
	local s=$1
	shift
	python3 "$STACKS" --label pid --label exe "$@" "$T_TMP/$s.pb.gz"
}

for s in py xz gzip go gos sys fp dbg; do
	is "$(merged "ht-$s-$t")" 200 "service ht-$s-$t (PROFD_SERVICE) has profiles"
done
is "$(merged "ht-strip-$t")" 200 "service ht-strip-$t (the executable's name) has profiles"
is "$(merged "ht-chroot-$t")" 200 "service ht-chroot-$t (in another mount namespace) has profiles"

api "/api/0/profiles?service=ht-strip-$t&type=cpu&from=now-10m" > /dev/null
diag "$BODY"
api "/api/0/profiles?service=ht-py-$t&type=cpu&from=now-10m" > /dev/null
diag "$(printf '%s' "$BODY" | jq -c '.body[0].labels')"
labels=$(printf '%s' "$BODY" | jq -r '.body[0].labels | map("\(.key)=\(.value)") | sort | join(",")')
is "$labels" "env=test,exe=python3.11,host=$(hostname)" \
    "profiles carry the labels host, exe and the agent's env=test"

# python3
s=$(summary "ht-py-$t" --has '^hot\.hot$')
diag "python3: $(printf '%s' "$s" | jq -c '{samples, reach, depth_median, top: .top[:4], labels, bad_frames}' | cut -c 1-600)"
check "python3: samples ($(printf '%s' "$s" | jq .samples))" [ "$(printf '%s' "$s" | jq .samples)" -ge 50 ]
check "python3: stacks reach main in at least 90% of samples ($(printf '%s' "$s" | jq .reach))" \
    awk -v r="$(printf '%s' "$s" | jq .reach)" 'BEGIN { exit !(r >= 0.9) }'
check "python3: its Python function hot.hot on the stacks (Python frames)" \
    awk -v r="$(printf '%s' "$s" | jq '.functions["^hot\\.hot$"]')" 'BEGIN { exit !(r >= 0.8) }'
is "$(printf '%s' "$s" | jq .bad_frames)" 0 "python3: no location outside its mapping"
is "$(printf '%s' "$s" | jq -r '.labels.exe | keys | join(",")')" python3.11 "python3: samples labelled exe=python3.11"
is "$(printf '%s' "$s" | jq -r '.labels.pid | keys | length')" 1 \
    "python3: its samples all labelled with its one pid"

# xz -T2
s=$(summary "ht-xz-$t" --has '^start_thread$' --root '^(main|__libc_start_main|__libc_start_call_main|_start|start_thread|clone3?)$')
diag "xz: $(printf '%s' "$s" | jq -c '{samples, reach, depth_median, top: .top[:4], leaf_maps, bad_frames}' | cut -c 1-600)"
check "xz: liblzma on top in most samples" \
    awk -v r="$(printf '%s' "$s" | jq '.leaf_maps["liblzma.so.5.4.1"] // 0')" 'BEGIN { exit !(r >= 0.6) }'
check "xz: stacks reach main or a thread's start in at least 90% of samples ($(printf '%s' "$s" | jq .reach))" \
    awk -v r="$(printf '%s' "$s" | jq .reach)" 'BEGIN { exit !(r >= 0.9) }'
check "xz: its worker threads' samples counted (start_thread on the stacks)" \
    awk -v r="$(printf '%s' "$s" | jq '.functions["^start_thread$"]')" 'BEGIN { exit !(r >= 0.5) }'
is "$(printf '%s' "$s" | jq .bad_frames)" 0 "xz: no location outside its mapping"

# gzip: Debian's is stripped (its deflate is static: addresses), perf
# shows the same.
s=$(summary "ht-gzip-$t")
diag "gzip: $(printf '%s' "$s" | jq -c '{samples, reach, depth_median, top: .top[:4], leaf_maps, bad_frames}' | cut -c 1-600)"
check "gzip: its own code on top in most samples" \
    awk -v r="$(printf '%s' "$s" | jq '.leaf_maps.gzip // 0')" 'BEGIN { exit !(r >= 0.7) }'
check "gzip: stacks reach main in at least 90% of samples ($(printf '%s' "$s" | jq .reach))" \
    awk -v r="$(printf '%s' "$s" | jq .reach)" 'BEGIN { exit !(r >= 0.9) }'
is "$(printf '%s' "$s" | jq .bad_frames)" 0 "gzip: no location outside its mapping"

# The stripped program: .dynsym or an address, never a wrong name.
s=$(summary "ht-strip-$t" --has '^hot_exported$')
diag "stripped: $(printf '%s' "$s" | jq -c '{samples, top: .top[:5], bad_frames}' | cut -c 1-600)"
check "stripped: hot_exported named from .dynsym" \
    awk -v r="$(printf '%s' "$s" | jq '.functions["^hot_exported$"]')" 'BEGIN { exit !(r >= 0.2) }'
is "$(printf '%s' "$s" | jq -r --arg m "ht-strip-$t" '.names_in[$m] | join(",")')" \
    hot_exported "stripped: no name in its own code but .dynsym's (never a made-up name)"
check "stripped: its static function's samples show as an address" \
    [ "$(printf '%s' "$s" | jq '[.top[][0] | select(startswith("0x"))] | length')" -ge 1 ]
is "$(printf '%s' "$s" | jq .bad_frames)" 0 "stripped: no location outside its mapping"

# Go
s=$(summary "ht-go-$t" --has '^main\.hot$' --root '^(runtime\.main|runtime\.goexit|main\.main)$')
diag "go: $(printf '%s' "$s" | jq -c '{samples, reach, top: .top[:4], bad_frames}' | cut -c 1-600)"
check "go: main.hot named" \
    awk -v r="$(printf '%s' "$s" | jq '.functions["^main\\.hot$"]')" 'BEGIN { exit !(r >= 0.5) }'
check "go: stacks reach runtime.main in at least 90% of samples" \
    awk -v r="$(printf '%s' "$s" | jq .reach)" 'BEGIN { exit !(r >= 0.9) }'
is "$(printf '%s' "$s" | jq .bad_frames)" 0 "go: no location outside its mapping"

# A stripped Go program: named from its .gopclntab.
s=$(summary "ht-gos-$t" --has '^main\.hot$' --root '^(runtime\.main|runtime\.goexit|main\.main)$')
diag "stripped go: $(printf '%s' "$s" | jq -c '{samples, reach, top: .top[:3], bad_frames}' | cut -c 1-600)"
check "stripped go (-ldflags=-s -w): main.hot named from .gopclntab" \
    awk -v r="$(printf '%s' "$s" | jq '.functions["^main\\.hot$"]')" 'BEGIN { exit !(r >= 0.5) }'
check "stripped go: stacks reach runtime.main" \
    awk -v r="$(printf '%s' "$s" | jq .reach)" 'BEGIN { exit !(r >= 0.9) }'

# A stripped program whose debug file is installed.
s=$(summary "ht-dbg-$t" --has '^hot_static$')
diag "debug file: $(printf '%s' "$s" | jq -c '{samples, reach, top: .top[:4], bad_frames}' | cut -c 1-600)"
check "debug file: the static function named from /usr/lib/debug/.build-id" \
    awk -v r="$(printf '%s' "$s" | jq '.functions["^hot_static$"]')" 'BEGIN { exit !(r >= 0.2) }'

# Another mount namespace
s=$(summary "ht-chroot-$t" --has '^(hot_exported|hot_static)$')
diag "chroot: $(printf '%s' "$s" | jq -c '{samples, reach, top: .top[:4], mappings, bad_frames}' | cut -c 1-600)"
check "chroot: its functions named from the file only its namespace has" \
    awk -v r="$(printf '%s' "$s" | jq '.functions | to_entries[0].value')" 'BEGIN { exit !(r >= 0.8) }'
check "chroot: stacks reach main" \
    awk -v r="$(printf '%s' "$s" | jq .reach)" 'BEGIN { exit !(r >= 0.9) }'

# Syscalls: kernel frames.
s=$(summary "ht-sys-$t" --has '^(entry_SYSCALL_64.*|do_syscall_64|__x64_sys_read|__x64_sys_write|ksys_read|ksys_write)$')
diag "syscalls: $(printf '%s' "$s" | jq -c '{samples, kernel, reach, top: .top[:4], bad_frames}' | cut -c 1-600)"
check "syscalls: kernel frames in most samples ($(printf '%s' "$s" | jq .kernel))" \
    awk -v r="$(printf '%s' "$s" | jq .kernel)" 'BEGIN { exit !(r >= 0.5) }'
check "syscalls: the kernel's entry and read/write functions named" \
    awk -v r="$(printf '%s' "$s" | jq '.functions | to_entries[0].value')" 'BEGIN { exit !(r >= 0.5) }'
check "syscalls: the user part still reaches main" \
    awk -v r="$(printf '%s' "$s" | jq .reach)" 'BEGIN { exit !(r >= 0.9) }'
is "$(printf '%s' "$s" | jq .bad_frames)" 0 "syscalls: no location outside its mapping"

# go tool pprof opens the merged profile, and -tagfocus on pid works.
pid=$(summary "ht-py-$t" | jq -r '.labels.pid | keys[0]')
go tool pprof -top "$T_TMP/ht-fp-$t.pb.gz" > "$T_TMP/fp.top" 2>&1
check "go tool pprof opens a merged profile (hot_exported, hot_static named)" \
    sh -c "grep -q hot_exported '$T_TMP/fp.top' && grep -q hot_static '$T_TMP/fp.top'"
go tool pprof -top -tagfocus "pid=$pid" "$T_TMP/ht-py-$t.pb.gz" > "$T_TMP/py.top" 2>&1
check "go tool pprof -tagfocus pid=$pid keeps python3's samples" \
    grep -q 'hot\.hot' "$T_TMP/py.top"

# The web UI, in Debian's chromium (test/ui/open_profile.mjs): the
# program's profiles, first row as pprof's.
if command -v node >/dev/null 2>&1 && [ -x /usr/bin/chromium ] &&
    [ -d "$S/test/ui/node_modules/playwright-core" ]; then
	first=$(go tool pprof -top "$T_TMP/ht-fp-$t.pb.gz" 2>/dev/null |
	    awk '/flat%/ { go = 1; next } go && NF >= 6 { print $6; exit }')
	PROFD_URL=$PROFD_URL UI_SERVICE=ht-fp-$t UI_TOP_NAME=$first \
	UI_FRAME=hot_static UI_SCREENSHOT=$T_TMP/ui.png \
	    timeout 200 node "$S/test/ui/open_profile.mjs" > "$T_TMP/ui.tap" 2>&1
	rc=$?
	while IFS= read -r line; do
		case $line in
		"ok "*) ok "web UI: ${line#ok * - }" ;;
		"not ok "*) not_ok "web UI: ${line#not ok * - }" ;;
		"#"*) echo "$line" ;;
		esac
	done < "$T_TMP/ui.tap"
	is "$rc" 0 "web UI: the browser test's exit status"
else
	ok "# SKIP web UI: node, chromium or playwright-core not installed (tools/deps.sh --test)"
fi
profd_stop
done_testing
