/*
 * Unit tests of the CFI unwinder: cfi.c on a hand-made .eh_frame (every
 * row checked, then every truncation and byte flip of it parsed without
 * a fault), on Debian's libc and python3.11 (rows of known functions, the
 * PLT rule, outermost frames, table memory); unwind.c on this program,
 * built without frame pointers (-O2 -fomit-frame-pointer, include.am),
 * from a signal handler: callers found down to main and _start, rbp
 * zeroed in the leaf, no frame outside the executable mappings, tables
 * loaded only for objects walked through and within the parsing budget,
 * snapshots retired and freed.
 */
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "agent/core/cfi.h"
#include "agent/core/cfi_elf.h"
#include "agent/core/maps.h"
#include "agent/core/symtab.h"
#include "agent/inproc/unwind.h"
#include "common/xmalloc.h"
#include "test/lib/tap.h"

#define LIBC	"/lib/x86_64-linux-gnu/libc.so.6"
#define PYTHON	"/usr/bin/python3.11"

/*
 * A CIE (z, R = pcrel|sdata4; def_cfa rsp+8, RA at cfa-8) and one FDE for
 * [0x1000, 0x1040): push rbp at +1 (cfa rsp+16, rbp at cfa-16), mov
 * rbp,rsp at +4 (cfa rbp+16), remember, leave at +0x30 (cfa rsp+8),
 * restore_state at +0x31, then rbp undefined... as a row list below.
 */
static const uint8_t test_eh[] = {
	/* CIE: length 20, id 0, version 1, "zR", code 1, data -8, RA 16 */
	20, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16,
	1, 0x1b,			/* aug length 1: pcrel|sdata4 */
	0x0c, 7, 8,			/* def_cfa rsp+8 */
	0x90, 1,			/* offset r16 at cfa-8 */
	0, 0,				/* padding */
	/* FDE at 24: length 36, CIE pointer 28 (back to 0) */
	36, 0, 0, 0, 28, 0, 0, 0,
	0, 0, 0, 0,			/* pc_begin, patched: pcrel */
	0x40, 0, 0, 0,			/* pc_range 0x40 */
	0,				/* aug length 0 */
	0x41,				/* advance 1 */
	0x0e, 16,			/* def_cfa_offset 16 */
	0x86, 2,			/* offset rbp at cfa-16 */
	0x43,				/* advance 3 */
	0x0d, 6,			/* def_cfa_register rbp */
	0x0a,				/* remember_state */
	0x02, 0x2c,			/* advance_loc1 0x2c: at 0x30 */
	0x0c, 7, 8,			/* def_cfa rsp+8 */
	0xc6,				/* restore rbp */
	0x41,				/* advance 1: at 0x31 */
	0x0b,				/* restore_state */
	0x42,				/* advance 2: at 0x33 */
	0x07, 16,			/* undefined RA */
	0, 0,				/* nops */
	0, 0, 0, 0			/* terminator */
};

/* Builds test_eh at link address 0x800 with the FDE covering 0x1000. */
static void
test_eh_build(uint8_t *buf)
{
	int32_t rel = 0x1000 - (0x800 + 32);

	memcpy(buf, test_eh, sizeof test_eh);
	memcpy(buf + 32, &rel, 4);
}

