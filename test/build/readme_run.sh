#!/usr/bin/env bash
# The README's first command, as a new user runs it: in a fresh clone of
# this repository with nothing beside it, run the README's "make run" line
# (install, build, start profd on 127.0.0.1:10100 with ./data) in the
# background, wait for /healthz, upload a corpus profile, list it,
# download it; check that the command installed none of the packages only
# the tests need (`tools/deps.sh --list-test`: no browser, database
# server, web server or Go), that it printed the line to profile a program
# with the agent of the build tree, and that the line works (a program
# run with it has its profile stored); stop profd with SIGTERM and check it
# stopped cleanly. Then, in a second fresh clone, `make collector/profd`
# must build the daemon on its own too. Used by .ci/run (it clones,
# installs and builds, so it is not part of make check); on a fresh
# machine it must run before anything installs the test packages.
#
# usage: test/build/readme_run.sh [REPO]   (default: this checkout)
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
repo=${1:-$here}
T_N=0 T_FAILED=0
ok() { T_N=$((T_N + 1)); echo "ok $T_N - $*"; }
not_ok() { T_N=$((T_N + 1)); T_FAILED=$((T_FAILED + 1)); echo "not ok $T_N - $*"; }
diag() { printf '# %s\n' "$*"; }

cmd=$(sed -n 's/^ *\(.*make run\) *#.*/\1/p' "$here/README" | head -n 1)
[ -n "$cmd" ] && ok "the README gives a command with make run: $cmd" ||
	not_ok "the README gives a command with make run"
work=$(mktemp -d "${TMPDIR:-/tmp}/profd-readme.XXXXXX")
pgid=
cleanup() {
	[ -n "$pgid" ] && kill -KILL -- "-$pgid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
url=http://127.0.0.1:10100

if curl -s -o /dev/null "$url/healthz"; then
	not_ok "port 10100 is free"
	echo "1..$T_N"; exit 1
fi
git clone -q "$repo" "$work/clone" && ok "fresh clone" ||
	not_ok "fresh clone"
# installed: the test-only packages installed now, one a line.
installed() {
	sh "$here/tools/deps.sh" --list-test | while read -r p; do
		dpkg-query -W -f '${Status}' "$p" 2>/dev/null |
			grep -q 'ok installed' && echo "$p"
	done
}
installed > "$work/before"
# (jq is a test package: JSON is read with sed and grep here; python3,
# for retime.py, is on the machine)
(cd "$work/clone" && exec setsid sh -c "$cmd" > "$work/run.log" 2>&1) &
sleep 1
pgid=$(awk '{print $5}' "/proc/$!/stat" 2>/dev/null)	# setsid's group
up=
for i in $(seq 1 900); do
	curl -sf -o /dev/null "$url/healthz" && { up=1; break; }
	kill -0 $! 2>/dev/null || break
	sleep 1
done
if [ -n "$up" ]; then
	ok "'$cmd' starts profd: /healthz answers (after ${i} s)"
else
	not_ok "'$cmd' starts profd"
	tail -n 30 "$work/run.log" | sed 's/^/# /'
	echo "1..$T_N"; exit 1
fi
installed > "$work/after"
new=$(comm -13 "$work/before" "$work/after" | tr '\n' ' ')
if [ -z "$new" ]; then
	ok "'$cmd' installed none of the test-only packages ($(wc -l < "$work/before") of $(sh "$here/tools/deps.sh" --list-test | wc -l) were there before)"
else
	not_ok "'$cmd' installed none of the test-only packages"
	diag "it installed: $new"
fi
# The clone's own corpus: nothing beside the clone.
src=$(find "$work/clone/test/corpus/go" -name '*cpu*.pb.gz' 2>/dev/null | sort | head -n 1)
# a real profile, dated now: profd refuses profiles older than --retention
f=$work/$(basename "$src")
python3 "$here/test/lib/retime.py" "$src" "$f" now ||
	not_ok "retime.py dates $(basename "$src") now"
id=$(curl -s --data-binary @"$f" \
	"$url/api/0/profiles?service=readme&type=cpu&labels=from=ci" |
	sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
[ -n "$id" ] && ok "upload of $(basename "$f") answers an id ($id)" ||
	not_ok "upload answers an id"
n=$(curl -s "$url/api/0/profiles?service=readme&type=cpu&labels=from=ci" |
	grep -o '"id":' | wc -l)
[ "$n" = 1 ] && ok "the list finds it" || not_ok "the list finds it (got $n)"
curl -s -o "$work/back" "$url/api/0/profiles/$id" &&
	cmp -s "$work/back" "$f" && ok "download is byte-identical" ||
	not_ok "download is byte-identical"
[ -f "$work/clone/data/meta.db" ] && ok "data lives in ./data" ||
	not_ok "data lives in ./data"
# The line to profile a program with the build tree's agent, and its use.
for i in $(seq 1 50); do grep -q 'libprofd-heap.so' "$work/run.log" && break; sleep 0.1; done
agent=$(sed -n 's/^ *LD_PRELOAD=\([^ ]*libprofd-agent\.so\) .*/\1/p' "$work/run.log" | head -n 1)
heap=$(sed -n 's/^ *LD_PRELOAD=\([^ ]*libprofd-heap\.so\) .*/\1/p' "$work/run.log" | head -n 1)
if [ -n "$agent" ] && [ -f "$agent" ] && [ -n "$heap" ] && [ -f "$heap" ]; then
	ok "make run printed the LD_PRELOAD lines of the build tree ($agent)"
else
	not_ok "make run printed the LD_PRELOAD lines of the build tree"
	sed 's/^/# /' "$work/run.log" | tail -n 15
fi
case "$agent" in "$work/clone/"*) ok "the agent line points into the build tree" ;;
*) not_ok "the agent line points into the build tree (got '$agent')" ;; esac
# awk burns CPU for a second or two with the agent preloaded as printed;
# its last window is uploaded at exit.
line=$(grep -m1 'LD_PRELOAD=[^ ]*libprofd-agent\.so' "$work/run.log" |
	sed 's/^ *//; s/myapp/readme-agent/g; s| \./readme-agent$||')
