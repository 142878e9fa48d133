# import_cli.sh: tools/profd-import run with dash against a small recording
# HTTP server (no daemon): the exact request line it sends (percent-encoding
# of service, labels, instance id), the body bytes, the Authorization header,
# retries on 503 and none on 400, server error messages, exit codes,
# --bad-dir, --done-dir, directories, stdin, and --lock.

. "${top_srcdir:-.}/test/lib/e2e.sh"

IMPORT="${top_srcdir:-.}/tools/profd-import"
command -v dash >/dev/null 2>&1 || skip_all "dash not installed"
command -v python3 >/dev/null 2>&1 || skip_all "python3 not installed"
command -v curl >/dev/null 2>&1 || skip_all "curl not installed"

CPU=$PROFD_CORPUS/go/cpuburn/cpu_A_01.pb.gz
[ -f "$CPU" ] || CPU=$(ls "$PROFD_CORPUS"/bench/pool/cpu_A_01.pb.gz 2>/dev/null)
[ -f "$CPU" ] || skip_all "corpus not found at $PROFD_CORPUS"

# The recorder: answers POST /api/0/profiles like profd, by service name:
# "flaky" fails once with 503 then succeeds, "down" always 503s, "bad" 400s
# with an error message holding escaped quotes, anything else gets 200 with
# a fresh id. Each request is logged as: request line, Authorization,
# Content-Type, body sha256, tab-separated.
cat >"$T_TMP/recorder.py" <<'EOF'
import hashlib, http.server, json, sys, threading, urllib.parse
log, portfile = sys.argv[1], sys.argv[2]
seen = {}
lock = threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        with lock:
            with open(log, "a") as f:
                f.write("\t".join([self.requestline,
                    self.headers.get("Authorization", "-"),
                    self.headers.get("Content-Type", "-"),
                    hashlib.sha256(body).hexdigest()]) + "\n")
            q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
            svc = q.get("service", [""])[0]
            seen[svc] = seen.get(svc, 0) + 1
            count = seen[svc]
        hdr = {}
        if svc == "down" or (svc == "flaky" and count == 1):
            code, reply = 503, {"code": 503, "error": "queue full"}
            hdr["Retry-After"] = "1"
        elif svc == "bad":
            code, reply = 400, {"code": 400, "error": "body: not a \"pprof\" profile (offset 3)"}
        else:
            code = 200
            reply = {"code": 200, "body": {"id": "ID%016d" % len(open(log).readlines()),
                "service": svc, "labels": [{"key": "id", "value": "\"id\":\"x\""}]}}
        data = json.dumps(reply).encode()
        self.send_response(code)
        for k, v in hdr.items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(portfile + ".tmp", "w") as f:
    f.write(str(s.server_address[1]))
import os
os.rename(portfile + ".tmp", portfile)
s.serve_forever()
EOF

REC_LOG=$T_TMP/requests.log
: >"$REC_LOG"
python3 "$T_TMP/recorder.py" "$REC_LOG" "$T_TMP/port" &
REC_PID=$!
trap 'kill "$REC_PID" 2>/dev/null; _cleanup' EXIT
for i in $(seq 1 100); do [ -f "$T_TMP/port" ] && break; sleep 0.05; done
[ -f "$T_TMP/port" ] || { echo "Bail out! recorder did not start"; exit 1; }
URL="http://127.0.0.1:$(cat "$T_TMP/port")"

# imp ARGS...: runs profd-import with dash; output in $OUT, status in $RC.
imp() {
	RC=0
	OUT=$(dash "$IMPORT" "$@" 2>"$T_TMP/stderr") || RC=$?
}
# nreq: number of requests recorded so far.
nreq() { wc -l <"$REC_LOG" | tr -d ' '; }
# lastreq FIELD: field FIELD (1 request line, 2 auth, 3 type, 4 sha) of
# the last request.
lastreq() { tail -n 1 "$REC_LOG" | cut -f "$1"; }