static void
test_parse_synthetic(void)
{
	uint8_t buf[sizeof test_eh], bad[sizeof test_eh];
	struct cfi_table *t;
	const struct cfi_row *r;
	size_t len, i, rows = 0;
	int b;

	test_eh_build(buf);
	t = cfi_from_section(buf, sizeof buf, 0x800, 1);
	ok(t->fdes == 1 && t->bad == 0 && t->base == 0x1000,
	    "synthetic .eh_frame: one FDE at 0x1000 (%zu, %zu bad)", t->fdes,
	    t->bad);
	r = cfi_find(t, 0x1000);
	ok(r && r->cfa == CFI_CFA_RSP && r->cfa_off == 8 &&
	    r->rbp == CFI_RBP_SAME, "entry: cfa rsp+8, rbp unchanged");
	r = cfi_find(t, 0x1002);
	ok(r && r->cfa == CFI_CFA_RSP && r->cfa_off == 16 &&
	    r->rbp == CFI_RBP_CFA && r->rbp_off == -16,
	    "after push rbp: cfa rsp+16, rbp at cfa-16");
	r = cfi_find(t, 0x1010);
	ok(r && r->cfa == CFI_CFA_RBP && r->cfa_off == 16,
	    "after mov rbp,rsp: cfa rbp+16");
	r = cfi_find(t, 0x1030);
	ok(r && r->cfa == CFI_CFA_RSP && r->cfa_off == 8 &&
	    r->rbp == CFI_RBP_SAME, "after leave: cfa rsp+8, rbp restored");
	r = cfi_find(t, 0x1031);
	ok(r && r->cfa == CFI_CFA_RBP && r->cfa_off == 16 &&
	    r->rbp == CFI_RBP_CFA, "restore_state brings the body rule back");
	r = cfi_find(t, 0x103f);
	ok(r && r->cfa == CFI_CFA_END, "undefined RA: outermost frame");
	r = cfi_find(t, 0x1040);
	ok(r && r->cfa == CFI_CFA_NONE, "past the FDE: no CFI");
	ok(cfi_find(t, 0xfff) == NULL, "below the first FDE: no row");
	cfi_free(t);

	/* Every truncation and every byte value at every offset. */
	for (len = 0; len <= sizeof buf; len++) {
		t = cfi_from_section(buf, len, 0x800, 1);
		rows += t->n;
		cfi_free(t);
	}
	for (i = 0; i < sizeof buf; i++) {
		for (b = 0; b < 256; b += 5) {
			memcpy(bad, buf, sizeof bad);
			bad[i] = (uint8_t)b;
			t = cfi_from_section(bad, sizeof bad, 0x800, 1);
			rows += t->n;
			cfi_free(t);
			t = cfi_from_section(bad, sizeof bad, 0x800, 0);
			cfi_free(t);
		}
	}
	ok(rows > 0, "every truncation and byte flip parses without a fault");
}

/* Link address of a dynamic symbol of path, or 0. */
static uint64_t
test_sym(const char *path, const char *name)
{
	struct symtab *st;
	uint64_t addr = 0;
	size_t idx;

	if ((st = symtab_open(path, NULL)) == NULL)
		return 0;
	/* symtab has no name lookup: scan addresses through the loads. */
	for (idx = 0; idx < symtab_count(st); idx++) {
		uint64_t a = symtab_symbol_addr(st, idx);
		size_t j;
		const char *n = symtab_lookup(st, a, &j);

		if (n != NULL && strcmp(n, name) == 0) {
			addr = a;
			break;
		}
	}
	symtab_free(st);
	return addr;
}

/* Counts rows of kind cfa. */
static size_t
test_count(const struct cfi_table *t, int cfa)
{
	size_t i, n = 0;

	for (i = 0; i < t->n; i++)
		n += t->rows[i].cfa == cfa;
	return n;
}

/* The last row at or below vaddr by a search of the whole table. */
static const struct cfi_row *
test_find_whole(const struct cfi_table *t, uint64_t vaddr)
{
	size_t lo = 0, hi = t->n, mid;

	if (t->n == 0 || vaddr < t->base || vaddr - t->base > UINT32_MAX)
		return NULL;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (t->rows[mid].pc <= vaddr - t->base)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == 0 ? NULL : &t->rows[lo - 1];
}

/* Whether cfi_find (through its page index) agrees at every address. */
static int
test_pages_agree(const struct cfi_table *t, uint64_t *checked)
{
	uint64_t a, end = t->base + (t->n ? t->rows[t->n - 1].pc : 0) + 4096;

	*checked = 0;
	for (a = t->base >= 4096 ? t->base - 4096 : 0; a < end;
	    a++, (*checked)++)
		if (cfi_find(t, a) != test_find_whole(t, a)) {
			printf("# %#llx: the paged lookup disagrees\n",
			    (unsigned long long)a);
			return 0;
		}
	return 1;
}

/* Milliseconds since ts. */
static double
test_ms_since(const struct timespec *ts)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - ts->tv_sec) * 1e3 +
	    (now.tv_nsec - ts->tv_nsec) / 1e6;
}

