/*
 * Python frames for the host agent (see hpython.h). Per process: its pid,
 * the mapping its interpreter was found in (start and path, checked on
 * each use, so an exec or a reused pid is noticed), the interpreter, and
 * the thread states of the last threads sampled (a small direct-mapped
 * cache by tid). The code object cache is shared by all processes, keyed
 * by pid.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>

#include "agent/core/elffile.h"
#include "agent/host/hpython.h"
#include "common/xmalloc.h"

#define HPYTHON_TIDS		16	/* thread states cached a process */
#define HPYTHON_SAID		64	/* executables said to be unknown */
#define HPYTHON_STASH		1024	/* chains read early, a power of 2 */

enum hpython_state { HPYTHON_NONE, HPYTHON_ON };

struct hpython_proc {
	pid_t			 pid;		/* 0: empty slot */
	enum hpython_state	 state;
	size_t			 nmaps;		/* when looked at */
	uint64_t		 map_start;	/* the interpreter's mapping */
	char			*map_path;
	struct pyrt		 rt;
	pid_t			 tids[HPYTHON_TIDS];
	uint64_t		 tstates[HPYTHON_TIDS];
};

/* A thread's frame chain as read. */
struct hpython_chain {
	pid_t			 tid;		/* stash key: tid and time */
	uint64_t		 time;
	uint64_t		 read_ns;	/* when it was read */
	uint64_t		 ts;		/* the thread state */
	uint32_t		 nw;
	uint64_t		 entries;
	uint64_t		 words[PYRT_MAX_FRAMES];
	uint64_t		 frames[PYRT_MAX_FRAMES];
};

struct hpython {
	struct hpython_proc	*procs;		/* open addressing by pid */
	size_t			 nprocs;
	struct pycode		*codes;
	struct hpython_chain	*stash;		/* by sample (tid, time) */
	char			*said[HPYTHON_SAID];
	size_t			 nsaid;
	struct hpython_stats	 stats;
	uint64_t		 last_ns;	/* a CPython program sampled */
	int64_t			 checked_ms;	/* last pycode_tick */
};

#define HPYTHON_SLOTS	(HPYTHON_MAX_PROCS * 2)

struct hpython *
hpython_new(void)
{
	struct hpython *h = xcalloc(1, sizeof *h);

	h->procs = xcalloc(HPYTHON_SLOTS, sizeof *h->procs);
	h->codes = pycode_new(HPYTHON_MAX_CODES);
	h->stash = xcalloc(HPYTHON_STASH, sizeof *h->stash);
	return h;
}

/* Empties every process slot. */
static void
hpython_clear(struct hpython *h)
{
	size_t i;

	for (i = 0; i < HPYTHON_SLOTS; i++) {
		free(h->procs[i].map_path);
		memset(&h->procs[i], 0, sizeof h->procs[i]);
	}
	h->nprocs = 0;
}

void
hpython_free(struct hpython *h)
{
	size_t i;

	if (h == NULL)
		return;
	hpython_clear(h);
	free(h->procs);
	pycode_free(h->codes);
	free(h->stash);
	for (i = 0; i < h->nsaid; i++)
		free(h->said[i]);
	free(h);
}

/* Reads another process's memory (ctx: its pid). */
static int
hpython_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)addr, len };

	return process_vm_readv((pid_t)(intptr_t)ctx, &local, 1, &remote, 1,
	    0) == (ssize_t)len ? 0 : -1;
}

/* Whether a path may be CPython's executable or library. */
static int
hpython_is_python(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b != NULL ? b + 1 : path;
	return strncmp(b, "python", 6) == 0 || strncmp(b, "libpython", 9) == 0;
}

/* Says once per executable that its CPython is not one we know. */
static void
hpython_say(struct hpython *h, const char *path, const char *why)
{
	size_t i;

	for (i = 0; i < h->nsaid; i++)
		if (strcmp(h->said[i], path) == 0)
			return;
	if (h->nsaid < HPYTHON_SAID)
		h->said[h->nsaid++] = xstrdup(path);
	fprintf(stderr, "profd-hostagent: %s is CPython, but %s: its "
	    "programs keep native stacks\n", path, why);
}

/* Looks for the interpreter among p's mappings into e. */
static void
hpython_look(struct hpython *h, const struct hproc *p,
    struct hpython_proc *e)
{
	const struct hprocs_map *m;
	struct pyrt_syms syms;
	struct elffile_phdrs ph;
	const char *why;
	char *path;
	uint64_t mv;
	size_t i, size;
	void *base;
	int found;

