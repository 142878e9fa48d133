/*
 * The Python frame readers (agent/core/pyrt.c, pycode.c) on a CPython 3.11
 * runtime laid out in a buffer by the offsets of Debian's python3.11
 * headers, read through a reader that refuses every address outside it
 * (as process_vm_readv does): the thread state of a thread, the frame
 * chain with its activations, names and lines, code objects replaced or
 * freed under the cache, a frame chain that loops, mixing with native
 * pcs, the frame running when a stack copy was taken, and the version
 * checks (3.10, 3.14, 3.13's published offsets).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/core/pycode.h"
#include "agent/core/pyrt.h"
#include "test/lib/tap.h"

#define MEM_SIZE	(1 << 16)

static uint8_t	*mem;
static uint64_t	 base;
static int	 reads;

/* The reader: only [base, base + MEM_SIZE) is readable. */
static int
test_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	reads++;
	if (addr < base || addr + len > base + MEM_SIZE || addr + len < addr)
		return -1;
	memcpy(buf, mem + (addr - base), len);
	return 0;
}

/* Writes a word at offset off of the buffer. */
static void
put64(uint64_t off, uint64_t v)
{
	memcpy(mem + off, &v, 8);
}

static void
put32(uint64_t off, uint32_t v)
{
	memcpy(mem + off, &v, 4);
}

/* A compact ASCII str (3.11: PyASCIIObject is 48 bytes) at off. */
static uint64_t
put_str(uint64_t off, const char *s)
{
	put64(off + 16, strlen(s));
	/* interned 0, kind 1 (bits 2-4), compact (bit 5), ascii (bit 6) */
	put32(off + 32, (1 << 2) | (1 << 5) | (1 << 6));
	memcpy(mem + off + 48, s, strlen(s) + 1);
	return base + off;
}

/* A bytes object holding table at off. */
static uint64_t
put_bytes(uint64_t off, const uint8_t *t, size_t n)
{
	put64(off + 16, n);
	memcpy(mem + off + 32, t, n);
	return base + off;
}

#define CODE_TYPE	0x100	/* PyCode_Type's address (offset) */

/* A 3.11 code object at off. */
static uint64_t
put_code(uint64_t off, uint64_t file, uint64_t qual, uint64_t table,
    int first, uint64_t units)
{
	put64(off + 8, base + CODE_TYPE);
	put64(off + 16, units);
	put32(off + 72, (uint32_t)first);
	put64(off + 112, file);
	put64(off + 120, qual);
	put64(off + 128, qual);
	put64(off + 136, table);
	return base + off;
}

/* A 3.11 interpreter frame at off running code at instruction idx. */
static uint64_t
put_frame(uint64_t off, uint64_t code, uint64_t idx, uint64_t previous,
    int entry)
{
	put64(off + 32, code);
	put64(off + 48, previous);
	put64(off + 56, code + 184 + 2 * idx);
	mem[off + 68] = (uint8_t)entry;
	mem[off + 69] = 0;
	return base + off;
}

/* Location tables (Objects/locations.md) decoded by hand. */
static void
test_lines(void)
{
	/* code 13 (line only): +2 over 3 units; code 10-12: +1 over 2;
	 * code 15: none over 1; code 14: -2 (svarint 5), over 4; short form
	 * (code 3): +0 over 2. */
	const uint8_t t[] = {
		0x80 | 13 << 3 | 2, 4,
		0x80 | 11 << 3 | 1, 0, 5,
		0x80 | 15 << 3 | 0,
		0x80 | 14 << 3 | 3, 5, 0, 1, 1,
		0x80 | 3 << 3 | 1, 0x12,
	};

	ok(pycode_line(t, sizeof t, 10, 0) == 12, "unit 0: line 10 + 2");
	ok(pycode_line(t, sizeof t, 10, 2) == 12, "unit 2: still 12");
	ok(pycode_line(t, sizeof t, 10, 3) == 13, "unit 3: one-line form +1");
	ok(pycode_line(t, sizeof t, 10, 5) == 0, "unit 5: no location");
	ok(pycode_line(t, sizeof t, 10, 6) == 11, "unit 6: long form -2");
	ok(pycode_line(t, sizeof t, 10, 10) == 11, "unit 10: short form +0");
	ok(pycode_line(t, sizeof t, 10, 12) == 0, "past the table: none");
	ok(pycode_line(t, 7, 10, 6) == 0,
	    "a table cut inside an entry: none, no read past it");
	ok(pycode_line((const uint8_t *)"\x01\x02", 2, 10, 0) == 0,
	    "garbage (no entry start bit): none");
}

