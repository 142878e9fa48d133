/*
 * libprofd-heap: the allocation functions, interposed under LD_PRELOAD
 * for the heap profiler (agent/inproc/heap.c). Only this library defines them,
 * so a program run with libprofd-agent alone has nothing interposed on
 * its allocations; preloading libprofd-heap (which holds the whole agent
 * as well, see agent/include.am) turns heap profiling on.
 *
 * Each wrapper calls the next definition (glibc's, or whatever allocator
 * comes after us), resolved with dlsym(RTLD_NEXT) on first use. dlsym
 * itself may allocate: while a thread resolves, its allocations come
 * from a small static arena (its blocks tagged as sampled blocks are,
 * told apart by address in free's slow path, never freed); until then
 * the wrappers call glibc's __libc_* entry points.
 * The fast path of an allocation is a thread-local countdown of bytes
 * (initial-exec TLS): an allocation that does not cross it costs a
 * subtraction and a branch before the jump to the next malloc. One that
 * does is a sampled block: allocated 64 bytes (or twice the alignment)
 * larger, the caller's pointer p placed 32 or 64 bytes in (so that p - 16
 * lies in p's own page), and a header written in the 24 bytes before p:
 * the key of its bucket that the agent returns when it records the
 * block with its stack (at p - 24), p XOR a random per-process secret
 * drawn before the first tag (the tag, at p - 16) and the offset (p - 8).
 * A free reads the 8 bytes at p - 16 (glibc's chunk header: the cache
 * line its own free reads next) and compares them with p's tag: only a
 * sampled block matches, and only it hands the agent its key (one
 * bucket counts the free: no table of live blocks) and is freed at its
 * real start. Nothing is read before a pointer in the first 16 bytes of
 * a page, which a sampled block never has (page-aligned requests, valloc
 * and pvalloc, are never sampled); only such a pointer is checked
 * against the arena's bounds. operator new and delete (every variant)
 * are interposed too, so C++ programs' samples start at the caller of
 * new, not inside it; a throwing new that fails falls back to the C++
 * runtime's own (new handler, std::bad_alloc).
 *
 * Until the agent says it runs (its constructor, before ours and any of
 * the program's), nothing is sampled; with PROFD_SERVICE unset the agent is
 * off and the wrappers only forward.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "agent/inproc/heap.h"

#define HEAPWRAP_SKIP		2	/* heapwrap_sampled and the wrapper */
#define HEAPWRAP_PAD		32	/* a sampled block's offset, at least */
#define HEAPWRAP_BOOT_SIZE	(256 * 1024)
#define HEAPWRAP_OFF_LEFT	(INT64_C(1) << 26)	/* recheck when off */

typedef void	*(*heapwrap_malloc_fn)(size_t);
typedef void	 (*heapwrap_free_fn)(void *);
typedef void	*(*heapwrap_calloc_fn)(size_t, size_t);
typedef void	*(*heapwrap_realloc_fn)(void *, size_t);
typedef void	*(*heapwrap_memalign_fn)(size_t, size_t);
typedef int	 (*heapwrap_posix_memalign_fn)(void **, size_t, size_t);
typedef size_t	 (*heapwrap_usable_fn)(void *);

extern void	*__libc_malloc(size_t);
extern void	 __libc_free(void *);
extern void	*__libc_calloc(size_t, size_t);
extern void	*__libc_realloc(void *, size_t);
extern void	*__libc_memalign(size_t, size_t);
extern void	*__libc_valloc(size_t);
extern void	*__libc_pvalloc(size_t);

/* The next definitions (glibc's entry points until resolved). */
static struct {
	heapwrap_malloc_fn		malloc, valloc, pvalloc;
	heapwrap_free_fn		free;
	heapwrap_calloc_fn		calloc;
	heapwrap_realloc_fn		realloc;
	heapwrap_memalign_fn		memalign, aligned_alloc;
	heapwrap_posix_memalign_fn	posix_memalign;
	heapwrap_usable_fn		usable;
} heapwrap_fn = {
	.malloc = __libc_malloc, .free = __libc_free, .calloc = __libc_calloc,
	.realloc = __libc_realloc,
};

