/*
 * pprof profile builder, run on the agent thread at the end of a window.
 *
 * Each distinct pc becomes a Location (return addresses are moved back by
 * one byte so they fall inside the call instruction, as pprof expects),
 * attached to the /proc/self/maps mapping that contains it. The function
 * name comes from the ELF .symtab/.dynsym of the mapped file, read by
 * symtab.c; opened files are cached across windows, keyed by path, and the
 * vDSO is read from memory. Only mappings that some location uses are
 * written, the main executable first (pprof treats mapping 1 as the
 * program). The result is packed with the protobuf-c code generated from
 * proto/profile.proto and gzipped with zlib.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "profile.pb-c.h"

#include "agent/core/build.h"
#include "agent/core/maps.h"
#include "agent/core/perfmap.h"
#include "agent/core/pyrt.h"
#include "agent/core/symtab.h"
#include "common/strhash.h"
#include "common/xmalloc.h"

/* One opened ELF file (or a failed attempt, st == NULL). */
struct build_file {
	char		*path;
	struct symtab	*st;
};

/* A build_fix_leaf verdict: the target of the call ending at link. */
struct build_link {
	uint64_t	link;
	uint64_t	target;		/* 0: no direct call there */
};

#define BUILD_LINKS		4096	/* direct-mapped, a power of two */
#define BUILD_MAPS_MAX_AGE	10	/* s between unforced maps re-reads */

struct build {
	struct build_file	*files;
	size_t			 nfiles;
	char			*maps_path;
	struct maps		 maps;		/* cached mappings */
	struct timespec		 maps_when;
	struct build_link	*links;		/* cached call targets */
	char			*exe;		/* /proc/self/exe, or NULL */
	int			 exe_read;
	struct perfmap		*jit;		/* /tmp/perf-PID.map */
	char			*jit_path;
	int64_t			 started;	/* this process, epoch s */
	build_namer_fn		*namer;		/* names frame words */
	void			*namer_ctx;
	const char		*namer_map;	/* their mapping's name */
};

/* u64 -> u32 open-addressing map (value + 1 stored, 0 is empty). */
struct build_map {
	uint64_t	*keys;
	uint32_t	*vals;
	size_t		 size;
	size_t		 n;
};

/* Interned strings; the pointers are not owned. */
struct build_strings {
	const char		**v;
	size_t			  n, cap;
	uint32_t		 *index;
	size_t			  index_size;
};

#define BUILD_MAP_NAMER	(-2)	/* build_loc.map of a frame word */

struct build_loc {
	uint64_t	addr;
	int		map;		/* index into maps, -1 none, or
					   BUILD_MAP_NAMER */
	int64_t		func;		/* index into funcs, or -1 */
	int64_t		line;		/* frame words: their line */
};

struct build_func {
	int64_t		name;		/* string index */
	int64_t		file;		/* string index */
};

/* New empty cache. */
struct build *
build_new(void)
{
	struct build *b = xcalloc(1, sizeof *b);

	b->maps_path = xstrdup("/proc/self/maps");
	return b;
}

/* Frees the cache and every opened file. */
void
build_free(struct build *b)
{
	size_t i;

	if (b == NULL)
		return;
	for (i = 0; i < b->nfiles; i++) {
		free(b->files[i].path);
		symtab_free(b->files[i].st);
	}
	free(b->files);
	free(b->maps_path);
	maps_clear(&b->maps);
	free(b->links);
	free(b->exe);
	perfmap_free(b->jit);
	free(b->jit_path);
	free(b);
}

/* Names frame words (PYRT_IS_WORD) with fn, under a mapping named map. */
void
build_set_namer(struct build *b, build_namer_fn *fn, void *ctx,
    const char *map)
{
	b->namer = fn;
	b->namer_ctx = ctx;
	b->namer_map = map;
}

/* Overrides the maps file (tests). */
void
build_set_maps_path(struct build *b, const char *path)
{
	free(b->maps_path);
	b->maps_path = xstrdup(path);
}