/* The 3.11 runtime in the buffer: two threads, a chain of three frames
 * in two activations. */
static struct pyrt
test_runtime(uint64_t *tstate2, uint64_t *frames)
{
	struct pyrt_syms syms;
	struct pyrt rt;
	const char *why = "";
	const uint8_t table[] = { 0x80 | 13 << 3 | 7, 2, 0x80 | 13 << 3 | 7,
	    2 };
	uint64_t file, tab, ca, cb, cc;

	memset(&syms, 0, sizeof syms);
	syms.runtime = 0x200;
	syms.version = 0x80;
	syms.code_type = CODE_TYPE;
	syms.eval[0][0] = 0x1000;
	syms.eval[0][1] = 0x2000;
	syms.neval = 1;
	put32(0x80, 0x030b02f0);		/* 3.11.2 */
	put64(0x200 + 40, base + 0x400);	/* interpreters.head */
	put64(0x400 + 16, base + 0x600);	/* threads.head */
	put64(0x600 + 8, base + 0x800);		/* next */
	put64(0x600 + 160, 111);		/* native_thread_id */
	put64(0x800 + 160, 222);
	put64(0x800 + 56, base + 0xa00);	/* cframe */
	file = put_str(0x1000, "/srv/app/pkg/__init__.py");
	tab = put_bytes(0x1100, table, sizeof table);
	ca = put_code(0x1200, file, put_str(0x1400, "Leaf.run"), tab, 20, 64);
	cb = put_code(0x1600, put_str(0x1800, "/srv/app/mid.py"),
	    put_str(0x1900, "mid"), tab, 5, 64);
	cc = put_code(0x1a00, put_str(0x1c00, "<frozen runpy>"),
	    put_str(0x1d00, "_run_code"), tab, 1, 64);
	frames[0] = put_frame(0x3000, ca, 9, base + 0x3100, 0);
	frames[1] = put_frame(0x3100, cb, 1, base + 0x3200, 1);
	frames[2] = put_frame(0x3200, cc, 3, 0, 1);
	put64(0xa00 + 8, frames[0]);		/* current_frame */
	*tstate2 = base + 0x800;
	ok(pyrt_init(&rt, &syms, base, test_read, NULL, &why) == 0,
	    "3.11 recognised");
	ok(rt.version == 0x030b02f0 && rt.off.co_code == 184,
	    "3.11's table of offsets");
	return rt;
}

