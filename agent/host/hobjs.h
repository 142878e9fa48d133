/*
 * The host agent's cache of ELF objects: each executable or library seen
 * in any process, keyed by its GNU build id when the kernel reported one
 * (so a library shared by a thousand processes, or a compiler run a
 * thousand times, is read once), else by its mount namespace and path.
 * An object holds its symbol table (symtab.c) and its call-frame table
 * (cfi_elf.c), each read on first use through the path of a process that
 * maps it (/proc/PID/root/..., so a container's file is its own). The
 * cache is bounded by an estimate of the memory its tables take: past
 * the bound, the objects used least recently are dropped at the next
 * trim (and read again if met again).
 */
#ifndef PROFD_AGENT_HOBJS_H
#define PROFD_AGENT_HOBJS_H

#include <stddef.h>
#include <stdint.h>

#include "agent/core/cfi.h"
#include "agent/core/symtab.h"

struct hobjs;
struct hobj;

struct hobjs_stats {
	uint64_t	objects;	/* in the cache now */
	uint64_t	bytes;		/* their estimated memory */
	uint64_t	loads;		/* objects read so far */
	uint64_t	failures;	/* objects that could not be read */
	uint64_t	evicted;	/* dropped to stay in the bound */
};

struct hobjs	*hobjs_new(size_t max_bytes);
void		 hobjs_free(struct hobjs *);
/*
 * The object of key (build id hex, or "ns:..."), made on first use. Until
 * its file is read, it is read through /proc/PID/root + path (the
 * mapping's path as process pid sees it), else, when own_ns (the process
 * shares the agent's mount namespace), through path itself, whose build
 * id must then match when the key is one. Path "[vdso]" is the vDSO,
 * read from the agent's own (the kernel maps the same image in every
 * process).
 */
struct hobj	*hobjs_get(struct hobjs *, const char *key, int pid,
		    const char *path, int own_ns);
/* The CFI table, read on first call (NULL: the file has none or failed). */
const struct cfi_table *hobjs_cfi(struct hobjs *, struct hobj *);
/* The symbol table, read on first call (NULL: none). */
const struct symtab *hobjs_symtab(struct hobjs *, struct hobj *);
/* The build id (hex) known for the object, or "". */
const char	*hobjs_build_id(const struct hobj *);
/*
 * Unloads the object whose file mapping holds addr (its file shrank
 * under it: a SIGBUS there). Returns 1 if one did.
 */
int		 hobjs_forget_addr(struct hobjs *, const void *addr);
/* Drops objects used least recently until the bound holds. */
void		 hobjs_trim(struct hobjs *);
void		 hobjs_stats(const struct hobjs *, struct hobjs_stats *);

#endif