static _Atomic int		heapwrap_ready;
static _Atomic int		heapwrap_keyed;	/* 1: drawing, 2: drawn */
static int64_t			heapwrap_mean;		/* 0: off */
/* The tag key: drawn before the first block is tagged (heapwrap_key). */
static uintptr_t		heapwrap_secret = 0x5bd1e995c0ffee11ULL;
static _Alignas(64) unsigned char heapwrap_boot[HEAPWRAP_BOOT_SIZE];
static _Atomic size_t		heapwrap_boot_used;

static __thread int64_t heapwrap_left
    __attribute__((tls_model("initial-exec")));
static __thread int heapwrap_seeded __attribute__((tls_model("initial-exec")));
static __thread int heapwrap_resolving
    __attribute__((tls_model("initial-exec")));

/* Whether p came from the bootstrap arena. */
static inline int
heapwrap_is_boot(const void *p)
{
	return (const unsigned char *)p >= heapwrap_boot &&
	    (const unsigned char *)p < heapwrap_boot + HEAPWRAP_BOOT_SIZE;
}

/* Whether p is a sampled block (its tag precedes it in its own page). */
static inline __attribute__((always_inline)) int
heapwrap_tagged(const void *p)
{
	uintptr_t a = (uintptr_t)p;

	return (a & 4095) >= 16 && __builtin_expect(*(const uintptr_t *)(a - 16) ==
	    (a ^ heapwrap_secret), 0);
}

/* The real start of a sampled block. */
static inline void *
heapwrap_base(void *p)
{
	return (char *)p - *(const uintptr_t *)((char *)p - 8);
}

/* An allocation while dlsym runs: from the arena (16-byte size header). */
static void *
heapwrap_boot_alloc(size_t n, size_t align)
{
	size_t off, start;

	if (align < 16)
		align = 16;
	if (n > HEAPWRAP_BOOT_SIZE || align > 4096)
		return NULL;
	off = atomic_load(&heapwrap_boot_used);
	do {
		start = (off + 16 + align - 1) & ~(align - 1);
		if (start + n > HEAPWRAP_BOOT_SIZE)
			return NULL;
	} while (!atomic_compare_exchange_weak(&heapwrap_boot_used, &off,
	    start + n));
	memcpy(heapwrap_boot + start - sizeof n, &n, sizeof n);
	((uintptr_t *)(heapwrap_boot + start))[-2] =
	    (uintptr_t)(heapwrap_boot + start) ^ heapwrap_secret;
	return heapwrap_boot + start;
}

/* The size of an arena block. */
static size_t
heapwrap_boot_size(const void *p)
{
	size_t n;

	memcpy(&n, (const unsigned char *)p - sizeof n, sizeof n);
	return n;
}

/* dlsym(RTLD_NEXT, name), or the glibc entry point fb. */
static void *
heapwrap_next(const char *name, void *fb)
{
	void *f = dlsym(RTLD_NEXT, name);

	return f != NULL ? f : fb;
}

/*
 * Draws the tag key, once, before anything is tagged (getrandom is a
 * system call: it allocates nothing). A thread that finds another one
 * drawing waits for it: no block may be tagged with the old key.
 */
static void
heapwrap_key(void)
{
	uintptr_t secret = 0;
	int expect = 0;

	if (atomic_load(&heapwrap_keyed) == 2)
		return;
	if (!atomic_compare_exchange_strong(&heapwrap_keyed, &expect, 1)) {
		while (atomic_load(&heapwrap_keyed) != 2)
			;	/* the other thread is in one system call */
		return;
	}
	if (getrandom(&secret, sizeof secret, GRND_NONBLOCK) !=
	    (ssize_t)sizeof secret)
		secret = ((uintptr_t)&secret * 0x9e3779b97f4a7c15ULL) ^
		    ((uintptr_t)getpid() << 32) ^ (uintptr_t)heapwrap_boot;
	heapwrap_secret = secret | 1;
	atomic_store(&heapwrap_keyed, 2);
}

