/*
 * Heap sampling tables, filled from inside malloc (agent/inproc/heapwrap.c).
 *
 * Allocations are sampled by bytes, as tcmalloc and Go do: each thread
 * counts down a distance drawn from an exponential distribution of mean
 * `rate` (512 KiB), and the allocation that crosses it is sampled, so a
 * block of s bytes is sampled with probability 1 - exp(-s / rate) and
 * profiles scale it back up by the inverse (agent/inproc/heapprof.c). A sample
 * walks its caller's stack with the CPU profiler's unwinder
 * (agent/inproc/unwind.c, from registers read right here) and counts one
 * allocation in its bucket: a (stack, size) pair with cumulative
 * allocation and free counts, as Go's runtime keeps its memory profile.
 * The bucket's key goes back to libprofd-heap, which keeps it in the
 * block's own header, so the block's free counts one free in the bucket
 * of that key: no table of live blocks is kept or searched (the live
 * set is the blocks themselves). Stacks are identified by a 64-bit
 * hash, buckets by a 64-bit key (stack hash and size), both held in the
 * hash indexes with a bucket's counts: a sample of a (stack, size) seen
 * before, and its free, read and write one line of the bucket index,
 * besides the walk.
 * libprofd-heap tags sampled blocks, so an unsampled free (nearly all)
 * never gets here.
 *
 * Memory: stacks, frames and buckets are append-only arrays in anonymous
 * mappings reserved once (MAP_NORESERVE, touched in order as they fill);
 * their hash indexes are mappings doubled (and rehashed) before they
 * pass half full (an index that cannot grow takes no new key), so what
 * is resident follows what is used. HEAP_MAX_* bound them all (about
 * 57 MiB of address space at most, resident as used: a few hundred KiB
 * for a program of a few thousand allocation sites); nothing here calls
 * malloc. Past a bound a sample is dropped and counted.
 *
 * Concurrency: one mutex over the tables, taken only by sampled
 * allocations, frees of sampled blocks and the agent thread's
 * snapshot; fork holds it across (pthread_atfork). A thread-local guard
 * makes calls nested in a sample (a signal handler that allocates, the
 * unwinder's first use of something) go by unrecorded, so nothing here
 * deadlocks on itself; a sampled block freed in such a nested call stays
 * counted as live.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "agent/inproc/heap.h"
#include "agent/inproc/unwind.h"
#include "common/xmalloc.h"

#define HEAP_SKIP_SELF	1		/* this file's own frame */

/*
 * A slot of a hash index over an append-only array: the entry's 64-bit
 * key and index + 1 (0: empty); a bucket's slot also holds its counts,
 * so a sample of a known (stack, size) touches one cache line of the
 * index and none of the arrays. 32 bytes.
 */
struct heap_slot {
	uint64_t	key;
	uint32_t	idx1;
	uint32_t	pad;
	uint64_t	allocs;		/* buckets: sampled allocations */
	uint64_t	frees;		/* buckets: of them, freed */
};

/* An index: cap slots (a power of two), doubled past half full. */
struct heap_index {
	struct heap_slot	*slot;
	size_t			 cap;
};

/* A bucket: (stack, size); its counts are in its index slot. */
struct heap_bucketrec {
	uint64_t	size;
	uint32_t	stack;		/* stack index */
	uint32_t	pad;
};

/* A stack: n frames at off in heap_pcs (its hash keys its slot). */
struct heap_stackslot {
	uint32_t	off;
	uint32_t	n;
};

static int	heap_index_grow(struct heap_index *);

#define HEAP_INDEX_MIN	1024

static pthread_mutex_t		 heap_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int		 heap_on;
static int			 heap_armed;	/* the agent runs */
static int64_t			 heap_mean = HEAP_DEFAULT_RATE;
static struct heap_bucketrec	*heap_buckets;	/* append-only */
static size_t			 heap_nbuckets;
static struct heap_index	 heap_bucket_index;
static struct heap_stackslot	*heap_stacks;	/* append-only */
static size_t			 heap_nstacks;
static struct heap_index	 heap_stack_index;
static uintptr_t		*heap_pcs;	/* append-only */
static size_t			 heap_npcs;
static uint64_t			 heap_dropped;

static __thread int heap_busy __attribute__((tls_model("initial-exec")));
static __thread uint64_t heap_rng __attribute__((tls_model("initial-exec")));

/* Called by the agent when it starts: heap profiling may begin. */
void
heap_arm(int64_t rate)
{
	heap_armed = 1;
	if (rate > 0)
		heap_mean = rate;
}

/* The calling thread's allocations are never sampled (the agent's own). */
void
heap_exclude_thread(void)
{
	heap_busy = 1;
}

