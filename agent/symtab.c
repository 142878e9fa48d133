/*
 * ELF symbol reader for the agent's symbolizer. The file is mapped
 * read-only and kept mapped while the symtab lives (names point into it);
 * every offset and size read from the file is checked against the mapping
 * before use, so a truncated or hostile file yields an error, not a fault.
 * Only the native ELF class and byte order are read (ElfW from <link.h>).
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

#include "agent/symtab.h"
#include "common/xmalloc.h"

struct symtab_sym {
	uint64_t	 addr;
	uint64_t	 size;
	const char	*name;
	int		 rank;		/* lower wins among equal addresses */
};

struct symtab_load {
	uint64_t	off;
	uint64_t	vaddr;
	uint64_t	filesz;
};

struct symtab {
	void			*map;		/* NULL for an in-memory image */
	size_t			 map_size;
	void			*dbg_map;	/* separate debug file, or NULL */
	size_t			 dbg_size;
	char			 build_id[129];
	struct symtab_load	*loads;
	size_t			 nloads;
	struct symtab_sym	*syms;
	size_t			 nsyms;
	size_t			 cap;
};

/* True if [off, off+len) lies within size bytes. */
static int
symtab_in(size_t size, uint64_t off, uint64_t len)
{
	return off <= size && len <= size - off;
}

/* Checks the ELF header of an image; returns it or NULL. */
static const ElfW(Ehdr) *
symtab_ehdr(const uint8_t *base, size_t size, char **cause)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;

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

/* Hex-encodes the first NT_GNU_BUILD_ID note in [p, p+len). */
static int
symtab_note(struct symtab *st, const uint8_t *p, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const ElfW(Nhdr) *nh;
	size_t off = 0, namesz, descsz, i;

	while (symtab_in(len, off, sizeof *nh)) {
		nh = (const ElfW(Nhdr) *)(p + off);
		off += sizeof *nh;
		namesz = (nh->n_namesz + 3) & ~(size_t)3;
		descsz = (nh->n_descsz + 3) & ~(size_t)3;
		if (!symtab_in(len, off, namesz) ||
		    !symtab_in(len, off + namesz, descsz))
			return -1;
		if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
		    memcmp(p + off, "GNU", 4) == 0 && nh->n_descsz > 0 &&
		    nh->n_descsz <= 64) {
			for (i = 0; i < nh->n_descsz; i++) {
				st->build_id[2 * i] =
				    hex[p[off + namesz + i] >> 4];
				st->build_id[2 * i + 1] =
				    hex[p[off + namesz + i] & 15];
			}
			st->build_id[2 * i] = '\0';
			return 0;
		}
		off += namesz + descsz;
	}
	return -1;
}

/* Reads PT_LOAD segments and the build id note from the program headers. */
static int
symtab_phdrs(struct symtab *st, const uint8_t *base, size_t size, int mem,
    char **cause)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
	const ElfW(Phdr) *ph;
	uint64_t off;
	size_t i;

	if (eh->e_phentsize != sizeof *ph ||
	    !symtab_in(size, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof *ph))
		return xcause(cause, "bad program header table");
	ph = (const ElfW(Phdr) *)(base + eh->e_phoff);
	st->loads = xcalloc(eh->e_phnum ? eh->e_phnum : 1, sizeof *st->loads);
	for (i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD) {
			st->loads[st->nloads].off = ph[i].p_offset;
			st->loads[st->nloads].vaddr = ph[i].p_vaddr;
			st->loads[st->nloads].filesz = ph[i].p_filesz;
			st->nloads++;
		} else if (ph[i].p_type == PT_NOTE && st->build_id[0] == '\0') {
			/* In memory, a note lives at its vaddr - first vaddr. */
			off = mem && st->nloads > 0 ?
			    ph[i].p_vaddr - st->loads[0].vaddr : ph[i].p_offset;
			if (symtab_in(size, off, ph[i].p_filesz))
				symtab_note(st, base + off, ph[i].p_filesz);
		}
	}
	return 0;
}

/* Appends one symbol, growing the array. */
static void
symtab_add(struct symtab *st, uint64_t addr, uint64_t size, const char *name,
    int rank)
{
	if (st->nsyms == st->cap) {
		st->cap = st->cap ? st->cap * 2 : 256;
		st->syms = xreallocarray(st->syms, st->cap, sizeof *st->syms);
	}
	st->syms[st->nsyms].addr = addr;
	st->syms[st->nsyms].size = size;
	st->syms[st->nsyms].name = name;
	st->syms[st->nsyms].rank = rank;
	st->nsyms++;
}

/*
 * Collects function symbols of every SHT_SYMTAB / SHT_DYNSYM section.
 * Returns the number of SHT_SYMTAB sections seen.
 */