	e->state = HPYTHON_NONE;
	e->nmaps = p->nmaps;
	for (i = 0; i < p->nmaps; i++) {
		m = &p->maps[i];
		if (!hpython_is_python(m->path) || (i > 0 &&
		    strcmp(p->maps[i - 1].path, m->path) == 0))
			continue;
		path = xasprintf("/proc/%d/root%s", (int)p->pid, m->path);
		base = elffile_map(path, &size, NULL);
		free(path);
		if (base == NULL)
			continue;
		memset(&ph, 0, sizeof ph);
		found = pyrt_syms(base, size, &syms) == 0 &&
		    elffile_phdrs(base, size, 0, &ph, NULL) == 0 &&
		    elffile_offset_to_vaddr(ph.loads, ph.nloads, m->pgoff,
		    &mv) == 0;
		free(ph.loads);
		munmap(base, size);
		if (!found)
			continue;
		if (pyrt_init(&e->rt, &syms, m->start - mv, hpython_read,
		    (void *)(intptr_t)p->pid, &why) != 0) {
			hpython_say(h, m->path, why);
			return;
		}
		e->state = HPYTHON_ON;
		e->map_start = m->start;
		e->map_path = xstrdup(m->path);
		h->stats.processes++;
		return;
	}
}

/* The entry of p, looked at when new or when p's mappings changed. */
static struct hpython_proc *
hpython_proc(struct hpython *h, const struct hproc *p)
{
	struct hpython_proc *e;
	const struct hprocs_map *m;
	size_t j = ((size_t)p->pid * 0x9e3779b1u) & (HPYTHON_SLOTS - 1);

	while (h->procs[j].pid != 0 && h->procs[j].pid != p->pid)
		j = (j + 1) & (HPYTHON_SLOTS - 1);
	e = &h->procs[j];
	if (e->pid == p->pid) {
		if (e->state == HPYTHON_ON) {
			m = hprocs_find(p, e->map_start);
			if (m != NULL && m->start == e->map_start &&
			    strcmp(m->path, e->map_path) == 0)
				return e;
		} else if (e->nmaps == p->nmaps)
			return e;
		/* exec'd, or a new process under an old pid */
		pycode_forget(h->codes, (uint64_t)p->pid);
		free(e->map_path);
		memset(e, 0, sizeof *e);
		e->pid = p->pid;
		hpython_look(h, p, e);
		return e;
	}
	if (h->nprocs >= HPYTHON_MAX_PROCS) {
		hpython_clear(h);
		return hpython_proc(h, p);
	}
	e->pid = p->pid;
	h->nprocs++;
	hpython_look(h, p, e);
	return e;
}


/* CLOCK_MONOTONIC in ns (the samples' clock). */
static uint64_t
hpython_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Reads thread tid's frame chain into r (r->nw 0 if there is none). */
static void
hpython_read_chain(struct hpython_proc *e, pid_t tid,
    struct hpython_chain *r)
{
	void *ctx = (void *)(intptr_t)e->pid;
	int slot = (int)((unsigned)tid % HPYTHON_TIDS);

	r->nw = 0;
	r->entries = 0;
	r->ts = pyrt_tstate(&e->rt, hpython_read, ctx, e->tids[slot] == tid ?
	    e->tstates[slot] : 0, (uint64_t)tid);
	e->tids[slot] = tid;
	e->tstates[slot] = r->ts;
	if (r->ts != 0)
		r->nw = pyrt_walk_frames(&e->rt, hpython_read, ctx, r->ts,
		    r->words, r->frames, PYRT_MAX_FRAMES, &r->entries);
	r->read_ns = hpython_now();
}

/* The stash slot of a sample. */
static struct hpython_chain *
hpython_slot(struct hpython *h, pid_t tid, uint64_t time)
{
	return &h->stash[(size_t)(((uint64_t)(uint32_t)tid * 0x9e3779b97f4a7c15ULL ^
	    time) * 0x9e3779b97f4a7c15ULL >> 54) & (HPYTHON_STASH - 1)];
}

/* Reads a sample's chain as soon as it is seen (see hpython.h). */
void
hpython_early(struct hpython *h, const struct hproc *p, pid_t tid,
    uint64_t time)
{
	struct hpython_proc *e = hpython_proc(h, p);
	struct hpython_chain *r;

	if (e->state != HPYTHON_ON)
		return;
	r = hpython_slot(h, tid, time);
	hpython_read_chain(e, tid, r);
	r->tid = tid;
	r->time = time;
}