/* The cached symtab of a mapping's file (opened on first use). */
static struct symtab *
build_symtab(struct build *b, const struct maps_entry *m, size_t *slot)
{
	struct symtab *st = NULL;
	unsigned long vdso;
	size_t i, len = strlen(m->path);

	for (i = 0; i < b->nfiles; i++) {
		if (strcmp(b->files[i].path, m->path) == 0) {
			*slot = i;
			return b->files[i].st;
		}
	}
	if (strcmp(m->path, "[vdso]") == 0) {
		vdso = getauxval(AT_SYSINFO_EHDR);
		if (vdso != 0 && vdso == m->start)
			st = symtab_open_mem((const void *)vdso,
			    m->limit - m->start, NULL);
	} else if (m->path[0] == '/' && (len < 10 ||
	    strcmp(m->path + len - 10, " (deleted)") != 0))
		st = symtab_open(m->path, NULL);
	b->files = xreallocarray(b->files, b->nfiles + 1, sizeof *b->files);
	b->files[b->nfiles].path = xstrdup(m->path);
	b->files[b->nfiles].st = st;
	*slot = b->nfiles++;
	return st;
}

/*
 * Re-reads the cached maps. Mappings may have changed (dlclose, dlopen),
 * so the call targets cached from the old ones are forgotten.
 */
static int
build_read_maps(struct build *b, const struct timespec *now, char **cause)
{
	struct maps m;

	if (maps_read(b->maps_path, &m, cause) != 0)
		return -1;
	maps_carry(&m, &b->maps);
	maps_clear(&b->maps);
	b->maps = m;
	b->maps_when = *now;
	if (b->links != NULL)
		memset(b->links, 0, BUILD_LINKS * sizeof *b->links);
	return 0;
}

/* The mapping of addr from the cached maps, re-read at most once a second. */
static const struct maps_entry *
build_cached_map(struct build *b, uint64_t addr)
{
	const struct maps_entry *me = maps_find(&b->maps, addr);
	struct timespec now;

	if (me != NULL)
		return me;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (b->maps.n > 0 && now.tv_sec - b->maps_when.tv_sec < 1)
		return NULL;
	if (build_read_maps(b, &now, NULL) != 0)
		return NULL;
	return maps_find(&b->maps, addr);
}

/* Mixes a 64-bit key (hash tables and the call target cache). */
static uint64_t
build_mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return k;
}

/* Runtime start of the function holding pc, or 0. */
static uint64_t
build_func_start(struct build *b, uint64_t pc)
{
	const struct maps_entry *me = build_cached_map(b, pc);
	struct symtab *st;
	uint64_t vaddr;
	size_t slot, sym;

	if (me == NULL || (st = build_symtab(b, me, &slot)) == NULL ||
	    symtab_offset_to_vaddr(st, pc - me->start + me->offset,
	    &vaddr) != 0 || symtab_lookup(st, vaddr, &sym) == NULL)
		return 0;
	return pc - (vaddr - symtab_symbol_addr(st, sym));
}

/* The target of a direct call ending at link, or 0; read from memory. */
static uint64_t
build_call_target(uintptr_t link)
{
	struct iovec local, remote;
	uint8_t insn[5];
	int32_t rel;

	/* Read the call instruction through the kernel: never faults. */
	local.iov_base = insn;
	local.iov_len = sizeof insn;
	remote.iov_base = (void *)(link - sizeof insn);
	remote.iov_len = sizeof insn;
	if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) !=
	    (ssize_t)sizeof insn)
		return 0;
#if defined(__x86_64__)
	if (insn[0] != 0xe8)		/* call rel32 */
		return 0;
	memcpy(&rel, insn + 1, sizeof rel);
	return (uint64_t)link + (uint64_t)(int64_t)rel;
#elif defined(__aarch64__)
	{
		uint32_t bl;

		memcpy(&bl, insn + 1, sizeof bl);
		if ((bl & 0xfc000000U) != 0x94000000U)	/* bl imm26 */
			return 0;
		rel = (int32_t)(bl << 6) >> 6;
		return (uint64_t)link - 4 + (uint64_t)((int64_t)rel * 4);
	}
#else
	(void)rel;
	return 0;
#endif
}

/*
 * The call target at link, cached: code does not change while its mapping
 * stays (the cache is emptied when the maps are re-read).
 */
