/*
 * CPython's runtime seen from outside (see pyrt.h). The tables of 3.11
 * and 3.12 were taken with offsetof() from the internal headers of
 * Debian's python3.11 (3.11.2) and of CPython 3.11.7 and 3.12.1 builds,
 * which agree; 3.13 publishes its own in _Py_DebugOffsets (cookie
 * "xdebugpy"), read here in 3.13's layout of that structure. Frames:
 * 3.11 marks the first frame of an evaluator activation with is_entry;
 * 3.12 and 3.13 push a shim frame owned by the C stack
 * (FRAME_OWNED_BY_CSTACK) below it instead, which the walk drops.
 */
#include <string.h>

#include "agent/core/elffile.h"
#include "agent/core/pyrt.h"

#define PYRT_OWNED_BY_CSTACK	3
#define PYRT_MAX_THREADS	4096
#define PYRT_FRAME_BYTES	72
#define PYRT_DEBUG_WORDS	73	/* 3.13's _Py_DebugOffsets */

/* 3.11 (PyASCIIObject still holds wstr). */
static const struct pyrt_offsets pyrt_311 = {
	.rt_interp_head = 40, .is_threads_head = 16, .ts_next = 8,
	.ts_native_tid = 160, .ts_cframe = 56, .cf_current = 8,
	.cf_previous = 16,
	.ts_current = -1, .fr_code = 32, .fr_previous = 48, .fr_instr = 56,
	.fr_owner = 69, .fr_is_entry = 68, .fr_size = PYRT_FRAME_BYTES,
	.co_firstlineno = 72, .co_filename = 112, .co_name = 120,
	.co_qualname = 128, .co_linetable = 136, .co_code = 184,
	.uni_ascii_size = 48, .uni_compact_size = 72,
};

/* 3.12. */
static const struct pyrt_offsets pyrt_312 = {
	.rt_interp_head = 40, .is_threads_head = 72, .ts_next = 8,
	.ts_native_tid = 144, .ts_cframe = 56, .cf_current = 0,
	.cf_previous = 8,
	.ts_current = -1, .fr_code = 0, .fr_previous = 8, .fr_instr = 56,
	.fr_owner = 70, .fr_is_entry = -1, .fr_size = PYRT_FRAME_BYTES,
	.co_firstlineno = 68, .co_filename = 112, .co_name = 120,
	.co_qualname = 128, .co_linetable = 136, .co_code = 192,
	.uni_ascii_size = 40, .uni_compact_size = 56,
};

/* Finds the symbols of an image (see pyrt.h). */
int
pyrt_syms(const void *base, size_t size, struct pyrt_syms *out)
{
	uint64_t v, sz;

	memset(out, 0, sizeof *out);
	if (elffile_ehdr(base, size, NULL) == NULL ||
	    elffile_symbol(base, size, "_PyRuntime", &out->runtime,
	    NULL) != 0 || out->runtime == 0)
		return -1;
	if (elffile_symbol(base, size, "Py_Version", &v, NULL) == 0)
		out->version = v;
	if (elffile_symbol(base, size, "PyCode_Type", &v, NULL) == 0)
		out->code_type = v;
	if (elffile_symbol(base, size, "_PyEval_EvalFrameDefault", &v,
	    &sz) == 0 && sz > 0) {
		out->eval[out->neval][0] = v;
		out->eval[out->neval++][1] = v + sz;
	}
	/* The part GCC moved out of line; named only in a .symtab. */
	if (elffile_symbol(base, size, "_PyEval_EvalFrameDefault.cold", &v,
	    &sz) == 0 && sz > 0) {
		out->eval[out->neval][0] = v;
		out->eval[out->neval++][1] = v + sz;
	}
	return 0;
}

/* A field of 3.13's _Py_DebugOffsets, if it fits an int. */
static int
pyrt_debug_field(const uint64_t *d, int word, int *out)
{
	if (d[word] > 1 << 20)
		return -1;
	*out = (int)d[word];
	return 0;
}