/* Thread states, the walk, names and lines, the cache's checks. */
static void
test_walk(void)
{
	struct pycode_frame f;
	struct pycode *c = pycode_new(16);
	uint64_t ts2, frames[3], w[PYRT_MAX_FRAMES], fr[PYRT_MAX_FRAMES];
	uint64_t entries, code;
	struct pyrt rt = test_runtime(&ts2, frames);
	uint32_t n;
	int before, rc;

	ok(pyrt_tstate(&rt, test_read, NULL, 0, 222) == ts2,
	    "the thread state of thread 222, from the list");
	ok(pyrt_tstate(&rt, test_read, NULL, 0, 333) == 0,
	    "no thread state for a thread the interpreter does not know");
	before = reads;
	ok(pyrt_tstate(&rt, test_read, NULL, ts2, 222) == ts2 &&
	    reads - before == 1, "a cached thread state costs one read");
	ok(pyrt_tstate(&rt, test_read, NULL, base + 0x600, 222) == ts2,
	    "a stale cached thread state is looked up again");

	n = pyrt_walk_frames(&rt, test_read, NULL, ts2, w, fr,
	    PYRT_MAX_FRAMES, &entries);
	ok(n == 3, "three frames (%u)", n);
	ok(entries == 6, "the second and third begin their activations "
	    "(entries %#llx)", (unsigned long long)entries);
	ok(fr[0] == frames[0] && fr[2] == frames[2], "their addresses");
	ok(PYRT_IS_WORD(w[0]) && PYRT_WORD_IDX(w[0]) == 9 &&
	    PYRT_WORD_CODE(w[0]) == base + 0x1200,
	    "a frame word holds the code object and instruction");
	ok(!PYRT_IS_WORD(0x7f0000001234ULL) &&
	    !PYRT_IS_WORD(0xffffffff81000000ULL),
	    "user and kernel addresses are no frame words");
	ok(pyrt_groups(n, entries) == 2, "two activations");

	rc = pycode_name(c, &rt, test_read, NULL, 1, w[0], &f);
	ok(rc == 0 && strcmp(f.name, "pkg.Leaf.run") == 0 &&
	    strcmp(f.file, "/srv/app/pkg/__init__.py") == 0 && f.line == 22,
	    "a package's method: pkg.Leaf.run at __init__.py:22 (%s %d)",
	    f.name, f.line);
	rc = pycode_name(c, &rt, test_read, NULL, 1, w[1], &f);
	ok(rc == 0 && strcmp(f.name, "mid.mid") == 0 && f.line == 6,
	    "a module's function: mid.mid line 6 (%s %d)", f.name, f.line);
	rc = pycode_name(c, &rt, test_read, NULL, 1, w[2], &f);
	ok(rc == 0 && strcmp(f.name, "runpy._run_code") == 0,
	    "a frozen module's function: runpy._run_code (%s)", f.name);
	before = reads;
	ok(pycode_name(c, &rt, test_read, NULL, 1, w[0], &f) == 0 &&
	    reads == before, "named again from the cache, no read");
	pycode_tick(c);
	before = reads;
	ok(pycode_name(c, &rt, test_read, NULL, 1, w[0], &f) == 0 &&
	    reads - before == 1, "a new generation checks the header once");
	/* Another code object at the same address. */
	put64(0x1200 + 128, put_str(0x1500, "other"));
	pycode_tick(c);
	rc = pycode_name(c, &rt, test_read, NULL, 1, w[0], &f);
	ok(rc == 0 && strcmp(f.name, "pkg.other") == 0,
	    "a code object replaced at the address gets its own name (%s)",
	    f.name);
	/* Not a code object any more. */
	put64(0x1200 + 8, base + 0x180);
	pycode_tick(c);
	ok(pycode_name(c, &rt, test_read, NULL, 1, w[0], &f) == -1,
	    "an object that is no code object gives no name");
	put64(0x1200 + 8, base + CODE_TYPE);
	ok(pycode_name(c, &rt, test_read, NULL, 1, PYRT_WORD(base + 0x1200,
	    64), &f) == -1, "an instruction past the code gives no name");
	code = 0x7000000000ULL;
	ok(pycode_name(c, &rt, test_read, NULL, 1, PYRT_WORD(code, 1),
	    &f) == -1, "an unreadable code object gives no name");
	pycode_forget(c, 1);
	pycode_free(c);

	/* A loop in the chain: each frame once. */
	put64(0x3200 + 48, frames[0]);
	n = pyrt_walk(&rt, test_read, NULL, ts2, w, PYRT_MAX_FRAMES,
	    &entries);
	ok(n == 3, "a chain that loops stops at a frame seen before (%u)", n);
	/* An unreadable link. */
	put64(0x3100 + 48, 0x7000000000ULL);
	n = pyrt_walk(&rt, test_read, NULL, ts2, w, PYRT_MAX_FRAMES,
	    &entries);
	ok(n == 2, "an unreadable frame ends the walk (%u)", n);
	put64(0x3100 + 48, frames[2]);
	put64(0x3200 + 48, 0);
}