/* Finds the next definitions (this thread allocates from the arena). */
static void
heapwrap_resolve(void)
{
	heapwrap_key();
	heapwrap_resolving = 1;
	heapwrap_fn.malloc = (heapwrap_malloc_fn)heapwrap_next("malloc",
	    (void *)__libc_malloc);
	heapwrap_fn.free = (heapwrap_free_fn)heapwrap_next("free",
	    (void *)__libc_free);
	heapwrap_fn.calloc = (heapwrap_calloc_fn)heapwrap_next("calloc",
	    (void *)__libc_calloc);
	heapwrap_fn.realloc = (heapwrap_realloc_fn)heapwrap_next("realloc",
	    (void *)__libc_realloc);
	heapwrap_fn.memalign = (heapwrap_memalign_fn)heapwrap_next("memalign",
	    (void *)__libc_memalign);
	heapwrap_fn.aligned_alloc = (heapwrap_memalign_fn)heapwrap_next(
	    "aligned_alloc", (void *)__libc_memalign);
	heapwrap_fn.valloc = (heapwrap_malloc_fn)heapwrap_next("valloc",
	    (void *)__libc_valloc);
	heapwrap_fn.pvalloc = (heapwrap_malloc_fn)heapwrap_next("pvalloc",
	    (void *)__libc_pvalloc);
	heapwrap_fn.posix_memalign = (heapwrap_posix_memalign_fn)heapwrap_next(
	    "posix_memalign", NULL);
	heapwrap_fn.usable = (heapwrap_usable_fn)heapwrap_next(
	    "malloc_usable_size", NULL);
	heapwrap_resolving = 0;
	atomic_store_explicit(&heapwrap_ready, 1, memory_order_release);
}

/* Whether the next definitions are known (resolving them if not). */
static inline __attribute__((always_inline)) int
heapwrap_ok(void)
{
	if (__builtin_expect(atomic_load_explicit(&heapwrap_ready,
	    memory_order_acquire), 1))
		return 1;
	if (heapwrap_resolving)
		return 0;
	heapwrap_resolve();
	return 1;
}

/* n bytes aligned to align (0: malloc's), zeroed if zero, unsampled. */
static void *
heapwrap_plain(size_t n, size_t align, int zero)
{
	if (align != 0)
		return heapwrap_fn.memalign(align, n);
	return zero ? heapwrap_fn.calloc(1, n) : heapwrap_fn.malloc(n);
}

/*
 * The countdown crossed (or the thread is new): unless the draw says
 * otherwise, n bytes as a sampled block (see the file comment), recorded
 * by the agent with the caller's stack.
 */