/* Fills rt->off from the _Py_DebugOffsets of 3.13 at the runtime. */
static int
pyrt_debug_offsets(struct pyrt *rt, pyrt_read_fn read, void *ctx,
    const char **why)
{
	uint64_t d[PYRT_DEBUG_WORDS];
	struct pyrt_offsets *o = &rt->off;
	static const int words[] = { 5, 9, 21, 25, 23, 29, 30, 31, 33, 39,
	    35, 36, 37, 38, 43, 70 };
	int *fields[] = { &o->rt_interp_head, &o->is_threads_head,
	    &o->ts_next, &o->ts_native_tid, &o->ts_current, &o->fr_previous,
	    &o->fr_code, &o->fr_instr, &o->fr_owner, &o->co_firstlineno,
	    &o->co_filename, &o->co_name, &o->co_qualname, &o->co_linetable,
	    &o->co_code, &o->uni_ascii_size };
	size_t i;

	if (read(ctx, rt->runtime, d, sizeof d) != 0) {
		*why = "its _PyRuntime cannot be read";
		return -1;
	}
	if (memcmp(d, "xdebugpy", 8) != 0 ||
	    (d[1] & 0xffff0000) != (rt->version & 0xffff0000)) {
		*why = "its _Py_DebugOffsets do not check out";
		return -1;
	}
	if (d[2] != 0) {
		*why = "it is a free-threaded build";
		return -1;
	}
	for (i = 0; i < sizeof words / sizeof words[0]; i++)
		if (pyrt_debug_field(d, words[i], fields[i]) != 0) {
			*why = "its _Py_DebugOffsets do not check out";
			return -1;
		}
	o->ts_cframe = o->cf_current = o->cf_previous = -1;
	o->fr_is_entry = -1;
	o->fr_size = PYRT_FRAME_BYTES;
	o->uni_compact_size = o->uni_ascii_size + 16;
	if (o->fr_code + 8 > o->fr_size || o->fr_previous + 8 > o->fr_size ||
	    o->fr_instr + 8 > o->fr_size || o->fr_owner >= o->fr_size) {
		*why = "its frames are laid out unlike 3.13's";
		return -1;
	}
	return 0;
}

/* Reads the version and the offsets of an interpreter (see pyrt.h). */
int
pyrt_init(struct pyrt *rt, const struct pyrt_syms *syms, uint64_t bias,
    pyrt_read_fn read, void *ctx, const char **why)
{
	uint32_t v;
	int i;

	memset(rt, 0, sizeof *rt);
	if (syms->version == 0) {
		*why = "it is older than 3.11 (no Py_Version)";
		return -1;
	}
	if (syms->code_type == 0 || syms->neval == 0) {
		*why = "PyCode_Type or _PyEval_EvalFrameDefault is not exported";
		return -1;
	}
	if (read(ctx, bias + syms->version, &v, sizeof v) != 0) {
		*why = "its Py_Version cannot be read";
		return -1;
	}
	rt->version = v;
	rt->runtime = bias + syms->runtime;
	rt->code_type = bias + syms->code_type;
	rt->neval = syms->neval;
	for (i = 0; i < syms->neval; i++) {
		rt->eval[i][0] = bias + syms->eval[i][0];
		rt->eval[i][1] = bias + syms->eval[i][1];
	}
	switch (v >> 16) {
	case 0x030b:
		rt->off = pyrt_311;
		return 0;
	case 0x030c:
		rt->off = pyrt_312;
		return 0;
	case 0x030d:
		return pyrt_debug_offsets(rt, read, ctx, why);
	}
	*why = (v >> 16) < 0x030b ? "it is older than 3.11" :
	    "it is newer than 3.13";
	return -1;
}

/* "3.11" from a PY_VERSION_HEX. */
void
pyrt_version_str(uint32_t version, char *buf, size_t len)
{
	unsigned major = version >> 24, minor = (version >> 16) & 0xff;
	char tmp[16];
	size_t i = 0;

	if (len == 0)
		return;
	tmp[i++] = (char)('0' + major % 10);
	tmp[i++] = '.';
	if (minor >= 10)
		tmp[i++] = (char)('0' + minor / 10 % 10);
	tmp[i++] = (char)('0' + minor % 10);
	tmp[i] = '\0';
	for (i = 0; i + 1 < len && tmp[i] != '\0'; i++)
		buf[i] = tmp[i];
	buf[i] = '\0';
}

