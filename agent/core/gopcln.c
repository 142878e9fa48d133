/*
 * .gopclntab reader (see gopcln.h). The layout (Go's runtime/symtab.go,
 * pcHeader, since 1.18): magic (4 bytes), two pad bytes, the instruction
 * quantum, the pointer size, then pointer-sized words: nfunc, nfiles,
 * textStart, and the offsets (from the header) of funcnametab, cutab,
 * filetab, pctab and pclntab. pclntab starts with nfunc + 1 pairs of
 * 32-bit (entry offset from textStart, offset of the function's _func
 * record from pclntab); a _func starts with its entry offset and the
 * offset of its name in funcnametab. A function ends where the next one
 * begins.
 */
#include <elf.h>
#include <link.h>
#include <string.h>

#include "agent/core/elffile.h"
#include "agent/core/gopcln.h"

#define GOPCLN_MAX_FUNCS	(4U << 20)

/* A little-endian word of n bytes at p. */
static uint64_t
gopcln_word(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* The .gopclntab section's bytes, or NULL. */
static const uint8_t *
gopcln_section(const uint8_t *base, size_t size, size_t *len)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
	const ElfW(Shdr) *sh, *names;
	size_t i;

	if (eh->e_shoff == 0 || eh->e_shentsize != sizeof *sh ||
	    eh->e_shstrndx >= eh->e_shnum ||
	    !elffile_in_aligned(size, eh->e_shoff, (uint64_t)eh->e_shnum *
	    sizeof *sh, sizeof(ElfW(Addr))))
		return NULL;
	sh = (const ElfW(Shdr) *)(base + eh->e_shoff);
	names = &sh[eh->e_shstrndx];
	if (!elffile_in(size, names->sh_offset, names->sh_size))
		return NULL;
	for (i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_name >= names->sh_size || names->sh_size -
		    sh[i].sh_name < sizeof ".gopclntab" ||
		    memcmp(base + names->sh_offset + sh[i].sh_name,
		    ".gopclntab", sizeof ".gopclntab") != 0 ||
		    sh[i].sh_type == SHT_NOBITS ||
		    !elffile_in(size, sh[i].sh_offset, sh[i].sh_size))
			continue;
		*len = sh[i].sh_size;
		return base + sh[i].sh_offset;
	}
	return NULL;
}

/* Reads the functions (see gopcln.h). */
long
gopcln_read(const uint8_t *base, size_t size, gopcln_add_fn add, void *arg)
{
	const uint8_t *t, *ft, *rec;
	uint64_t nfunc, text, nameoff, lnoff, entry, next, funcoff, name;
	size_t len, namelen;
	unsigned ps;
	long n = 0;
	uint64_t i;
	uint32_t magic;

	if ((t = gopcln_section(base, size, &len)) == NULL || len < 8)
		return -1;
	magic = (uint32_t)gopcln_word(t, 4);
	ps = t[7];
	if ((magic != 0xfffffff0U && magic != 0xfffffff1U) || t[4] != 0 ||
	    t[5] != 0 || (ps != 4 && ps != 8) || len < 8 + 8 * (uint64_t)ps)
		return -1;
	nfunc = gopcln_word(t + 8, ps);
	text = gopcln_word(t + 8 + 2 * ps, ps);
	nameoff = gopcln_word(t + 8 + 3 * ps, ps);
	lnoff = gopcln_word(t + 8 + 7 * ps, ps);
	if (nfunc == 0 || nfunc > GOPCLN_MAX_FUNCS || nameoff >= len ||
	    lnoff >= len || (len - lnoff) / 8 < nfunc + 1)
		return -1;
	ft = t + lnoff;
	for (i = 0; i < nfunc; i++) {
		entry = gopcln_word(ft + 8 * i, 4);
		funcoff = gopcln_word(ft + 8 * i + 4, 4);
		next = gopcln_word(ft + 8 * (i + 1), 4);
		if (next <= entry || funcoff > len - lnoff ||
		    len - lnoff - funcoff < 8)
			continue;
		rec = ft + funcoff;
		name = gopcln_word(rec + 4, 4);
		if (name >= len - nameoff)
			continue;
		namelen = strnlen((const char *)t + nameoff + name,
		    len - nameoff - name);
		if (namelen == 0 || namelen == len - nameoff - name)
			continue;		/* empty, or not terminated */
		add(arg, text + entry, next - entry,
		    (const char *)t + nameoff + name);
		n++;
	}
	return n;
}
