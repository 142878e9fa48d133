#!/usr/bin/env bash
# No circles between the objects of a library: in each library the tree
# builds, object A points at object B when A leaves undefined a global
# symbol (a function or data, such as a backend's ops table) that B
# defines, and no object may reach itself again by those arrows. A circle
# is a knot that a check of includes and direct calls does not see (an
# interface that names its backends' tables while the backends call its
# helpers); the style wants a helper both sides need moved down into a
# file of its own. One test per library; a failing one lists each circle's
# files and, for every arrow inside it, the symbols that make it.
#
# The libraries and their objects come from the build's Makefile (every
# *_LTLIBRARIES variable, its *_OBJECTS and the libtool objects in its
# LIBADD), each libtool object (.lo) naming the object file it stands
# for, so nothing here lists a folder. What a sanitizer or the toolchain
# adds (__asan_*, __ubsan_*, __odr_asan*, ...) is not counted, nor are the
# C library's allocation functions (an interposer defines them: a call to
# malloc is a call to the C library's, not a knot). (The
# installed libprofd-agent is one object, `ld -r` of the objects of
# libprofdagentcore and libprofdagentinproc: its circles would be
# theirs, checked on their own.)
#
# Environment (set by `make check`): top_builddir, top_srcdir.
. "${top_srcdir:-.}/test/lib/e2e.sh"
bld=${top_builddir:-.}
NM=${NM:-nm}

[ -f "$bld/Makefile" ] || { not_ok "found $bld/Makefile (configure first)"; done_testing; }

# The finder prints one line per result: "SELFTEST 1" (it found the
# circle of a known graph), "LIB name nobjects ncircles", "DIAG text",
# "ERROR text", then "ARROWS n" (arrows seen in all libraries: none would
# mean nm's output was not understood, and every library would pass).
python3 - "$bld" "$NM" >"$T_TMP/out" <<'EOF' || { not_ok "the circle finder ran"; done_testing; }
import os, re, shlex, subprocess, sys

bld, nm = sys.argv[1], sys.argv[2]
IGNORED = re.compile(r'^(_*(asan|ubsan|tsan|lsan|msan|hwasan|sanitizer|'
    r'sancov|odr_asan|llvm|gcov|gcda)|_GLOBAL_OFFSET_TABLE_$|'
    r'__dso_handle$|_DYNAMIC$|__TMC_END__$|\.|'
    # C's allocation functions and C++'s operators: an object that calls
    # them calls the C library's, whoever interposes them (libprofd-heap's
    # heapwrap.c, linked with the agent that calls malloc).
    r'(malloc|free|calloc|realloc|memalign|aligned_alloc|posix_memalign|'
    r'valloc|pvalloc|malloc_usable_size)$|_Zn[wa]m|_Zd[la]Pv)')

def makefile_vars(path):
    """The Makefile's variables, unexpanded (what configure left active)."""
    text = open(path).read().replace('\\\n', ' ')
    v = {}
    for line in text.split('\n'):
        m = re.match(r'^([A-Za-z0-9_.]+)\s*(\+?=|:=)\s*(.*)$', line)
        if m:
            name, op, val = m.groups()
            v[name] = (v.get(name, '') + ' ' + val) if op == '+=' else val
    return v

def expand(v, s, depth=0):
    """s with $(NAME) and ${NAME} replaced, recursively."""
    if depth > 20:
        return s
    return re.sub(r'\$[({]([A-Za-z0-9_.]+)[)}]',
        lambda m: expand(v, v.get(m.group(1), ''), depth + 1), s)

def lo_object(lo):
    """The object file a libtool object names (PIC first), or None."""
    try:
        text = open(os.path.join(bld, lo)).read()
    except OSError:
        return None
    d = os.path.dirname(lo)
    for key in ('pic_object', 'non_pic_object'):
        m = re.search(r"^%s='([^']*)'" % key, text, re.M)
        if m and m.group(1) != 'none':
            return os.path.join(d, m.group(1))
    return None

def symbols(obj):
    """The global symbols obj defines and those it leaves undefined."""
    out = subprocess.run(shlex.split(nm) + ['-P', os.path.join(bld, obj)],
        capture_output=True, text=True, check=True).stdout
    defined, undef = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) < 2 or IGNORED.match(f[0]):
            continue
        name, t = f[0], f[1]
        if t in ('U', 'w', 'v'):
            undef.add(name)
        elif t.isupper() or t in ('i', 'u'):
            defined.add(name)
    return defined, undef