static uint64_t
build_cached_target(struct build *b, uintptr_t link)
{
	struct build_link *e;

	if (b->links == NULL)
		b->links = xcalloc(BUILD_LINKS, sizeof *b->links);
	e = &b->links[build_mix(link) & (BUILD_LINKS - 1)];
	if (e->link != link) {
		e->link = link;
		e->target = build_call_target(link);
	}
	return e->target;
}

/* Inserts the caller of a frameless leaf (see build.h). */
uint32_t
build_fix_leaf(struct build *b, uintptr_t *pcs, uint32_t n, uint32_t max,
    uintptr_t link)
{
	uint64_t start, target;

	if (n == 0 || n >= max || link < 4096 || (n >= 2 && pcs[1] == link))
		return n;
	if (build_cached_map(b, link) == NULL ||
	    (start = build_func_start(b, pcs[0])) == 0)
		return n;
	target = build_cached_target(b, link);
	if (target == 0 || target != start)
		return n;
	memmove(pcs + 2, pcs + 1, (n - 1) * sizeof *pcs);
	pcs[1] = link;
	return n + 1;
}

/* Finds key; returns its value or -1. With insert, adds it as val. */
static int64_t
build_map_get(struct build_map *m, uint64_t key, int insert, uint32_t val)
{
	size_t j, i, size;
	uint64_t *ok;
	uint32_t *ov;

	if (insert && (m->n + 1) * 2 > m->size) {
		ok = m->keys;
		ov = m->vals;
		size = m->size;
		m->size = size ? size * 2 : 1024;
		m->keys = xcalloc(m->size, sizeof *m->keys);
		m->vals = xcalloc(m->size, sizeof *m->vals);
		for (i = 0; i < size; i++) {
			if (ov[i] == 0)
				continue;
			j = build_mix(ok[i]) & (m->size - 1);
			while (m->vals[j] != 0)
				j = (j + 1) & (m->size - 1);
			m->keys[j] = ok[i];
			m->vals[j] = ov[i];
		}
		free(ok);
		free(ov);
	}
	if (m->size == 0)
		return -1;
	j = build_mix(key) & (m->size - 1);
	while (m->vals[j] != 0) {
		if (m->keys[j] == key)
			return m->vals[j] - 1;
		j = (j + 1) & (m->size - 1);
	}
	if (!insert)
		return -1;
	m->keys[j] = key;
	m->vals[j] = val + 1;
	m->n++;
	return -1;
}

/* Frees a map. */
static void
build_map_free(struct build_map *m)
{
	free(m->keys);
	free(m->vals);
}

/* Interns s (not copied; must outlive the build); returns its index. */
static int64_t
build_str(struct build_strings *t, const char *s)
{
	size_t j, i;

	if ((t->n + 1) * 2 > t->index_size) {
		free(t->index);
		t->index_size = t->index_size ? t->index_size * 2 : 1024;
		t->index = xcalloc(t->index_size, sizeof *t->index);
		for (i = 0; i < t->n; i++) {
			j = strhash_str(STRHASH_INIT, t->v[i]) &
			    (t->index_size - 1);
			while (t->index[j] != 0)
				j = (j + 1) & (t->index_size - 1);
			t->index[j] = (uint32_t)(i + 1);
		}
	}
	j = strhash_str(STRHASH_INIT, s) & (t->index_size - 1);
	while (t->index[j] != 0) {
		if (strcmp(t->v[t->index[j] - 1], s) == 0)
			return t->index[j] - 1;
		j = (j + 1) & (t->index_size - 1);
	}
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 256;
		t->v = xreallocarray(t->v, t->cap, sizeof *t->v);
	}
	t->v[t->n] = s;
	t->index[j] = (uint32_t)(t->n + 1);
	return (int64_t)t->n++;
}

/*
 * Gzips a buffer with zlib (gzip wrapper, level 1: a profile's tables
 * compress well at any level, and the fastest costs the profiled process
 * least; Go's runtime/pprof writes its profiles at gzip.BestSpeed too).
 */
