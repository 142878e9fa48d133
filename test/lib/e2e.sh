# Shared helpers for the end-to-end tests: TAP output, and starting the real
# profd on a free loopback port with a throw-away data directory.
#
# Environment (set by `make check`): PROFD (the binary), PROFD_CORPUS (the
# corpus, test/corpus), top_srcdir, top_builddir.

set -u
: "${PROFD:=${top_builddir:-.}/profd}"
: "${PROFD_CORPUS:=${top_srcdir:-.}/test/corpus}"

T_N=0
T_FAILED=0
PROFD_PID=
PROFD_DIR=
PROFD_URL=
T_TMP=$(mktemp -d "${TMPDIR:-/tmp}/profd-test.XXXXXX")
# go tool pprof keeps the profiles it fetches from a URL in $HOME/pprof:
# each test keeps its own
export PPROF_TMPDIR=$T_TMP

# ok DESC: one passing test.
ok() { T_N=$((T_N + 1)); echo "ok $T_N - $*"; }
# not_ok DESC: one failing test.
not_ok() { T_N=$((T_N + 1)); T_FAILED=$((T_FAILED + 1)); echo "not ok $T_N - $*"; }
# diag MSG: a comment line in the TAP stream.
diag() { printf '# %s\n' "$*"; }
# check DESC CMD...: passes if CMD succeeds.
check() { local d=$1; shift; if "$@"; then ok "$d"; else not_ok "$d"; fi; }
# is GOT WANT DESC: passes if the two strings are equal.
is() {
	if [ "$1" = "$2" ]; then ok "$3"; else not_ok "$3"; diag "got:  '$1'"; diag "want: '$2'"; fi
}
# skip_all WHY: the whole file is skipped.
skip_all() { echo "1..0 # SKIP $*"; exit 0; }
# done_testing: prints the plan, stops the daemon, exits non-zero on failure.
done_testing() {
	[ -n "$PROFD_PID" ] && profd_stop
	echo "1..$T_N"
	[ "$T_FAILED" -eq 0 ]
	exit $?
}

# go tool pprof's answers, remembered (test/lib/gopprof.sh).
. "${top_srcdir:-.}/test/lib/gopprof.sh"

# With PROFD_TEST_STORE=postgresql (test/e2e/pg/: the API suite again on
# the postgresql backend), each data dir gets its own database in a
# throw-away PostgreSQL (test/lib/pg.sh) and profd runs with --store.
. "${top_srcdir:-.}/test/lib/pg.sh"
: "${PROFD_TEST_STORE:=embedded}"
PROFD_STORE_URI=
PROFD_STORE_DB=

# store_sql SQL: runs SQL on the store's metadata (meta.db, or the
# PostgreSQL database), one row a line, columns joined by '|'.
store_sql() { store_sql_at "$PROFD_DIR" "$1"; }
# store_sql_at DIR SQL: store_sql on the store of data dir DIR.
store_sql_at() {
	if on_postgresql; then
		pg_sql "$(store_db_of "$1")" "$2"
	else
		sqlite3 "$1/meta.db" "$2"
	fi
}
# store_db_of DIR: the PostgreSQL database of data dir DIR.
store_db_of() { basename "$1" | tr 'A-Z.' 'a-z_'; }
# store_copy DIR NEWDIR: copies a stopped profd's store (the data dir
# and, on PostgreSQL, its database).
store_copy() {
	cp -a "$1" "$2" || return 1
	on_postgresql || return 0
	pg_sql postgres "CREATE DATABASE $(store_db_of "$2") TEMPLATE $(store_db_of "$1")" >/dev/null
}
# store_rollup_blobs DIR: how many rollup blobs the store of DIR holds.
store_rollup_blobs() {
	if on_postgresql; then
		pg_sql "$(store_db_of "$1")" "SELECT count(*) FROM blobs WHERE id ~ '^[A-Z]'"
	else
		find "$1/rollups" -type f 2>/dev/null | wc -l
	fi
}
# store_blobs: how many blobs the store holds (files, or rows).
store_blobs() {
	if on_postgresql; then
		pg_sql "$PROFD_STORE_DB" 'SELECT count(*) FROM blobs'
	else
		find "$PROFD_DIR/blobs" -type f 2>/dev/null | wc -l
	fi
}
# store_blob_damage ID remove|truncate: takes a stored blob away or cuts
# it to 100 bytes behind profd's back (a disk fault).
store_blob_damage() {
	local f="$PROFD_DIR/blobs/${1:0:2}/$1"
	case "$2,$(on_postgresql && echo pg)" in
	remove,pg) pg_sql "$PROFD_STORE_DB" "DELETE FROM blobs WHERE id = '$1'" ;;
	truncate,pg) pg_sql "$PROFD_STORE_DB" "UPDATE blobs SET data = substring(data from 1 for 100) WHERE id = '$1'" ;;
	remove,) rm -f "$f" ;;
	truncate,) head -c 100 "$f" > "$T_TMP/cut" && cp "$T_TMP/cut" "$f" ;;
	esac
}

