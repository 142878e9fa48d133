/*
 * CPython's runtime as another program sees it: which interpreter a
 * process runs (its Py_Version), where the structures the profiler walks
 * keep their fields (one table per minor version, 3.11 and 3.12; from
 * 3.13 read from the _Py_DebugOffsets the interpreter publishes at the
 * start of _PyRuntime), the thread state of a native thread, and the
 * chain of interpreter frames from a thread's current one. Every read goes
 * through a caller's reader (process_vm_readv: a bad address is an error,
 * never a fault), so the walk is async-signal-safe when the reader is.
 * A frame is recorded as one word (PYRT_WORD): its code object and
 * instruction index, tagged so that it is never a native address.
 */
#ifndef PROFD_AGENT_PYRT_H
#define PROFD_AGENT_PYRT_H

#include <stddef.h>
#include <stdint.h>

/* Reads len bytes at addr of the target; 0, or -1 if any is unreadable. */
typedef int	(*pyrt_read_fn)(void *ctx, uint64_t addr, void *buf,
		    size_t len);

/* A Python frame word: bit 63 set, bit 62 clear (never a user or kernel
 * address), the instruction index in bits 44-61, code >> 3 below. */
#define PYRT_WORD(code, idx)	((1ULL << 63) | \
	    ((uint64_t)((idx) > 0x3ffff ? 0x3ffff : (idx)) << 44) | \
	    (((uint64_t)(code) >> 3) & ((1ULL << 44) - 1)))
#define PYRT_IS_WORD(w)		(((uint64_t)(w) >> 62) == 2)
#define PYRT_WORD_CODE(w)	(((uint64_t)(w) & ((1ULL << 44) - 1)) << 3)
#define PYRT_WORD_IDX(w)	((uint32_t)(((uint64_t)(w) >> 44) & 0x3ffff))

#define PYRT_MAX_FRAMES		64	/* Python frames a walk records */
#define PYRT_MAX_EVAL		4	/* address ranges of the evaluator */

/* Where the fields are (byte offsets; -1: not in this version). */
struct pyrt_offsets {
	int	rt_interp_head;		/* _PyRuntime.interpreters.head */
	int	is_threads_head;	/* interp->threads.head */
	int	ts_next;		/* tstate->next */
	int	ts_native_tid;		/* tstate->native_thread_id */
	int	ts_cframe;		/* tstate->cframe (3.11, 3.12) */
	int	cf_current;		/* cframe->current_frame */
	int	cf_previous;		/* cframe->previous */
	int	ts_current;		/* tstate->current_frame (3.13) */
	int	fr_code;		/* frame->f_code / f_executable */
	int	fr_previous;
	int	fr_instr;		/* prev_instr / instr_ptr */
	int	fr_owner;		/* one byte */
	int	fr_is_entry;		/* one byte (3.11) */
	int	fr_size;		/* bytes to read of a frame */
	int	co_firstlineno;		/* int */
	int	co_filename;
	int	co_name;
	int	co_qualname;
	int	co_linetable;
	int	co_code;		/* co_code_adaptive */
	int	uni_ascii_size;		/* sizeof(PyASCIIObject) */
	int	uni_compact_size;	/* sizeof(PyCompactUnicodeObject) */
};

/* What an object file defines (link-time addresses; 0: not defined). */
struct pyrt_syms {
	uint64_t	runtime;	/* _PyRuntime */
	uint64_t	version;	/* Py_Version (3.11 and later) */
	uint64_t	code_type;	/* PyCode_Type */
	uint64_t	eval[PYRT_MAX_EVAL][2];	/* [start, end) */
	int		neval;
};

/* One process's interpreter, ready to walk. */
struct pyrt {
	uint32_t		version;	/* PY_VERSION_HEX */
	struct pyrt_offsets	off;
	uint64_t		runtime;	/* run-time addresses */
	uint64_t		code_type;
	uint64_t		eval[PYRT_MAX_EVAL][2];
	int			neval;
};

