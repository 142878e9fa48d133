/*
 * Names of Python code objects read from another process (or this one
 * through process_vm_readv): "module.qualname", the file and the line of
 * an instruction, decoded from the code object's location table (the
 * format of 3.11 to 3.13). A cache keyed by (space, code address) keeps
 * what was read; an entry is trusted again only after the object's
 * header still reads the same (its type is PyCode_Type, and its name,
 * file and table pointers and first line are unchanged), checked once
 * per generation (pycode_tick), so an address that now holds another
 * object never gives a wrong name. Bounded: at most max entries, each
 * with at most PYCODE_MAX_TABLE bytes of location table and
 * PYCODE_MAX_NAME bytes of each string; a full cache is emptied.
 */
#ifndef PROFD_AGENT_PYCODE_H
#define PROFD_AGENT_PYCODE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/core/pyrt.h"

#define PYCODE_MAX_TABLE	(64 * 1024)
#define PYCODE_MAX_NAME		512

struct pycode;

/* What a frame word names; strings valid until the next pycode call. */
struct pycode_frame {
	const char	*name;		/* "module.qualname" */
	const char	*file;		/* co_filename */
	int		 line;		/* 0 when the table has none */
	int		 start_line;	/* co_firstlineno */
};

struct pycode	*pycode_new(size_t max);
void		 pycode_free(struct pycode *);
/* Starts a new generation: each entry is checked again on its next use. */
void		 pycode_tick(struct pycode *);
/* Forgets the entries of space (a process that exited). */
void		 pycode_forget(struct pycode *, uint64_t space);
/* Forgets the entries of every space for which alive(ctx, space) is 0. */
void		 pycode_forget_dead(struct pycode *,
		    int (*alive)(void *, uint64_t), void *ctx);
/*
 * Names the frame word w of space (PYRT_WORD). 0 and *out, or -1 when
 * the object is not a code object (any more) or cannot be read.
 */
int		 pycode_name(struct pycode *, const struct pyrt *,
		    pyrt_read_fn, void *ctx, uint64_t space, uint64_t w,
		    struct pycode_frame *out);
/*
 * The line of code unit idx in a 3.11+ location table, starting from
 * first (exposed for tests). 0 when the table gives none.
 */
int		 pycode_line(const uint8_t *table, size_t len, int first,
		    uint32_t idx);
/* Entries held, and lookups that read the target since pycode_new. */
void		 pycode_stats(const struct pycode *, size_t *entries,
		    uint64_t *reads);

#endif
