/*
 * Stack walking for the SIGPROF handler, from call-frame information.
 *
 * The agent thread keeps a snapshot of the process's executable mappings
 * (struct unwind_space): sorted, each with its load bias and the CFI
 * table of its object (cfi.c), or none. A snapshot is immutable once
 * published with an atomic pointer swap, except for one "miss" flag per
 * mapping. Tables are loaded lazily: a mapping starts without one, the
 * handler raises its flag when it needs it, and unwind_refresh(), called
 * from the agent's drain tick, parses the object and publishes a new
 * snapshot. A pc in no mapping of the snapshot (a library dlopen'ed since)
 * counts a miss that makes the next refresh re-read /proc/self/maps. So
 * process start pays nothing, and an object's eh_frame is parsed only if
 * samples land in it.
 *
 * Handlers announce themselves in unwind_inflight before loading the
 * snapshot pointer; a replaced snapshot goes on a retired list and is
 * freed only when the agent thread sees no handler in flight after the
 * swap (every access is sequentially consistent, so a handler that came
 * in later can only have loaded the new pointer). Tables belong to a file
 * cache and live as long as the process.
 *
 * The walk (x86-64): frame 0 uses the exact pc, callers pc - 1; the row
 * gives the CFA (rsp or rbp plus an offset, the realigned-stack and PLT
 * forms), the return address is at CFA - 8 and the caller's rbp wherever
 * the row says. Without a row (no table, JIT code, a rule we do not
 * model) one frame-pointer step is taken instead. A return address
 * outside every executable mapping ends the walk, as do an undefined
 * return address (_start, clone3), a stack pointer that does not grow
 * and a zero return address. Stack memory is read directly only inside
 * pages proven readable with process_vm_readv(2) on our own pid: the
 * contiguous run of pages from the sample's sp up is cached per thread
 * (initial-exec TLS) while later samples' sp stay inside it, so a
 * steady-state sample makes no syscall. On other architectures the walk
 * is the frame-pointer walk with the same checks.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "agent/core/cfi.h"
#include "agent/core/cfi_elf.h"
#include "agent/core/maps.h"
#include "agent/core/unwstep.h"
#include "agent/inproc/unwind.h"
#include "common/xmalloc.h"

#define UNWIND_STACK_SPAN	UNWSTEP_STACK_SPAN
#define UNWIND_PAGE		4096UL
#define UNWIND_GAP_PAGES	16	/* pages proven to join the run */
#define UNWIND_SCRATCH		4	/* far pages remembered per walk */
#define UNWIND_MAPS_AGE_S	5	/* unforced /proc/self/maps re-read */
#define UNWIND_FREE_NS		1000000ULL	/* parsing budget: 1 ms */
#define UNWIND_BUDGET_PCT	2		/* + 2% of process CPU */
#define UNWIND_NS_PER_BYTE	15		/* parse cost estimate */

/* An object seen in the maps; agent thread only. */
struct unwind_file {
	char			*path;
	struct cfi_table	*cfi;
	int			 loaded;	/* cfi tried (NULL: failed) */
	int			 wanted;	/* put off: try again */
};

/* One executable mapping of a snapshot. */
struct unwind_map {
	uintptr_t		 start, limit;
	uintptr_t		 bias;		/* pc - bias = link address */
	const struct cfi_table	*cfi;
	struct unwind_file	*file;		/* agent thread only */
	int			 lazy;		/* table not loaded yet */
	_Atomic int		 miss;		/* a handler wanted it */
};

struct unwind_space {
	struct unwind_space	*next;		/* retired list */
	size_t			 n;
	struct unwind_map	 v[];
};

static _Atomic(struct unwind_space *)	unwind_current;
static _Atomic unsigned			unwind_inflight;
static _Atomic uint64_t			unwind_misses;
static _Atomic int			unwind_safe = -1; /* unknown */
static _Atomic int			unwind_exiting;

