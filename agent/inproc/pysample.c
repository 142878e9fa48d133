/*
 * Python frames in the in-process agent's samples (see pysample.h).
 * The interpreter is published once (pysample_rt, then pysample_on set
 * with release order) and never changes, so the handler reads it without
 * a lock. Frame ids live for one window: an id indexes the window's table
 * of (name, file, line), interned by content, at most PYSAMPLE_MAX_IDS
 * (frames past it are left out and counted); the code object cache holds
 * at most PYSAMPLE_MAX_CODES objects (pycode.h).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "agent/core/elffile.h"
#include "agent/core/maps.h"
#include "agent/core/pycode.h"
#include "agent/inproc/pysample.h"
#include "common/strhash.h"
#include "common/xmalloc.h"

#define PYSAMPLE_MAX_IDS	65536
#define PYSAMPLE_MAX_CODES	16384
#define PYSAMPLE_MAX_MIXED	128

/* A frame id's meaning. */
struct pysample_id {
	char		*name, *file;
	int		 line;
	uint64_t	 hash;
};

static struct pyrt	 pysample_rt;
static _Atomic int	 pysample_on;
static int		 pysample_done;		/* found, or given up */
static char		 pysample_msg[256];
static struct pycode	*pysample_codes;
static struct pysample_id *pysample_ids;
static size_t		 pysample_nids, pysample_ids_cap;
static uint32_t		*pysample_index;	/* id + 1; 0 empty */
static size_t		 pysample_index_size;
static uint64_t		 pysample_unnamed;	/* frames left out */
static __thread uint64_t pysample_ts __attribute__((tls_model("initial-exec")));

/* Reads this process's memory; a bad address is -1, not a fault. */
static int
pysample_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)addr, len };

	(void)ctx;
	return syscall(SYS_process_vm_readv, (long)syscall(SYS_getpid),
	    &local, 1UL, &remote, 1UL, 0UL) == (long)len ? 0 : -1;
}

/* Whether a mapping's path may be CPython's (executable or library). */
static int
pysample_is_python(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b != NULL ? b + 1 : path;
	return strncmp(b, "python", 6) == 0 || strncmp(b, "libpython", 9) == 0;
}

/* Tries the object of mapping m: 1 found (or refused, with a message),
 * 0 not CPython. */
static int
pysample_try(const struct maps_entry *m)
{
	struct pyrt_syms syms;
	struct elffile_phdrs ph;
	struct pyrt rt;
	const char *why = NULL;
	char ver[8];
	uint64_t mv = 0, probe;
	size_t size;
	void *base;
	int found;

	if ((base = elffile_map(m->path, &size, NULL)) == NULL)
		return 0;
	memset(&ph, 0, sizeof ph);
	found = pyrt_syms(base, size, &syms) == 0 &&
	    elffile_phdrs(base, size, 0, &ph, NULL) == 0 &&
	    elffile_offset_to_vaddr(ph.loads, ph.nloads, m->offset, &mv) == 0;
	free(ph.loads);
	munmap(base, size);
	if (!found)
		return 0;
	if (pysample_read(NULL, m->start, &probe, sizeof probe) != 0) {
		snprintf(pysample_msg, sizeof pysample_msg, "Python frames "
		    "off: process_vm_readv on this process fails (a seccomp "
		    "filter?); stacks stay native");
		return 1;
	}
	if (pyrt_init(&rt, &syms, m->start - mv, pysample_read, NULL,
	    &why) != 0) {
		snprintf(pysample_msg, sizeof pysample_msg, "Python frames "
		    "off: %s is CPython, but %s; stacks stay native", m->path,
		    why);
		return 1;
	}
	pysample_rt = rt;
	pysample_codes = pycode_new(PYSAMPLE_MAX_CODES);
	atomic_store_explicit(&pysample_on, 1, memory_order_release);
	pyrt_version_str(rt.version, ver, sizeof ver);
	snprintf(pysample_msg, sizeof pysample_msg, "Python frames on: "
	    "CPython %s in %s", ver, m->path);
	return 1;
}

/* Python frames off for good. */
void
pysample_disable(void)
{
	pysample_done = 1;
}

/* Finds the interpreter (see pysample.h). */
const char *
pysample_prepare(void)
{
	struct maps maps;
	size_t i, j;
	int dup;

	if (pysample_done)
		return NULL;
	if (maps_read("/proc/self/maps", &maps, NULL) != 0)
		return NULL;
	for (i = 0; i < maps.n && !pysample_done; i++) {
		if (!pysample_is_python(maps.v[i].path))
			continue;
		for (j = dup = 0; j < i && !dup; j++)
			dup = strcmp(maps.v[j].path, maps.v[i].path) == 0;
		if (!dup)
			pysample_done = pysample_try(&maps.v[i]);
	}
	maps_clear(&maps);
	return pysample_done ? pysample_msg : NULL;
}

