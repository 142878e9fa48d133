/*
 * The ELF helpers of elffile.h, shared by the symbolizer (symtab.c) and
 * the unwind-table reader (cfi_elf.c).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/core/elffile.h"
#include "common/xmalloc.h"

/* True if [off, off+len) lies within size bytes. */
int
elffile_in(size_t size, uint64_t off, uint64_t len)
{
	return off <= size && len <= size - off;
}

/* The ELF header of a native image, or NULL. */
const ElfW(Ehdr) *
elffile_ehdr(const void *base, size_t size, char **cause)
{
	const ElfW(Ehdr) *eh = base;

	if (size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0) {
		xcause(cause, "not an ELF file");
		return NULL;
	}
#if __SIZEOF_POINTER__ == 8
	if (eh->e_ident[EI_CLASS] != ELFCLASS64) {
#else
	if (eh->e_ident[EI_CLASS] != ELFCLASS32) {
#endif
		xcause(cause, "ELF class is not native");
		return NULL;
	}
	return eh;
}

/* Maps a whole regular file read-only. */
void *
elffile_map(const char *path, size_t *size, char **cause)
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

/* In bounds and aligned (see elffile.h). */
int
elffile_in_aligned(size_t size, uint64_t off, uint64_t len, size_t align)
{
	return off % align == 0 && elffile_in(size, off, len);
}

/* Hex-encodes the first NT_GNU_BUILD_ID note in [p, p+len) into id. */
void
elffile_note(const uint8_t *p, size_t len, char id[129])
{
	static const char hex[] = "0123456789abcdef";
	const ElfW(Nhdr) *nh;
	size_t off = 0, namesz, descsz, i;

	if (((uintptr_t)p & 3) != 0)	/* notes are 4-byte aligned */
		return;
	while (elffile_in(len, off, sizeof *nh)) {
		nh = (const ElfW(Nhdr) *)(p + off);
		off += sizeof *nh;
		namesz = (nh->n_namesz + 3) & ~(size_t)3;
		descsz = (nh->n_descsz + 3) & ~(size_t)3;
		if (!elffile_in(len, off, namesz) ||
		    !elffile_in(len, off + namesz, descsz))
			return;
		if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
		    memcmp(p + off, "GNU", 4) == 0 && nh->n_descsz > 0 &&
		    nh->n_descsz <= 64) {
			for (i = 0; i < nh->n_descsz; i++) {
				id[2 * i] = hex[p[off + namesz + i] >> 4];
				id[2 * i + 1] = hex[p[off + namesz + i] & 15];
			}
			id[2 * i] = '\0';
			return;
		}
		off += namesz + descsz;
	}
}

/* Reads the program headers (see elffile.h). */
int
elffile_phdrs(const void *image, size_t size, int mem,
    struct elffile_phdrs *out, char **cause)
{
	const uint8_t *base = image;
	const ElfW(Ehdr) *eh = image;
	const ElfW(Phdr) *ph;
	uint64_t off;
	size_t i;

	memset(out, 0, sizeof *out);
	if (eh->e_phentsize != sizeof *ph ||
	    !elffile_in_aligned(size, eh->e_phoff, (uint64_t)eh->e_phnum *
	    sizeof *ph, sizeof(ElfW(Addr))))
		return xcause(cause, "bad program header table");
	ph = (const ElfW(Phdr) *)(base + eh->e_phoff);
	out->loads = xcalloc(eh->e_phnum ? eh->e_phnum : 1,
	    sizeof *out->loads);
	for (i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD) {
			out->loads[out->nloads].off = ph[i].p_offset;
			out->loads[out->nloads].vaddr = ph[i].p_vaddr;
			out->loads[out->nloads].filesz = ph[i].p_filesz;
			out->nloads++;
		} else if (ph[i].p_type == PT_GNU_EH_FRAME)
			out->eh_frame_hdr = &ph[i];
		else if (ph[i].p_type == PT_NOTE && out->build_id[0] == '\0') {
			off = mem && out->nloads > 0 ?
			    ph[i].p_vaddr - out->loads[0].vaddr : ph[i].p_offset;
			if (elffile_in(size, off, ph[i].p_filesz))
				elffile_note(base + off, ph[i].p_filesz,
				    out->build_id);
		}
	}
	return 0;
}

/* File offset to link address through the covering PT_LOAD. */
int
elffile_offset_to_vaddr(const struct elffile_load *loads, size_t nloads,
    uint64_t off, uint64_t *vaddr)
{
	size_t i;

	for (i = 0; i < nloads; i++) {
		if (off >= loads[i].off && off - loads[i].off < loads[i].filesz) {
			*vaddr = off - loads[i].off + loads[i].vaddr;
			return 0;
		}
	}
	return -1;
}

/* Maps the installed separate debug file of build_id, if any. */
void *
elffile_map_debug(const char *build_id, size_t *size)
{
	char path[256];
	void *p;

	if (strlen(build_id) < 4)
		return NULL;
	snprintf(path, sizeof path, "/usr/lib/debug/.build-id/%.2s/%s.debug",
	    build_id, build_id + 2);
	if (access(path, R_OK) != 0 ||
	    (p = elffile_map(path, size, NULL)) == NULL)
		return NULL;
	if (elffile_ehdr(p, *size, NULL) == NULL) {
		munmap(p, *size);
		return NULL;
	}
	return p;
}

/* A defined symbol's value by name (see elffile.h). */
int
elffile_symbol(const void *base, size_t size, const char *name,
    uint64_t *value, uint64_t *symsize)
{
	const uint8_t *b = base;
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
	const ElfW(Shdr) *sh, *strs;
	const ElfW(Sym) *sym;
	size_t i, j, nsym, len = strlen(name);

	if (eh->e_shoff == 0 || eh->e_shentsize != sizeof *sh ||
	    !elffile_in_aligned(size, eh->e_shoff, (uint64_t)eh->e_shnum *
	    sizeof *sh, sizeof(ElfW(Addr))))
		return -1;
	sh = (const ElfW(Shdr) *)(b + eh->e_shoff);
	for (i = 0; i < eh->e_shnum; i++) {
		if ((sh[i].sh_type != SHT_SYMTAB &&
		    sh[i].sh_type != SHT_DYNSYM) ||
		    sh[i].sh_entsize != sizeof *sym ||
		    sh[i].sh_link >= eh->e_shnum ||
		    !elffile_in_aligned(size, sh[i].sh_offset, sh[i].sh_size,
		    sizeof(ElfW(Addr))))
			continue;
		strs = &sh[sh[i].sh_link];
		if (!elffile_in(size, strs->sh_offset, strs->sh_size))
			continue;
		sym = (const ElfW(Sym) *)(b + sh[i].sh_offset);
		nsym = sh[i].sh_size / sizeof *sym;
		for (j = 0; j < nsym; j++) {
			if (sym[j].st_shndx == SHN_UNDEF ||
			    sym[j].st_name >= strs->sh_size ||
			    strs->sh_size - sym[j].st_name <= len ||
			    memcmp(b + strs->sh_offset + sym[j].st_name, name,
			    len + 1) != 0)
				continue;
			*value = sym[j].st_value;
			if (symsize != NULL)
				*symsize = sym[j].st_size;
			return 0;
		}
	}
	return -1;
}
