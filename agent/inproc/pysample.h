/*
 * Python's own frames in the in-process agent's CPU samples (mixed
 * mode). The agent thread finds the interpreter among the process's
 * mappings (the python executable or libpython defining _PyRuntime and
 * Py_Version; pyrt.h) and publishes it; the signal handler then reads the
 * interrupted thread's frame chain with process_vm_readv on its own pid
 * (a bad address fails the read, never faults; about 1 us a read), its
 * thread state cached per thread, and records (code object, instruction)
 * words beside the native pcs. The agent thread, at each drain, mixes
 * them in place of the evaluator's native frames and names them (pycode.h,
 * each code object checked once a drain), so a stack holds a per-window
 * frame id that build.c turns into a function "module.qualname" with its
 * file and line under a "[python]" mapping. The Python C API is never
 * called.
 */
#ifndef PROFD_AGENT_PYSAMPLE_H
#define PROFD_AGENT_PYSAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/core/pyrt.h"

/* PROFD_PYTHON_FRAMES=off: never looks (before the agent starts). */
void		 pysample_disable(void);
/*
 * Agent thread: looks for the interpreter when it was not found yet (at
 * most once a window). Returns a line to log once (the interpreter found,
 * or why a Python program keeps its native stacks), else NULL.
 */
const char	*pysample_prepare(void);
/*
 * Signal handler (async-signal-safe): the calling thread's Python frames
 * into words (at most PYRT_MAX_FRAMES), *entries as pyrt_walk. Returns
 * the count (0 when no interpreter is known or the thread runs none).
 */
uint32_t	 pysample_record(uint64_t *words, uint64_t *entries);
/*
 * Agent thread: pcs (n, leaf first) mixed with the recorded words into
 * out (at most max), each Python frame as a frame id (pysample_frame).
 */
uint32_t	 pysample_mix(const uintptr_t *pcs, uint32_t n,
		    const uint64_t *words, uint32_t nwords, uint64_t entries,
		    uintptr_t *out, uint32_t max);
/*
 * build.c's namer: name, file and line of frame id w (valid until
 * pysample_window_done). 0, or -1 if w is not one.
 */
int		 pysample_frame(void *ctx, uint64_t w, const char **name,
		    const char **file, int64_t *line);
/* A drain begins: code objects are checked again (pycode_tick). */
void		 pysample_drain_begin(void);
/* Frame ids past PYSAMPLE_MAX_IDS or of objects that were no code. */
uint64_t	 pysample_unnamed_frames(void);
/* The window's profile is built: frame ids may be reused. */
void		 pysample_window_done(void);

#endif