# on_postgresql: true when this run's profd keeps its data in PostgreSQL.
on_postgresql() { [ "$PROFD_TEST_STORE" = postgresql ]; }

# profd_start [FLAGS...]: starts profd on 127.0.0.1:0 with a new data dir
# (or $PROFD_DIR if already set) and sets PROFD_URL, PROFD_PID, PROFD_LOG
# (and PROFD_STORE_URI on PostgreSQL).
profd_start() {
	[ -n "$PROFD_DIR" ] || PROFD_DIR=$(mktemp -d "$T_TMP/data.XXXXXX")
	PROFD_LOG=$PROFD_DIR.log
	: > "$PROFD_LOG"
	# The corpus holds real profiles dated the day they were recorded, and
	# profd refuses uploads older than --retention: unless a test sets
	# retention itself (a flag or a config file), keep everything, so no
	# test depends on today's date.
	# Likewise compaction (test/e2e/rollups_api.sh tests it) stays off
	# unless a test turns it on: it would race the uploads of the
	# corpus's old profiles and share --merge-memory with the merges a
	# test measures.
	local keep=(--retention 0) roll=(--rollup-delay 0) a
	for a in "$@"; do
		case "$a" in --retention|--retention=*) keep=() ;; esac
		case "$a" in --rollup-delay|--rollup-delay=*) roll=() ;; esac
		case "$a" in --config|--config=*) keep=() roll=() ;; esac
	done
	local store=()
	if on_postgresql; then
		PROFD_STORE_DB=$(store_db_of "$PROFD_DIR")
		pg_start && PROFD_STORE_URI=$(pg_db "$PROFD_STORE_DB") || {
			diag "cannot start PostgreSQL"; return 1; }
		store=(--store "$PROFD_STORE_URI")
	fi
	"$PROFD" --addr 127.0.0.1:0 --data-dir "$PROFD_DIR" "${store[@]}" "${keep[@]}" "${roll[@]}" "$@" 2>>"$PROFD_LOG" &
	PROFD_PID=$!
	local i port=
	for i in $(seq 1 200); do
		port=$(sed -n 's/.*listening on [^ ]*:\([0-9]*\) .*/\1/p' "$PROFD_LOG" | tail -n 1)
		[ -n "$port" ] && break
		kill -0 "$PROFD_PID" 2>/dev/null || break
		sleep 0.05
	done
	if [ -z "$port" ]; then
		diag "profd did not start:"; sed 's/^/# /' "$PROFD_LOG"
		PROFD_PID=
		return 1
	fi
	PROFD_URL="http://127.0.0.1:$port"
}

# profd_stop: SIGTERM, wait, and fail the test run if the exit was unclean
# (a sanitizer report makes the exit status non-zero).
profd_stop() {
	local rc=0
	[ -n "$PROFD_PID" ] || return 0
	kill -TERM "$PROFD_PID" 2>/dev/null
	wait "$PROFD_PID" || rc=$?
	PROFD_PID=
	if [ "$rc" -eq 0 ]; then
		ok "profd exited cleanly on SIGTERM"
	else
		not_ok "profd exited cleanly on SIGTERM (status $rc)"
		grep -E 'ERROR|runtime error|Sanitizer|leak' "$PROFD_LOG" | head -40 | sed 's/^/# /'
	fi
}

# api PATH [CURL ARGS...]: a request to the daemon; prints the body and
# leaves the status code in $HTTP_CODE and the body in $BODY. Call it
# without $(...) (e.g. `api /x >/dev/null; echo "$HTTP_CODE $BODY"`) when
# you need those variables: a command substitution runs in a subshell.
HTTP_CODE=
BODY=
api() {
	local path=$1; shift
	local out=$T_TMP/body.$BASHPID
	HTTP_CODE=$(curl -s -o "$out" -w '%{http_code}' "$@" "$PROFD_URL$path")
	BODY=$(cat "$out")
	printf '%s\n' "$BODY"
}

# upload FILE QUERY [CURL ARGS...]: POSTs FILE to /api/0/profiles?QUERY;
# prints the reply (and sets HTTP_CODE and BODY, as api does).
upload() {
	local file=$1 query=$2
	shift 2
	api "/api/0/profiles?$query" --data-binary "@$file" \
	    -H 'Content-Type: application/octet-stream' "$@"
}