int
build_gzip(const uint8_t *in, size_t len, uint8_t **out, size_t *outlen,
    char **cause)
{
	z_stream zs;
	size_t cap;
	uint8_t *buf;
	int rc;

	memset(&zs, 0, sizeof zs);
	if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8,
	    Z_DEFAULT_STRATEGY) != Z_OK)
		return xcause(cause, "deflateInit2 failed");
	cap = deflateBound(&zs, len) + 64;
	buf = xmalloc(cap);
	zs.next_in = (Bytef *)(uintptr_t)in;
	zs.avail_in = (uInt)len;
	zs.next_out = buf;
	zs.avail_out = (uInt)cap;
	rc = deflate(&zs, Z_FINISH);
	deflateEnd(&zs);
	if (rc != Z_STREAM_END) {
		free(buf);
		return xcause(cause, "deflate failed (%d)", rc);
	}
	*out = buf;
	*outlen = zs.total_out;
	return 0;
}

/* The tables of one profile while it is built (build_profile's phases). */
struct build_prof {
	struct build			*b;
	const struct stacks		*s;
	int				 all_ra;	/* frame 0 too is a
							   return address */
	struct build_strings		 strs;
	struct build_map		 locmap;	/* pc -> location */
	struct build_map		 fnmap;		/* symbol -> function */
	struct build_loc		*locs;
	size_t				 nlocs;
	struct build_func		*funcs;
	size_t				 nfuncs;
	uint64_t			*locids;	/* per pc of s */
	uint64_t			*mapid;		/* per mapping: id + 1 */
	int				 named;		/* frame words met */
	int				 jit_read;	/* perf map refreshed */
	uint64_t			 named_mapid;	/* their mapping's id */
	Perftools__Profiles__Mapping	*mp, **mpp;
	size_t				 nmaps;
	Perftools__Profiles__Location	*loc, **locp;
	Perftools__Profiles__Line	*line, **linep;
	Perftools__Profiles__Function	*fn, **fnp;
	Perftools__Profiles__Sample	*samp, **sampp;
	int64_t				*vals;
	Perftools__Profiles__Label	*lab, **labp;
};

/*
 * Mappings: the cached ones, re-read when some pc falls outside them (a
 * library was loaded) or they are older than BUILD_MAPS_MAX_AGE seconds,
 * so steady state reads no /proc file. Also reads the executable's path
 * once (it does not change while we run).
 */
static int
build_refresh_maps(struct build *b, const struct stacks *s, char **cause)
{
	struct timespec now;
	char exe[PATH_MAX];
	uint64_t addr;
	size_t i, j;
	ssize_t r;
	int stale;

	clock_gettime(CLOCK_MONOTONIC, &now);
	stale = b->maps.n == 0 ||
	    now.tv_sec - b->maps_when.tv_sec >= BUILD_MAPS_MAX_AGE;
	for (i = 0; i < s->n && !stale; i++) {
		for (j = 0; j < s->v[i].n && !stale; j++) {
			addr = s->pcs[s->v[i].off + j];
			if (PYRT_IS_WORD(addr))
				continue;
			if (j > 0 && addr > 0)
				addr--;
			stale = maps_find(&b->maps, addr) == NULL;
		}
	}
	if (stale && build_read_maps(b, &now, cause) != 0)
		return -1;
	if (!b->exe_read) {
		if ((r = readlink("/proc/self/exe", exe, sizeof exe - 1)) > 0) {
			exe[r] = '\0';
			b->exe = xstrdup(exe);
		}
		b->exe_read = 1;
	}
	return 0;
}

/* Locations: one per distinct (adjusted) pc, with its mapping. */
static void
build_prof_locations(struct build_prof *bp)
{
	const struct stacks *s = bp->s;
	const struct maps *mapsp = &bp->b->maps;
	const struct maps_entry *me;
	size_t i, j, nframes = s->npcs ? s->npcs : 1;
	uint64_t addr;
	int64_t li;

	bp->locs = xcalloc(nframes, sizeof *bp->locs);
	bp->funcs = xcalloc(nframes, sizeof *bp->funcs);
	bp->locids = xcalloc(nframes, sizeof *bp->locids);
	for (i = 0; i < s->n; i++) {
		for (j = 0; j < s->v[i].n; j++) {
			addr = s->pcs[s->v[i].off + j];
			if ((j > 0 || bp->all_ra) && addr > 0 &&
			    !PYRT_IS_WORD(addr))
				addr--;
			li = build_map_get(&bp->locmap, addr, 0, 0);
			if (li < 0) {
				li = (int64_t)bp->nlocs++;
				build_map_get(&bp->locmap, addr, 1, (uint32_t)li);
				bp->locs[li].addr = addr;
				bp->locs[li].map = -1;
				bp->locs[li].func = -1;
				if (PYRT_IS_WORD(addr))
					bp->locs[li].map = BUILD_MAP_NAMER;
				else if ((me = maps_find(mapsp, addr)) != NULL)
					bp->locs[li].map = (int)(me - mapsp->v);
			}
			bp->locids[s->v[i].off + j] = (uint64_t)li + 1;
		}
	}
}