/* The calling thread's frames (see pysample.h). */
uint32_t
pysample_record(uint64_t *words, uint64_t *entries)
{
	uint64_t tid, ts;

	*entries = 0;
	if (!atomic_load_explicit(&pysample_on, memory_order_acquire))
		return 0;
	tid = (uint64_t)syscall(SYS_gettid);
	ts = pyrt_tstate(&pysample_rt, pysample_read, NULL, pysample_ts, tid);
	if ((pysample_ts = ts) == 0)
		return 0;
	return pyrt_walk(&pysample_rt, pysample_read, NULL, ts, words,
	    PYRT_MAX_FRAMES, entries);
}

/* The id of (name, file, line), made if new; -1 when the table is full. */
static int64_t
pysample_intern(const struct pycode_frame *f)
{
	uint64_t h = strhash_str(strhash_str(STRHASH_INIT, f->name) * 31,
	    f->file) ^ ((uint64_t)(uint32_t)f->line * 0x9e3779b97f4a7c15ULL);
	struct pysample_id *e;
	uint32_t *old;
	size_t i, j, oldsize;

	if (pysample_nids * 2 >= pysample_index_size) {
		if (pysample_nids >= PYSAMPLE_MAX_IDS)
			goto find;
		old = pysample_index;
		oldsize = pysample_index_size;
		pysample_index_size = oldsize ? oldsize * 2 : 1024;
		pysample_index = xcalloc(pysample_index_size, sizeof *old);
		for (i = 0; i < oldsize; i++) {
			if (old[i] == 0)
				continue;
			j = pysample_ids[old[i] - 1].hash &
			    (pysample_index_size - 1);
			while (pysample_index[j] != 0)
				j = (j + 1) & (pysample_index_size - 1);
			pysample_index[j] = old[i];
		}
		free(old);
	}
find:
	for (j = h & (pysample_index_size - 1); pysample_index[j] != 0;
	    j = (j + 1) & (pysample_index_size - 1)) {
		e = &pysample_ids[pysample_index[j] - 1];
		if (e->hash == h && e->line == f->line &&
		    strcmp(e->name, f->name) == 0 &&
		    strcmp(e->file, f->file) == 0)
			return pysample_index[j] - 1;
	}
	if (pysample_nids >= PYSAMPLE_MAX_IDS)
		return -1;
	if (pysample_nids == pysample_ids_cap) {
		pysample_ids_cap = pysample_ids_cap ? pysample_ids_cap * 2 : 256;
		pysample_ids = xreallocarray(pysample_ids, pysample_ids_cap,
		    sizeof *pysample_ids);
	}
	e = &pysample_ids[pysample_nids];
	e->name = xstrdup(f->name);
	e->file = xstrdup(f->file);
	e->line = f->line;
	e->hash = h;
	pysample_index[j] = (uint32_t)++pysample_nids;
	return (int64_t)pysample_nids - 1;
}

/* Mixes and names a sample's frames (see pysample.h). */
uint32_t
pysample_mix(const uintptr_t *pcs, uint32_t n, const uint64_t *words,
    uint32_t nwords, uint64_t entries, uintptr_t *out, uint32_t max)
{
	uint64_t mixed[PYSAMPLE_MAX_MIXED];
	struct pycode_frame f;
	uint32_t i, k = 0, nm;
	int64_t id;

	if (nwords == 0 || !atomic_load(&pysample_on)) {
		for (i = 0; i < n && i < max; i++)
			out[i] = pcs[i];
		return i;
	}
	if (max > PYSAMPLE_MAX_MIXED)
		max = PYSAMPLE_MAX_MIXED;
	nm = pyrt_mix(&pysample_rt, (const uint64_t *)pcs, n, words, nwords,
	    entries, 0, mixed, max);
	for (i = 0; i < nm; i++) {
		if (!PYRT_IS_WORD(mixed[i])) {
			out[k++] = (uintptr_t)mixed[i];
			continue;
		}
		if (pycode_name(pysample_codes, &pysample_rt, pysample_read,
		    NULL, 0, mixed[i], &f) != 0 ||
		    (id = pysample_intern(&f)) < 0) {
			pysample_unnamed++;
			continue;
		}
		out[k++] = (uintptr_t)((1ULL << 63) | (uint64_t)id);
	}
	return k;
}

/* Names a frame id for build.c. */
int
pysample_frame(void *ctx, uint64_t w, const char **name, const char **file,
    int64_t *line)
{
	uint64_t id = w & ((1ULL << 62) - 1);

	(void)ctx;
	if (!PYRT_IS_WORD(w) || id >= pysample_nids)
		return -1;
	*name = pysample_ids[id].name;
	*file = pysample_ids[id].file;
	*line = pysample_ids[id].line;
	return 0;
}

/* Frees the window's frame ids; code objects are checked again. */
void
pysample_window_done(void)
{
	size_t i;

	for (i = 0; i < pysample_nids; i++) {
		free(pysample_ids[i].name);
		free(pysample_ids[i].file);
	}
	pysample_nids = 0;
	if (pysample_index != NULL)
		memset(pysample_index, 0, pysample_index_size *
		    sizeof *pysample_index);
}

/* A drain begins: each code object is checked again on its next use. */
void
pysample_drain_begin(void)
{
	if (pysample_codes != NULL)
		pycode_tick(pysample_codes);
}

/* Frames left out since start. */
uint64_t
pysample_unnamed_frames(void)
{
	return pysample_unnamed;
}