static __attribute__((noinline)) void *
heapwrap_sampled(size_t n, size_t align, int zero)
{
	size_t off, total;
	uint64_t key;
	int64_t next;
	char *q, *p;

	if (heapwrap_mean == 0) {
		heapwrap_left = HEAPWRAP_OFF_LEFT;
		return heapwrap_plain(n, align, zero);
	}
	if (!heapwrap_seeded) {
		heapwrap_seeded = 1;
		next = profd_agent_heap_alloc(NULL, 0, 0, NULL);
		if ((heapwrap_left = next - (int64_t)n) > 0)
			return heapwrap_plain(n, align, zero);
	}
	/* A page-aligned block cannot carry its tag in its own page. */
	if (align >= 4096) {
		heapwrap_left = profd_agent_heap_alloc(NULL, 0, 0, NULL);
		return heapwrap_plain(n, align, zero);
	}
	off = align > HEAPWRAP_PAD ? align : HEAPWRAP_PAD;
	if (__builtin_add_overflow(n, 2 * off, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	if ((q = heapwrap_plain(total, align, zero)) == NULL)
		return NULL;
	/* off bytes in if that keeps p - 16 in p's page, else 2 off. */
	p = q + off;
	if (((uintptr_t)p & 4095) < 16)
		p += off;
	((uintptr_t *)p)[-1] = (uintptr_t)(p - q);
	heapwrap_left = profd_agent_heap_alloc(p, n, HEAPWRAP_SKIP, &key);
	((uint64_t *)p)[-3] = key;
	((uintptr_t *)p)[-2] = (uintptr_t)p ^ heapwrap_secret;
	return p;
}

/* Frees a sampled block: the agent counts it, then its real start goes. */
static __attribute__((noinline)) void
heapwrap_free_sampled(void *p)
{
	profd_agent_heap_free(((const uint64_t *)p)[-3]);
	((uintptr_t *)p)[-2] = 0;
	heapwrap_fn.free(heapwrap_base(p));
}

/* The usable bytes of a block of ours or of the next allocator's. */
static size_t
heapwrap_usable(void *p)
{
	if (heapwrap_is_boot(p))
		return heapwrap_boot_size(p);
	if (heapwrap_fn.usable == NULL)
		return 0;
	if (heapwrap_tagged(p))
		return heapwrap_fn.usable(heapwrap_base(p)) -
		    (size_t)((char *)p - (char *)heapwrap_base(p));
	return heapwrap_fn.usable(p);
}

/* Counts n bytes down; 1 when this allocation is to be sampled. */
static inline __attribute__((always_inline)) int
heapwrap_due(size_t n)
{
	return __builtin_expect((heapwrap_left -= (int64_t)n) <= 0, 0);
}

/* Keeps a call from being a tail call (the wrapper's frame must stay). */
#define HEAPWRAP_KEEP_FRAME()	__asm__ volatile("" ::: "memory")

/*
 * The C allocation functions, defined under their own names (asm labels)
 * so that this file's functions carry its prefix and nothing here calls
 * them through the symbol table by mistake.
 */
void	*heapwrap_malloc(size_t) __asm__("malloc");
void	 heapwrap_free(void *) __asm__("free");
void	*heapwrap_calloc(size_t, size_t) __asm__("calloc");
void	*heapwrap_realloc(void *, size_t) __asm__("realloc");
void	*heapwrap_memalign(size_t, size_t) __asm__("memalign");
void	*heapwrap_aligned_alloc(size_t, size_t) __asm__("aligned_alloc");
int	 heapwrap_posix_memalign(void **, size_t, size_t)
	    __asm__("posix_memalign");
void	*heapwrap_valloc(size_t) __asm__("valloc");
void	*heapwrap_pvalloc(size_t) __asm__("pvalloc");
size_t	 heapwrap_malloc_usable_size(void *) __asm__("malloc_usable_size");

/* malloc: see the file comment. */
void *
heapwrap_malloc(size_t n)
{
	void *p;

	/* Not due: resolved (a new thread's countdown starts due). */
	if (__builtin_expect(!heapwrap_due(n), 1))
		return heapwrap_fn.malloc(n);
	if (!heapwrap_ok())
		return heapwrap_boot_alloc(n, 16);
	p = heapwrap_sampled(n, 0, 0);
	HEAPWRAP_KEEP_FRAME();
	return p;
}

/* free of a tagged block: a sampled one, or the arena's (kept). */
static __attribute__((noinline)) void
heapwrap_free_tagged(void *p)
{
	if (!heapwrap_is_boot(p))
		heapwrap_free_sampled(p);
}

/*
 * free: a pointer past its page's first 16 bytes (nearly all) is
 * checked for a tag; one within them (NULL, page-aligned) for the arena.
 */
void
heapwrap_free(void *p)
{
	uintptr_t a = (uintptr_t)p;

	if (__builtin_expect((a & 4095) >= 16, 1)) {
		if (__builtin_expect(*(const uintptr_t *)(a - 16) ==
		    (a ^ heapwrap_secret), 0)) {
			heapwrap_free_tagged(p);
			return;
		}
	} else if (p == NULL || heapwrap_is_boot(p))
		return;
	heapwrap_fn.free(p);
}

/* calloc. */
void *
heapwrap_calloc(size_t k, size_t n)
{
	size_t total;
	void *p;

	if (__builtin_mul_overflow(k, n, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	if (__builtin_expect(!heapwrap_due(total), 1))
		return heapwrap_fn.calloc(k, n);
	if (!heapwrap_ok())
		return heapwrap_boot_alloc(total, 16);	/* arena is zeroed */
	p = heapwrap_sampled(total, 0, 1);
	HEAPWRAP_KEEP_FRAME();
	return p;
}

/*
 * realloc: a sampled block, or any block when the countdown says this
 * allocation is to be sampled, moves into a new block (copied, the old
 * one freed); anything else is the next allocator's realloc.
 */
void *
heapwrap_realloc(void *old, size_t n)
{
	size_t had;
	void *p;
	int due;

	if (!heapwrap_ok()) {
		if ((p = heapwrap_boot_alloc(n, 16)) != NULL && old != NULL) {
			had = heapwrap_boot_size(old);
			memcpy(p, old, had < n ? had : n);
		}
		return p;
	}
	if (old == NULL) {
		p = heapwrap_malloc(n);
		HEAPWRAP_KEEP_FRAME();
		return p;
	}
	due = n > 0 && heapwrap_due(n);
	if (due && heapwrap_fn.usable == NULL) {
		/* Cannot move it (its size unknown): not sampled. */
		heapwrap_left = profd_agent_heap_alloc(NULL, 0, 0, NULL);
		due = 0;
	}
	if (!due && !heapwrap_is_boot(old) && !heapwrap_tagged(old))
		return heapwrap_fn.realloc(old, n);
	/*
	 * Moved into a new block: a sampled one when the countdown says so
	 * (the new size's chance), a plain one otherwise; a sampled or
	 * arena block never grows in place.
	 */
	had = heapwrap_usable(old);
	p = NULL;
	if (n > 0 && (p = due ? heapwrap_sampled(n, 0, 0) :
	    heapwrap_fn.malloc(n)) == NULL)
		return NULL;
	if (p != NULL)
		memcpy(p, old, had < n ? had : n);
	heapwrap_free(old);
	HEAPWRAP_KEEP_FRAME();
	return p;
}

/* An aligned allocation: memalign, aligned_alloc, valloc, pvalloc. */
static inline __attribute__((always_inline)) void *
heapwrap_aligned(size_t align, size_t n, heapwrap_memalign_fn next)
{
	if (!heapwrap_ok())
		return heapwrap_boot_alloc(n, align);
	if (align < 16)
		align = 16;
	if (heapwrap_due(n))
		return heapwrap_sampled(n, align, 0);
	return next(align, n);
}

/* memalign. */
void *
heapwrap_memalign(size_t align, size_t n)
{
	void *p = heapwrap_aligned(align, n, heapwrap_fn.memalign);

	HEAPWRAP_KEEP_FRAME();
	return p;
}

/* aligned_alloc. */
void *
heapwrap_aligned_alloc(size_t align, size_t n)
{
	void *p = heapwrap_aligned(align, n, heapwrap_fn.aligned_alloc);

	HEAPWRAP_KEEP_FRAME();
	return p;
}

/* posix_memalign. */
int
heapwrap_posix_memalign(void **out, size_t align, size_t n)
{
	void *p;
	int rc;

	if (align < sizeof(void *) || (align & (align - 1)) != 0)
		return EINVAL;
	if (heapwrap_ok() && !heapwrap_due(n) &&
	    heapwrap_fn.posix_memalign != NULL)
		return heapwrap_fn.posix_memalign(out, align, n);
	if (!heapwrap_ok())
		p = heapwrap_boot_alloc(n, align);
	else if (heapwrap_left <= 0)
		p = heapwrap_sampled(n, align < 16 ? 16 : align, 0);
	else
		p = heapwrap_fn.memalign(align, n);
	rc = p != NULL ? 0 : ENOMEM;
	if (p != NULL)
		*out = p;
	HEAPWRAP_KEEP_FRAME();
	return rc;
}

/* valloc. */
void *
heapwrap_valloc(size_t n)
{
	void *p = heapwrap_aligned(4096, n, heapwrap_fn.memalign);

	HEAPWRAP_KEEP_FRAME();
	return p;
}

/* pvalloc: whole pages. */
void *
heapwrap_pvalloc(size_t n)
{
	void *p = heapwrap_aligned(4096, (n + 4095) & ~(size_t)4095,
	    heapwrap_fn.memalign);

	HEAPWRAP_KEEP_FRAME();
	return p;
}

/* malloc_usable_size (an arena block's is its requested size). */
size_t
heapwrap_malloc_usable_size(void *p)
{
	if (p == NULL || (!heapwrap_ok() && !heapwrap_is_boot(p)))
		return 0;
	return heapwrap_usable(p);
}

/*
 * C++ operator new and delete. Declared under their mangled names
 * (x86-64 and arm64: size_t is unsigned long, "m").
 */
void	*heapwrap_new(size_t) __asm__("_Znwm");
void	*heapwrap_new_array(size_t) __asm__("_Znam");
void	*heapwrap_new_nothrow(size_t, const void *)
	    __asm__("_ZnwmRKSt9nothrow_t");
void	*heapwrap_new_array_nothrow(size_t, const void *)
	    __asm__("_ZnamRKSt9nothrow_t");
void	*heapwrap_new_aligned(size_t, size_t) __asm__("_ZnwmSt11align_val_t");
void	*heapwrap_new_array_aligned(size_t, size_t)
	    __asm__("_ZnamSt11align_val_t");
void	*heapwrap_new_aligned_nothrow(size_t, size_t, const void *)
	    __asm__("_ZnwmSt11align_val_tRKSt9nothrow_t");
void	*heapwrap_new_array_aligned_nothrow(size_t, size_t, const void *)
	    __asm__("_ZnamSt11align_val_tRKSt9nothrow_t");
void	 heapwrap_delete(void *) __asm__("_ZdlPv");
void	 heapwrap_delete_array(void *) __asm__("_ZdaPv");
void	 heapwrap_delete_sized(void *, size_t) __asm__("_ZdlPvm");
void	 heapwrap_delete_array_sized(void *, size_t) __asm__("_ZdaPvm");
void	 heapwrap_delete_nothrow(void *, const void *)
	    __asm__("_ZdlPvRKSt9nothrow_t");
void	 heapwrap_delete_array_nothrow(void *, const void *)
	    __asm__("_ZdaPvRKSt9nothrow_t");
void	 heapwrap_delete_aligned(void *, size_t)
	    __asm__("_ZdlPvSt11align_val_t");
void	 heapwrap_delete_array_aligned(void *, size_t)
	    __asm__("_ZdaPvSt11align_val_t");
void	 heapwrap_delete_sized_aligned(void *, size_t, size_t)
	    __asm__("_ZdlPvmSt11align_val_t");
void	 heapwrap_delete_array_sized_aligned(void *, size_t, size_t)
	    __asm__("_ZdaPvmSt11align_val_t");
void	 heapwrap_delete_aligned_nothrow(void *, size_t, const void *)
	    __asm__("_ZdlPvSt11align_val_tRKSt9nothrow_t");
void	 heapwrap_delete_array_aligned_nothrow(void *, size_t, const void *)
	    __asm__("_ZdaPvSt11align_val_tRKSt9nothrow_t");

/* An allocation for new: sampled as the wrappers above. */
static inline __attribute__((always_inline)) void *
heapwrap_new_block(size_t n, size_t align)
{
	if (!heapwrap_ok())
		return heapwrap_boot_alloc(n, align);
	if (n == 0)
		n = 1;
	if (heapwrap_due(n))
		return heapwrap_sampled(n, align > 16 ? align : 0, 0);
	return align <= 16 ? heapwrap_fn.malloc(n) :
	    heapwrap_fn.memalign(align, n);
}

/* A throwing new that found no memory: the C++ runtime's own decides. */
static void *
heapwrap_new_failed(const char *name, size_t n, size_t align)
{
	void *f = dlsym(RTLD_NEXT, name);

	if (f == NULL)
		return NULL;
	if (align == 0)
		return ((void *(*)(size_t))f)(n);
	return ((void *(*)(size_t, size_t))f)(n, align);
}

/* operator new(size_t). */
void *
heapwrap_new(size_t n)
{
	void *p = heapwrap_new_block(n, 0);

	HEAPWRAP_KEEP_FRAME();
	return p != NULL ? p : heapwrap_new_failed("_Znwm", n, 0);
}

/* operator new[](size_t). */
void *
heapwrap_new_array(size_t n)
{
	void *p = heapwrap_new_block(n, 0);

	HEAPWRAP_KEEP_FRAME();
	return p != NULL ? p : heapwrap_new_failed("_Znam", n, 0);
}

/* operator new(size_t, nothrow_t). */
void *
heapwrap_new_nothrow(size_t n, const void *nt)
{
	void *p = heapwrap_new_block(n, 0);

	(void)nt;
	HEAPWRAP_KEEP_FRAME();
	return p;
}

/* operator new[](size_t, nothrow_t). */
void *
heapwrap_new_array_nothrow(size_t n, const void *nt)
{
	void *p = heapwrap_new_block(n, 0);

	(void)nt;
	HEAPWRAP_KEEP_FRAME();
	return p;
}

/* operator new(size_t, align_val_t). */
void *
heapwrap_new_aligned(size_t n, size_t al)
{
	void *p = heapwrap_new_block(n, al);

	HEAPWRAP_KEEP_FRAME();
	return p != NULL ? p : heapwrap_new_failed("_ZnwmSt11align_val_t", n,
	    al);
}

/* operator new[](size_t, align_val_t). */
void *
heapwrap_new_array_aligned(size_t n, size_t al)
{
	void *p = heapwrap_new_block(n, al);

	HEAPWRAP_KEEP_FRAME();
	return p != NULL ? p : heapwrap_new_failed("_ZnamSt11align_val_t", n,
	    al);
}

/* operator new(size_t, align_val_t, nothrow_t). */
void *
heapwrap_new_aligned_nothrow(size_t n, size_t al, const void *nt)
{
	void *p = heapwrap_new_block(n, al);

	(void)nt;
	HEAPWRAP_KEEP_FRAME();
	return p;
}

/* operator new[](size_t, align_val_t, nothrow_t). */
void *
heapwrap_new_array_aligned_nothrow(size_t n, size_t al, const void *nt)
{
	void *p = heapwrap_new_block(n, al);

	(void)nt;
	HEAPWRAP_KEEP_FRAME();
	return p;
}

/* operator delete(void *). */
void
heapwrap_delete(void *p)
{
	heapwrap_free(p);
}

/* operator delete[](void *). */
void
heapwrap_delete_array(void *p)
{
	heapwrap_free(p);
}

/* operator delete(void *, size_t). */
void
heapwrap_delete_sized(void *p, size_t n)
{
	(void)n;
	heapwrap_free(p);
}

/* operator delete[](void *, size_t). */
void
heapwrap_delete_array_sized(void *p, size_t n)
{
	(void)n;
	heapwrap_free(p);
}

/* operator delete(void *, nothrow_t). */
void
heapwrap_delete_nothrow(void *p, const void *nt)
{
	(void)nt;
	heapwrap_free(p);
}

/* operator delete[](void *, nothrow_t). */
void
heapwrap_delete_array_nothrow(void *p, const void *nt)
{
	(void)nt;
	heapwrap_free(p);
}

/* operator delete(void *, align_val_t). */
void
heapwrap_delete_aligned(void *p, size_t al)
{
	(void)al;
	heapwrap_free(p);
}

/* operator delete[](void *, align_val_t). */
void
heapwrap_delete_array_aligned(void *p, size_t al)
{
	(void)al;
	heapwrap_free(p);
}

/* operator delete(void *, size_t, align_val_t). */
void
heapwrap_delete_sized_aligned(void *p, size_t n, size_t al)
{
	(void)n;
	(void)al;
	heapwrap_free(p);
}

/* operator delete[](void *, size_t, align_val_t). */
void
heapwrap_delete_array_sized_aligned(void *p, size_t n, size_t al)
{
	(void)n;
	(void)al;
	heapwrap_free(p);
}

/* operator delete(void *, align_val_t, nothrow_t). */
void
heapwrap_delete_aligned_nothrow(void *p, size_t al, const void *nt)
{
	(void)al;
	(void)nt;
	heapwrap_free(p);
}

/* operator delete[](void *, align_val_t, nothrow_t). */
void
heapwrap_delete_array_aligned_nothrow(void *p, size_t al, const void *nt)
{
	(void)al;
	(void)nt;
	heapwrap_free(p);
}

/*
 * Load time: resolve, and sample from now on if the agent runs. The
 * agent lives in this library too: its constructor (agent_env_start,
 * priority 102) must have run, hence 103.
 */
__attribute__((constructor(103))) static void
heapwrap_init(void)
{
	heapwrap_key();
	heapwrap_ok();
	heapwrap_mean = profd_agent_heap_start();
	heapwrap_left = 0;
	heapwrap_seeded = 0;
}