static int
symtab_sections(struct symtab *st, const uint8_t *base, size_t size)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
	const ElfW(Shdr) *sh, *strs;
	const ElfW(Sym) *sym;
	const char *name;
	size_t i, j, nsym;
	int nsymtab = 0, type, bind, rank;

	if (eh->e_shoff == 0 || eh->e_shentsize != sizeof *sh ||
	    !symtab_in(size, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof *sh))
		return 0;
	sh = (const ElfW(Shdr) *)(base + eh->e_shoff);
	for (i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type == SHT_NOTE && st->build_id[0] == '\0' &&
		    symtab_in(size, sh[i].sh_offset, sh[i].sh_size))
			symtab_note(st, base + sh[i].sh_offset, sh[i].sh_size);
		if (sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM)
			continue;
		if (sh[i].sh_type == SHT_SYMTAB)
			nsymtab++;
		if (sh[i].sh_entsize != sizeof *sym || sh[i].sh_link >=
		    eh->e_shnum ||
		    !symtab_in(size, sh[i].sh_offset, sh[i].sh_size))
			continue;
		strs = &sh[sh[i].sh_link];
		if (strs->sh_size == 0 ||
		    !symtab_in(size, strs->sh_offset, strs->sh_size) ||
		    base[strs->sh_offset + strs->sh_size - 1] != '\0')
			continue;
		sym = (const ElfW(Sym) *)(base + sh[i].sh_offset);
		nsym = sh[i].sh_size / sizeof *sym;
		for (j = 0; j < nsym; j++) {
			type = ELF64_ST_TYPE(sym[j].st_info);
			bind = ELF64_ST_BIND(sym[j].st_info);
			if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
			    sym[j].st_shndx == SHN_UNDEF ||
			    sym[j].st_value == 0 ||
			    sym[j].st_name >= strs->sh_size)
				continue;
			name = (const char *)base + strs->sh_offset +
			    sym[j].st_name;
			if (*name == '\0')
				continue;
			rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
			if (sym[j].st_size == 0)
				rank += 4;
			symtab_add(st, sym[j].st_value, sym[j].st_size, name,
			    rank);
		}
	}
	return nsymtab;
}

/* Orders symbols by address, best name first. */
static int
symtab_cmp(const void *a, const void *b)
{
	const struct symtab_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return strcmp(x->name, y->name);
}

/* Sorts and keeps one symbol per address. */
static void
symtab_finish(struct symtab *st)
{
	size_t i, n = 0;

	if (st->nsyms == 0)
		return;
	qsort(st->syms, st->nsyms, sizeof *st->syms, symtab_cmp);
	for (i = 0; i < st->nsyms; i++) {
		if (n > 0 && st->syms[n - 1].addr == st->syms[i].addr)
			continue;
		st->syms[n++] = st->syms[i];
	}
	st->nsyms = n;
}

/* Maps a whole file read-only. */
static void *
symtab_map_file(const char *path, size_t *size, char **cause)
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

/* Adds the .symtab of the separate debug file named by the build id. */
static void
symtab_debug_file(struct symtab *st)
{
	char path[256];
	size_t size;
	void *p;

	if (strlen(st->build_id) < 4)
		return;
	snprintf(path, sizeof path, "/usr/lib/debug/.build-id/%.2s/%s.debug",
	    st->build_id, st->build_id + 2);
	if (access(path, R_OK) != 0 || (p = symtab_map_file(path, &size,
	    NULL)) == NULL)
		return;
	if (symtab_ehdr(p, size, NULL) == NULL) {
		munmap(p, size);
		return;
	}
	st->dbg_map = p;
	st->dbg_size = size;
	symtab_sections(st, p, size);
}

/* Opens and indexes an ELF file. */
struct symtab *
symtab_open(const char *path, char **cause)
{
	struct symtab *st;
	size_t size;
	void *p;

	if ((p = symtab_map_file(path, &size, cause)) == NULL)
		return NULL;
	if (symtab_ehdr(p, size, cause) == NULL) {
		munmap(p, size);
		return NULL;
	}
	st = xcalloc(1, sizeof *st);
	st->map = p;
	st->map_size = size;
	if (symtab_phdrs(st, p, size, 0, cause) != 0) {
		symtab_free(st);
		return NULL;
	}
	if (symtab_sections(st, p, size) == 0)
		symtab_debug_file(st);
	symtab_finish(st);
	return st;
}

/* Indexes an in-memory image (the vDSO is mapped whole, headers included). */
struct symtab *
symtab_open_mem(const void *image, size_t size, char **cause)
{
	struct symtab *st;

	if (symtab_ehdr(image, size, cause) == NULL)
		return NULL;
	st = xcalloc(1, sizeof *st);
	if (symtab_phdrs(st, image, size, 1, cause) != 0) {
		symtab_free(st);
		return NULL;
	}
	symtab_sections(st, image, size);
	symtab_finish(st);
	return st;
}

/* Unmaps and frees. */
void
symtab_free(struct symtab *st)
{
	if (st == NULL)
		return;
	if (st->map != NULL)
		munmap(st->map, st->map_size);
	if (st->dbg_map != NULL)
		munmap(st->dbg_map, st->dbg_size);
	free(st->loads);
	free(st->syms);
	free(st);
}

/* The hex build id or "". */
const char *
symtab_build_id(const struct symtab *st)
{
	return st->build_id;
}

/* Number of distinct function symbols. */
size_t
symtab_count(const struct symtab *st)
{
	return st->nsyms;
}

/* File offset to link-time address through the covering PT_LOAD. */
int
symtab_offset_to_vaddr(const struct symtab *st, uint64_t off, uint64_t *vaddr)
{
	size_t i;

	for (i = 0; i < st->nloads; i++) {
		if (off >= st->loads[i].off &&
		    off - st->loads[i].off < st->loads[i].filesz) {
			*vaddr = off - st->loads[i].off + st->loads[i].vaddr;
			return 0;
		}
	}
	return -1;
}

/* Binary search for the function containing vaddr. */
const char *
symtab_lookup(const struct symtab *st, uint64_t vaddr, size_t *index)
{
	size_t lo = 0, hi = st->nsyms, mid;
	const struct symtab_sym *s;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (st->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	s = &st->syms[lo - 1];
	if (s->size != 0 ? vaddr - s->addr >= s->size :
	    (lo == st->nsyms || vaddr - s->addr > 65536))
		return NULL;
	*index = lo - 1;
	return s->name;
}

/* Start address of symbol index. */
uint64_t
symtab_symbol_addr(const struct symtab *st, size_t index)
{
	return index < st->nsyms ? st->syms[index].addr : 0;
}
