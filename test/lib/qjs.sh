# Connect's Node.js client as one long-lived process for the query API
# tests (test/protojs/query.mjs --serve): a node start costs about a
# second on a loaded machine, and the tests make a hundred calls. Sourced
# after e2e.sh.
#
# qjs_start JSDIR URL TOKEN: starts the client for URL with a bearer token.
# q METHOD JSON [FLAGS...]: one call (FLAGS as query.mjs's: --json, --gzip,
#   --out FILE, --canon); prints the answer line (JSON, or "error CODE
#   MESSAGE"), false on an error. Calls are answered in order; JSON and
#   FILE must hold no tab or newline.
# qjs_stop: ends the client (also done when the test's shell exits: the
#   client ends at the end of its input).
QJS_PID=
QJS_W=
QJS_R=

qjs_start() {
	rm -f "$T_TMP/qjs.in" "$T_TMP/qjs.out"
	mkfifo "$T_TMP/qjs.in" "$T_TMP/qjs.out" || return 1
	node "$1/query.mjs" "$2" --serve "$T_TMP/qjs.ans" --token "$3" \
	    <"$T_TMP/qjs.in" >"$T_TMP/qjs.out" 2>"$T_TMP/qjs.err" &
	QJS_PID=$!
	exec {QJS_W}>"$T_TMP/qjs.in" {QJS_R}<"$T_TMP/qjs.out"
}

# (the answer is in a file, the pipe says when: a shell reads a pipe a byte
# at a time; and no ${line#...} on a megabyte line: that is quadratic)
q() {
	local rc
	printf '%s\t%s\t%s\n' "$1" "$2" "${*:3}" >&"$QJS_W"
	if ! IFS= read -r -t 300 rc <&"$QJS_R"; then
		echo "error Client no answer: $(tail -c 300 "$T_TMP/qjs.err" |
		    tr '\n' ' ')"
		return 1
	fi
	cat "$T_TMP/qjs.ans"
	[ "$rc" = 0 ]
}

qjs_stop() {
	[ -n "$QJS_PID" ] || return 0
	exec {QJS_W}>&-
	wait "$QJS_PID"
	exec {QJS_R}<&-
	QJS_PID=
}