def sccs(nodes, succ):
    """Tarjan's strongly connected components, without recursion."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(succ[root])))]
        index[root] = low[root] = n; n += 1
        stack.append(root); on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = n; n += 1
                    stack.append(w); on.add(w)
                    work.append((w, iter(sorted(succ[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop(); on.discard(w); comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out

def shortest(comp, succ):
    """A shortest circle inside comp, as a list of its nodes."""
    best = None
    for start in sorted(comp):
        prev, todo, last = {start: None}, [start], None
        while todo and last is None:
            nxt = []
            for v in todo:
                for w in sorted(succ[v]):
                    if w == start:
                        last = v
                        break
                    if w in comp and w not in prev:
                        prev[w] = v
                        nxt.append(w)
                if last is not None:
                    break
            todo = nxt
        if last is None:
            continue
        path = [last]
        while prev[path[-1]] is not None:
            path.append(prev[path[-1]])
        path.reverse()
        if best is None or len(path) < len(best):
            best = path
    return best

def source(obj):
    """The source an object was built from, for the report."""
    d, b = os.path.split(obj)
    d = os.path.dirname(d) if os.path.basename(d) == '.libs' else d
    b = re.sub(r'^.*_la-', '', re.sub(r'\.o$', '', b))
    return os.path.join(d, b + '.c')

# The finder on a known graph first: a -> b -> c -> a, c -> d.
g = {'a': {'b'}, 'b': {'c'}, 'c': {'a', 'd'}, 'd': set()}
print('SELFTEST %d' % ([c for c in sccs(sorted(g), g) if len(c) > 1] ==
    [['a', 'b', 'c']] and shortest({'a', 'b', 'c'}, g) == ['a', 'b', 'c']))

v = makefile_vars(os.path.join(bld, 'Makefile'))
libs, arrows = [], 0
for name in sorted(v):
    if name.endswith('_LTLIBRARIES') and not name.startswith('am'):
        libs += [l for l in expand(v, v[name]).split() if l.endswith('.la')]
for lib in sorted(set(libs)):
    canon = re.sub(r'[^A-Za-z0-9_]', '_', lib)
    los = [w for w in expand(v, v.get(canon + '_OBJECTS', '') + ' ' +
        v.get(canon + '_LIBADD', '')).split() if w.endswith('.lo')]
    objs, missing = [], []
    for lo in los:
        o = lo_object(lo)
        (objs if o and os.path.exists(os.path.join(bld, o)) else
            missing).append(o or lo)
    if missing:
        print('ERROR %s: %d of its objects not built (%s%s)' % (lib,
            len(missing), ' '.join(missing[:3]),
            ' ...' if len(missing) > 3 else ''))
        continue
    defs, undefs, definer = {}, {}, {}
    for o in objs:
        defs[o], undefs[o] = symbols(o)
        for s in defs[o]:
            definer.setdefault(s, set()).add(o)
    edge = {o: {} for o in objs}	# edge[a][b]: the symbols a takes from b
    for a in objs:
        for s in undefs[a]:
            for b in definer.get(s, ()):
                if b != a:
                    edge[a].setdefault(b, set()).add(s)
    arrows += sum(len(edge[o]) for o in objs)
    circles = [c for c in sccs(objs, {o: set(edge[o]) for o in objs})
        if len(c) > 1]
    print('LIB %s %d %d' % (lib, len(objs), len(circles)))
    for i, c in enumerate(circles, 1):
        print('DIAG circle %d of %d files: %s' % (i, len(c),
            ' '.join(source(o) for o in c)))
        path = shortest(set(c), edge)
        print('DIAG   the shortest way round: %s' % ' -> '.join(
            source(o) for o in path + path[:1]))
        for a in c:
            for b in sorted(edge[a]):
                if b in c:
                    print('DIAG   %s -> %s: %s' % (source(a), source(b),
                        ' '.join(sorted(edge[a][b]))))
print('ARROWS %d' % arrows)
EOF

nlib=0
while read -r kind rest; do
	case $kind in
	LIB)
		set -- $rest
		nlib=$((nlib + 1))
		objs="$2 objects"; [ "$2" = 1 ] && objs="one object"
		if [ "$3" -eq 0 ]; then
			ok "$1: no circle between its $objs"
		else
			not_ok "$1: $3 circle(s) between its $objs"
		fi ;;
	DIAG) diag "$rest" ;;
	ERROR) not_ok "$rest (build first)" ;;
	SELFTEST)
		[ "$rest" = 1 ] && ok "the finder finds the circle of a known graph" ||
			not_ok "the finder finds the circle of a known graph" ;;
	ARROWS) arrows=$rest ;;
	esac
done <"$T_TMP/out"
[ "$nlib" -ge 5 ] && ok "found $nlib libraries to check" ||
	not_ok "found only $nlib libraries in $bld/Makefile"
[ "${arrows:-0}" -ge 20 ] && ok "found $arrows arrows between objects" ||
	not_ok "found only ${arrows:-0} arrows between objects (is $NM's output read?)"
done_testing