/* Agent-thread state. */
static struct unwind_space	*unwind_retired;
static struct unwind_file	**unwind_files;
static size_t			 unwind_nfiles;
static struct maps		 unwind_maps;
static struct timespec		 unwind_maps_when;
static uint64_t			 unwind_snapshots;
static uint64_t			 unwind_seen_misses;
static uint64_t			 unwind_spent_ns;	/* parsing so far */
static uint64_t			 unwind_free_ns = UNWIND_FREE_NS;
static unsigned			 unwind_pct = UNWIND_BUDGET_PCT;
static uint64_t			 unwind_deferred;	/* over budget */
static pthread_once_t		 unwind_once = PTHREAD_ONCE_INIT;
/* Serializes refreshes: the agent thread's and heap samples' walks. */
static pthread_mutex_t		 unwind_lock = PTHREAD_MUTEX_INITIALIZER;

/* Readable memory: [lo, hi). */
struct unwind_range {
	uintptr_t	lo, hi;
};

/*
 * Pages this thread proved readable: a contiguous run from the page of
 * the stack pointer of the sample that proved them upwards. Valid for a
 * later sample while its sp lies inside (a stack stays mapped while its
 * thread runs on it, and the main stack only grows); TLS starts zeroed in
 * a new thread, and a fork child keeps its copy of the stack.
 */
static __thread struct unwind_range unwind_proven
    __attribute__((tls_model("initial-exec")));

/* Set by a walk that met a mapping whose table is not loaded. */
static __thread int unwind_hit_lazy __attribute__((tls_model("initial-exec")));

/* One walk's view of readable memory. */
struct unwind_mem {
	struct unwind_range	keep;		/* the run from sp's page */
	struct unwind_range	far[UNWIND_SCRATCH];
	unsigned		nfar;
	pid_t			pid;
};

/* Reads 8 bytes at addr through the kernel; 0 if readable. */
static int
unwind_kernel_read(struct unwind_mem *mem, uintptr_t addr, uintptr_t *out)
{
	struct iovec local = { out, sizeof *out };
	struct iovec remote = { (void *)addr, sizeof *out };

	if (mem->pid == 0)
		mem->pid = (pid_t)syscall(SYS_getpid);
	if (syscall(SYS_process_vm_readv, mem->pid, &local, 1, &remote, 1,
	    0) != (long)sizeof *out)
		return -1;
	return 0;
}

/* Whether process_vm_readv works here (checked once, signal-safe). */
static int
unwind_safe_reads(struct unwind_mem *mem)
{
	uintptr_t probe = 0x5a5a, got = 0;
	int s = atomic_load_explicit(&unwind_safe, memory_order_relaxed);

	if (s < 0) {
		s = unwind_kernel_read(mem, (uintptr_t)&probe, &got) == 0 &&
		    got == probe;
		atomic_store_explicit(&unwind_safe, s, memory_order_relaxed);
	}
	return s;
}

/*
 * Reads the aligned word at addr, proving its page first unless it is
 * known readable. A page up to UNWIND_GAP_PAGES above the run extends it
 * (the pages between are proven too); farther ones go to scratch.
 */
__attribute__((no_sanitize("address")))
static int
unwind_read(struct unwind_mem *mem, uintptr_t addr, uintptr_t *out)
{
	uintptr_t page, p, v;
	unsigned i;

	if ((addr & (sizeof(uintptr_t) - 1)) != 0 || addr < UNWIND_PAGE)
		return -1;
	if (addr >= mem->keep.lo && addr < mem->keep.hi)
		goto direct;
	for (i = 0; i < mem->nfar && i < UNWIND_SCRATCH; i++)
		if (addr >= mem->far[i].lo && addr < mem->far[i].hi)
			goto direct;
	if (!unwind_safe_reads(mem))
		return -1;
	page = addr & ~(UNWIND_PAGE - 1);
	if (page >= mem->keep.hi && page - mem->keep.hi <=
	    UNWIND_GAP_PAGES * UNWIND_PAGE) {
		for (p = mem->keep.hi; p < page; p += UNWIND_PAGE) {
			if (unwind_kernel_read(mem, p, &v) != 0)
				return -1;
			mem->keep.hi = p + UNWIND_PAGE;
		}
		if (unwind_kernel_read(mem, addr, out) != 0)
			return -1;
		mem->keep.hi = page + UNWIND_PAGE;
		return 0;
	}
	if (unwind_kernel_read(mem, addr, out) != 0)
		return -1;
	mem->far[mem->nfar % UNWIND_SCRATCH].lo = page;
	mem->far[mem->nfar % UNWIND_SCRATCH].hi = page + UNWIND_PAGE;
	mem->nfar++;
	return 0;
direct:
	*out = *(const volatile uintptr_t *)addr;
	return 0;
}

