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
# agent/inproc/agent.c (the public profd_agent_* beside agent_*),
# agent/inproc/heap.c (the profd_agent_heap_* libprofd-heap calls),
# agent/inproc/heapwrap.c (the allocation functions and C++ operators it
# interposes: heapwrap_* in the source, their own names in the object, by
# asm labels), agent/inproc/exec.c (the exec family it interposes), collector/http/evhooks.c (the two
# libevent functions it interposes), collector/main.c (main).
. "${top_srcdir:-.}/test/lib/e2e.sh"
src=${top_srcdir:-.}
bld=${top_builddir:-.}
DIRS="common proto storage merge view collector agent"

# prefix_ok FILE NAME: true if NAME is allowed in FILE.
prefix_ok() {
	local f=$1 n=$2 b=${1##*/}
	b=${b%.c}
	case "$f:$n" in
	common/xmalloc.c:x*) return 0 ;;
	agent/inproc/agent.c:profd_agent_*) return 0 ;;
	agent/inproc/heap.c:profd_agent_heap_*) return 0 ;;
	agent/inproc/heapwrap.c:*)	# (asm labels: nm's names)
		case $n in
		malloc|free|calloc|realloc|memalign|aligned_alloc|posix_memalign|\
		valloc|pvalloc|malloc_usable_size|_Zn[wa]m*|_Zd[la]Pv*) return 0 ;;
		esac ;;
	agent/inproc/exec.c:*)
		case $n in
		exec_*|execve|execv|execvp|execvpe|execl|execlp|execle|fexecve|\
		execveat) return 0 ;;
		esac ;;
	agent/inproc/sigmask.c:pthread_sigmask|agent/inproc/sigmask.c:sigprocmask)
		return 0 ;;
	agent/inproc/sigact.c:sigaction|agent/inproc/sigact.c:signal) return 0 ;;
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

# 1. Definitions in the source (one grep over every file).
declare -A defbad=()
while IFS=: read -r f line name; do
	name=${name%%(*}
	[ "$name" = __attribute__ ] && continue
	prefix_ok "$f" "$name" || defbad[$f]+="$line:$name"$'\n'
done < <(grep -Hn '^[a-z_][a-z0-9_]*(' $sources | grep -v '\\$')
for f in $sources; do
	bad=${defbad[$f]:-}
	if [ -z "$bad" ]; then
		b=${f##*/}
		ok "$f: every function defined starts with ${b%.c}_"
	else
		not_ok "$f: functions without the file's prefix"
		for b in $bad; do diag "$f:$b"; done
	fi
done

# 2. Symbols in the objects (those built from one of the sources): of a
# source DIR/NAME.c, the first object that find lists in DIR named NAME.o
# or *-NAME.o (libtool's LIB_la-NAME.o); one find, one nm for them all.
declare -A first=() src_of=() symbad=()
dirs=()
for f in $sources; do dirs+=("$bld/${f%/*}"); done
while read -r o; do
	n=${o##*/}
	n=${n%.o}
	for b in "$n" "${n##*-}"; do
		[ -n "${first[${o%/*}/$b]:-}" ] || first[${o%/*}/$b]=$o
	done
done < <(find $(printf '%s\n' "${dirs[@]}" | sort -u) -maxdepth 1 -name '*.o' 2>/dev/null)
objs=()
for f in $sources; do
	b=${f##*/}
	obj=${first[$bld/${f%/*}/${b%.c}]:-}
	[ -n "$obj" ] || continue
	objs+=("$obj")
	src_of[$obj]=$f
done
nobj=${#objs[@]}
# (compiler clones such as f.cold, f.part.0, f.isra.0 count as f)
while read -r obj name; do
	prefix_ok "${src_of[$obj]}" "$name" || symbad[$obj]+="$name"$'\n'
done < <([ "$nobj" -gt 0 ] && nm -A --defined-only "${objs[@]}" |
	awk '$2 ~ /^[TDBRCGWVt]$/ && $3 !~ /^(\.|_|CSWTCH)/ {
		sub(/:[^:]*$/, "", $1); sub(/\..*/, "", $3); print $1, $3 }' | sort -u)
for obj in "${objs[@]}"; do
	bad=${symbad[$obj]:-}
	if [ -z "$bad" ]; then
		ok "$obj: every symbol carries the prefix"
	else
		not_ok "$obj: symbols without the file's prefix"
		for b in $bad; do diag "${src_of[$obj]}: $b"; done
	fi
done
[ "$nobj" -gt 10 ] && ok "found $nobj objects to check" ||
	not_ok "found only $nobj objects (build first)"
done_testing
