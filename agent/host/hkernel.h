/*
 * Kernel symbols for the host agent's kernel frames, from /proc/kallsyms
 * (text symbols of the kernel and its modules), read once at start. When
 * the kernel hides the addresses (kptr_restrict), every address reads as
 * 0 and kernel frames keep their addresses, unnamed.
 */
#ifndef PROFD_AGENT_HKERNEL_H
#define PROFD_AGENT_HKERNEL_H

#include <stddef.h>
#include <stdint.h>

struct hkernel;

/* Reads path (/proc/kallsyms); an empty table if unreadable. */
struct hkernel	*hkernel_open(const char *path);
void		 hkernel_free(struct hkernel *);
/* The function holding addr, or NULL. */
const char	*hkernel_lookup(const struct hkernel *, uint64_t addr);
/* The address range of the text symbols ([0, 0) if none). */
void		 hkernel_range(const struct hkernel *, uint64_t *start,
		    uint64_t *limit);
/* Symbols read. */
size_t		 hkernel_count(const struct hkernel *);

#endif