/* The mapping of a snapshot holding addr, or NULL (binary search). */
static struct unwind_map *
unwind_find(struct unwind_space *s, uintptr_t addr)
{
	size_t lo = 0, hi, mid;

	if (s == NULL)
		return NULL;
	hi = s->n;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (addr < s->v[mid].start)
			hi = mid;
		else if (addr >= s->v[mid].limit)
			lo = mid + 1;
		else
			return &s->v[mid];
	}
	return NULL;
}

/* The walk's reader for unwstep: unwind_read on a struct unwind_mem. */
__attribute__((no_sanitize("address")))
static int
unwind_step_read(void *ctx, uintptr_t addr, uintptr_t *out)
{
	return unwind_read(ctx, addr, out);
}

/* The walk proper, on a snapshot (may be NULL: then only pcs[0]). */
__attribute__((no_sanitize("address")))
static uint32_t
unwind_walk_space(struct unwind_space *s, struct unwind_mem *mem,
    const struct unwind_regs *regs, uintptr_t *pcs, uint32_t max,
    int *frame0_cfi)
{
	struct unwstep_frame f = { regs->pc, regs->sp, regs->fp, 1 };
	struct unwind_map *m = NULL;
	const struct cfi_row *row;
	uintptr_t ra, look, prev;
	uint32_t n = 0;
	int rc;

	*frame0_cfi = 0;
	if (max == 0)
		return 0;
	pcs[n++] = f.pc;
	while (n < max) {
		look = n == 1 ? f.pc : f.pc - 1;
		/* A caller's mapping was found when its address was checked. */
		if (n == 1 && (m = unwind_find(s, look)) == NULL) {
			atomic_fetch_add_explicit(&unwind_misses, 1,
			    memory_order_relaxed);
			break;
		}
		row = m->cfi != NULL ? cfi_find(m->cfi, look - m->bias) :
		    NULL;
		if (m->lazy && atomic_load_explicit(&m->miss,
		    memory_order_relaxed) == 0)
			atomic_store_explicit(&m->miss, 1,
			    memory_order_relaxed);
		if (m->lazy)
			unwind_hit_lazy = 1;
		rc = -1;
		prev = f.sp;
#if defined(__x86_64__)
		if (row != NULL && row->cfa != CFI_CFA_UNKNOWN &&
		    row->cfa != CFI_CFA_NONE) {
			if ((rc = unwstep_cfi(unwind_step_read, mem, row, &f,
			    &ra)) == 1 &&
			    n == 1)
				*frame0_cfi = 1;
			if (rc <= 0)
				break;
		}
#else
		(void)row;
#endif
		if (rc < 0 && unwstep_fp(unwind_step_read, mem, &f, &ra) != 1)
			break;
		/* The stack pointer must grow frame by frame. */
		if (f.sp <= prev || f.sp - regs->sp > UNWIND_STACK_SPAN ||
		    ra < UNWIND_PAGE)
			break;
		if ((m = unwind_find(s, ra - 1)) == NULL) {
			atomic_fetch_add_explicit(&unwind_misses, 1,
			    memory_order_relaxed);
			break;
		}
		pcs[n++] = ra;
		f.pc = ra;
	}
	return n;
}

