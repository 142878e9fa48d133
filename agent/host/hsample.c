/*
 * A sample into its group (see hsample.h). Locations are per process
 * mapping and address: an address is the sampled pc for the leaf, and a
 * return address less one for callers (inside the call, as pprof
 * expects), kernel and user alike. Names are looked up only when a
 * location is new in the period's group. C++ names are demangled by the
 * C++ runtime's __cxa_demangle (what perf's demangler gives too:
 * "ns::f(int)"); a name it refuses stays mangled.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/core/symtab.h"
#include "agent/host/hjit.h"
#include "agent/host/hpython.h"
#include "agent/host/hsample.h"
#include "common/strhash.h"

#define HSAMPLE_MAX_USER	192	/* user frames */
#define HSAMPLE_MAX_MIXED	(HSAMPLE_MAX_USER + PYRT_MAX_FRAMES)
#define HSAMPLE_MAX_FRAMES	256	/* kernel and user */

/* The C++ runtime's demangler (libstdc++, cxxabi.h). */
char	*__cxa_demangle(const char *, char *, size_t *, int *);

/* The group's mapping index of [kernel]. */
static uint32_t
hsample_kernel_map(struct hsample *h, struct hgroup *g)
{
	struct hgroups_map m;

	memset(&m, 0, sizeof m);
	hkernel_range(h->kernel, &m.start, &m.limit);
	m.pid = 0;
	m.path = hgroups_str(g, "[kernel]");
	m.build_id = 0;
	return hgroups_map(g, &m);
}

/* Adds a location named name (demangled when C++). */
static int64_t
hsample_loc_named(struct hgroup *g, uint32_t map, uint64_t addr,
    const char *name, const char *file)
{
	char *d = NULL;
	int64_t li;
	int status = -1;

	if (name != NULL && name[0] == '_' && name[1] == 'Z')
		d = __cxa_demangle(name, NULL, NULL, &status);
	li = hgroups_loc_add(g, map, addr, status == 0 && d != NULL ? d :
	    name, file);
	free(d);
	return li;
}

/* The location of a kernel address. */
static int64_t
hsample_kernel_loc(struct hsample *h, struct hgroup *g, uint32_t map,
    uint64_t addr)
{
	int64_t li = hgroups_loc_find(g, map, addr);

	if (li >= 0)
		return li;
	return hsample_loc_named(g, map, addr, hkernel_lookup(h->kernel,
	    addr), "[kernel]");
}

/* The location of an address of p in anonymous executable memory: JIT
 * code named by its perf map (hjit.h), else unnamed; -2 when full. */
static int64_t
hsample_jit_loc(struct hsample *h, struct hgroup *g, const struct hproc *p,
    const struct hprocs_map *pm, uint64_t addr)
{
	struct hgroups_map m;
	const char *name;
	uint32_t map;
	int64_t li;

	if ((map = hgroups_map_find(g, p->pid, pm->start)) == UINT32_MAX) {
		memset(&m, 0, sizeof m);
		m.pid = p->pid;
		m.start = pm->start;
		m.limit = pm->limit;
		m.pgoff = pm->pgoff;
		m.path = hgroups_str(g, pm->path);
		m.build_id = hgroups_str(g, "");
		map = hgroups_map(g, &m);
	}
	if ((li = hgroups_loc_find(g, map, addr)) >= 0)
		return li;
	name = h->jit != NULL ? hjit_lookup(h->jit, p, addr) : NULL;
	li = hgroups_loc_add(g, map, addr, name, "[jit]");
	return li < 0 ? -2 : li;
}

/* The location of a user address of process p: -1 when the address is
 * in no mapping (left out), -2 when the tables are full. */
static int64_t
hsample_user_loc(struct hsample *h, struct hgroup *g,
    const struct hproc *p, uint64_t addr)
{
	const struct hprocs_map *pm = hprocs_find(p, addr);
	const struct symtab *st;
	struct hgroups_map m;
	struct hobj *o;
	const char *name = NULL;
	uint64_t vaddr;
	uint32_t map;
	size_t sym;
	int64_t li;

	if (pm == NULL)
		return -1;
	if (pm->anon)
		return hsample_jit_loc(h, g, p, pm, addr);
	o = hunwind_obj(h->objs, p, pm, h->own_mntns);
	memset(&m, 0, sizeof m);
	m.pid = p->pid;
	m.start = pm->start;
	m.limit = pm->limit;
	m.pgoff = pm->pgoff;
	if ((map = hgroups_map_find(g, p->pid, pm->start)) == UINT32_MAX) {
		st = hobjs_symtab(h->objs, o);
		m.path = hgroups_str(g, pm->path);
		m.build_id = hgroups_str(g, hobjs_build_id(o));
		m.is_exe = p->exe != NULL && strcmp(p->exe, pm->path) == 0;
		map = hgroups_map(g, &m);
	}
	if ((li = hgroups_loc_find(g, map, addr)) >= 0)
		return li;
	st = hobjs_symtab(h->objs, o);
	if (st != NULL && symtab_offset_to_vaddr(st, addr - pm->start +
	    pm->pgoff, &vaddr) == 0)
		name = symtab_lookup(st, vaddr, &sym);
	li = hsample_loc_named(g, map, addr, name, pm->path);
	return li < 0 ? -2 : li;
}

