/*
 * Safe points for starting the agent thread from a signal handler.
 *
 * Under LD_PRELOAD the agent thread is created only when the first window
 * is due (agent/inproc/starter.c), from the handler of a one-shot timer, so a
 * process that ends before then (most of a build's compilers, shells and
 * their fork children) never has a second thread to create, schedule and
 * reap. pthread_create is not async-signal-safe in general: it takes
 * glibc's stack-cache lock, the loader's TLS lock (recursive) and calls
 * calloc for the new thread's DTV. It is safe where the interrupted
 * thread holds none of those and is not in the middle of malloc, which
 * this file decides from the interrupted context, all of it
 * async-signal-safe:
 *
 * - the interrupted pc is outside glibc (libc.so.6, the dynamic loader),
 *   the agent itself and any sanitizer runtime (the vDSO, where
 *   clock_gettime runs, takes no lock and is never called from malloc
 *   or the stack cache): such code holds no glibc lock of its own (glibc calls back into a program without
 *   those locks held: dl_iterate_phdr holds only the loader's write lock,
 *   which pthread_create does not take);
 * - or the thread waits in a blocking system call (the context's pc is at
 *   or just past a `syscall` instruction with a waiting call's number in
 *   rax, or -EINTR): glibc makes those waits (futex, poll, epoll_wait,
 *   wait4, nanosleep ...) without holding a lock pthread_create needs
 *   (reads are left out: the loader reads files holding its lock); this is
 *   where a thread that only waits for others (xz's main thread) is
 *   found;
 * - the mask in the context is the one the program last set on this
 *   thread (agent/inproc/sigmask.c): a different one means the signal landed in
 *   a handler of the program's, which may have interrupted malloc;
 * - malloc and calloc are glibc's: an allocator of the program's own
 *   (jemalloc, tcmalloc, a sanitizer's) could be interrupted holding its
 *   lock and is never entered from a handler. Such a process starts the
 *   agent thread at once instead (safepoint_prepare fails).
 *
 * x86-64 only; elsewhere safepoint_prepare fails and the thread starts at
 * once, as before.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "agent/inproc/safepoint.h"
#include "agent/inproc/sigmask.h"

#define SAFEPOINT_MAX_RANGES	32

struct safepoint_range {
	uintptr_t	lo, hi;		/* executable: [lo, hi) */
	int		libc;		/* libc.so.6's */
};

static struct safepoint_range	safepoint_ranges[SAFEPOINT_MAX_RANGES];
static int			safepoint_n;
static int			safepoint_done;	/* prepared (any result) */
static int			safepoint_ok;	/* usable */
static int			safepoint_sig;	/* ignored in the mask */

/* The library names whose code may hold glibc's locks or malloc's state. */
static int
safepoint_unsafe_name(const char *path)
{
	static const char *const prefixes[] = {
		"libc.so", "ld-linux", "ld64.so", "ld.so", "libpthread.so", "libdl.so", "librt.so",
		"libasan.so", "libtsan.so", "libubsan.so", "liblsan.so",
		"libhwasan.so", "libmemusage.so", "libSegFault.so",
	};
	const char *base = strrchr(path, '/');
	size_t i;

	base = base != NULL ? base + 1 : path;
	for (i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
		if (strncmp(base, prefixes[i], strlen(prefixes[i])) == 0)
			return 1;
	return 0;
}

/* Whether addr lies in one of the object's loaded segments. */
static int
safepoint_in_object(const struct dl_phdr_info *info, uintptr_t addr)
{
	const ElfW(Phdr) *ph;
	uintptr_t lo;
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		ph = &info->dlpi_phdr[i];
		lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && addr >= lo &&
		    addr < lo + ph->p_memsz)
			return 1;
	}
	return 0;
}

/* dl_iterate_phdr callback: records the unsafe objects' code. */
static int
safepoint_phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t self = (uintptr_t)arg;
	const char *name = info->dlpi_name != NULL ? info->dlpi_name : "";
	const ElfW(Phdr) *ph;
	int i, libc;

	(void)size;
	if (!safepoint_unsafe_name(name) && !safepoint_in_object(info, self))
		return 0;
	libc = strstr(name, "libc.so") != NULL;
	for (i = 0; i < info->dlpi_phnum; i++) {
		ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (safepoint_n == SAFEPOINT_MAX_RANGES)
			return 1;	/* too many: not usable */
		safepoint_ranges[safepoint_n].lo = info->dlpi_addr +
		    ph->p_vaddr;
		safepoint_ranges[safepoint_n].hi = info->dlpi_addr +
		    ph->p_vaddr + ph->p_memsz;
		safepoint_ranges[safepoint_n].libc = libc;
		safepoint_n++;
	}
	return 0;
}

/* The range holding pc, or NULL. */
static const struct safepoint_range *
safepoint_find(uintptr_t pc)
{
	int i;

	for (i = 0; i < safepoint_n; i++)
		if (pc >= safepoint_ranges[i].lo && pc < safepoint_ranges[i].hi)
			return &safepoint_ranges[i];
	return NULL;
}