static void
test_parse_real(void)
{
	static const char *const libc_funcs[] = { "getenv", "qsort", "setlocale",
	    "memcpy", "__libc_start_main", NULL };
	struct cfi_table *t;
	const struct cfi_row *r;
	struct timespec ts;
	uint64_t a;
	size_t i, deeper;
	char *cause = NULL;
	int entry_ok = 1, inside_ok = 1;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	t = cfi_elf_open(LIBC, SIZE_MAX, &cause);
	ok(t != NULL, "libc's CFI read (%s)", cause ? cause : "ok");
	if (t == NULL)
		return;
	printf("# libc: %zu FDEs, %zu bad, %zu rows of %zu bytes = %zu KiB, "
	    "%.1f ms\n", t->fdes, t->bad, t->n, sizeof(struct cfi_row),
	    t->n * sizeof(struct cfi_row) / 1024, test_ms_since(&ts));
	ok(sizeof(struct cfi_row) == 12, "a row is 12 bytes");
	ok(t->fdes > 2000 && t->bad == 0 && !t->debug_frame,
	    "libc: thousands of FDEs from .eh_frame, none malformed");
	ok(t->n * sizeof(struct cfi_row) < (1 << 20),
	    "libc's table is under 1 MiB");
	for (i = 0; libc_funcs[i] != NULL; i++) {
		a = test_sym(LIBC, libc_funcs[i]);
		r = a ? cfi_find(t, a) : NULL;
		if (r == NULL || r->cfa != CFI_CFA_RSP || r->cfa_off != 8) {
			printf("# %s at %#llx: no entry row\n", libc_funcs[i],
			    (unsigned long long)a);
			entry_ok = 0;
		}
	}
	ok(entry_ok, "libc functions start with cfa rsp+8");
	/* setlocale pushes registers: some row inside has a deeper CFA. */
	a = test_sym(LIBC, "setlocale");
	deeper = 0;
	for (i = 1; i < 64 && a != 0; i++) {
		r = cfi_find(t, a + i);
		if (r != NULL && r->cfa == CFI_CFA_RSP && r->cfa_off > 8)
			deeper++;
		if (r == NULL || r->cfa == CFI_CFA_NONE)
			inside_ok = 0;
	}
	ok(deeper > 0 && inside_ok, "setlocale's prologue moves the CFA");
	ok(test_count(t, CFI_CFA_PLT) >= 1, "libc's .plt rule is recognized");
	ok(test_count(t, CFI_CFA_END) >= 1,
	    "an undefined return address (clone3's child) is marked");
	ok(cfi_offset_to_vaddr(t, 0x30000, &a) == 0 && a == 0x30000,
	    "libc: file offset to link address through PT_LOAD");
	ok(t->page != NULL && t->npages == (t->rows[t->n - 1].pc >>
	    CFI_PAGE_SHIFT) + 1 && t->page[t->npages] == t->n,
	    "libc: a page index of %zu pages", t->npages);
	i = (size_t)test_pages_agree(t, &a);
	ok(i, "libc: the paged lookup finds the whole table's row at each "
	    "of %llu addresses", (unsigned long long)a);
	cfi_free(t);

	clock_gettime(CLOCK_MONOTONIC, &ts);
	t = cfi_elf_open(PYTHON, SIZE_MAX, &cause);
	ok(t != NULL, "python3.11's CFI read");
	if (t == NULL)
		return;
	printf("# python3.11: %zu FDEs, %zu bad, %zu rows = %zu KiB, "
	    "%.1f ms\n", t->fdes, t->bad, t->n,
	    t->n * sizeof(struct cfi_row) / 1024, test_ms_since(&ts));
	ok(t->fdes > 5000 && t->bad == 0, "python3.11: thousands of FDEs");
	ok(t->n * sizeof(struct cfi_row) < (2 << 20),
	    "python3.11's table is under 2 MiB");
	a = test_sym(PYTHON, "_PyEval_EvalFrameDefault");
	r = a ? cfi_find(t, a) : NULL;
	ok(r && r->cfa == CFI_CFA_RSP && r->cfa_off == 8,
	    "_PyEval_EvalFrameDefault starts with cfa rsp+8");
	r = a ? cfi_find(t, a + 200) : NULL;
	ok(r && r->cfa == CFI_CFA_RSP && r->cfa_off > 8,
	    "and has pushed registers 200 bytes in (cfa rsp+%d)",
	    r ? r->cfa_off : 0);
	ok(test_count(t, CFI_CFA_PLT) >= 1 && test_count(t, CFI_CFA_END) >= 1,
	    "python3.11: the .plt rule and _start's undefined RA");
	cfi_free(t);

	t = cfi_elf_open("/etc/hostname", SIZE_MAX, &cause);
	ok(t == NULL, "a non-ELF file is refused");
	free(cause);
}