/* Mixing with native pcs; the frame running at a stack copy. */
static void
test_mix(void)
{
	uint64_t ts2, frames[3], w[PYRT_MAX_FRAMES], fr[PYRT_MAX_FRAMES];
	uint64_t entries, out[16], at, stack[64];
	struct pyrt rt = test_runtime(&ts2, frames);
	/* leaf C function, evaluator, C, evaluator, main */
	const uint64_t pcs[] = { 0x500, base + 0x1100, 0x600,
	    base + 0x1500, 0x700 };
	uint32_t n, k, nw;

	nw = pyrt_walk_frames(&rt, test_read, NULL, ts2, w, fr,
	    PYRT_MAX_FRAMES, &entries);
	ok(pyrt_activations(&rt, pcs, 5) == 2, "two evaluator frames");
	n = pyrt_mix(&rt, pcs, 5, w, nw, entries, 0, out, 16);
	ok(n == 6 && out[0] == 0x500 && out[1] == w[0] && out[2] == w[1] &&
	    out[3] == 0x600 && out[4] == w[2] && out[5] == 0x700,
	    "each evaluator frame replaced by its activation's frames");
	n = pyrt_mix(&rt, pcs, 5, w + 2, 1, 1, 1, out, 16);
	ok(n == 5 && out[1] == base + 0x1100 && out[3] == w[2],
	    "keep 1: the leaf-most evaluator frame stays native, the outer "
	    "activation's frames in place of the other");
	n = pyrt_mix(&rt, pcs, 2, w, nw, entries, 0, out, 16);
	ok(n == 4 && out[3] == w[2],
	    "frames left when the native walk ended go at the root");
	n = pyrt_mix(&rt, pcs, 5, w, nw, entries, 0, out, 3);
	ok(n == 3, "at most max frames");
	k = nw;
	pyrt_drop_groups(w, &k, &entries, 1);
	ok(k == 1 && PYRT_WORD_CODE(w[0]) == base + 0x1a00 && entries == 1,
	    "dropping the leaf-most activation leaves the outer one");

	/* The stack copy holds thread 222's _PyCFrame at sp + 64. */
	memset(stack, 0, sizeof stack);
	put64(0x800 + 56, 0x10000 + 64);
	stack[8 + 1] = frames[1];	/* cframe.current_frame */
	ok(pyrt_sampled_frame(&rt, test_read, NULL, ts2,
	    (const uint8_t *)stack, 0x10000, sizeof stack, &at) == 0 &&
	    at == frames[1], "the frame running at the copy, from its cframe");
	ok(pyrt_sampled_frame(&rt, test_read, NULL, ts2,
	    (const uint8_t *)stack, 0x10000, 32, &at) == -1,
	    "no cframe in a copy too short");
	put64(0x800 + 56, base + 0xa00);
}

/* Versions the profiler does not know, 3.13's published offsets. */
static void
test_versions(void)
{
	struct pyrt_syms syms;
	struct pyrt rt;
	const char *why = "";
	uint64_t d[73];
	size_t i;
	int rc;

	memset(&syms, 0, sizeof syms);
	syms.runtime = 0x200;
	syms.code_type = CODE_TYPE;
	syms.eval[0][1] = 1;
	syms.neval = 1;
	rc = pyrt_init(&rt, &syms, base, test_read, NULL, &why);
	ok(rc == -1 && strstr(why, "older than 3.11") != NULL,
	    "no Py_Version: older than 3.11 (%s)", why);
	syms.version = 0x80;
	put32(0x80, 0x030e00f0);
	rc = pyrt_init(&rt, &syms, base, test_read, NULL, &why);
	ok(rc == -1 && strstr(why, "newer") != NULL, "3.14: not known (%s)", why);
	put32(0x80, 0x030d00f0);
	memset(d, 0, sizeof d);
	memcpy(d, "xdebugpy", 8);
	d[1] = 0x030d00f0;
	for (i = 3; i < 73; i++)
		d[i] = 8 * i % 64;
	memcpy(mem + 0x200, d, sizeof d);
	ok(pyrt_init(&rt, &syms, base, test_read, NULL, &why) == 0 &&
	    rt.off.ts_current == (int)(8 * 23 % 64) && rt.off.ts_cframe == -1,
	    "3.13: the offsets it publishes");
	d[2] = 1;
	memcpy(mem + 0x200, d, sizeof d);
	rc = pyrt_init(&rt, &syms, base, test_read, NULL, &why);
	ok(rc == -1 && strstr(why, "free-threaded") != NULL,
	    "3.13t (free-threaded): not known (%s)", why);
	mem[0x200] = 'X';
	rc = pyrt_init(&rt, &syms, base, test_read, NULL, &why);
	ok(rc == -1,
	    "3.13 without its cookie: refused (%s)", why);
	d[2] = 0;
	d[31] = 1ULL << 40;
	memcpy(mem + 0x200, d, sizeof d);
	rc = pyrt_init(&rt, &syms, base, test_read, NULL, &why);
	ok(rc == -1, "3.13 with an offset out of reason: refused (%s)", why);
	memset(mem + 0x200, 0, sizeof d);
}

int
main(void)
{
	mem = aligned_alloc(4096, MEM_SIZE);
	memset(mem, 0, MEM_SIZE);
	base = (uint64_t)(uintptr_t)mem;
	test_lines();
	test_walk();
	test_mix();
	test_versions();
	free(mem);
	return tap_done();
}