/* Whether fn (a function's address) is glibc's. */
static int
safepoint_is_libc(void *fn)
{
	const struct safepoint_range *r;

	return fn != NULL && (r = safepoint_find((uintptr_t)fn)) != NULL &&
	    r->libc;
}

/*
 * The function the program's calls to name reach. A non-PIE executable
 * that takes malloc's address (python3.11 does) makes its own PLT entry
 * the canonical address, which dlsym returns; the definition behind it is
 * then the next one after the executable, which (preloaded first) is what
 * RTLD_NEXT finds from here.
 */
static void *
safepoint_definition(const char *name)
{
	const ElfW(Sym) *sym = NULL;
	void *fn = dlsym(RTLD_DEFAULT, name);
	Dl_info info;

	if (fn != NULL && dladdr1(fn, &info, (void **)&sym,
	    RTLD_DL_SYMENT) != 0 && sym != NULL && info.dli_sname != NULL &&
	    strcmp(info.dli_sname, name) == 0 && sym->st_shndx != SHN_UNDEF)
		return fn;
	return dlsym(RTLD_NEXT, name);
}

/*
 * Prepares the checks once per process image (a fork child inherits
 * them): the code ranges of glibc, the vDSO, the agent and sanitizer
 * runtimes, and whether malloc and calloc are glibc's. signo is the
 * agent's signal (blocked in its own handler's context). 0 if a handler
 * may start the agent thread in this process, -1 if not.
 */
int
safepoint_prepare(int signo)
{
#if defined(__x86_64__)
	int full;

	if (safepoint_done)
		return safepoint_ok ? 0 : -1;
	safepoint_done = 1;
	safepoint_sig = signo;
	safepoint_n = 0;
	full = dl_iterate_phdr(safepoint_phdr_cb,
	    (void *)(uintptr_t)safepoint_prepare);
	safepoint_ok = !full &&
	    safepoint_is_libc(safepoint_definition("malloc")) &&
	    safepoint_is_libc(safepoint_definition("calloc"));
	return safepoint_ok ? 0 : -1;
#else
	(void)signo;
	safepoint_done = 1;
	return -1;
#endif
}

#if defined(__x86_64__)
/* Whether nr is a system call glibc only makes to wait. */
static int
safepoint_waiting_call(uint64_t nr)
{
	switch (nr) {
	case SYS_futex: case SYS_poll: case SYS_ppoll: case SYS_select:
	case SYS_pselect6: case SYS_epoll_wait: case SYS_epoll_pwait:
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
	case SYS_nanosleep: case SYS_clock_nanosleep: case SYS_wait4:
	case SYS_waitid: case SYS_pause: case SYS_rt_sigsuspend:
	case SYS_rt_sigtimedwait: case SYS_accept: case SYS_accept4:
	case SYS_restart_syscall:
		return 1;
	default:
		return 0;
	}
}

/* Whether the two bytes at p (inside r) are a `syscall` instruction. */
static int
safepoint_syscall_at(const struct safepoint_range *r, uintptr_t p)
{
	const unsigned char *c = (const unsigned char *)p;

	return p >= r->lo && p + 2 <= r->hi && c[0] == 0x0f && c[1] == 0x05;
}
#endif

/*
 * In the agent's signal handler: whether the interrupted context (a
 * ucontext_t) is a point where the handler may call pthread_create (see
 * above). Async-signal-safe.
 */
int
safepoint_check(const void *ucv)
{
#if defined(__x86_64__)
	const ucontext_t *uc = ucv;
	const struct safepoint_range *r;
	uint64_t want, have, ignore, rax;
	uintptr_t pc;

	if (!safepoint_ok || uc == NULL || !sigmask_program(&want))
		return 0;
	/* The agent's own signal, SIGKILL and SIGSTOP do not count. */
	ignore = (1ULL << (safepoint_sig - 1)) | (1ULL << (SIGKILL - 1)) |
	    (1ULL << (SIGSTOP - 1));
	memcpy(&have, &uc->uc_sigmask, sizeof have);
	if ((have & ~ignore) != (want & ~ignore))
		return 0;	/* inside a handler of the program's */
	pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	if ((r = safepoint_find(pc)) == NULL)
		return 1;	/* the program's own code */
	rax = (uint64_t)uc->uc_mcontext.gregs[REG_RAX];
	/* A wait to be restarted: pc back on the instruction, rax the call. */
	if (safepoint_syscall_at(r, pc) && safepoint_waiting_call(rax))
		return 1;
	/* A wait cut short: pc past the instruction, rax -EINTR. */
	if (pc >= 2 && safepoint_syscall_at(r, pc - 2) &&
	    rax == (uint64_t)-EINTR)
		return 1;
	return 0;
#else
	(void)ucv;
	return 0;
#endif
}