/* --- walking this program, built without frame pointers --------------- */

#define TEST_MAX	64

static _Atomic int	test_phase;	/* 1: leaf spinning, 2: sampled */
static uintptr_t	test_pcs[TEST_MAX];
static uint32_t		test_n;
static uintptr_t	test_link;
static volatile unsigned long test_sink;

/* Walks the interrupted context. */
static void
test_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	struct unwind_regs r;

	(void)sig;
	(void)si;
	if (atomic_load(&test_phase) != 1)
		return;
	r.pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	r.sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	r.fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
	test_link = 0;
	test_n = unwind_walk(&r, test_pcs, TEST_MAX, &test_link);
	atomic_store(&test_phase, 2);
}

/* The leaf: zeroes rbp (saved and restored per its CFI), then spins. */
static __attribute__((noipa)) unsigned long
test_leaf(unsigned long x)
{
	__asm__ volatile("xor %%ebp, %%ebp" ::: "rbp");
	atomic_store(&test_phase, 1);	/* signals may come now */
	while (atomic_load_explicit(&test_phase, memory_order_relaxed) == 1)
		x = x * 6364136223846793005UL + 1;
	return x;
}

static __attribute__((noipa)) unsigned long
test_mid(unsigned long x)
{
	char buf[64];

	memset(buf, (int)x, sizeof buf);
	__asm__ volatile("" : : "r"(buf) : "memory");
	return test_leaf(x + buf[3]) * 3 + buf[5];
}

static __attribute__((noipa)) unsigned long
test_top(unsigned long x)
{
	return test_mid(x ^ 7) + 1;
}

/* Signals the main thread while it spins in test_leaf. */
static void *
test_kicker(void *arg)
{
	pthread_t main_thread = *(pthread_t *)arg;

	while (atomic_load(&test_phase) != 2) {
		if (atomic_load(&test_phase) == 1)
			pthread_kill(main_thread, SIGUSR2);
		usleep(2000);
	}
	return NULL;
}

/* One sample of test_top -> test_mid -> test_leaf from another thread. */
static __attribute__((noipa)) void
test_sample(void)
{
	pthread_t self = pthread_self(), kicker;

	atomic_store(&test_phase, 0);
	pthread_create(&kicker, NULL, test_kicker, &self);
	test_sink += test_top(test_sink);
	pthread_join(kicker, NULL);
}

/* Uses ms of CPU time. */
static void
test_burn(long ms)
{
	struct timespec ts;
	double end;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	end = ts.tv_sec + ts.tv_nsec / 1e9 + ms / 1e3;
	do {
		test_sink = test_sink * 6364136223846793005UL + 1;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < end);
}

/* Name of the function of addr in this executable, or NULL. */
static const char *
test_name(struct symtab *exe, const struct maps *m, uintptr_t addr)
{
	const struct maps_entry *e = maps_find(m, addr);
	uint64_t vaddr;
	size_t idx;
	char *path;

	if (e == NULL || (path = realpath("/proc/self/exe", NULL)) == NULL)
		return NULL;
	if (strcmp(path, e->path) != 0 || symtab_offset_to_vaddr(exe,
	    addr - e->start + e->offset, &vaddr) != 0) {
		free(path);
		return NULL;
	}
	free(path);
	return symtab_lookup(exe, vaddr, &idx);
}

/* Index of the first frame (after pcs[0]) in function name, or -1. */
static int
test_find(struct symtab *exe, const struct maps *m, const char *name)
{
	const char *n;
	uint32_t i;

	for (i = 0; i < test_n; i++) {
		n = test_name(exe, m, test_pcs[i] - (i > 0));
		if (n != NULL && strcmp(n, name) == 0)
			return (int)i;
	}
	return -1;
}

