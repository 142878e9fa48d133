/*
 * Call-frame information of ELF objects: finds .eh_frame (through the
 * section headers, or PT_GNU_EH_FRAME's .eh_frame_hdr without them) or
 * .debug_frame, in the object, or in its separate debug file
 * (/usr/lib/debug/.build-id/xx/yyyy.debug), and hands the bytes to cfi.c.
 * The file is mapped read-only only while it is parsed, and every offset
 * and size read from it is checked against the mapping first. Only the
 * native ELF class is read (ElfW from <link.h>).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/cfi.h"
#include "agent/cfi_elf.h"
#include "common/xmalloc.h"

/* Section bytes with their link address. */
struct cfi_elf_sec {
	const uint8_t	*p;
	size_t		 size;
	uint64_t	 vaddr;
};

/* True if [off, off+len) lies within size bytes. */
static int
cfi_elf_in(size_t size, uint64_t off, uint64_t len)
{
	return off <= size && len <= size - off;
}

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
	    !cfi_elf_in(size, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof *sh))
		return -1;
	sh = (const ElfW(Shdr) *)(base + eh->e_shoff);
	strs = &sh[eh->e_shstrndx];
	if (!cfi_elf_in(size, strs->sh_offset, strs->sh_size))
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
		    !cfi_elf_in(size, sh[i].sh_offset, sh[i].sh_size))
			return -1;
		out->p = base + sh[i].sh_offset;
		out->size = sh[i].sh_size;
		out->vaddr = sh[i].sh_addr;
		return 0;
	}
	return -1;
}

/* Checks the ELF header; 0 if it is a native one. */
static int
cfi_elf_ehdr(const uint8_t *base, size_t size, char **cause)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;

	if (size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
		return xcause(cause, "not an ELF file");
#if __SIZEOF_POINTER__ == 8
	if (eh->e_ident[EI_CLASS] != ELFCLASS64)
#else
	if (eh->e_ident[EI_CLASS] != ELFCLASS32)
#endif
		return xcause(cause, "ELF class is not native");
	return 0;
}

/*
 * PT_LOAD segments into t; the build id (hex) into id. Without section
 * headers, .eh_frame is found from PT_GNU_EH_FRAME (its header's
 * eh_frame_ptr), bounded by the end of the segment that holds it.
 */
static void
cfi_elf_phdrs(struct cfi_table *t, const uint8_t *base, size_t size,
    char id[129], struct cfi_elf_sec *eh)
{
	static const char hex[] = "0123456789abcdef";
	const ElfW(Ehdr) *ehd = (const ElfW(Ehdr) *)base;
	const ElfW(Phdr) *ph;
	const ElfW(Nhdr) *nh;
	const uint8_t *np;
	uint64_t ptr, off, nsz, dsz;
	size_t i, j;
	int hdr_i = -1;

	id[0] = '\0';
	memset(eh, 0, sizeof *eh);
	if (ehd->e_phentsize != sizeof *ph ||
	    !cfi_elf_in(size, ehd->e_phoff, (uint64_t)ehd->e_phnum * sizeof *ph))
		return;
	ph = (const ElfW(Phdr) *)(base + ehd->e_phoff);
	t->loads = xcalloc(ehd->e_phnum ? ehd->e_phnum : 1, sizeof *t->loads);
	for (i = 0; i < ehd->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD) {
			t->loads[t->nloads].off = ph[i].p_offset;
			t->loads[t->nloads].vaddr = ph[i].p_vaddr;
			t->loads[t->nloads].filesz = ph[i].p_filesz;
			t->nloads++;
		} else if (ph[i].p_type == PT_GNU_EH_FRAME)
			hdr_i = (int)i;
		else if (ph[i].p_type == PT_NOTE && id[0] == '\0' &&
		    cfi_elf_in(size, ph[i].p_offset, ph[i].p_filesz)) {
			np = base + ph[i].p_offset;
			for (off = 0; cfi_elf_in(ph[i].p_filesz, off, sizeof *nh);) {
				nh = (const ElfW(Nhdr) *)(np + off);
				nsz = (nh->n_namesz + 3) & ~3ULL;
				dsz = (nh->n_descsz + 3) & ~3ULL;
				off += sizeof *nh;
				if (!cfi_elf_in(ph[i].p_filesz, off, nsz + dsz))
					break;
				if (nh->n_type == NT_GNU_BUILD_ID &&
				    nh->n_namesz == 4 && nh->n_descsz > 0 &&
				    nh->n_descsz <= 64 &&
				    memcmp(np + off, "GNU", 4) == 0) {
					for (j = 0; j < nh->n_descsz; j++) {
						id[2 * j] = hex[np[off + nsz +
						    j] >> 4];
						id[2 * j + 1] = hex[np[off +
						    nsz + j] & 15];
					}
					id[2 * j] = '\0';
					break;
				}
				off += nsz + dsz;
			}
		}
	}
	if (hdr_i < 0 || !cfi_elf_in(size, ph[hdr_i].p_offset, ph[hdr_i].p_filesz))
		return;
	if (cfi_hdr_eh_frame(base + ph[hdr_i].p_offset, ph[hdr_i].p_filesz,
	    ph[hdr_i].p_vaddr, &ptr) != 0)
		return;
	for (i = 0; i < t->nloads; i++) {
		if (ptr >= t->loads[i].vaddr &&
		    ptr - t->loads[i].vaddr < t->loads[i].filesz) {
			off = ptr - t->loads[i].vaddr + t->loads[i].off;
			if (!cfi_elf_in(size, off, t->loads[i].filesz -
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

/* Maps a whole file read-only. */
static void *
cfi_elf_map(const char *path, size_t *size, char **cause)
{
	struct stat sb;
	void *p;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		xcause(cause, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size == 0) {
		xcause(cause, "%s: not a regular, non-empty file", path);
		close(fd);
		return NULL;
	}
	p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		xcause(cause, "%s: mmap: %s", path, strerror(errno));
		return NULL;
	}
	*size = (size_t)sb.st_size;
	return p;
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
	char path[256];
	size_t size;
	void *p;
	int rc = 0;

	if (strlen(id) < 4)
		return 0;
	snprintf(path, sizeof path, "/usr/lib/debug/.build-id/%.2s/%s.debug",
	    id, id + 2);
	if (access(path, R_OK) != 0 ||
	    (p = cfi_elf_map(path, &size, NULL)) == NULL)
		return 0;
	if (cfi_elf_ehdr(p, size, NULL) == 0 &&
	    cfi_elf_section(p, size, ".debug_frame", &sec) == 0)
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

	if (cfi_elf_ehdr(base, size, cause) != 0)
		return NULL;
	t = xcalloc(1, sizeof *t);
	cfi_elf_phdrs(t, base, size, id, &eh);
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

	if ((p = cfi_elf_map(path, &size, cause)) == NULL)
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