# --help, --version, usage errors
imp --help
check "--help exits 0" [ "$RC" -eq 0 ]
check "--help documents --service, --from, --lock" \
	sh -c 'echo "$1" | grep -q -- --service && echo "$1" | grep -q -- --from && echo "$1" | grep -q -- --lock' _ "$OUT"
imp --version
is "$OUT" "profd-import 0.1.0" "--version prints the version"
imp --type cpu "$CPU"
is "$RC" 2 "missing --service is a usage error (exit 2)"
check "missing --service says so" grep -q -- '--service is required' "$T_TMP/stderr"
imp --service x "$CPU"
is "$RC" 2 "files without --type is a usage error"
imp --service x --type cpu --bogus "$CPU"
is "$RC" 2 "unknown option is a usage error"
imp --service x --type cpu --retries many "$CPU"
is "$RC" 2 "non-numeric --retries is a usage error"
is "$(nreq)" 0 "usage errors send nothing"

# Percent-encoding: every value encoded byte by byte, labels key and value
# separately, joined with literal ',' and '='.
imp --collector "$URL" --service 'my svc/α' --type cpu \
	--label 'team=a b' --label 'eq=x=y' --label 'list=a,b' \
	--label 'q=a&b+c%d' --label 'uni=héllo ✓' --label 'empty=' \
	--instance-id 'host 1:6060' "$CPU"
is "$RC" 0 "upload with awkward labels exits 0"
is "$(lastreq 1)" "POST /api/0/profiles?service=my%20svc%2F%CE%B1&type=cpu&labels=team=a%20b,eq=x%3Dy,list=a%2Cb,q=a%26b%2Bc%25d,uni=h%C3%A9llo%20%E2%9C%93,empty=&instance_id=host%201%3A6060 HTTP/1.1" \
	"request line is percent-encoded exactly"
is "$OUT" "$CPU: ID0000000000000001" "prints FILE: ID from the JSON reply"
is "$(lastreq 4)" "$(sha256sum <"$CPU" | cut -d' ' -f1)" "body is the file's exact bytes"
is "$(lastreq 3)" "application/octet-stream" "Content-Type is application/octet-stream"
is "$(lastreq 2)" "-" "no Authorization header without PROFD_TOKEN"

# The collector comes from PROFD_COLLECTOR; the token from PROFD_TOKEN or
# --token-file; --opt=value works.
RC=0
OUT=$(PROFD_COLLECTOR=$URL PROFD_TOKEN='s3cret tok' dash "$IMPORT" --service=env --type=heap "$CPU") || RC=$?
is "$RC" 0 "PROFD_COLLECTOR and --opt=value are honoured"
is "$(lastreq 2)" "Bearer s3cret tok" "PROFD_TOKEN is sent as a bearer token"
printf 'filetok\n' >"$T_TMP/token"
imp -c "$URL" -s env -t heap --token-file "$T_TMP/token" "$CPU"
is "$(lastreq 2)" "Bearer filetok" "--token-file is sent as a bearer token"
n0=$(nreq)
RC=0
PROFD_TOKEN="$(printf 'tok\r\nX-Evil: 1')" dash "$IMPORT" -c "$URL" -s env -t heap "$CPU" >/dev/null 2>&1 || RC=$?
is "$RC:$(( $(nreq) - n0 ))" "2:0" "a token with a line break is refused, nothing sent"

# Retries: one 503 then success (honours Retry-After: 1).
n0=$(nreq)
t0=$(date +%s)
imp -c "$URL" -s flaky -t cpu -v "$CPU"
is "$RC" 0 "a 503 is retried and then succeeds"
is "$(( $(nreq) - n0 ))" 2 "exactly two attempts for one 503"
check "the retry is reported with --verbose" grep -q 'retrying in 1s' "$T_TMP/stderr"

# Always 503 with --retries 1: two attempts, the server's message, exit 1.
n0=$(nreq)
imp -c "$URL" -s down -t cpu --retries 1 "$CPU"
is "$RC" 1 "persistent 503 exits 1"
is "$(( $(nreq) - n0 ))" 2 "--retries 1 means two attempts"
is "$OUT" "$CPU: error: queue full" "the server's error message is printed"