/* The function and line of a frame word's location, from the namer. */
static void
build_prof_named(struct build_prof *bp, struct build_loc *l)
{
	const char *name, *file;
	uint64_t key;
	int64_t li, ni, fi, line;

	if (bp->b->namer == NULL || bp->b->namer(bp->b->namer_ctx, l->addr,
	    &name, &file, &line) != 0)
		return;
	ni = build_str(&bp->strs, name);
	fi = build_str(&bp->strs, file);
	key = (1ULL << 63) | ((uint64_t)ni << 31) | (uint64_t)fi;
	li = build_map_get(&bp->fnmap, key, 0, 0);
	if (li < 0) {
		li = (int64_t)bp->nfuncs++;
		build_map_get(&bp->fnmap, key, 1, (uint32_t)li);
		bp->funcs[li].name = ni;
		bp->funcs[li].file = fi;
	}
	l->func = li;
	l->line = line;
	bp->named = 1;
}

/*
 * The function of a location in anonymous executable memory: JIT code
 * named by the process's perf map (read again, what it gained, once a
 * profile), or none (never a neighbouring symbol's name).
 */
static void
build_prof_jit(struct build_prof *bp, struct build_loc *l)
{
	struct build *b = bp->b;
	const char *name;
	uint64_t key;
	int64_t li, ni;

	if (!bp->jit_read) {
		bp->jit_read = 1;
		if (b->jit == NULL) {
			b->jit = perfmap_new();
			b->jit_path = xasprintf("/tmp/perf-%d.map", (int)getpid());
			b->started = perfmap_process_start(0);
		}
		(void)perfmap_refresh(b->jit, b->jit_path, b->started);
	}
	if ((name = perfmap_lookup(b->jit, l->addr)) == NULL)
		return;
	ni = build_str(&bp->strs, name);
	key = (3ULL << 62) | (uint64_t)ni;
	li = build_map_get(&bp->fnmap, key, 0, 0);
	if (li < 0) {
		li = (int64_t)bp->nfuncs++;
		build_map_get(&bp->fnmap, key, 1, (uint32_t)li);
		bp->funcs[li].name = ni;
		bp->funcs[li].file = build_str(&bp->strs, b->jit_path);
	}
	l->func = li;
}

/* Functions: resolves each location in its file's symbol table. */
static void
build_prof_functions(struct build_prof *bp)
{
	const struct maps *mapsp = &bp->b->maps;
	const struct maps_entry *me;
	struct symtab *st;
	const char *name;
	uint64_t vaddr, key;
	size_t i, slot, sym;
	int64_t li;

	for (i = 0; i < bp->nlocs; i++) {
		if (bp->locs[i].map == BUILD_MAP_NAMER)
			build_prof_named(bp, &bp->locs[i]);
		if (bp->locs[i].map < 0)
			continue;
		me = &mapsp->v[bp->locs[i].map];
		if (me->path[0] == '\0') {
			build_prof_jit(bp, &bp->locs[i]);
			continue;
		}
		if ((st = build_symtab(bp->b, me, &slot)) == NULL ||
		    symtab_offset_to_vaddr(st, bp->locs[i].addr - me->start +
		    me->offset, &vaddr) != 0 ||
		    (name = symtab_lookup(st, vaddr, &sym)) == NULL)
			continue;
		key = ((uint64_t)slot << 40) | sym;
		li = build_map_get(&bp->fnmap, key, 0, 0);
		if (li < 0) {
			li = (int64_t)bp->nfuncs++;
			build_map_get(&bp->fnmap, key, 1, (uint32_t)li);
			bp->funcs[li].name = build_str(&bp->strs, name);
			bp->funcs[li].file = build_str(&bp->strs, me->path);
		}
		bp->locs[i].func = li;
	}
}