/* Whether the tables are in use. */
int
heap_enabled(void)
{
	return atomic_load_explicit(&heap_on, memory_order_acquire);
}

/* The mean sampling distance. */
int64_t
heap_rate(void)
{
	return heap_mean;
}

/* 64-bit mix (splitmix64's finalizer). */
static uint64_t
heap_mix(uint64_t k)
{
	k ^= k >> 30;
	k *= 0xbf58476d1ce4e5b9ULL;
	k ^= k >> 27;
	k *= 0x94d049bb133111ebULL;
	k ^= k >> 31;
	return k;
}

/*
 * The next sampling distance: exponential of mean heap_mean, as Go's
 * fastexprand (a 26-bit uniform q, -ln(q / 2^26) * mean + 1); 0 (every
 * allocation) at rate 1.
 */
static int64_t
heap_next(void)
{
	uint64_t q;
	double x;

	/* Rate 1: every allocation (Go's MemProfileRate = 1). */
	if (heap_mean <= 1)
		return 0;
	if (heap_rng == 0) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		heap_rng = heap_mix((uint64_t)ts.tv_nsec ^
		    ((uint64_t)(uintptr_t)&heap_rng << 16) ^
		    (uint64_t)gettid()) | 1;
	}
	heap_rng ^= heap_rng >> 12;
	heap_rng ^= heap_rng << 25;
	heap_rng ^= heap_rng >> 27;
	q = ((heap_rng * 2685821657736338717ULL) >> 38) + 1;	/* 1..2^26 */
	x = -log((double)q / (double)(1 << 26)) * (double)heap_mean + 1;
	if (x > (double)(INT64_C(1) << 40))
		x = (double)(INT64_C(1) << 40);
	return (int64_t)x;
}