/* Mixes a sample's Python frames (see hpython.h). */
uint32_t
hpython_mix(struct hpython *h, const struct hproc *p,
    const struct hperf_sample *s, const uint64_t *pcs, uint32_t n,
    uint64_t *out, uint32_t max)
{
	struct hpython_proc *e = hpython_proc(h, p);
	void *ctx = (void *)(intptr_t)p->pid;
	struct hpython_chain now, *r;
	uint64_t late, at;
	uint32_t i, k, act, groups, keep;
	int anchored = 0;

	if (e->state == HPYTHON_ON)
		h->last_ns = s->time;
	if (e->state == HPYTHON_ON &&
	    (act = pyrt_activations(&e->rt, pcs, n)) > 0) {
		r = hpython_slot(h, s->tid, s->time);
		if (r->tid != s->tid || r->time != s->time) {
			/* Not read when copied out (a new process). */
			r = &now;
			hpython_read_chain(e, s->tid, r);
		}
		r->tid = 0;	/* used */
		if (r->nw > 0 && s->stack != NULL &&
		    pyrt_sampled_frame(&e->rt, hpython_read, ctx, r->ts,
		    s->stack, s->sp, s->stack_size, &at) == 0) {
			/* Drop the frames called since. When the sampled
			 * frame has returned, the chain as it was read stands
			 * for it (a sample a little later: the shares stay
			 * fair, which dropping the sample would not be). */
			for (k = 0; k < r->nw && r->frames[k] != at; k++)
				;
			if (k < r->nw) {
				memmove(r->words, r->words + k, (r->nw - k) *
				    sizeof *r->words);
				r->entries >>= k;
				r->nw -= k;
				anchored = 1;
			}
		}
		if (r->nw > 0) {
			/*
			 * Activations are paired from the root, which lasts:
			 * activations begun since the sample are dropped;
			 * those of the sample ended since stay native.
			 */
			groups = pyrt_groups(r->nw, r->entries);
			if (groups > act)
				pyrt_drop_groups(r->words, &r->nw, &r->entries,
				    groups - act);
			keep = act > groups ? act - groups : 0;
			late = r->read_ns > s->time ? r->read_ns - s->time : 0;
			h->stats.mixed++;
			h->stats.partial += keep > 0;
			h->stats.anchored += (uint64_t)anchored;
			h->stats.late_ns += late;
			if (late > h->stats.late_max_ns)
				h->stats.late_max_ns = late;
			return pyrt_mix(&e->rt, pcs, n, r->words, r->nw,
			    r->entries, keep, out, max);
		}
		h->stats.native++;
	}
	for (i = 0; i < n && i < max; i++)
		out[i] = pcs[i];
	return i;
}

/* Names a Python frame word of p. */
int
hpython_name(struct hpython *h, const struct hproc *p, uint64_t w,
    struct pycode_frame *out)
{
	struct hpython_proc *e = hpython_proc(h, p);

	if (e->state != HPYTHON_ON)
		return -1;
	return pycode_name(h->codes, &e->rt, hpython_read,
	    (void *)(intptr_t)p->pid, (uint64_t)p->pid, w, out);
}

void
hpython_stats(const struct hpython *h, struct hpython_stats *out)
{
	*out = h->stats;
}

/* A drain begins: code objects are checked again, every so often. */
void
hpython_tick(struct hpython *h, int64_t now_ms)
{
	if (now_ms - h->checked_ms < HPYTHON_CHECK_MS)
		return;
	h->checked_ms = now_ms;
	pycode_tick(h->codes);
}

/* Whether a CPython program was sampled in the last second. */
int
hpython_active(const struct hpython *h)
{
	return h->last_ns != 0 && hpython_now() - h->last_ns < 1000000000ULL;
}

/* Whether process space (a pid) is still known (exited ones are kept a
 * few seconds for their late samples). */
static int
hpython_alive(void *ctx, uint64_t space)
{
	return hprocs_known(ctx, (pid_t)space) != NULL;
}

/* Forgets processes no longer known and their code objects. */
void
hpython_reap(struct hpython *h, struct hprocs *procs)
{
	struct hpython_proc *old = h->procs, *e;
	size_t i, j, dead = 0;

	for (i = 0; i < HPYTHON_SLOTS; i++)
		if (old[i].pid != 0 && !hpython_alive(procs,
		    (uint64_t)old[i].pid))
			dead++;
	if (dead == 0)
		return;
	pycode_forget_dead(h->codes, hpython_alive, procs);
	h->procs = xcalloc(HPYTHON_SLOTS, sizeof *h->procs);
	h->nprocs = 0;
	for (i = 0; i < HPYTHON_SLOTS; i++) {
		e = &old[i];
		if (e->pid == 0)
			continue;
		if (!hpython_alive(procs, (uint64_t)e->pid)) {
			free(e->map_path);
			continue;
		}
		/* Open addressing: the table is rebuilt. */
		j = ((size_t)e->pid * 0x9e3779b1u) & (HPYTHON_SLOTS - 1);
		while (h->procs[j].pid != 0)
			j = (j + 1) & (HPYTHON_SLOTS - 1);
		h->procs[j] = *e;
		h->nprocs++;
	}
	free(old);
}
