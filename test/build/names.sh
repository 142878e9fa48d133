#!/usr/bin/env bash
# Every function carries its file's prefix: each function defined in a
# source file of the daemon, the libraries and the agent (static or not)
# is named after the file (everything in collector/router.c starts
# with router_), so a name says where it lives. Checked two ways:
#  - in the source, every definition (the style puts the name at the start
#    of a line, after its return type);
#  - in the built objects (nm), every global symbol and every local
#    function, so nothing the source scan misses (functions a macro
#    defines) gets by. (File-local variables are not checked.)
# Exceptions, by file: common/xmalloc.c (the x* allocation wrappers),
# agent/agent.c (the public profd_agent_* beside agent_*), agent/heap.c
# (the profd_agent_heap_* libprofd-heap calls), agent/heapwrap.c (the
# allocation functions and C++ operators it interposes: heapwrap_* in the
# source, their own names in the object, by asm labels), agent/exec.c
# (the exec family it interposes), collector/http/evhooks.c (the two
# libevent functions it interposes), collector/main.c (main).
. "${top_srcdir:-.}/test/lib/e2e.sh"
src=${top_srcdir:-.}
bld=${top_builddir:-.}
DIRS="common proto storage merge view collector agent"

# prefix_ok FILE NAME: true if NAME is allowed in FILE.
prefix_ok() {
	local f=$1 n=$2 b
	b=$(basename "$f" .c)
	case "$f:$n" in
	common/xmalloc.c:x*) return 0 ;;
	agent/agent.c:profd_agent_*) return 0 ;;
	agent/heap.c:profd_agent_heap_*) return 0 ;;
	agent/heapwrap.c:malloc|agent/heapwrap.c:free|agent/heapwrap.c:calloc|\
	agent/heapwrap.c:realloc|agent/heapwrap.c:memalign|\
	agent/heapwrap.c:aligned_alloc|agent/heapwrap.c:posix_memalign|\
	agent/heapwrap.c:valloc|agent/heapwrap.c:pvalloc|\
	agent/heapwrap.c:malloc_usable_size|agent/heapwrap.c:_Zn[wa]m*|\
	agent/heapwrap.c:_Zd[la]Pv*) return 0 ;;	# (asm labels: nm's names)
	agent/exec.c:exec_*|agent/exec.c:execve|agent/exec.c:execv|\
	agent/exec.c:execvp|agent/exec.c:execvpe|agent/exec.c:execl|\
	agent/exec.c:execlp|agent/exec.c:execle|agent/exec.c:fexecve|\
	agent/exec.c:execveat) return 0 ;;
	agent/sigmask.c:pthread_sigmask|agent/sigmask.c:sigprocmask) return 0 ;;
	agent/sigact.c:sigaction|agent/sigact.c:signal) return 0 ;;
	collector/http/evhooks.c:evhttp_request_new|\
	collector/http/evhooks.c:evhttp_send_error|\
	collector/http/evhooks.c:evbuffer_readln) return 0 ;;
	collector/main.c:main) return 0 ;;
	esac
	[ "$n" = "$b" ] || [ "${n#"${b}"_}" != "$n" ]
}

cd "$src" || exit 1
sources=$(find $DIRS -name '*.c' ! -name 'test_*' ! -path '*/examples/*' \
	! -name '*.pb-c.c' | sort)
[ -n "$sources" ] || { not_ok "found the sources"; done_testing; }

# 1. Definitions in the source.
for f in $sources; do
	bad=$(grep -n '^[a-z_][a-z0-9_]*(' "$f" | grep -v '\\$' |
		sed 's/(.*//' | while IFS=: read -r line name; do
			[ "$name" = __attribute__ ] && continue
			prefix_ok "$f" "$name" || echo "$line:$name"
		done)
	if [ -z "$bad" ]; then
		ok "$f: every function defined starts with $(basename "$f" .c)_"
	else
		not_ok "$f: functions without the file's prefix"
		for b in $bad; do diag "$f:$b"; done
	fi
done

# 2. Symbols in the objects (those built from one of the sources).
nobj=0
for f in $sources; do
	d=$(dirname "$f"); b=$(basename "$f" .c)
	obj=$(find "$bld/$d" -maxdepth 1 \( -name "$b.o" -o -name "*_la-$b.o" \
		-o -name "*-$b.o" \) 2>/dev/null | head -n 1)
	[ -n "$obj" ] || continue
	nobj=$((nobj + 1))
	# (compiler clones such as f.cold, f.part.0, f.isra.0 count as f)
	bad=$(nm --defined-only "$obj" | awk '$2 ~ /^[TDBRCGWVt]$/ {print $3}' |
		grep -v '^\.\|^_\|^CSWTCH' | sed 's/\..*//' | sort -u |
		while read -r name; do
			prefix_ok "$f" "$name" || echo "$name"
		done)
	if [ -z "$bad" ]; then
		ok "$obj: every symbol carries the prefix"
	else
		not_ok "$obj: symbols without the file's prefix"
		for b in $bad; do diag "$f: $b"; done
	fi
done
[ "$nobj" -gt 10 ] && ok "found $nobj objects to check" ||
	not_ok "found only $nobj objects (build first)"
done_testing
