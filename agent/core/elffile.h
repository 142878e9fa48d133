/*
 * What the agent's two ELF readers (symtab.c for names, cfi_elf.c for
 * call-frame information) share: mapping a file, checking the header,
 * the program headers (PT_LOAD table, GNU build id, PT_GNU_EH_FRAME) and
 * the separate debug file named by the build id. Every offset and size
 * read from an image is checked against it first. Native ELF class only
 * (ElfW from <link.h>).
 */
#ifndef PROFD_AGENT_ELFFILE_H
#define PROFD_AGENT_ELFFILE_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>

/* A PT_LOAD segment: file offset to link address. */
struct elffile_load {
	uint64_t	off;
	uint64_t	vaddr;
	uint64_t	filesz;
};

/* What the program headers say. */
struct elffile_phdrs {
	struct elffile_load	*loads;		/* caller frees */
	size_t			 nloads;
	char			 build_id[129];	/* hex, or "" */
	const ElfW(Phdr)	*eh_frame_hdr;	/* PT_GNU_EH_FRAME, or NULL */
};

/* True if [off, off+len) lies within size bytes. */
int		 elffile_in(size_t size, uint64_t off, uint64_t len);
/*
 * elffile_in, and off a multiple of align: a table of structures read in
 * place (the image is mapped at a page boundary) must be aligned for
 * them; a file that puts one elsewhere is malformed.
 */
int		 elffile_in_aligned(size_t size, uint64_t off, uint64_t len,
		    size_t align);
/* The ELF header of a native image, or NULL with *cause set. */
const ElfW(Ehdr) *elffile_ehdr(const void *base, size_t size, char **cause);
/* Maps a whole regular file read-only; NULL with *cause set. */
void		*elffile_map(const char *path, size_t *size, char **cause);
/*
 * Reads the program headers of a checked image into *out. mem: the image
 * is laid out by address (the vDSO), so a note lives at its vaddr less
 * the first segment's. -1 with *cause set if the table is out of bounds.
 */
int		 elffile_phdrs(const void *base, size_t size, int mem,
		    struct elffile_phdrs *out, char **cause);
/* The first GNU build id note of [p, p+len), hex, into id (if any). */
void		 elffile_note(const uint8_t *p, size_t len, char id[129]);
/* File offset to link address through the covering PT_LOAD; 0 or -1. */
int		 elffile_offset_to_vaddr(const struct elffile_load *loads,
		    size_t nloads, uint64_t off, uint64_t *vaddr);
/*
 * The value of the defined symbol name (any type: a function or data)
 * in the .dynsym or .symtab of a checked image. 0 and *value (and its
 * size into *symsize unless NULL), or -1.
 */
int		 elffile_symbol(const void *base, size_t size,
		    const char *name, uint64_t *value, uint64_t *symsize);
/*
 * Maps the separate debug file of build id (hex) when it is installed
 * (/usr/lib/debug/.build-id/xx/yyyy.debug) and is a native ELF file;
 * NULL otherwise.
 */
void		*elffile_map_debug(const char *build_id, size_t *size);

#endif