env PROFD_WINDOW=1 PROFD_PERIOD=1 PROFD_EXIT_TIMEOUT=5s $line \
	awk 'BEGIN { for (i = 0; i < 30000000; i++) s += i * 2; print s > "/dev/null" }'
n=0
for i in $(seq 1 50); do
	n=$(curl -s "$url/api/0/profiles?service=readme-agent&type=cpu" | grep -o '"id":' | wc -l)
	[ "${n:-0}" -ge 1 ] && break
	sleep 0.2
done
[ "${n:-0}" -ge 1 ] && ok "a program run with that line has its CPU profile stored ($n)" ||
	not_ok "a program run with that line has its CPU profile stored (got '$n')"
# the daemon make started (from /proc: procps may not be installed)
pid=
for d in /proc/[0-9]*; do
	case "$(tr '\0' ' ' < "$d/cmdline" 2>/dev/null)" in
	"./profd --addr 127.0.0.1:10100 --data-dir ./data "*) pid=${d#/proc/}; break ;;
	esac
done
if [ -n "$pid" ]; then
	kill -TERM "$pid"
	for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	if ! kill -0 "$pid" 2>/dev/null && grep -q 'stopped' "$work/run.log"; then
		ok "SIGTERM stops profd cleanly"
	else
		not_ok "SIGTERM stops profd cleanly"
		tail -n 10 "$work/run.log" | sed 's/^/# /'
	fi
else
	not_ok "found the profd process"
fi
kill -KILL -- "-$pgid" 2>/dev/null; pgid=

# make collector/profd alone, on another bare clone.
git clone -q "$repo" "$work/clone2"
if (cd "$work/clone2" && make collector/profd > "$work/build2.log" 2>&1) &&
    [ -x "$work/clone2/profd" ] && "$work/clone2/profd" --version >/dev/null; then
	ok "make collector/profd builds the daemon on a bare clone"
else
	not_ok "make collector/profd builds the daemon on a bare clone"
	tail -n 20 "$work/build2.log" | sed 's/^/# /'
fi
echo "1..$T_N"
[ "$T_FAILED" -eq 0 ]