# Many requests in one curl process (a curl costs about as much CPU to
# start as the daemon takes to store a small profile): batch_add and
# batch_upload add a request to a curl config file, batch_run sends them
# all, one after another on a kept-alive connection, and prints each
# one's status code on a line, in order. For tests that only need the
# replies; several clients at once are still several batch_runs.
# batch_add CFG OUT PATH [CONFIG LINE...]: a request for PATH, its reply
# body to go to file OUT.
batch_add() {
	local cfg=$1 out=$2 path=$3 line
	shift 3
	{
		[ -s "$cfg" ] && echo next
		printf 'url = "%s%s"\noutput = "%s"\nwrite-out = "%%{http_code}\\n"\n' \
		    "$PROFD_URL" "$path" "$out"
		for line in "$@"; do printf '%s\n' "$line"; done
	} >> "$cfg"
}
# batch_upload CFG OUT FILE QUERY: an upload of FILE, as upload does.
batch_upload() {
	batch_add "$1" "$2" "/api/0/profiles?$4" "data-binary = \"@$3\"" \
	    'header = "Content-Type: application/octet-stream"'
}
# batch_run CFG: sends CFG's requests; one status code a line.
batch_run() { curl -s -K "$1"; }

# download_all DIR ID...: GET /api/0/profiles/ID for each ID, all in one
# curl, into DIR/0, DIR/1, ... (DIR made anew).
download_all() {
	local dir=$1 id n=0
	shift
	rm -rf "$dir" "$dir.cfg"
	mkdir -p "$dir" || return 1
	for id in "$@"; do
		batch_add "$dir.cfg" "$dir/$n" "/api/0/profiles/$id"
		n=$((n + 1))
	done
	[ $# -eq 0 ] || batch_run "$dir.cfg" > /dev/null
}

# jq_each FILTER FILE...: one jq for many JSON replies: FILTER applied to
# each FILE's JSON (to null where a FILE holds none), raw output; FILTER
# must give one line per reply, so that line N is FILE N's.
jq_each() {
	local filter=$1 f b
	shift
	for f in "$@"; do
		b=
		[ -f "$f" ] && IFS= read -r -d '' b < "$f"
		printf '%s\n' "${b//$'\n'/ }"
	done | jq -R -r "try fromjson catch null | $filter"
}

# api_each FILTER CONFIG PREFIX QUERY...: a GET of PREFIX QUERY for each
# QUERY, all in one curl (CONFIG: a curl config line for each, such as a
# header, or ''), each reply through jq FILTER, all in one jq (jq_each);
# prints "STATUS<TAB>FILTER's line" a request, in order. The replies stay
# in $T_TMP/each.N, N from 0.
api_each() {
	local filter=$1 line=$2 prefix=$3 q i=0 files=() codes out
	shift 3
	rm -f "$T_TMP"/each.*
	for q in "$@"; do
		batch_add "$T_TMP/each.cfg" "$T_TMP/each.$i" "$prefix$q" ${line:+"$line"}
		files+=("$T_TMP/each.$i") i=$((i + 1))
	done
	[ $# -gt 0 ] || return 0
	mapfile -t codes < <(batch_run "$T_TMP/each.cfg")
	mapfile -t out < <(jq_each "$filter" "${files[@]}")
	for i in "${!files[@]}"; do
		printf '%s\t%s\n' "${codes[i]:-}" "${out[i]:-}"
	done
}

# Uploaders that keep one stream of replies (crash tests: one curl sends
# many uploads, and gives up at the first without a reply, with
# --fail-early). stream_upload CFG URL QUERY FILE: adds to curl config CFG
# an upload of FILE to URL/api/0/profiles?QUERY whose reply goes to curl's
# output, then "<TAB>STATUS<TAB>FILE" and a newline.
stream_upload() {
	{
		[ -s "$1" ] && echo next
		printf 'url = "%s/api/0/profiles?%s"\n' "$2" "$3"
		printf 'data-binary = "@%s"\n' "$4"
		printf 'header = "Content-Type: application/octet-stream"\n'
		printf 'max-time = 10\nwrite-out = "\\t%%{http_code}\\t%s\\n"\n' "$4"
	} >> "$1"
}
# stream_uploader N URLFILE STOP QUERY FILE...: uploader N sends the
# FILEs in turn (with labels=uploader=N,n=I after QUERY) to the URL that
# file URLFILE holds (read again for each ten: a restarted server may
# have a new one) until file STOP exists: ten at a time by one curl, at
# most 10 a second (a curl and a jq for each upload cost more CPU than
# the server's work on it; unpaced, one curl stores many times as many);
# its stream of replies goes to $T_TMP/replies.N.
stream_uploader() {
	local u=$1 urlfile=$2 stop=$3 query=$4 i=$1 k f url cfg=$T_TMP/stream.$1.cfg
	shift 4
	local files=("$@")
	: > "$T_TMP/replies.$u"
	while [ ! -e "$stop" ]; do
		url=
		read -r url < "$urlfile" 2>/dev/null
		: > "$cfg"
		for ((k = 0; k < 10; k++)); do
			f=${files[$((i % ${#files[@]}))]}
			i=$((i + 1))
			stream_upload "$cfg" "$url" "$query&labels=uploader=$u,n=$i" "$f"
		done
		curl -s --fail-early --rate 10/s -K "$cfg" >> "$T_TMP/replies.$u" 2>/dev/null ||
		    sleep 0.05
	done
}
# stream_acked OUT...: "id<TAB>FILE" of every upload that got a 200 in
# the streams OUT... (the ids read by one jq).
stream_acked() {
	awk -F'\t' '$2 == 200' "$@" > "$T_TMP/acked.lines"
	paste <(cut -f1 "$T_TMP/acked.lines" | jq -R -r 'try fromjson catch null | .body.id') \
	    <(cut -f3 "$T_TMP/acked.lines")
}

# upload_all QUERY FILE... : uploads the FILEs with /api/0/profiles?QUERY,
# one after another in one curl; their ids, in order, land in UPLOAD_IDS
# and their status codes in UPLOAD_CODES. 0 when every one got a 200 and
# an id, else 1 with a diag line per failure.
UPLOAD_IDS=()
UPLOAD_CODES=()
upload_all() {
	local query=$1 cfg=$T_TMP/upload_all.cfg out=$T_TMP/upload_all.reply
	local f i=0 rc=0 replies=()
	shift
	UPLOAD_IDS=() UPLOAD_CODES=()
	[ $# -gt 0 ] || return 0
	rm -f "$cfg" "$out".*
	for f in "$@"; do
		batch_upload "$cfg" "$out.$i" "$f" "$query"
		replies+=("$out.$i") i=$((i + 1))
	done
	mapfile -t UPLOAD_CODES < <(batch_run "$cfg")
	mapfile -t UPLOAD_IDS < <(jq_each '.body.id? // ""' "${replies[@]}")
	i=0
	for f in "$@"; do
		if [ "${UPLOAD_CODES[i]:-}" != 200 ] || [ -z "${UPLOAD_IDS[i]:-}" ]; then
			diag "upload $f: ${UPLOAD_CODES[i]:-} $(cat "$out.$i" 2>/dev/null)"
			rc=1
		fi
		i=$((i + 1))
	done
	return $rc
}

# profd_sanitized: true if the daemon is a sanitizer build, whose memory
# (shadow, quarantine) is no measure of profd's own: memory bounds are
# asserted in plain builds only.
profd_sanitized() {
	nm -D "$PROFD" 2>/dev/null | grep -qE '__(asan|tsan|msan)_init'
}

# mem_check DESC KB LIMIT_KB: passes if KB < LIMIT_KB; in a sanitizer build
# it only reports the figure.
mem_check() {
	if profd_sanitized; then
		ok "$1 (sanitizer build: $(( $2 / 1024 )) MB, not asserted)"
	else
		check "$1" [ "$2" -lt "$3" ]
	fi
}

# metric NAME: a value from /metrics.
metric() {
	curl -s "$PROFD_URL/metrics" | awk -v n="$1" '$1 == n { print $2 }'
}
# wait_metric NAME VALUE SECONDS: until /metrics shows it; 0 if it did.
wait_metric() {
	local i
	for i in $(seq 1 $(($3 * 10))); do
		[ "$(metric "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# raw FILE [WAIT]: sends FILE's bytes to the daemon on one connection and
# prints "RESPONSES STATUSES STATE" (test/lib/rawhttp.py); the replies go
# to $T_TMP/raw.out.
raw() {
	python3 "${top_srcdir:-.}/test/lib/rawhttp.py" "${PROFD_URL##*:}" \
	    "$@" 2>"$T_TMP/raw.out"
}

_cleanup() {
	[ -n "$PROFD_PID" ] && kill -KILL "$PROFD_PID" 2>/dev/null
	pg_stop
	rm -rf "$T_TMP"
}
trap _cleanup EXIT