/* Whether pc is in the evaluator. */
int
pyrt_in_eval(const struct pyrt *rt, uint64_t pc)
{
	int i;

	for (i = 0; i < rt->neval; i++)
		if (pc >= rt->eval[i][0] && pc < rt->eval[i][1])
			return 1;
	return 0;
}

/* A pointer-sized word at addr, or 0. */
static uint64_t
pyrt_word(pyrt_read_fn read, void *ctx, uint64_t addr)
{
	uint64_t w;

	if (addr < 4096 || read(ctx, addr, &w, sizeof w) != 0)
		return 0;
	return w;
}

/* The thread state of native thread tid (see pyrt.h). */
uint64_t
pyrt_tstate(const struct pyrt *rt, pyrt_read_fn read, void *ctx,
    uint64_t hint, uint64_t tid)
{
	const struct pyrt_offsets *o = &rt->off;
	uint64_t interp, ts;
	int i;

	if (hint != 0 && pyrt_word(read, ctx, hint + o->ts_native_tid) == tid)
		return hint;
	if ((interp = pyrt_word(read, ctx, rt->runtime +
	    o->rt_interp_head)) == 0)
		return 0;
	ts = pyrt_word(read, ctx, interp + o->is_threads_head);
	for (i = 0; ts != 0 && i < PYRT_MAX_THREADS; i++) {
		if (pyrt_word(read, ctx, ts + o->ts_native_tid) == tid)
			return ts;
		ts = pyrt_word(read, ctx, ts + o->ts_next);
	}
	return 0;
}

/* Whether frame was met before in this walk. */
static int
pyrt_seen(const uint64_t *seen, uint32_t n, uint64_t frame)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (seen[i] == frame)
			return 1;
	return 0;
}

/* Walks the frames of tstate (see pyrt.h). */
uint32_t
pyrt_walk(const struct pyrt *rt, pyrt_read_fn read, void *ctx,
    uint64_t tstate, uint64_t *words, uint32_t max, uint64_t *entries)
{
	return pyrt_walk_frames(rt, read, ctx, tstate, words, NULL, max,
	    entries);
}

/* The frame running when the stack copy was taken (see pyrt.h). */
int
pyrt_sampled_frame(const struct pyrt *rt, pyrt_read_fn read, void *ctx,
    uint64_t tstate, const uint8_t *stack, uint64_t sp, uint64_t size,
    uint64_t *frame)
{
	const struct pyrt_offsets *o = &rt->off;
	uint64_t cf;
	int i;

	if (o->ts_cframe < 0 || size < 16)
		return -1;
	cf = pyrt_word(read, ctx, tstate + o->ts_cframe);
	/* Activations begun since lie below sp: go out to the copy. */
	for (i = 0; cf != 0 && cf < sp && i < PYRT_MAX_FRAMES; i++)
		cf = pyrt_word(read, ctx, cf + o->cf_previous);
	if (cf < sp || cf - sp > size - 8 - (uint64_t)o->cf_current)
		return -1;
	memcpy(frame, stack + (cf - sp) + o->cf_current, 8);
	return *frame != 0 ? 0 : -1;
}

