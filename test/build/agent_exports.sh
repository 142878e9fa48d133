#!/usr/bin/env bash
# libprofd-agent's symbols: the static archive (agent/.libs/libprofd-agent.a)
# and the shared object (agent/.libs/libprofd-agent.so) define no global
# symbol but the public ones, profd_agent_* and the exec wrappers of
# agent/inproc/exec.c (what a sanitizer or the toolchain adds is not counted), and
# both define all of those. Then a program with its own xmalloc,
# config_check, upload_new and (as if it had its own zlib and protobuf-c)
# deflate, crc32 and protobuf_c_message_pack links against the static
# archive (and the shared object) without a duplicate symbol, runs, and
# the agent in it writes a profile without calling the program's
# functions. Where configure found zlib's and protobuf-c's static
# archives, the shared object needs no library but libc (and a
# sanitizer's runtime): a program it is preloaded into loads one library.
#
# Environment (set by `make check`): top_builddir, top_srcdir. The compiler
# and sanitizer flags are the ones configure chose (read from the
# Makefile); the libraries the agent needs come from libprofd-agent.la.
set -u

B=${top_builddir:-.}
S=${top_srcdir:-.}
A=$B/agent/.libs/libprofd-agent.a
SO=$B/agent/.libs/libprofd-agent.so
LA=$B/agent/libprofd-agent.la

PUBLIC='^(profd_agent_[A-Za-z0-9_]*|execve|execv|execvp|execvpe|execl|execlp|execle|fexecve|execveat|pthread_sigmask|sigprocmask|sigaction|signal)$'
WANTED='profd_agent_start profd_agent_stop execve execv execvp execvpe execl execlp execle fexecve execveat pthread_sigmask sigprocmask sigaction signal'
# Added by a sanitizer (runtime hooks, ODR indicators) or the toolchain.
IGNORED='^(_*(asan|ubsan|tsan|lsan|msan|sanitizer|sancov|odr_asan)|_init$|_fini$|__bss_start$|_edata$|_end$|__end__$|_GLOBAL_OFFSET_TABLE_$|_DYNAMIC$|__dso_handle$|__TMC_END__$)'

T_N=0
T_FAILED=0
T_TMP=$(mktemp -d "${TMPDIR:-/tmp}/profd-exports.XXXXXX")
trap 'rm -rf "$T_TMP"' EXIT

# ok DESC: one passing test.
ok() { T_N=$((T_N + 1)); echo "ok $T_N - $*"; }
# not_ok DESC: one failing test.
not_ok() { T_N=$((T_N + 1)); T_FAILED=$((T_FAILED + 1)); echo "not ok $T_N - $*"; }
# skip DESC: one skipped test.
skip() { T_N=$((T_N + 1)); echo "ok $T_N # SKIP $*"; }
# diag MSG: a comment line in the TAP stream.
diag() { printf '# %s\n' "$*"; }
# diag_file FILE: FILE's first lines as comments.
diag_file() { head -n 20 "$1" | sed 's/^/# /'; }
# makevar NAME: the value configure gave NAME in the top Makefile.
makevar() { sed -n "s/^$1 = *//p" "$B/Makefile" | head -n 1; }

# defined_globals FILE: the defined global symbols of FILE, one a line,
# without version suffixes or absolute symbols (version nodes).
defined_globals() {
	nm -g --defined-only "$1" 2>/dev/null |
	    awk 'NF == 3 && $2 != "A" { sub(/@.*/, "", $3); print $3 }' |
	    sort -u
}

# check_exports WHAT FILE: no global but the public names, and all of them.
check_exports() {
	local what=$1 file=$2 extra missing s
	defined_globals "$file" >"$T_TMP/syms"
	if [ ! -s "$T_TMP/syms" ]; then
		not_ok "$what: nm lists its symbols"
		not_ok "$what: defines every public name"
		return
	fi
	extra=$(grep -Ev "$PUBLIC" "$T_TMP/syms" | grep -Ev "$IGNORED")
	if [ -z "$extra" ]; then
		ok "$what: no global symbol but profd_agent_* and the exec wrappers"
	else
		not_ok "$what: no global symbol but profd_agent_* and the exec wrappers ($(wc -l <<<"$extra") more)"
		diag "also global: $(head -n 30 <<<"$extra" | tr '\n' ' ')"
	fi
	missing=
	for s in $WANTED; do
		grep -qx "$s" "$T_TMP/syms" || missing="$missing $s"
	done
	if [ -z "$missing" ]; then
		ok "$what: defines profd_agent_start/stop and the nine exec wrappers"
	else
		not_ok "$what: defines profd_agent_start/stop and the nine exec wrappers"
		diag "missing:$missing"
	fi
}

command -v nm >/dev/null || { echo "1..0 # SKIP nm not installed"; exit 0; }
[ -f "$A" ] || [ -f "$SO" ] || { echo "1..0 # SKIP agent not built"; exit 0; }

# 1-4. What the libraries export.
if [ -f "$A" ]; then
	check_exports "static archive" "$A"
else
	skip "static archive not built"; skip "static archive not built"
fi
if [ -f "$SO" ]; then
	check_exports "shared object" "$SO"
else
	skip "shared object not built"; skip "shared object not built"
fi

# 5-8. A program whose own names clash with the agent's internals.
cat >"$T_TMP/clash.c" <<'CEOF'
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/inproc/profd_agent.h"

/* The program's own functions, named like the agent's internals. */
static int clash_calls;
void *xmalloc(size_t n);
int config_check(const char *s);
int upload_new(int x);
int deflate(int x);
unsigned long crc32(int x);
size_t protobuf_c_message_pack(int x);