/* The group's mapping index of [python]. */
static uint32_t
hsample_python_map(struct hgroup *g)
{
	struct hgroups_map m;

	memset(&m, 0, sizeof m);
	m.pid = 0;
	m.start = 1;		/* a key: no kernel or user mapping */
	m.path = hgroups_str(g, "[python]");
	m.named = 1;
	return hgroups_map(g, &m);
}

/* The location of Python frame word w of p: -1 unnamed (left out), -2
 * when the tables are full. Keyed by name, file and line. */
static int64_t
hsample_python_loc(struct hsample *h, struct hgroup *g,
    const struct hproc *p, uint64_t w)
{
	struct pycode_frame f;
	uint64_t key;
	uint32_t map;
	int64_t li;

	if (hpython_name(h->python, p, w, &f) != 0)
		return -1;
	map = hsample_python_map(g);
	key = strhash_str(strhash_str(STRHASH_INIT, f.name) * 31, f.file) ^
	    ((uint64_t)(uint32_t)f.line * 0x9e3779b97f4a7c15ULL);
	if ((li = hgroups_loc_find(g, map, key)) >= 0)
		return li;
	li = hgroups_loc_add_line(g, map, key, f.name, f.file, f.line);
	return li < 0 ? -2 : li;
}

/* CPU time of this thread in ns. */
static uint64_t
hsample_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Whether p is pid or one of its descendants known to the table. */
static int
hsample_under(struct hsample *h, const struct hproc *p, pid_t pid)
{
	int depth;

	for (depth = 0; p != NULL && depth < 64; depth++) {
		if (p->pid == pid)
			return 1;
		if (p->ppid <= 0 || p->ppid == p->pid)
			return 0;
		p = hprocs_get(h->procs, p->ppid);
	}
	return 0;
}

/* Reads a sample's Python frames as soon as it is seen (hsample.h). */
void
hsample_early(struct hsample *h, pid_t pid, pid_t tid, uint64_t time)
{
	struct hproc *p;

	if (h->python == NULL || pid <= 0 ||
	    (p = hprocs_known(h->procs, pid)) == NULL ||
	    (p->agent && !h->include_agent) ||
	    (h->only_pid > 0 && !hsample_under(h, p, h->only_pid)) ||
	    (h->only_exe != NULL && strcmp(hprocs_exe_name(p),
	    h->only_exe) != 0))
		return;		/* a sample hsample_take leaves out */
	hpython_early(h->python, p, tid, time);
}

/* Takes one sample (see hsample.h). */
void
hsample_take(struct hsample *h, const struct hperf_sample *s)
{
	uint64_t t0 = hsample_cpu_ns(), pcs[HSAMPLE_MAX_USER];
	uint64_t mixed[HSAMPLE_MAX_MIXED], *up = pcs;
	uint32_t locs[HSAMPLE_MAX_FRAMES], n = 0, nu = 0, i, kmap;
	enum hunwind_end end = HUNWIND_MAX_DEPTH;
	struct hproc *p;
	struct hgroup *g;
	const char *unit, *container;
	int64_t li;

	if (s->pid == 0) {
		h->stats.idle++;
		return;
	}
	if ((p = hprocs_get(h->procs, s->pid)) == NULL) {
		h->stats.unknown++;
		return;
	}
	if ((h->only_pid > 0 && !hsample_under(h, p, h->only_pid)) ||
	    (h->only_exe != NULL && strcmp(hprocs_exe_name(p),
	    h->only_exe) != 0)) {
		h->stats.filtered++;
		return;
	}
	if (p->agent && !h->include_agent) {
		h->stats.agent++;
		return;
	}
	unit = p->unit;
	container = p->container;
	g = hgroups_get(h->groups, hprocs_service(h->procs, p), unit,
	    container);
	if (s->nkips > 0) {
		kmap = hsample_kernel_map(h, g);
		for (i = 0; i < s->nkips && n < HSAMPLE_MAX_FRAMES; i++) {
			li = hsample_kernel_loc(h, g, kmap, i == 0 ?
			    s->kips[i] : s->kips[i] - 1);
			if (li < 0)
				goto full;
			locs[n++] = (uint32_t)li;
		}
	}
	if (s->user_regs) {
		nu = hunwind_walk(h->objs, p, h->own_mntns, s, pcs,
		    HSAMPLE_MAX_USER, &end);
		h->stats.ends[end]++;
		h->stats.frames += nu;
		if (h->python != NULL) {
			nu = hpython_mix(h->python, p, s, pcs, nu, mixed,
			    HSAMPLE_MAX_MIXED);
			up = mixed;
		}
		for (i = 0; i < nu && n < HSAMPLE_MAX_FRAMES; i++) {
			if (PYRT_IS_WORD(up[i]))
				li = hsample_python_loc(h, g, p, up[i]);
			else
				li = hsample_user_loc(h, g, p, i == 0 ? up[i] :
				    up[i] - 1);
			if (li == -2)
				goto full;
			if (li >= 0)
				locs[n++] = (uint32_t)li;
		}
	} else
		h->stats.kernel_only++;
	if (n > 0) {
		hgroups_sample(g, p->pid, hprocs_exe_name(p), locs, n);
		h->stats.taken++;
	}
	h->stats.spent_ns += hsample_cpu_ns() - t0;
	return;
full:
	/* The period's location tables are full: a stack with frames left
	 * out would be wrong, so the sample is counted and dropped. */
	g->dropped++;
	h->stats.spent_ns += hsample_cpu_ns() - t0;
}
