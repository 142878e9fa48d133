# import_e2e.sh: tools/profd-import against the real daemon, run with dash
# under cron's bare environment (env -i PATH=/usr/bin:/bin): awkward labels
# (spaces, '=', ',', '&', '%', UTF-8) round-trip exactly through the list
# API and can be searched for; --from pulls from a live HTTP endpoint and
# the stored bytes are the pulled ones; a bad file exits 1 with the server's
# message; a dead collector is retried and then fails within seconds; a held
# --lock makes the run a no-op; --done-dir moves uploaded files.

. "${top_srcdir:-.}/test/lib/e2e.sh"

IMPORT="$(cd "${top_srcdir:-.}" && pwd)/tools/profd-import"
command -v dash >/dev/null 2>&1 || skip_all "dash not installed"
command -v jq >/dev/null 2>&1 || skip_all "jq not installed"
[ -x "$PROFD" ] || skip_all "profd not built"
"$PROFD" --version 2>&1 | grep -q . || skip_all "profd is a placeholder (no --version)"
[ -d "$PROFD_CORPUS/go/cpuburn" ] || skip_all "corpus not found at $PROFD_CORPUS"
PY=$(command -v python3) || skip_all "python3 not installed"

profd_start || { echo "Bail out! profd did not start"; exit 1; }

# imp ARGS...: profd-import under cron's environment; stdout in $OUT,
# stderr in $T_TMP/stderr, status in $RC.
imp() {
	RC=0
	OUT=$(cd "$T_TMP" && env -i PATH=/usr/bin:/bin dash "$IMPORT" \
		--collector "$PROFD_URL" "$@" 2>"$T_TMP/stderr") || RC=$?
}
# ids_of OUT: the ids in "NAME: ID" lines.
ids_of() { printf '%s\n' "$1" | sed -n 's/^.*: \([0-9a-v]\{20\}\)$/\1/p'; }
# count SERVICE [QUERY]: number of profiles the list API returns.
count() { api "/api/0/profiles?service=$1&from=0&limit=1000${2:+&$2}" | jq '.body | length'; }

C=$PROFD_CORPUS/go/cpuburn
F1=$C/cpu_A_01.pb.gz
F2=$C/cpu_A_02.pb.gz
H1=$C/heap_A_01.pb.gz

# Awkward labels: each must come back exactly.
imp --service 'imp e2e' --type cpu \
	--label 'team=a b' --label 'eq=x=y' --label 'list=a,b' --label 'amp=a&b+c%d' \
	--label 'uni=héllo ✓ 日本' --label 'dotted.key-1=v' \
	--instance-id 'host 1:6060' "$F1" "$F2"
is "$RC" 0 "two uploads with awkward labels exit 0"
ids=$(ids_of "$OUT")
is "$(printf '%s\n' "$ids" | grep -c .)" 2 "one 'FILE: ID' line per file, 20-char ids"
is "$(printf '%s\n' "$OUT" | sed 's/: [0-9a-v]*$//')" "$F1
$F2" "the lines name the files in order"

want='amp=a&b+c%d
dotted.key-1=v
eq=x=y
instance_id=host 1:6060
list=a,b
team=a b
uni=héllo ✓ 日本'
api "/api/0/profiles?service=imp%20e2e&type=cpu&from=0&limit=10" >/dev/null
list=$BODY
is "$HTTP_CODE" 200 "list API answers"
is "$(printf '%s' "$list" | jq -r '.body | length')" 2 "both profiles are listed"
for id in $ids; do
	got=$(printf '%s' "$list" | jq -r --arg id "$id" \
		'.body[] | select(.id == $id) | .labels[] | "\(.key)=\(.value)"' | LC_ALL=C sort)
	is "$got" "$want" "labels of $id round-trip exactly"
done
is "$(printf '%s' "$list" | jq -r '[.body[].service] | unique | join(",")')" "imp e2e" \
	"service with a space round-trips"
is "$(count 'imp%20e2e' 'labels=uni=h%C3%A9llo%20%E2%9C%93%20%E6%97%A5%E6%9C%AC,list=a%2Cb')" 2 \
	"search by the UTF-8 and comma labels finds both"
is "$(count 'imp%20e2e' 'labels=eq=x%3Dy,amp=a%26b%2Bc%25d')" 2 \
	"search by the '=' and '&+%' labels finds both"
is "$(count 'imp%20e2e' 'labels=eq=x')" 0 "a prefix of a value does not match"
for id in $ids; do :; done
curl -s -o "$T_TMP/got.pb.gz" "$PROFD_URL/api/0/profiles/$id"
check "stored bytes equal the uploaded file" cmp -s "$T_TMP/got.pb.gz" "$F2"

# --from: pull from a live endpoint (a static HTTP server standing in for
# net/http/pprof), type from the URL.
mkdir -p "$T_TMP/www/debug/pprof"
cp "$H1" "$T_TMP/www/debug/pprof/heap"
cp "$F1" "$T_TMP/www/debug/pprof/profile"
"$PY" -u -m http.server --bind 127.0.0.1 --directory "$T_TMP/www" 0 >"$T_TMP/www.log" 2>&1 &
WWW_PID=$!
trap 'kill "$WWW_PID" 2>/dev/null; _cleanup' EXIT
for i in $(seq 1 100); do
	WWW_PORT=$(sed -n 's/.* port \([0-9]*\).*/\1/p' "$T_TMP/www.log" | head -n 1)
	[ -n "$WWW_PORT" ] && break
	sleep 0.05