/* Mappings: those in use and the executable's, which is first (pprof's
 * mapping 1). */
static void
build_prof_mappings(struct build_prof *bp)
{
	const struct maps *mapsp = &bp->b->maps;
	const char *exe_path = bp->b->exe;
	Perftools__Profiles__Mapping *m;
	size_t i, k, slot, n = mapsp->n ? mapsp->n : 1;
	struct symtab *st;
	int is_exe;

	bp->mapid = xcalloc(n, sizeof *bp->mapid);
	for (i = 0; i < bp->nlocs; i++) {
		if (bp->locs[i].map >= 0)
			bp->mapid[bp->locs[i].map] = 1;
	}
	/* The main executable is always there, sampled or not. */
	for (i = 0; exe_path != NULL && i < mapsp->n; i++) {
		if (strcmp(mapsp->v[i].path, exe_path) == 0) {
			bp->mapid[i] = 1;
			break;
		}
	}
	bp->mp = xcalloc(n + 1, sizeof *bp->mp);
	bp->mpp = xcalloc(n + 1, sizeof *bp->mpp);
	for (k = 0; k < 2; k++) {
		for (i = 0; i < mapsp->n; i++) {
			if (bp->mapid[i] != 1)
				continue;
			is_exe = exe_path != NULL &&
			    strcmp(mapsp->v[i].path, exe_path) == 0;
			if (is_exe != (k == 0))
				continue;
			m = &bp->mp[bp->nmaps];
			perftools__profiles__mapping__init(m);
			m->id = bp->nmaps + 1;
			m->memory_start = mapsp->v[i].start;
			m->memory_limit = mapsp->v[i].limit;
			m->file_offset = mapsp->v[i].offset;
			m->filename = build_str(&bp->strs, mapsp->v[i].path);
			st = build_symtab(bp->b, &mapsp->v[i], &slot);
			if (st != NULL) {
				m->build_id = build_str(&bp->strs,
				    symtab_build_id(st));
				m->has_functions = symtab_count(st) > 0;
			}
			bp->mpp[bp->nmaps] = m;
			bp->mapid[i] = ++bp->nmaps + 1;	/* id + 1 */
		}
	}
	if (bp->named) {
		/* The namer's frames: functions, no addresses. */
		m = &bp->mp[bp->nmaps];
		perftools__profiles__mapping__init(m);
		m->id = bp->nmaps + 1;
		m->filename = build_str(&bp->strs, bp->b->namer_map);
		m->has_functions = 1;
		m->has_filenames = 1;
		m->has_line_numbers = 1;
		bp->mpp[bp->nmaps++] = m;
		bp->named_mapid = m->id;
	}
}

/* The Location, Line and Function messages from the tables. */
static void
build_prof_messages(struct build_prof *bp)
{
	size_t i, nl = bp->nlocs ? bp->nlocs : 1;
	size_t nf = bp->nfuncs ? bp->nfuncs : 1;

	bp->loc = xcalloc(nl, sizeof *bp->loc);
	bp->locp = xcalloc(nl, sizeof *bp->locp);
	bp->line = xcalloc(nl, sizeof *bp->line);
	bp->linep = xcalloc(nl, sizeof *bp->linep);
	for (i = 0; i < bp->nlocs; i++) {
		perftools__profiles__location__init(&bp->loc[i]);
		bp->loc[i].id = i + 1;
		bp->loc[i].address = bp->locs[i].addr;
		if (bp->locs[i].map >= 0)
			bp->loc[i].mapping_id = bp->mapid[bp->locs[i].map] - 1;
		else if (bp->locs[i].map == BUILD_MAP_NAMER) {
			bp->loc[i].address = 0;
			bp->loc[i].mapping_id = bp->named_mapid;
		}
		if (bp->locs[i].func >= 0) {
			perftools__profiles__line__init(&bp->line[i]);
			bp->line[i].function_id = (uint64_t)bp->locs[i].func + 1;
			bp->line[i].line = bp->locs[i].line;
			bp->linep[i] = &bp->line[i];
			bp->loc[i].n_line = 1;
			bp->loc[i].line = &bp->linep[i];
		}
		bp->locp[i] = &bp->loc[i];
	}
	bp->fn = xcalloc(nf, sizeof *bp->fn);
	bp->fnp = xcalloc(nf, sizeof *bp->fnp);
	for (i = 0; i < bp->nfuncs; i++) {
		perftools__profiles__function__init(&bp->fn[i]);
		bp->fn[i].id = i + 1;
		bp->fn[i].name = bp->funcs[i].name;
		bp->fn[i].system_name = bp->funcs[i].name;
		bp->fn[i].filename = bp->funcs[i].file;
		bp->fnp[i] = &bp->fn[i];
	}
}