/* Walks the interrupted stack (see unwind.h). */
__attribute__((no_sanitize("address")))
uint32_t
unwind_walk(const struct unwind_regs *regs, uintptr_t *pcs, uint32_t max,
    uintptr_t *link)
{
	struct unwind_space *s;
	struct unwind_mem mem;
	uintptr_t page = regs->sp & ~(UNWIND_PAGE - 1), word;
	uint32_t n;
	int frame0_cfi;

	memset(&mem, 0, sizeof mem);
	/* Trust this thread's proven run only while sp is inside it. */
	mem.keep = unwind_proven;
	if (regs->sp < mem.keep.lo || regs->sp >= mem.keep.hi) {
		mem.keep.lo = page;
		mem.keep.hi = page;
	}
	atomic_fetch_add(&unwind_inflight, 1);
	s = atomic_load(&unwind_current);
	n = unwind_walk_space(s, &mem, regs, pcs, max, &frame0_cfi);
	atomic_fetch_sub(&unwind_inflight, 1);
#if defined(__x86_64__)
	*link = 0;
	if (!frame0_cfi && unwind_read(&mem, regs->sp, &word) == 0)
		*link = word;
#else
	(void)word;
	if (frame0_cfi)
		*link = 0;
#endif
	unwind_proven = mem.keep;
	return n;
}

/* Fork: no refresh is half done in either process. */
static void
unwind_atfork_prepare(void)
{
	pthread_mutex_lock(&unwind_lock);
}

/* Fork, parent and child: release. */
static void
unwind_atfork_done(void)
{
	pthread_mutex_unlock(&unwind_lock);
}

/* Registers the fork handlers of the refresh lock (see unwind.h). */
void
unwind_atfork_register(void)
{
	pthread_atfork(unwind_atfork_prepare, unwind_atfork_done,
	    unwind_atfork_done);
}

/* Fork child: no handler of the parent's other threads runs here. */
static void
unwind_atfork_child(void)
{
	atomic_store(&unwind_inflight, 0);
}

/*
 * exit() has begun: a table parsed now would serve no sample. Registered
 * after the agent's own atexit hook, so it runs before the last window
 * is drained.
 */
static void
unwind_atexit(void)
{
	atomic_store(&unwind_exiting, 1);
}

/* Registers the fork and exit hooks once. */
static void
unwind_hooks_once(void)
{
	pthread_atfork(NULL, NULL, unwind_atfork_child);
	atexit(unwind_atexit);
}

/* The cached object for a mapping's path, or NULL (anonymous, special). */
static struct unwind_file *
unwind_file_for(const char *path)
{
	struct unwind_file *f;
	size_t i;

	if (path[0] != '/' && strcmp(path, "[vdso]") != 0)
		return NULL;
	for (i = 0; i < unwind_nfiles; i++)
		if (strcmp(unwind_files[i]->path, path) == 0)
			return unwind_files[i];
	unwind_files = xreallocarray(unwind_files, unwind_nfiles + 1,
	    sizeof *unwind_files);
	f = xcalloc(1, sizeof *f);
	f->path = xstrdup(path);
	unwind_files[unwind_nfiles++] = f;
	return f;
}

/* CPU time of clock id in ns. */
static uint64_t
unwind_cpu_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * Parses the object of mapping e (agent thread), within the budget: all
 * parsing so far may take UNWIND_FREE_NS plus UNWIND_BUDGET_PCT percent of
 * the CPU time the process has used, each section byte counted as
 * UNWIND_NS_PER_BYTE. An object over the budget stays unloaded (its
 * frames use frame pointers) and is tried again at a later refresh, when
 * the process has run longer: a short-lived compiler never pays 50 ms for
 * its own table, a long-running server pays it once.
 */
static void
unwind_load(struct unwind_file *f, const struct maps_entry *e)
{
	uint64_t allowed, t0;

#if defined(__x86_64__)
	allowed = unwind_free_ns + unwind_cpu_ns(CLOCK_PROCESS_CPUTIME_ID) /
	    100 * unwind_pct;
	allowed = allowed > unwind_spent_ns ? allowed - unwind_spent_ns : 0;
	t0 = unwind_cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	if (strcmp(f->path, "[vdso]") == 0)
		f->cfi = cfi_elf_open_mem((const void *)(uintptr_t)e->start,
		    (size_t)(e->limit - e->start), NULL);
	else if ((f->cfi = cfi_elf_open(f->path, (size_t)(allowed /
	    UNWIND_NS_PER_BYTE), NULL)) == NULL && errno == EFBIG) {
		unwind_deferred++;
		f->wanted = 1;
		unwind_spent_ns += unwind_cpu_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
		return;
	}
	unwind_spent_ns += unwind_cpu_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	if (f->cfi != NULL && f->cfi->n == 0) {
		cfi_free(f->cfi);
		f->cfi = NULL;
	}
#else
	(void)e;
	(void)allowed;
	(void)t0;
#endif
	f->loaded = 1;
	f->wanted = 0;
}