/* Reserves n bytes of zeroed address space, or NULL. */
static void *
heap_reserve(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Fork: the tables are consistent in both processes. */
static void
heap_atfork_prepare(void)
{
	pthread_mutex_lock(&heap_lock);
}

/* Fork, parent and child: release. */
static void
heap_atfork_done(void)
{
	pthread_mutex_unlock(&heap_lock);
}

/* Registers the fork handlers of the tables' lock (see heap.h). */
void
heap_atfork_register(void)
{
	unwind_atfork_register();
	pthread_atfork(heap_atfork_prepare, heap_atfork_done,
	    heap_atfork_done);
}

/* Starts sampling if the agent runs (see heap.h). */
int64_t
profd_agent_heap_start(void)
{
	if (!heap_armed || heap_enabled())
		return heap_enabled() ? heap_mean : 0;
	heap_busy = 1;
	/* Reserved once, touched as they fill (no allocation in malloc). */
	heap_buckets = heap_reserve(HEAP_MAX_BUCKETS * sizeof *heap_buckets);
	heap_stacks = heap_reserve(HEAP_MAX_STACKS * sizeof *heap_stacks);
	heap_pcs = heap_reserve(HEAP_MAX_PCS * sizeof *heap_pcs);
	if (heap_buckets == NULL || heap_stacks == NULL || heap_pcs == NULL ||
	    heap_index_grow(&heap_bucket_index) != 0 ||
	    heap_index_grow(&heap_stack_index) != 0) {
		heap_busy = 0;
		return 0;
	}
	/*
	 * Stacks are taken once, at the allocation, by walks that load the
	 * tables they need (unwind_walk_now): no budget holds those back.
	 */
	unwind_set_budget(UINT64_MAX / 4, 0);
	atomic_store_explicit(&heap_on, 1, memory_order_release);
	heap_busy = 0;
	return heap_mean;
}

/* The slot of key in x: its entry's, or the empty one where it would go. */
static inline size_t
heap_index_probe(const struct heap_index *x, uint64_t key)
{
	size_t i, mask = x->cap - 1;

	for (i = key & mask; x->slot[i].idx1 != 0 && x->slot[i].key != key;
	    i = (i + 1) & mask)
		;
	return i;
}

/*
 * Doubles index x (or makes its first HEAP_INDEX_MIN slots), re-inserting
 * its slots by their keys. -1 if mmap fails (x stays as it was).
 */
static int
heap_index_grow(struct heap_index *x)
{
	struct heap_index old = *x;
	size_t k;

	x->cap = old.cap ? 2 * old.cap : HEAP_INDEX_MIN;
	if ((x->slot = heap_reserve(x->cap * sizeof *x->slot)) == NULL) {
		*x = old;
		return -1;
	}
	for (k = 0; k < old.cap; k++)
		if (old.slot[k].idx1 != 0)
			x->slot[heap_index_probe(x, old.slot[k].key)] =
			    old.slot[k];
	if (old.slot != NULL)
		munmap(old.slot, old.cap * sizeof *old.slot);
	return 0;
}

/*
 * Room in index x (holding n entries) for one more, key's empty slot at
 * *i: grown first if the entry would take it past half full, so probes
 * stay short and always end. -1 if it cannot grow.
 */
static int
heap_index_room(struct heap_index *x, size_t n, size_t *i, uint64_t key)
{
	if (2 * (n + 1) <= x->cap)
		return 0;
	if (heap_index_grow(x) != 0)
		return -1;
	*i = heap_index_probe(x, key);
	return 0;
}

/* A stack's 64-bit hash (its identity: see heap_stack_find). */
static uint64_t
heap_stack_hash(const uintptr_t *pcs, uint32_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
	uint32_t j;

	for (j = 0; j < n; j++)
		h = heap_mix(h ^ pcs[j]);
	return h;
}

/* A bucket's key: its stack's hash and its size, mixed. */
static uint64_t
heap_bucket_keyof(uint64_t hash, uint64_t size)
{
	return hash ^ heap_mix(size + 0x632be59bd9b4e019ULL);
}

/*
 * The index of the stack of hash h (order of first use), inserted if
 * new; -1 if full. Stacks are told apart by their 64-bit hashes alone
 * (two of a program's stacks share one with odds of about n^2 / 2^65),
 * so a lookup reads the index and nothing else.
 */
static int64_t
heap_stack_find(const uintptr_t *pcs, uint32_t n, uint64_t h)
{
	struct heap_index *x = &heap_stack_index;
	struct heap_stackslot *s;
	size_t i = heap_index_probe(x, h);

	if (x->slot[i].idx1 != 0)
		return x->slot[i].idx1 - 1;
	if (heap_nstacks >= HEAP_MAX_STACKS || heap_npcs + n > HEAP_MAX_PCS ||
	    heap_index_room(x, heap_nstacks, &i, h) != 0)
		return -1;
	s = &heap_stacks[heap_nstacks];
	memcpy(&heap_pcs[heap_npcs], pcs, n * sizeof *pcs);
	s->off = (uint32_t)heap_npcs;
	s->n = n;
	heap_npcs += n;
	x->slot[i].key = h;
	x->slot[i].idx1 = (uint32_t)++heap_nstacks;
	return (int64_t)heap_nstacks - 1;
}

/*
 * The slot of the bucket of (stack pcs[n] of hash h, size) under key,
 * inserted if new; NULL when full.
 */
static struct heap_slot *
heap_bucket_find(uint64_t key, const uintptr_t *pcs, uint32_t n, uint64_t h,
    uint64_t size)
{
	struct heap_index *x = &heap_bucket_index;
	struct heap_bucketrec *b;
	size_t i = heap_index_probe(x, key);
	int64_t st;

	if (x->slot[i].idx1 != 0)
		return &x->slot[i];
	if (heap_nbuckets >= HEAP_MAX_BUCKETS ||
	    heap_index_room(x, heap_nbuckets, &i, key) != 0 ||
	    (st = heap_stack_find(pcs, n, h)) < 0)
		return NULL;
	b = &heap_buckets[heap_nbuckets];
	b->stack = (uint32_t)st;
	b->size = size;
	x->slot[i].key = key;
	x->slot[i].idx1 = (uint32_t)++heap_nbuckets;
	return &x->slot[i];
}

/* Counts a free in the bucket of key (its slot is there: never removed). */
static void
heap_bucket_free(uint64_t key)
{
	struct heap_slot *b = &heap_bucket_index.slot[heap_index_probe(
	    &heap_bucket_index, key)];

	if (b->idx1 != 0)
		b->frees++;
}

/*
 * Records one sample under the lock (pcs[n]: its stack, of hash h; key:
 * its bucket's); 0 if it could not be (the tables full).
 */
static int
heap_insert(uint64_t size, const uintptr_t *pcs, uint32_t n, uint64_t h,
    uint64_t key)
{
	struct heap_slot *b;

	if ((b = heap_bucket_find(key, pcs, n, h, size)) == NULL) {
		heap_dropped++;
		return 0;
	}
	b->allocs++;
	return 1;
}

/*
 * The caller's registers, read where this inline function is expanded
 * (x86-64: rip, rsp, rbp exactly, so the walk starts with call-frame
 * information; elsewhere a frame-pointer start).
 */
static inline __attribute__((always_inline)) void
heap_regs(struct unwind_regs *r)
{
#if defined(__x86_64__)
	uintptr_t pc, sp, fp;

	__asm__ volatile("leaq 0(%%rip), %0\n\tmovq %%rsp, %1\n\t"
	    "movq %%rbp, %2" : "=r"(pc), "=r"(sp), "=r"(fp));
	r->pc = pc;
	r->sp = sp;
	r->fp = fp;
#else
	r->pc = (uintptr_t)__builtin_return_address(0);
	r->fp = (uintptr_t)__builtin_frame_address(1);
	r->sp = (uintptr_t)__builtin_frame_address(0);
#endif
}

/* A sampled allocation (see heap.h). */
__attribute__((noinline)) int64_t
profd_agent_heap_alloc(void *ptr, size_t size, unsigned skip, uint64_t *keyp)
{
	uintptr_t pcs[HEAP_MAX_FRAMES + 8];
	struct unwind_regs regs;
	uint64_t h, key = 0;
	uint32_t n;
	int64_t next;

	if (keyp != NULL)
		*keyp = 0;
	if (heap_busy)
		return heap_mean;
	heap_busy = 1;
	next = heap_next();
	if (ptr != NULL && heap_enabled()) {
		heap_regs(&regs);
		skip += HEAP_SKIP_SELF;
		n = unwind_walk_now(&regs, pcs, HEAP_MAX_FRAMES + skip);
		if (n <= skip) {
			pcs[skip] = 0;	/* no frame: an unknown caller */
			n = skip + 1;
		}
		h = heap_stack_hash(pcs + skip, n - skip);
		if ((key = heap_bucket_keyof(h, size)) == 0)
			key = 1;	/* 0 means "not recorded" */
		pthread_mutex_lock(&heap_lock);
		if (!heap_insert(size, pcs + skip, n - skip, h, key))
			key = 0;
		pthread_mutex_unlock(&heap_lock);
	}
	if (keyp != NULL)
		*keyp = key;
	heap_busy = 0;
	return next;
}

/* A sampled block is freed (see heap.h). */
void
profd_agent_heap_free(uint64_t key)
{
	if (key == 0 || heap_busy || !heap_enabled())
		return;
	heap_busy = 1;
	pthread_mutex_lock(&heap_lock);
	heap_bucket_free(key);
	pthread_mutex_unlock(&heap_lock);
	heap_busy = 0;
}

/* Copies the tables (agent thread; see heap.h). */
void
heap_snapshot(struct heap_snapshot *out)
{
	size_t nb, ns, np, i;
	int was = heap_busy;

	memset(out, 0, sizeof *out);
	out->rate = heap_mean;
	if (!heap_enabled())
		return;
	/*
	 * Room first (with headroom: the tables grow meanwhile), then copy
	 * under the lock if it fits; nothing is allocated with it held.
	 */
	for (;;) {
		pthread_mutex_lock(&heap_lock);
		nb = heap_nbuckets + heap_nbuckets / 2 + 1024;
		ns = heap_nstacks + heap_nstacks / 2 + 256;
		np = heap_npcs + heap_npcs / 2 + 8192;
		pthread_mutex_unlock(&heap_lock);
		out->buckets = xcalloc(nb, sizeof *out->buckets);
		out->stacks = xcalloc(ns, sizeof *out->stacks);
		out->pcs = xcalloc(np, sizeof *out->pcs);
		heap_busy = 1;
		pthread_mutex_lock(&heap_lock);
		if (heap_nbuckets <= nb && heap_nstacks <= ns &&
		    heap_npcs <= np)
			break;
		pthread_mutex_unlock(&heap_lock);
		heap_busy = was;
		heap_snapshot_free(out);
		out->rate = heap_mean;
	}
	nb = heap_nbuckets;
	ns = heap_nstacks;
	np = heap_npcs;
	/* Stacks and buckets in order of first use. */
	memcpy(out->pcs, heap_pcs, np * sizeof *out->pcs);
	out->npcs = np;
	for (i = 0; i < ns; i++) {
		out->stacks[i].off = heap_stacks[i].off;
		out->stacks[i].n = heap_stacks[i].n;
	}
	out->nstacks = ns;
	for (i = 0; i < nb; i++) {
		out->buckets[i].stack = heap_buckets[i].stack;
		out->buckets[i].size = heap_buckets[i].size;
	}
	for (i = 0; i < heap_bucket_index.cap; i++) {
		const struct heap_slot *b = &heap_bucket_index.slot[i];

		if (b->idx1 != 0) {
			out->buckets[b->idx1 - 1].allocs = b->allocs;
			out->buckets[b->idx1 - 1].frees = b->frees;
		}
	}
	out->nbuckets = nb;
	out->dropped = heap_dropped;
	pthread_mutex_unlock(&heap_lock);
	heap_busy = was;
}

/* Frees a snapshot's arrays. */
void
heap_snapshot_free(struct heap_snapshot *s)
{
	free(s->buckets);
	free(s->stacks);
	free(s->pcs);
	memset(s, 0, sizeof *s);
}