static __attribute__((noipa)) void
test_walk(void)
{
	struct sigaction sa;
	struct unwind_stats st;
	struct symtab *exe;
	struct maps m;
	uint32_t i;
	int all_mapped = 1, leaf, mid, top, smp, wlk, mn, start;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = test_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, NULL);
	exe = symtab_open("/proc/self/exe", NULL);
	ok(exe != NULL, "this program's symbols");
	if (exe == NULL)
		return;

	/* No snapshot yet: the walk records the pc alone. */
	test_sample();
	ok(test_n == 1, "no snapshot yet: only the pc (%u)", test_n);
	unwind_refresh();
	/* Snapshot without tables: frame pointers, and rbp is zero. */
	test_sample();
	ok(test_n <= 2, "tables not loaded yet: the fp fallback stops (%u)",
	    test_n);
	/*
	 * The misses load this program's table (a few KiB); libc's, loaded
	 * with the first one, is over this budget of 0.3 ms (2.3 ms by its
	 * size) and put off.
	 */
	unwind_set_budget(300000, 0);
	unwind_refresh();
	unwind_refresh();
	test_sample();
	maps_read("/proc/self/maps", &m, NULL);
	leaf = test_find(exe, &m, "test_leaf");
	mid = test_find(exe, &m, "test_mid");
	top = test_find(exe, &m, "test_top");
	smp = test_find(exe, &m, "test_sample");
	wlk = test_find(exe, &m, "test_walk");
	mn = test_find(exe, &m, "main");
	printf("# walk: %u frames; leaf %d mid %d top %d sample %d walk %d "
	    "main %d\n", test_n, leaf, mid, top, smp, wlk, mn);
	ok(leaf == 0 && mid == 1 && top == 2 && smp == 3 && wlk == 4 &&
	    mn == 5,
	    "CFI walk without frame pointers: leaf, mid, top, test_sample, "
	    "test_walk, main");
	ok(test_link == 0, "frame 0 had CFI: no leaf repair needed");
	/*
	 * libc's table stays put off while over the budget, then is loaded
	 * under the default one (1 ms + 2%) once the process has used 250
	 * ms more CPU.
	 */
	unwind_refresh();
	unwind_get_stats(&st);
	ok(st.deferred >= 1 && st.tables == 1,
	    "libc's table is put off while over the parsing budget");
	unwind_set_budget(1000000, 2);
	test_burn(250);
	unwind_refresh();
	test_sample();
	start = test_find(exe, &m, "_start");
	printf("# walk: %u frames, _start at %d\n", test_n, start);
	ok(start > 0 && (uint32_t)start == test_n - 1,
	    "the walk reaches _start through libc and ends there");
	for (i = 0; i < test_n; i++)
		if (maps_find(&m, test_pcs[i] - (i > 0)) == NULL)
			all_mapped = 0;
	ok(all_mapped, "every frame lies in an executable mapping");
	maps_clear(&m);

	unwind_get_stats(&st);
	printf("# %llu snapshots, %llu tables, %llu rows, %llu bytes, "
	    "%.2f ms parsing\n", (unsigned long long)st.snapshots,
	    (unsigned long long)st.tables, (unsigned long long)st.rows,
	    (unsigned long long)st.table_bytes, st.spent_ns / 1e6);
	ok(st.retired == 0, "retired snapshots are freed with no walk in "
	    "flight");
	ok(st.tables >= 2 && st.tables <= 4,
	    "tables only for objects the walks needed (%llu)",
	    (unsigned long long)st.tables);
	symtab_free(exe);
}

/* A garbage context: no frame outside the executable mappings. */
static void
test_garbage(void)
{
	struct unwind_regs r;
	struct maps m;
	uintptr_t pcs[TEST_MAX], link = 0, junk[64];
	uint32_t n, i, k;
	int all_mapped = 1;

	maps_read("/proc/self/maps", &m, NULL);
	for (k = 0; k < 200; k++) {
		for (i = 0; i < 64; i++)
			junk[i] = (uintptr_t)random() * 4099 + ((i & 1) ?
			    (uintptr_t)test_leaf + i : (uintptr_t)&junk[i]);
		r.pc = (uintptr_t)test_mid + k;
		r.sp = (uintptr_t)&junk[k % 32];
		r.fp = junk[(k + 1) % 64];
		n = unwind_walk(&r, pcs, TEST_MAX, &link);
		for (i = 1; i < n; i++)
			if (maps_find(&m, pcs[i] - 1) == NULL)
				all_mapped = 0;
	}
	ok(all_mapped, "walks from garbage contexts keep to the mappings");
	maps_clear(&m);
}

int
main(void)
{
	test_parse_synthetic();
	test_parse_real();
	test_walk();
	test_garbage();
	return tap_done();
}