/* A snapshot of unwind_maps with the tables loaded so far. */
static struct unwind_space *
unwind_space_new(void)
{
	struct unwind_space *s;
	struct unwind_map *m;
	const struct maps_entry *e;
	uint64_t vaddr;
	size_t i;

	s = xcalloc(1, sizeof *s + unwind_maps.n * sizeof s->v[0]);
	s->n = unwind_maps.n;
	for (i = 0; i < unwind_maps.n; i++) {
		e = &unwind_maps.v[i];
		m = &s->v[i];
		m->start = (uintptr_t)e->start;
		m->limit = (uintptr_t)e->limit;
		atomic_init(&m->miss, 0);
		m->file = unwind_file_for(e->path);
		if (m->file == NULL)
			continue;
		if (!m->file->loaded) {
#if defined(__x86_64__)
			m->lazy = 1;
			/* Put off for the budget: still wanted. */
			atomic_init(&m->miss, m->file->wanted);
#endif
			continue;
		}
		if (m->file->cfi != NULL &&
		    cfi_offset_to_vaddr(m->file->cfi, e->offset, &vaddr) == 0) {
			m->cfi = m->file->cfi;
			m->bias = (uintptr_t)(e->start - vaddr);
		}
	}
	return s;
}

/* Whether a handler flagged mapping m as wanting its table. */
static int
unwind_wanted(struct unwind_map *m)
{
	return m->lazy && !m->file->loaded &&
	    atomic_load_explicit(&m->miss, memory_order_relaxed) != 0;
}

/*
 * Loads the tables handlers flagged in snapshot cur, and with them libc's
 * (the mapping holding exit()): libc holds the outermost frames of every
 * thread (__libc_start_call_main, start_thread), which a walk reaches only
 * once the objects above them have tables, a drain tick later. Returns the
 * number of tables loaded.
 */
static int
unwind_load_wanted(struct unwind_space *cur)
{
	struct unwind_map *m, *libc = unwind_find(cur, (uintptr_t)&exit);
	const struct maps_entry *e;
	size_t i;
	int any = 0, loaded = 0;

	for (i = 0; i < cur->n && !any; i++)
		any = unwind_wanted(&cur->v[i]);
	for (i = 0; any && i < cur->n; i++) {
		m = &cur->v[i];
		if (!unwind_wanted(m) && (m != libc || !m->lazy ||
		    m->file->loaded))
			continue;
		/* The entry of the same mapping in unwind_maps. */
		e = maps_find(&unwind_maps, m->start);
		if (e == NULL || e->start != m->start)
			continue;
		unwind_load(m->file, e);
		loaded += m->file->loaded;
	}
	return loaded;
}

/* Frees retired snapshots once no handler is in flight. */
static void
unwind_reclaim(void)
{
	struct unwind_space *s;

	if (unwind_retired == NULL || atomic_load(&unwind_inflight) != 0)
		return;
	while ((s = unwind_retired) != NULL) {
		unwind_retired = s->next;
		free(s);
	}
}

/* Whether two maps lists are the same mappings of the same files. */
static int
unwind_maps_equal(const struct maps *a, const struct maps *b)
{
	size_t i;

	if (a->n != b->n)
		return 0;
	for (i = 0; i < a->n; i++)
		if (a->v[i].start != b->v[i].start ||
		    a->v[i].limit != b->v[i].limit ||
		    a->v[i].offset != b->v[i].offset ||
		    strcmp(a->v[i].path, b->v[i].path) != 0)
			return 0;
	return 1;
}

