/*
 * A small ELF symbol reader: function symbols from .symtab and .dynsym (so
 * static functions have names; a stripped file's debug file, a stripped
 * Go program's .gopclntab), the GNU build id, and the PT_LOAD table to
 * turn a file offset into a link-time address.
 */
#ifndef PROFD_AGENT_SYMTAB_H
#define PROFD_AGENT_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

struct symtab;

/*
 * Maps and indexes the ELF file at path. Also reads the .symtab of a
 * separate debug file (/usr/lib/debug/.build-id/xx/yyyy.debug) when the
 * file itself has none. Returns NULL with *cause set on error.
 */
struct symtab	*symtab_open(const char *path, char **cause);
/* Indexes an ELF image already in memory (the vDSO); not copied. */
struct symtab	*symtab_open_mem(const void *image, size_t size, char **cause);
void		 symtab_free(struct symtab *);

/* Hex GNU build id, or "" if the file has none. */
const char	*symtab_build_id(const struct symtab *);
/* Number of function symbols indexed. */
size_t		 symtab_count(const struct symtab *);

/*
 * Turns a file offset into a link-time virtual address using the PT_LOAD
 * segments. Returns 0 and sets *vaddr, or -1 if no segment covers it.
 */
int		 symtab_offset_to_vaddr(const struct symtab *, uint64_t off,
		    uint64_t *vaddr);

/*
 * Finds the function containing link-time address vaddr. Returns its
 * name (valid while the symtab lives) and sets *index to a number unique
 * within this symtab, or returns NULL.
 */
const char	*symtab_lookup(const struct symtab *, uint64_t vaddr,
		    size_t *index);

/*
 * Whether addr lies in the file mappings the symtab reads its names
 * from (a SIGBUS there means the file was truncated under it).
 */
int		 symtab_holds(const struct symtab *, const void *addr);

/* Link-time start address of the symbol returned as index by lookup. */
uint64_t	 symtab_symbol_addr(const struct symtab *, size_t index);

#endif
