/*
 * ELF symbol reader for the agent's symbolizer. The file is mapped
 * read-only (elffile.c) and kept mapped while the symtab lives (names
 * point into it); every offset and size read from the file is checked
 * against the mapping before use, so a truncated or hostile file yields
 * an error, not a fault.
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "agent/core/elffile.h"
#include "agent/core/gopcln.h"
#include "agent/core/symtab.h"
#include "common/xmalloc.h"

struct symtab_sym {
	uint64_t	 addr;
	uint64_t	 size;
	const char	*name;
	int		 rank;		/* lower wins among equal addresses */
};

struct symtab {
	void			*map;		/* NULL for an in-memory image */
	size_t			 map_size;
	void			*dbg_map;	/* separate debug file, or NULL */
	size_t			 dbg_size;
	struct elffile_phdrs	 ph;		/* loads, build id */
	struct symtab_sym	*syms;
	size_t			 nsyms;
	size_t			 cap;
};

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
	    !elffile_in_aligned(size, eh->e_shoff, (uint64_t)eh->e_shnum *
	    sizeof *sh, sizeof(ElfW(Addr))))
		return 0;
	sh = (const ElfW(Shdr) *)(base + eh->e_shoff);
	for (i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type == SHT_NOTE && st->ph.build_id[0] == '\0' &&
		    elffile_in(size, sh[i].sh_offset, sh[i].sh_size))
			elffile_note(base + sh[i].sh_offset, sh[i].sh_size,
			    st->ph.build_id);
		if (sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM)
			continue;
		if (sh[i].sh_type == SHT_SYMTAB)
			nsymtab++;
		if (sh[i].sh_entsize != sizeof *sym || sh[i].sh_link >=
		    eh->e_shnum || !elffile_in_aligned(size, sh[i].sh_offset,
		    sh[i].sh_size, sizeof(ElfW(Addr))))
			continue;
		strs = &sh[sh[i].sh_link];
		if (strs->sh_size == 0 ||
		    !elffile_in(size, strs->sh_offset, strs->sh_size) ||
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

/* gopcln_read's callback: one Go function (names ranked after .symtab's). */
static void
symtab_add_go(void *arg, uint64_t addr, uint64_t size, const char *name)
{
	symtab_add(arg, addr, size, name, 3);
}

/* Adds the .symtab of the separate debug file named by the build id. */
static void
symtab_debug_file(struct symtab *st)
{
	size_t size;
	void *p;

	if ((p = elffile_map_debug(st->ph.build_id, &size)) == NULL)
		return;
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

	if ((p = elffile_map(path, &size, cause)) == NULL)
		return NULL;
	if (elffile_ehdr(p, size, cause) == NULL) {
		munmap(p, size);
		return NULL;
	}
	st = xcalloc(1, sizeof *st);
	st->map = p;
	st->map_size = size;
	if (elffile_phdrs(p, size, 0, &st->ph, cause) != 0) {
		symtab_free(st);
		return NULL;
	}
	if (symtab_sections(st, p, size) == 0) {
		symtab_debug_file(st);
		/* A stripped Go program still has its runtime's table. */
		gopcln_read(p, size, symtab_add_go, st);
	}
	symtab_finish(st);
	return st;
}

/* Indexes an in-memory image (the vDSO is mapped whole, headers included). */
struct symtab *
symtab_open_mem(const void *image, size_t size, char **cause)
{
	struct symtab *st;

	if (elffile_ehdr(image, size, cause) == NULL)
		return NULL;
	st = xcalloc(1, sizeof *st);
	if (elffile_phdrs(image, size, 1, &st->ph, cause) != 0) {
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
	free(st->ph.loads);
	free(st->syms);
	free(st);
}

/* The hex build id or "". */
const char *
symtab_build_id(const struct symtab *st)
{
	return st->ph.build_id;
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
	return elffile_offset_to_vaddr(st->ph.loads, st->ph.nloads, off,
	    vaddr);
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

/* Whether addr lies in the symtab's file mappings (see symtab.h). */
int
symtab_holds(const struct symtab *st, const void *addr)
{
	const uint8_t *a = addr, *m = st->map, *d = st->dbg_map;

	return (m != NULL && a >= m && a < m + st->map_size) ||
	    (d != NULL && a >= d && a < d + st->dbg_size);
}
