/*
 * Turns a window's aggregated stacks into a symbolized, gzipped pprof
 * CPU profile. Keeps a cache of opened ELF symbol tables across windows.
 */
#ifndef PROFD_AGENT_BUILD_H
#define PROFD_AGENT_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "agent/core/stacks.h"

struct build;

struct build_window {
	int64_t		time_nanos;	/* wall clock at window start */
	int64_t		duration_nanos;
	int		hz;
	uint64_t	drops;		/* samples lost in this window */
	uint64_t	lost;		/* samples of threads that block the
					   agent's signal, lost */
};

struct build	*build_new(void);
void		 build_free(struct build *);
/*
 * Names a frame word (a stack entry with PYRT_IS_WORD: a Python frame):
 * 0 with its function's name and file and its line, or -1 (left
 * unnamed). The strings must live until the profile is built.
 */
typedef int	 build_namer_fn(void *ctx, uint64_t w, const char **name,
		    const char **file, int64_t *line);
/* Names frame words with fn, under a mapping named map ("[python]"). */
void		 build_set_namer(struct build *, build_namer_fn *fn,
		    void *ctx, const char *map);
/* Reads mappings from another file than /proc/self/maps (tests). */
void		 build_set_maps_path(struct build *, const char *path);

/*
 * Builds the profile of one window: mappings from /proc/self/maps with
 * build ids, a location per distinct pc, functions named from the ELF
 * symbol tables. *out: OUT new gzipped buffer (caller frees).
 */
int		 build_profile(struct build *, const struct stacks *,
		    const struct build_window *, uint8_t **out, size_t *outlen,
		    char **cause);

#define BUILD_MAX_TYPES	4

/* A profile that is not CPU time: what its samples hold. */
struct build_values {
	size_t		 ntypes;		/* values per sample */
	const char	*types[BUILD_MAX_TYPES][2];	/* type, unit */
	const int64_t	*vals;			/* ntypes per stacks entry */
	const int64_t	*bytes;			/* per entry: numeric label
						   "bytes", or NULL */
	const char	*period_type[2];
	int64_t		 period;
	const char	*default_type;
	const char	*comment;
	int		 return_addresses;	/* frame 0 is a return
						   address too */
};

/*
 * Builds a profile of v's values, one sample per stacks entry (entries
 * need not be distinct stacks), as build_profile otherwise.
 */
int		 build_profile_values(struct build *, const struct stacks *,
		    const struct build_window *, const struct build_values *,
		    uint8_t **out, size_t *outlen, char **cause);

/*
 * Repairs the stack of a sample taken in a leaf function that keeps no
 * frame pointer (compilers skip the frame of leaves that use no stack):
 * the walk then misses the leaf's caller. If link (sampler_stack.link)
 * is a return address right after a direct call to the function holding
 * pcs[0], it is inserted as the second frame. Returns the new count.
 */
uint32_t	 build_fix_leaf(struct build *, uintptr_t *pcs, uint32_t n,
		    uint32_t max, uintptr_t link);

/* Gzips len bytes. *out: OUT new buffer (caller frees). */
int		 build_gzip(const uint8_t *in, size_t len, uint8_t **out,
		    size_t *outlen, char **cause);

#endif
