# gopprof ARGS...: `go tool pprof ARGS...`, remembered. Sourced by e2e.sh.
#
# Many tests check profd against go tool pprof on the same corpus files
# (rollups_api merges hundreds of them per window), and the API suite runs
# again on PostgreSQL and again under the sanitizers: pprof would compute
# the same answers three times over. When every argument that is not an
# option is a regular file, the answer (stdout and exit status) is kept
# under $PROFD_PPROF_CACHE (default: test/pprof-cache in the build tree),
# keyed by the options, the name and bytes of every file and go's version,
# so the same question is only ever asked of pprof once. Anything else (a
# URL, a missing file, an option with a separate value) runs pprof as it
# is. An answer is written to a temporary name and renamed, so tests
# running side by side share the cache safely. pprof's stderr is not
# kept (the tests discard it). pprof runs with GOGC=400 (unless GOGC is
# set): a fifth less CPU for its largest merges, for twice the memory.
# GOPPROF_INPUT, when set, is pprof's standard input (interactive
# commands: one run answers several questions) and part of the key.

: "${PROFD_PPROF_CACHE:=${top_builddir:-.}/test/pprof-cache}"
GOPPROF_VERSION=

gopprof() {
	local a key out rc lock
	for a in "$@"; do
		case $a in
		-*) ;;
		*) [ -f "$a" ] || { gopprof_run "$@"; return; } ;;
		esac
	done
	[ -n "$GOPPROF_VERSION" ] || GOPPROF_VERSION=$(go version 2>/dev/null)
	# (a file counts by its name and bytes, not by its folder: each test
	# has a temporary folder of its own)
	key=$({
		printf '%s\0' "$GOPPROF_VERSION"
		[ -z "${GOPPROF_INPUT:-}" ] || printf 'stdin:%s\0' "$GOPPROF_INPUT"
		for a in "$@"; do
			case $a in
			-*) printf '%s\0' "$a" ;;
			*) printf '%s\0' "${a##*/}"; sha1sum < "$a" ;;
			esac
		done
	} | sha1sum)
	key=${key%% *}
	out=$PROFD_PPROF_CACHE/${key:0:2}/$key
	gopprof_kept "$out" && return "$GOPPROF_RC"
	mkdir -p "${out%/*}" 2>/dev/null
	# A test asking the same question at the same time (rollups_api on
	# both backends) waits for this answer: a lock per key, held while
	# pprof runs (flock(1), util-linux; without it, both ask).
	lock=
	if command -v flock >/dev/null 2>&1 && exec {lock}>>"$out.lock"; then
		flock -w 900 "$lock"
		if gopprof_kept "$out"; then
			exec {lock}>&-
			return "$GOPPROF_RC"
		fi
	fi
	gopprof_run "$@" > "$out.out.$$" 2>"$out.err.$$"
	rc=$?
	# (no answer is kept when pprof could not run at all: no HOME, a
	# signal)
	if [ "$rc" -le 1 ] && ! grep -q 'permission denied\|signal:' "$out.err.$$"; then
		mv -f "$out.out.$$" "$out.out" && echo "$rc" > "$out.rc.$$" &&
		    mv -f "$out.rc.$$" "$out.rc"
		cat "$out.out"
	else
		cat "$out.out.$$"
	fi
	[ -z "$lock" ] || exec {lock}>&-
	cat "$out.err.$$" >&2
	rm -f "$out.out.$$" "$out.err.$$" "$out.rc.$$"
	return "$rc"
}

# gopprof_run ARGS...: go tool pprof ARGS..., GOPPROF_INPUT on its stdin
# if set (else the caller's).
gopprof_run() {
	if [ -n "${GOPPROF_INPUT:-}" ]; then
		printf '%s\n' "$GOPPROF_INPUT" | GOGC=${GOGC:-400} go tool pprof "$@"
	else
		GOGC=${GOGC:-400} go tool pprof "$@"
	fi
}

# gopprof_kept OUT: prints the kept answer OUT and leaves its exit status
# in GOPPROF_RC; false when there is none.
gopprof_kept() {
	[ -f "$1.rc" ] && [ -f "$1.out" ] || return 1
	cat "$1.out"
	GOPPROF_RC=$(cat "$1.rc")
}
