/*
 * The executable mappings of the running process, from /proc/self/maps.
 */
#ifndef PROFD_AGENT_MAPS_H
#define PROFD_AGENT_MAPS_H

#include <stddef.h>
#include <stdint.h>

struct maps_entry {
	uint64_t	 start;
	uint64_t	 limit;
	uint64_t	 offset;
	char		*path;		/* "" for anonymous; "[vdso]" etc. */
	int		 gone;		/* no longer mapped (maps_carry) */
};

struct maps {
	struct maps_entry	*v;	/* sorted by start */
	size_t			 n;
};

/* Reads the executable mappings of path (/proc/self/maps). */
int			 maps_read(const char *path, struct maps *out,
			    char **cause);
/* Parses maps text (exposed for tests). */
void			 maps_parse(const char *text, struct maps *out);
/*
 * Adds to *to the mappings of from that are gone from it (none of to's
 * overlaps them), marked gone, except those gone already: samples taken
 * before code was unmapped (JIT code at exit, a library closed) still
 * find their mapping in the next profile, and only in that one.
 */
void			 maps_carry(struct maps *to, const struct maps *from);
/* The mapping containing addr, or NULL. */
const struct maps_entry	*maps_find(const struct maps *, uint64_t addr);
void			 maps_clear(struct maps *);

#endif