/* The program's xmalloc: counts its calls. */
void *
xmalloc(size_t n)
{
	clash_calls++;
	return malloc(n);
}

/* The program's config_check: counts its calls. */
int
config_check(const char *s)
{
	clash_calls++;
	return s != NULL && strcmp(s, "ok") == 0;
}

/* The program's upload_new: counts its calls. */
int
upload_new(int x)
{
	clash_calls++;
	return x + 1;
}

/* The program's deflate (not zlib's): counts its calls. */
int
deflate(int x)
{
	clash_calls++;
	return x + 2;
}

/* The program's crc32 (not zlib's): counts its calls. */
unsigned long
crc32(int x)
{
	clash_calls++;
	return (unsigned long)x + 3;
}

/* The program's protobuf_c_message_pack: counts its calls. */
size_t
protobuf_c_message_pack(int x)
{
	clash_calls++;
	return (size_t)x + 4;
}

/* CPU time of the process in seconds. */
static double
clash_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	struct profd_agent_config cfg = { 0 };
	volatile unsigned long sink = 0;
	char *err = NULL, *p;
	struct dirent *de;
	DIR *d;
	double t0;
	int files = 0;

	if (argc != 2)
		return 2;
	p = xmalloc(16);
	free(p);
	if (!config_check("ok") || upload_new(1) != 2 || deflate(1) != 3 ||
	    crc32(1) != 4 || protobuf_c_message_pack(1) != 5 ||
	    clash_calls != 6) {
		printf("own functions: wrong results\n");
		return 1;
	}
	/* The agent's own check, not the program's: no service is refused. */
	if (profd_agent_start(&cfg, &err) == 0 || err == NULL ||
	    strstr(err, "service is required") == NULL) {
		printf("agent: an empty config was not refused (%s)\n",
		    err != NULL ? err : "no reason");
		return 1;
	}
	free(err);
	cfg.service = "clash";
	cfg.output_dir = argv[1];
	cfg.no_upload = 1;
	cfg.window_sec = 1;
	cfg.period_sec = 1;
	if (profd_agent_start(&cfg, &err) != 0) {
		printf("agent: start failed: %s\n", err);
		return 1;
	}
	t0 = clash_cpu();
	while (clash_cpu() - t0 < 0.5)
		sink++;
	profd_agent_stop();
	if ((d = opendir(argv[1])) == NULL)
		return 1;
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, "clash-cpu-", 10) == 0)
			files++;
	closedir(d);
	printf("profiles %d calls %d\n", files, clash_calls);
	return files > 0 && clash_calls == 6 ? 0 : 1;
}
CEOF

CC_=$(makevar CC)
CFLAGS_="$(makevar CFLAGS) $(makevar SAN_CFLAGS) -pthread"
dependency_libs=
[ -f "$LA" ] && eval "$(grep '^dependency_libs=' "$LA")"
: "${CC_:=cc}"

# link_and_run WHAT OUTDIR CMD...: links with CMD, then runs the program.
link_and_run() {
	local what=$1 out=$2 rc
	shift 2
	mkdir -p "$out"
	if "$@" >"$T_TMP/link.log" 2>&1; then
		ok "$what: a program defining xmalloc, config_check, upload_new, deflate, crc32 and protobuf_c_message_pack links"
	else
		not_ok "$what: a program defining xmalloc, config_check, upload_new, deflate, crc32 and protobuf_c_message_pack links"
		diag_file "$T_TMP/link.log"
		not_ok "$what: it runs, and the agent in it writes a profile"
		return
	fi
	"$T_TMP/clash" "$out" >"$T_TMP/run.log" 2>&1
	rc=$?
	if [ "$rc" = 0 ]; then
		ok "$what: it runs, and the agent in it writes a profile ($(head -n 1 "$T_TMP/run.log"))"
	else
		not_ok "$what: it runs, and the agent in it writes a profile (exit $rc)"
		diag_file "$T_TMP/run.log"
	fi
}

if [ -f "$A" ]; then
	# shellcheck disable=SC2086
	link_and_run "static archive" "$T_TMP/out-static" \
	    $CC_ $CFLAGS_ -I"$S" -o "$T_TMP/clash" "$T_TMP/clash.c" "$A" \
	    $dependency_libs
else
	skip "static archive not built"; skip "static archive not built"
fi
if [ -f "$SO" ]; then
	rm -f "$T_TMP/clash"
	# shellcheck disable=SC2086
	link_and_run "shared object" "$T_TMP/out-shared" \
	    $CC_ $CFLAGS_ -I"$S" -o "$T_TMP/clash" "$T_TMP/clash.c" "$SO" \
	    -Wl,-rpath,"$(cd "$(dirname "$SO")" && pwd)"
else
	skip "shared object not built"; skip "shared object not built"
fi

# 9. With the static archives of zlib and protobuf-c, the shared object
# loads no other library but libc (and a sanitizer's runtime).
if [ -f "$SO" ] && [ -n "$(makevar AGENT_STATIC_LIBS)" ]; then
	needed=$(readelf -d "$SO" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' |
	    grep -Ev '^(libc\.so|lib(a|ub|t)san\.so|libstdc\+\+|libm\.so|libgcc_s|libpthread|libdl|librt)' | tr '\n' ' ')
	if [ -z "$needed" ]; then
		ok "shared object: needs no library but libc (zlib and protobuf-c linked in)"
	else
		not_ok "shared object: needs no library but libc (zlib and protobuf-c linked in)"
		diag "also needed: $needed"
	fi
else
	skip "no static zlib and protobuf-c archives: the agent links them dynamically"
fi

echo "1..$T_N"
[ "$T_FAILED" -eq 0 ]