/* Walks the frames of tstate, with their addresses (see pyrt.h). */
uint32_t
pyrt_walk_frames(const struct pyrt *rt, pyrt_read_fn read, void *ctx,
    uint64_t tstate, uint64_t *words, uint64_t *frames, uint32_t max,
    uint64_t *entries)
{
	const struct pyrt_offsets *o = &rt->off;
	uint64_t frame, code, instr, base, seen[PYRT_MAX_FRAMES * 2];
	uint8_t f[PYRT_FRAME_BYTES];
	uint32_t n = 0, nseen = 0;
	int64_t idx;

	*entries = 0;
	if (max > PYRT_MAX_FRAMES)
		max = PYRT_MAX_FRAMES;
	if (o->ts_current >= 0)
		frame = pyrt_word(read, ctx, tstate + o->ts_current);
	else
		frame = pyrt_word(read, ctx, pyrt_word(read, ctx, tstate +
		    o->ts_cframe) + o->cf_current);
	while (frame != 0 && n < max && nseen < PYRT_MAX_FRAMES * 2) {
		if ((frame & 7) != 0 || pyrt_seen(seen, nseen, frame) ||
		    read(ctx, frame, f, (size_t)o->fr_size) != 0)
			break;
		seen[nseen++] = frame;
		if (f[o->fr_owner] == PYRT_OWNED_BY_CSTACK &&
		    o->fr_is_entry < 0) {
			/* 3.12+: the shim below an activation's first frame. */
			if (n > 0)
				*entries |= 1ULL << (n - 1);
		} else {
			memcpy(&code, f + o->fr_code, 8);
			memcpy(&instr, f + o->fr_instr, 8);
			/* Unsigned, checked: a frame read while it changes
			 * may hold anything. */
			base = code + (uint64_t)o->co_code;
			idx = code == 0 || code >= (1ULL << 47) ||
			    instr < base || instr - base > (1ULL << 32) ? -1 :
			    (int64_t)((instr - base) / 2);
			/* A frame being set up has no instruction yet. */
			if (idx >= 0 && code < (1ULL << 47) && (code & 7) == 0) {
				if (frames != NULL)
					frames[n] = frame;
				words[n] = PYRT_WORD(code, (uint64_t)idx);
				if (o->fr_is_entry >= 0 && f[o->fr_is_entry])
					*entries |= 1ULL << n;
				n++;
			} else if (o->fr_is_entry >= 0 && f[o->fr_is_entry] &&
			    n > 0)
				*entries |= 1ULL << (n - 1);
		}
		memcpy(&frame, f + o->fr_previous, 8);
	}
	return n;
}

/* Evaluator frames among native pcs. */
uint32_t
pyrt_activations(const struct pyrt *rt, const uint64_t *pcs, uint32_t n)
{
	uint32_t i, k = 0;

	for (i = 0; i < n; i++)
		if (pyrt_in_eval(rt, pcs[i] - (i > 0 && pcs[i] > 0)))
			k++;
	return k;
}

/* Activations of a walk's frames. */
uint32_t
pyrt_groups(uint32_t nwords, uint64_t entries)
{
	uint32_t i, k = 0;

	for (i = 0; i < nwords; i++)
		if ((entries >> i) & 1)
			k++;
	/* Frames after the last entry: an activation the walk cut. */
	if (nwords > 0 && !((entries >> (nwords - 1)) & 1))
		k++;
	return k;
}

/* Mixed mode (see pyrt.h). */
uint32_t
pyrt_mix(const struct pyrt *rt, const uint64_t *pcs, uint32_t n,
    const uint64_t *words, uint32_t nwords, uint64_t entries,
    uint32_t keep, uint64_t *out, uint32_t max)
{
	uint32_t i, w = 0, k = 0;

	for (i = 0; i < n && k < max; i++) {
		if (w >= nwords ||
		    !pyrt_in_eval(rt, pcs[i] - (i > 0 && pcs[i] > 0))) {
			out[k++] = pcs[i];
			continue;
		}
		if (keep > 0) {
			keep--;
			out[k++] = pcs[i];
			continue;
		}
		/* This activation's frames, up to its first. */
		while (w < nwords && k < max) {
			out[k++] = words[w];
			if ((entries >> w++) & 1)
				break;
		}
	}
	while (w < nwords && k < max)
		out[k++] = words[w++];
	return k;
}

/* Drops the k leaf-most activations of a walk's frames. */
void
pyrt_drop_groups(uint64_t *words, uint32_t *nwords, uint64_t *entries,
    uint32_t k)
{
	uint32_t w = 0;

	while (k > 0 && w < *nwords) {
		if ((*entries >> w++) & 1)
			k--;
	}
	memmove(words, words + w, (*nwords - w) * sizeof *words);
	*entries = w < 64 ? *entries >> w : 0;
	*nwords -= w;
}