/*
 * The symbols of an ELF image (mapped whole at base): 0 when it defines
 * _PyRuntime (a python executable or libpython), else -1.
 */
int	pyrt_syms(const void *base, size_t size, struct pyrt_syms *out);
/*
 * Reads the version at bias + syms->version and fills rt for it. -1
 * with *why (static text) when the interpreter is not one the profiler
 * knows (older than 3.11, newer than 3.13, or its published offsets do
 * not check out).
 */
int	pyrt_init(struct pyrt *rt, const struct pyrt_syms *syms,
	    uint64_t bias, pyrt_read_fn read, void *ctx, const char **why);
/* "3.11" into buf (at least 8 bytes). */
void	pyrt_version_str(uint32_t version, char *buf, size_t len);
/* Whether pc lies in the evaluator (_PyEval_EvalFrameDefault). */
int	pyrt_in_eval(const struct pyrt *, uint64_t pc);
/*
 * The thread state of native thread tid, or 0: the one at hint if its
 * native_thread_id is tid (a cached answer), else from the list of the
 * main interpreter's threads (at most 4096 looked at).
 */
uint64_t pyrt_tstate(const struct pyrt *, pyrt_read_fn, void *ctx,
	    uint64_t hint, uint64_t tid);
/*
 * The frames of tstate, current first, as PYRT_WORDs into words (at most
 * max <= PYRT_MAX_FRAMES); bit i of *entries set when words[i] is the
 * first frame of its evaluator activation (the last one of the activation
 * in this order). Stops at a bad read, a frame seen before, or max.
 * Returns the number of frames.
 */
uint32_t pyrt_walk(const struct pyrt *, pyrt_read_fn, void *ctx,
	    uint64_t tstate, uint64_t *words, uint32_t max,
	    uint64_t *entries);
/*
 * pyrt_walk, also the address of each recorded frame into frames (may
 * be NULL).
 */
uint32_t pyrt_walk_frames(const struct pyrt *, pyrt_read_fn, void *ctx,
	    uint64_t tstate, uint64_t *words, uint64_t *frames, uint32_t max,
	    uint64_t *entries);
/*
 * The frame a thread was running when a copy of its stack [sp, sp +
 * size) was taken: 3.11 and 3.12 keep each evaluator activation's
 * _PyCFrame on the C stack, its current_frame updated at every Python
 * call and return, so the innermost one inside the copy tells. 0 and
 * *frame, or -1 (3.13 keeps it in the thread state; or no activation's
 * _PyCFrame lies in the copy).
 */
int	pyrt_sampled_frame(const struct pyrt *, pyrt_read_fn, void *ctx,
	    uint64_t tstate, const uint8_t *stack, uint64_t sp, uint64_t size,
	    uint64_t *frame);
/* Evaluator frames among native pcs (leaf first, return addresses
 * after the first). */
uint32_t pyrt_activations(const struct pyrt *, const uint64_t *pcs,
	    uint32_t n);
/* Activations the Python frames of a walk make (the last may be cut). */
uint32_t pyrt_groups(uint32_t nwords, uint64_t entries);
/*
 * Mixed mode: the native pcs (leaf first) with each evaluator frame
 * replaced by its activation's Python frames (words as pyrt_walk gives
 * them), into out (at most max); the keep leaf-most evaluator frames stay
 * native. Python frames left over when the native walk ended first go at
 * the root; evaluator frames with no Python frames left stay native.
 * Returns the count.
 */
uint32_t pyrt_mix(const struct pyrt *, const uint64_t *pcs, uint32_t n,
	    const uint64_t *words, uint32_t nwords, uint64_t entries,
	    uint32_t keep, uint64_t *out, uint32_t max);
/*
 * Drops the k leaf-most activations of a walk's frames (words, *nwords,
 * *entries as pyrt_walk gives them).
 */
void	pyrt_drop_groups(uint64_t *words, uint32_t *nwords,
	    uint64_t *entries, uint32_t k);

#endif