/* The Sample messages: a count and CPU time per distinct stack. */
static void
build_prof_samples(struct build_prof *bp, int hz)
{
	const struct stacks *s = bp->s;
	size_t i, n = s->n ? s->n : 1;

	bp->samp = xcalloc(n, sizeof *bp->samp);
	bp->sampp = xcalloc(n, sizeof *bp->sampp);
	bp->vals = xcalloc(2 * n, sizeof *bp->vals);
	for (i = 0; i < s->n; i++) {
		perftools__profiles__sample__init(&bp->samp[i]);
		bp->samp[i].n_location_id = s->v[i].n;
		bp->samp[i].location_id = bp->locids + s->v[i].off;
		bp->vals[2 * i] = s->v[i].count;
		bp->vals[2 * i + 1] = s->v[i].count * (1000000000LL / hz);
		bp->samp[i].n_value = 2;
		bp->samp[i].value = &bp->vals[2 * i];
		bp->sampp[i] = &bp->samp[i];
	}
}

/*
 * The Sample messages of a profile of given values (v->ntypes per
 * entry), with the numeric label "bytes" where v has one.
 */
static void
build_prof_samples_values(struct build_prof *bp,
    const struct build_values *v)
{
	const struct stacks *s = bp->s;
	size_t i, n = s->n ? s->n : 1;

	bp->samp = xcalloc(n, sizeof *bp->samp);
	bp->sampp = xcalloc(n, sizeof *bp->sampp);
	bp->lab = xcalloc(n, sizeof *bp->lab);
	bp->labp = xcalloc(n, sizeof *bp->labp);
	for (i = 0; i < s->n; i++) {
		perftools__profiles__sample__init(&bp->samp[i]);
		bp->samp[i].n_location_id = s->v[i].n;
		bp->samp[i].location_id = bp->locids + s->v[i].off;
		bp->samp[i].n_value = v->ntypes;
		bp->samp[i].value = (int64_t *)(uintptr_t)(v->vals +
		    i * v->ntypes);
		if (v->bytes != NULL) {
			perftools__profiles__label__init(&bp->lab[i]);
			bp->lab[i].key = build_str(&bp->strs, "bytes");
			bp->lab[i].num = v->bytes[i];
			bp->labp[i] = &bp->lab[i];
			bp->samp[i].n_label = 1;
			bp->samp[i].label = &bp->labp[i];
		}
		bp->sampp[i] = &bp->samp[i];
	}
}