done
WWW=http://127.0.0.1:$WWW_PORT
imp --service pulled --label src=live --from "$WWW/debug/pprof/profile?seconds=1" --from "$WWW/debug/pprof/heap?gc=1"
is "$RC" 0 "--from pulls and uploads (exit 0)"
is "$(printf '%s\n' "$OUT" | sed 's/: [0-9a-v]\{20\}$/: ID/')" "$WWW/debug/pprof/profile?seconds=1: ID
$WWW/debug/pprof/heap?gc=1: ID" "one 'URL: ID' line per --from"
set -- $(ids_of "$OUT")
curl -s -o "$T_TMP/pulled.pb.gz" "$PROFD_URL/api/0/profiles/$1"
check "the pulled CPU profile is stored byte for byte" cmp -s "$T_TMP/pulled.pb.gz" "$F1"
is "$(count pulled 'type=cpu&labels=src=live')" 1 "the profile URL was stored as type cpu"
is "$(count pulled 'type=heap')" 1 "the heap URL was stored as type heap"
imp --service pulled --from "$WWW/debug/pprof/block"
is "$RC" 1 "a 404 from the pprof endpoint exits 1"
check "and says so" sh -c 'printf "%s" "$1" | grep -q "block: error: pull: HTTP 404"' _ "$OUT"
imp --service pulled --from "$WWW/debug/pprof/cmdline"
is "$RC:$OUT" "1:$WWW/debug/pprof/cmdline: error: cannot tell the profile type from the URL; give --type" \
	"a URL of unknown type needs --type"

# A bad file: non-zero exit, the server's own message, nothing stored.
BAD=$PROFD_CORPUS/bad/not_gzip_random_bytes.bin
want_err=$(upload "$BAD" 'service=direct&type=cpu' | jq -r .error)
imp --service badfile --type cpu "$BAD" "$F1"
is "$RC" 1 "a bad file makes the exit status 1"
is "$(printf '%s\n' "$OUT" | head -n 1)" "$BAD: error: $want_err" "the server's error message is printed"
check "the good file after it is still uploaded" sh -c 'printf "%s\n" "$1" | tail -n 1 | grep -q ": [0-9a-v]\{20\}$"' _ "$OUT"
is "$(count badfile)" 1 "only the good file is stored"
diag "server said: $want_err"

# A dead collector: retried (1 s, 2 s), then a failure, quickly.
DEAD_PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
t0=$(date +%s)
RC=0
OUT=$(env -i PATH=/usr/bin:/bin dash "$IMPORT" --collector "http://127.0.0.1:$DEAD_PORT" \
	--service dead --type cpu --retries 2 -v "$F1" 2>"$T_TMP/stderr") || RC=$?
t1=$(date +%s)
is "$RC" 1 "a dead collector exits 1"
check "and prints an error line" sh -c 'printf "%s" "$1" | grep -q "^$2: error: .*onnect"' _ "$OUT" "$F1"
is "$(grep -c 'retrying in' "$T_TMP/stderr")" 2 "--retries 2 retries twice"
check "it gives up within 3..8 s ($((t1 - t0)) s)" test $((t1 - t0)) -ge 3 -a $((t1 - t0)) -le 8

# --lock held by another process: exit 0, nothing uploaded.
flock "$T_TMP/cron.lock" sleep 1 &
HOLDER=$!
for i in $(seq 1 50); do flock -n "$T_TMP/cron.lock" true || break; sleep 0.05; done
imp --service locked --type cpu --lock "$T_TMP/cron.lock" "$F1"
is "$RC:$OUT" "0:" "a held lock: exit 0, nothing on stdout"
check "a held lock: a note on stderr" grep -q 'held by another run' "$T_TMP/stderr"
is "$(count locked)" 0 "a held lock: nothing uploaded"
wait "$HOLDER"

# --done-dir: a dumps directory uploaded and emptied; the lock is free now.
mkdir -p "$T_TMP/dumps" "$T_TMP/done"
cp "$F1" "$T_TMP/dumps/cpu 1.pb.gz"
cp "$F2" "$T_TMP/dumps/cpu,2.pb.gz"
imp --service dumps --type cpu --lock "$T_TMP/cron.lock" --done-dir "$T_TMP/done" "$T_TMP/dumps"
is "$RC" 0 "directory with --done-dir exits 0"
is "$(count dumps)" 2 "both files stored"
is "$(ls "$T_TMP/dumps" | wc -l | tr -d ' '):$(ls "$T_TMP/done" | wc -l | tr -d ' ')" "0:2" \
	"--done-dir received both files"
imp --service dumps --type cpu --lock "$T_TMP/cron.lock" --done-dir "$T_TMP/done" "$T_TMP/dumps"
is "$RC:$OUT" "0:" "the next run finds nothing to do"

kill "$WWW_PID" 2>/dev/null
done_testing