# 400: no retry, message with quotes unescaped, --bad-dir takes the file.
mkdir -p "$T_TMP/in" "$T_TMP/bad" "$T_TMP/done"
cp "$CPU" "$T_TMP/in/one file.pb.gz"
n0=$(nreq)
imp -c "$URL" -s bad -t cpu --bad-dir "$T_TMP/bad" --done-dir "$T_TMP/done" "$T_TMP/in/one file.pb.gz"
is "$RC" 1 "a 400 exits 1"
is "$(( $(nreq) - n0 ))" 1 "a 400 is not retried"
is "$OUT" "$T_TMP/in/one file.pb.gz: error: body: not a \"pprof\" profile (offset 3)" \
	"the 400's message is printed, quotes unescaped"
check "--bad-dir received the rejected file" [ -f "$T_TMP/bad/one file.pb.gz" ]
check "the rejected file left its place" [ ! -e "$T_TMP/in/one file.pb.gz" ]

# A directory: its regular, non-hidden files; --done-dir moves them.
cp "$CPU" "$T_TMP/in/a.pb.gz"
cp "$CPU" "$T_TMP/in/b c.pb.gz"
cp "$CPU" "$T_TMP/in/.partial"
mkdir "$T_TMP/in/sub"
n0=$(nreq)
imp -c "$URL" -s dir -t cpu --done-dir "$T_TMP/done" "$T_TMP/in"
is "$RC" 0 "directory upload exits 0"
is "$(( $(nreq) - n0 ))" 2 "two regular files uploaded, hidden file and subdir skipped"
is "$(printf '%s\n' "$OUT" | sed 's/: ID[0-9]*$//')" "$T_TMP/in/a.pb.gz
$T_TMP/in/b c.pb.gz" "one output line per file"
check "--done-dir received the uploaded files" test -f "$T_TMP/done/a.pb.gz" -a -f "$T_TMP/done/b c.pb.gz"
check "hidden file stays" [ -f "$T_TMP/in/.partial" ]
imp -c "$URL" -s dir -t cpu "$T_TMP/in/sub"
is "$RC:$OUT" "0:" "an empty directory is not an error"

# A missing file fails without a request; the other files still go.
n0=$(nreq)
imp -c "$URL" -s mix -t cpu "$T_TMP/nope.pb.gz" "$CPU"
is "$RC" 1 "a missing file makes the exit status 1"
is "$(( $(nreq) - n0 ))" 1 "the readable file is still uploaded"
check "the missing file is reported" sh -c 'echo "$1" | grep -q "nope.pb.gz: error: not a readable file"' _ "$OUT"

# Standard input.
RC=0
OUT=$(dash "$IMPORT" -c "$URL" -s stdin -t cpu - <"$CPU") || RC=$?
is "$RC:$(lastreq 4)" "0:$(sha256sum <"$CPU" | cut -d' ' -f1)" "'-' uploads standard input"

# --lock: a held lock makes the run a quiet no-op (exit 0); --lock-wait
# waits for the holder.
command -v flock >/dev/null 2>&1 || { ok "# SKIP flock not installed"; done_testing; }
flock "$T_TMP/lock" sleep 2 &
HOLDER=$!
for i in $(seq 1 50); do flock -n "$T_TMP/lock" true || break; sleep 0.05; done
n0=$(nreq)
imp -c "$URL" -s lock -t cpu --lock "$T_TMP/lock" "$CPU"
is "$RC:$OUT" "0:" "a held lock: exit 0, no output on stdout"
check "a held lock: a note on stderr" grep -q 'held by another run' "$T_TMP/stderr"
is "$(( $(nreq) - n0 ))" 0 "a held lock: nothing uploaded"
imp -c "$URL" -s lock -t cpu --lock "$T_TMP/lock" --lock-wait 10 "$CPU"
is "$RC" 0 "--lock-wait waits for the holder, then uploads"
is "$(( $(nreq) - n0 ))" 1 "--lock-wait: one upload"
wait "$HOLDER"

done_testing