static int	unwind_refresh_locked(void);

/* Publishes a snapshot of unwind_maps as it is now. */
static void
unwind_publish(void)
{
	struct unwind_space *cur, *s;

	s = unwind_space_new();
	cur = atomic_exchange(&unwind_current, s);
	unwind_snapshots++;
	if (cur != NULL) {
		cur->next = unwind_retired;
		unwind_retired = cur;
	}
}

/* Publishes, reloads and reclaims (see unwind.h). */
int
unwind_refresh(void)
{
	int publish;

	pthread_once(&unwind_once, unwind_hooks_once);
	pthread_mutex_lock(&unwind_lock);
	publish = unwind_refresh_locked();
	pthread_mutex_unlock(&unwind_lock);
	return publish;
}

/* unwind_refresh with the lock held. */
static int
unwind_refresh_locked(void)
{
	struct unwind_space *cur;
	struct timespec now;
	struct maps fresh;
	uint64_t misses;
	int publish = 0, reread;

	cur = atomic_load(&unwind_current);
	clock_gettime(CLOCK_MONOTONIC, &now);
	misses = atomic_load(&unwind_misses);
	reread = cur == NULL || misses != unwind_seen_misses ||
	    now.tv_sec - unwind_maps_when.tv_sec >= UNWIND_MAPS_AGE_S;
	unwind_seen_misses = misses;
	if (reread && maps_read("/proc/self/maps", &fresh, NULL) == 0) {
		unwind_maps_when = now;
		if (cur == NULL || !unwind_maps_equal(&fresh, &unwind_maps)) {
			maps_clear(&unwind_maps);
			unwind_maps = fresh;
			publish = 1;
		} else
			maps_clear(&fresh);
	}
	if (cur != NULL && !atomic_load(&unwind_exiting) &&
	    unwind_load_wanted(cur) > 0)
		publish = 1;
	if (publish)
		unwind_publish();
	unwind_reclaim();
	return publish;
}

/* A walk that loads what it needs first (see unwind.h). */
uint32_t
unwind_walk_now(const struct unwind_regs *regs, uintptr_t *pcs, uint32_t max)
{
	uint64_t misses;
	uintptr_t link;
	uint32_t n;
	int tries, publish;

	for (tries = 0;; tries++) {
		unwind_hit_lazy = 0;
		misses = atomic_load(&unwind_misses);
		n = unwind_walk(regs, pcs, max, &link);
		if (tries == 4 || (!unwind_hit_lazy &&
		    atomic_load(&unwind_misses) == misses &&
		    atomic_load(&unwind_current) != NULL))
			return n;
		pthread_once(&unwind_once, unwind_hooks_once);
		pthread_mutex_lock(&unwind_lock);
		publish = unwind_refresh_locked();
		pthread_mutex_unlock(&unwind_lock);
		/* Nothing new to walk with: this is as far as it goes. */
		if (!publish)
			return n;
	}
}

/* Sets the parsing budget (tests; agent thread). */
void
unwind_set_budget(uint64_t free_ns, unsigned pct)
{
	unwind_free_ns = free_ns;
	unwind_pct = pct;
}

/* Counters. */
void
unwind_get_stats(struct unwind_stats *st)
{
	struct unwind_space *s;
	size_t i;

	memset(st, 0, sizeof *st);
	st->snapshots = unwind_snapshots;
	for (s = unwind_retired; s != NULL; s = s->next)
		st->retired++;
	for (i = 0; i < unwind_nfiles; i++) {
		if (unwind_files[i]->cfi == NULL)
			continue;
		st->tables++;
		st->rows += unwind_files[i]->cfi->n;
		st->table_bytes += unwind_files[i]->cfi->n *
		    sizeof(struct cfi_row) + (unwind_files[i]->cfi->npages +
		    1) * sizeof(uint32_t) + unwind_files[i]->cfi->nloads *
		    sizeof(struct elffile_load) + sizeof(struct cfi_table);
	}
	st->misses = atomic_load(&unwind_misses);
	st->spent_ns = unwind_spent_ns;
	st->deferred = unwind_deferred;
}