/* Assembles the Profile message, packs and gzips it (v NULL: CPU). */
static int
build_prof_pack(struct build_prof *bp, const struct build_window *w,
    const struct build_values *v, uint8_t **out, size_t *outlen,
    char **cause)
{
	Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType vt[BUILD_MAX_TYPES + 1];
	Perftools__Profiles__ValueType *vtp[BUILD_MAX_TYPES];
	char comment[192];
	int64_t comment_idx;
	uint8_t *raw;
	size_t i, rawlen, nt = v != NULL ? v->ntypes : 2;
	int ret;

	for (i = 0; i <= BUILD_MAX_TYPES; i++)
		perftools__profiles__value_type__init(&vt[i]);
	if (v == NULL) {
		vt[0].type = build_str(&bp->strs, "samples");
		vt[0].unit = build_str(&bp->strs, "count");
		vt[1].type = build_str(&bp->strs, "cpu");
		vt[1].unit = build_str(&bp->strs, "nanoseconds");
		vt[BUILD_MAX_TYPES] = vt[1];
		snprintf(comment, sizeof comment, "profd-agent: %d Hz, %"
		    PRIu64 " samples dropped (ring full), %" PRIu64 " samples "
		    "lost (threads blocking the signal)", w->hz, w->drops,
		    w->lost);
	} else {
		for (i = 0; i < nt; i++) {
			vt[i].type = build_str(&bp->strs, v->types[i][0]);
			vt[i].unit = build_str(&bp->strs, v->types[i][1]);
		}
		vt[BUILD_MAX_TYPES].type = build_str(&bp->strs,
		    v->period_type[0]);
		vt[BUILD_MAX_TYPES].unit = build_str(&bp->strs,
		    v->period_type[1]);
		snprintf(comment, sizeof comment, "%s", v->comment);
	}
	for (i = 0; i < nt; i++)
		vtp[i] = &vt[i];
	comment_idx = build_str(&bp->strs, comment);

	p.n_sample_type = nt;
	p.sample_type = vtp;
	p.n_sample = bp->s->n;
	p.sample = bp->sampp;
	p.n_mapping = bp->nmaps;
	p.mapping = bp->mpp;
	p.n_location = bp->nlocs;
	p.location = bp->locp;
	p.n_function = bp->nfuncs;
	p.function = bp->fnp;
	p.n_string_table = bp->strs.n;
	p.string_table = (char **)(uintptr_t)bp->strs.v;
	p.time_nanos = w->time_nanos;
	p.duration_nanos = w->duration_nanos;
	p.period_type = &vt[BUILD_MAX_TYPES];
	p.period = v != NULL ? v->period : 1000000000LL / w->hz;
	p.n_comment = 1;
	p.comment = &comment_idx;
	p.default_sample_type = v != NULL ? build_str(&bp->strs,
	    v->default_type) : vt[1].type;

	rawlen = perftools__profiles__profile__get_packed_size(&p);
	raw = xmalloc(rawlen);
	perftools__profiles__profile__pack(&p, raw);
	ret = build_gzip(raw, rawlen, out, outlen, cause);
	free(raw);
	return ret;
}

/* Frees the tables of a profile being built. */
static void
build_prof_free(struct build_prof *bp)
{
	free(bp->samp);
	free(bp->sampp);
	free(bp->vals);
	free(bp->lab);
	free(bp->labp);
	free(bp->loc);
	free(bp->locp);
	free(bp->line);
	free(bp->linep);
	free(bp->fn);
	free(bp->fnp);
	free(bp->mp);
	free(bp->mpp);
	free(bp->mapid);
	free(bp->locs);
	free(bp->locids);
	free(bp->funcs);
	free(bp->strs.v);
	free(bp->strs.index);
	build_map_free(&bp->locmap);
	build_map_free(&bp->fnmap);
}

/* Builds a profile: CPU samples (v NULL) or v's values. */
static int
build_any(struct build *b, const struct stacks *s,
    const struct build_window *w, const struct build_values *v,
    uint8_t **out, size_t *outlen, char **cause)
{
	struct build_prof bp;
	int ret;

	if (build_refresh_maps(b, s, cause) != 0)
		return -1;
	memset(&bp, 0, sizeof bp);
	bp.b = b;
	bp.s = s;
	bp.all_ra = v != NULL && v->return_addresses;
	build_str(&bp.strs, "");
	build_prof_locations(&bp);
	build_prof_functions(&bp);
	build_prof_mappings(&bp);
	build_prof_messages(&bp);
	if (v == NULL)
		build_prof_samples(&bp, w->hz);
	else
		build_prof_samples_values(&bp, v);
	ret = build_prof_pack(&bp, w, v, out, outlen, cause);
	build_prof_free(&bp);
	return ret;
}

/* Builds, packs and gzips the profile of one window. */
int
build_profile(struct build *b, const struct stacks *s,
    const struct build_window *w, uint8_t **out, size_t *outlen,
    char **cause)
{
	return build_any(b, s, w, NULL, out, outlen, cause);
}

/* Builds, packs and gzips a profile of given values (see build.h). */
int
build_profile_values(struct build *b, const struct stacks *s,
    const struct build_window *w, const struct build_values *v,
    uint8_t **out, size_t *outlen, char **cause)
{
	if (v->ntypes == 0 || v->ntypes > BUILD_MAX_TYPES)
		return xcause(cause, "%zu sample types", v->ntypes);
	return build_any(b, s, w, v, out, outlen, cause);
}
