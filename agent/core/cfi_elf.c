/*
 * Call-frame information of ELF objects: finds .eh_frame (through the
 * section headers, or PT_GNU_EH_FRAME's .eh_frame_hdr without them) or
 * .debug_frame, in the object, or in its separate debug file
 * (/usr/lib/debug/.build-id/xx/yyyy.debug), and hands the bytes to cfi.c.
 * The file is mapped read-only (elffile.c) only while it is parsed, and
 * every offset and size read from it is checked against the mapping
 * first.
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "agent/core/cfi.h"
#include "agent/core/cfi_elf.h"
#include "agent/core/elffile.h"
#include "common/xmalloc.h"

/* Section bytes with their link address. */
struct cfi_elf_sec {
	const uint8_t	*p;
	size_t		 size;
	uint64_t	 vaddr;
};

/*
 * Finds the named section of an ELF image; mem: the image is laid out by
 * address (the vDSO), so its bytes are at sh_addr - first vaddr... which
 * for the vDSO equals sh_offset. Returns 0 with *out set, or -1.
 */
static int
cfi_elf_section(const uint8_t *base, size_t size, const char *name,
    struct cfi_elf_sec *out)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
	const ElfW(Shdr) *sh, *strs;
	const char *n;
	size_t i;

	if (eh->e_shoff == 0 || eh->e_shentsize != sizeof *sh ||
	    eh->e_shstrndx >= eh->e_shnum ||
	    !elffile_in_aligned(size, eh->e_shoff, (uint64_t)eh->e_shnum *
	    sizeof *sh, sizeof(ElfW(Addr))))
		return -1;
	sh = (const ElfW(Shdr) *)(base + eh->e_shoff);
	strs = &sh[eh->e_shstrndx];
	if (!elffile_in(size, strs->sh_offset, strs->sh_size))
		return -1;
	for (i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_name >= strs->sh_size)
			continue;
		n = (const char *)base + strs->sh_offset + sh[i].sh_name;
		if (strnlen(n, strs->sh_size - sh[i].sh_name) ==
		    strs->sh_size - sh[i].sh_name || strcmp(n, name) != 0)
			continue;
		if (sh[i].sh_type == SHT_NOBITS ||
		    (sh[i].sh_flags & SHF_COMPRESSED) ||
		    !elffile_in(size, sh[i].sh_offset, sh[i].sh_size))
			return -1;
		out->p = base + sh[i].sh_offset;
		out->size = sh[i].sh_size;
		out->vaddr = sh[i].sh_addr;
		return 0;
	}
	return -1;
}

/*
 * The PT_LOAD segments into t, the build id into id and, for an image
 * without section headers, .eh_frame found from PT_GNU_EH_FRAME (its
 * header's eh_frame_ptr), bounded by the end of the segment that holds it.
 */
static void
cfi_elf_phdrs(struct cfi_table *t, const uint8_t *base, size_t size,
    int mem, char id[129], struct cfi_elf_sec *eh)
{
	struct elffile_phdrs ph;
	const ElfW(Phdr) *hdr;
	uint64_t ptr, off;
	size_t i;

	id[0] = '\0';
	memset(eh, 0, sizeof *eh);
	if (elffile_phdrs(base, size, mem, &ph, NULL) != 0)
		return;
	t->loads = ph.loads;
	t->nloads = ph.nloads;
	memcpy(id, ph.build_id, sizeof ph.build_id);
	if ((hdr = ph.eh_frame_hdr) == NULL ||
	    !elffile_in(size, hdr->p_offset, hdr->p_filesz) ||
	    cfi_hdr_eh_frame(base + hdr->p_offset, hdr->p_filesz,
	    hdr->p_vaddr, &ptr) != 0)
		return;
	for (i = 0; i < t->nloads; i++) {
		if (ptr >= t->loads[i].vaddr &&
		    ptr - t->loads[i].vaddr < t->loads[i].filesz) {
			off = ptr - t->loads[i].vaddr + t->loads[i].off;
			if (!elffile_in(size, off, t->loads[i].filesz -
			    (ptr - t->loads[i].vaddr)))
				return;
			eh->p = base + off;
			eh->size = t->loads[i].filesz - (ptr -
			    t->loads[i].vaddr);
			eh->vaddr = ptr;
			return;
		}
	}
}

/* Parses sec into t unless it is larger than max bytes (then -1). */
static int
cfi_elf_try(struct cfi_table *t, const struct cfi_elf_sec *sec, int is_eh, size_t max)
{
	if (sec->size > max)
		return -1;
	cfi_parse(t, sec->p, sec->size, sec->vaddr, is_eh);
	return 0;
}

/* .debug_frame of the separate debug file named by build id id. */
static int
cfi_elf_debug_file(struct cfi_table *t, const char *id, size_t max)
{
	struct cfi_elf_sec sec;
	size_t size;
	void *p;
	int rc = 0;

	if ((p = elffile_map_debug(id, &size)) == NULL)
		return 0;
	if (cfi_elf_section(p, size, ".debug_frame", &sec) == 0)
		rc = cfi_elf_try(t, &sec, 0, max);
	munmap(p, size);
	return rc;
}

/*
 * Reads the CFI of an ELF image: .eh_frame (from the section headers, or
 * PT_GNU_EH_FRAME without them), else .debug_frame, of the image or else
 * of its separate debug file. A section of more than max bytes is left
 * alone: NULL, errno EFBIG.
 */
static struct cfi_table *
cfi_elf_image(const uint8_t *base, size_t size, int from_file, size_t max,
    char **cause)
{
	struct cfi_table *t;
	struct cfi_elf_sec sec, eh;
	char id[129];
	int rc = 0;

	if (elffile_ehdr(base, size, cause) == NULL)
		return NULL;
	t = xcalloc(1, sizeof *t);
	cfi_elf_phdrs(t, base, size, !from_file, id, &eh);
	if (cfi_elf_section(base, size, ".eh_frame", &sec) == 0)
		rc = cfi_elf_try(t, &sec, 1, max);
	else if (eh.p != NULL)
		rc = cfi_elf_try(t, &eh, 1, max);
	if (rc == 0 && t->n == 0 &&
	    cfi_elf_section(base, size, ".debug_frame", &sec) == 0)
		rc = cfi_elf_try(t, &sec, 0, max);
	if (rc == 0 && t->n == 0 && from_file)
		rc = cfi_elf_debug_file(t, id, max);
	if (rc != 0) {
		cfi_free(t);
		xcause(cause, "call-frame information larger than %zu bytes",
		    max);
		errno = EFBIG;
		return NULL;
	}
	return t;
}

/* Opens an ELF file and reads its CFI (the file is not kept mapped). */
struct cfi_table *
cfi_elf_open(const char *path, size_t max, char **cause)
{
	struct cfi_table *t;
	size_t size;
	void *p;
	int saved;

	if ((p = elffile_map(path, &size, cause)) == NULL)
		return NULL;
	t = cfi_elf_image(p, size, 1, max, cause);
	saved = errno;
	munmap(p, size);
	errno = saved;
	return t;
}

/* Reads the CFI of an in-memory image (the vDSO). */
struct cfi_table *
cfi_elf_open_mem(const void *image, size_t size, char **cause)
{
	return cfi_elf_image(image, size, 0, SIZE_MAX, cause);
}

