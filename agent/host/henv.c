/*
 * The live environment of another process (see henv.h). Where environ
 * lives: the defined symbol __environ (or environ) of the process's
 * executable (a copy relocation, or a static program), else of its libc
 * (a mapping whose file is libc.so.6), at the load bias of that mapping:
 * its start less the link address of its file offset. The symbol's link
 * address is cached per object (by the mapping's cache key). At most
 * HENV_MAX_VARS pointers and HENV_MAX_LEN bytes of each string are read.
 */
#include <sys/uio.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "agent/core/elffile.h"
#include "agent/host/henv.h"
#include "common/xmalloc.h"

#define HENV_MAX_VARS	4096
#define HENV_MAX_LEN	256
#define HENV_CACHE	32

/* An object's environ link address (0: none). */
struct henv_slot {
	char		*key;
	uint64_t	 vaddr;
	uint64_t	 map_vaddr;	/* link address of the mapping's offset */
	uint64_t	 pgoff;
};

static struct henv_slot	henv_cache[HENV_CACHE];
static unsigned		henv_next;

/* Reads len bytes at addr of pid; 0 or -1. */
static int
henv_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) ==
	    (ssize_t)len ? 0 : -1;
}

/* Reads up to len bytes at addr (fewer at the end of a mapping). */
static ssize_t
henv_read_some(pid_t pid, uint64_t addr, char *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };
	ssize_t r = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	size_t page = 4096 - (addr & 4095);

	if (r < 0 && page < len)	/* the string may end on its page */
		return henv_read_some(pid, addr, buf, page);
	return r;
}

/* Finds environ's link address in the object of mapping m of p. */
static struct henv_slot *
henv_lookup(const struct hproc *p, const struct hprocs_map *m)
{
	struct henv_slot *s;
	struct elffile_phdrs ph;
	char *path;
	size_t size, i;
	void *base;
	uint64_t v = 0, mv = 0;

	for (i = 0; i < HENV_CACHE; i++)
		if (henv_cache[i].key != NULL &&
		    strcmp(henv_cache[i].key, m->key) == 0 &&
		    henv_cache[i].pgoff == m->pgoff)
			return &henv_cache[i];
	/*
	 * The slot is taken (as "no environ") before the file is read: if
	 * the file shrinks under the read (SIGBUS, which jumps out of here),
	 * it is not read again for every process.
	 */
	s = &henv_cache[henv_next++ % HENV_CACHE];
	free(s->key);
	s->key = xstrdup(m->key);
	s->vaddr = s->map_vaddr = 0;
	s->pgoff = m->pgoff;
	path = xasprintf("/proc/%d/root%s", (int)p->pid, m->path);
	base = elffile_map(path, &size, NULL);
	free(path);
	if (base == NULL) {
		/* Not readable through this process (it is gone): another
		 * one may read it; nothing is cached. */
		free(s->key);
		s->key = NULL;
		return NULL;
	}
	memset(&ph, 0, sizeof ph);
	if (elffile_ehdr(base, size, NULL) == NULL ||
	    elffile_phdrs(base, size, 0, &ph, NULL) != 0 ||
	    elffile_offset_to_vaddr(ph.loads, ph.nloads, m->pgoff, &mv) != 0 ||
	    (elffile_symbol(base, size, "__environ", &v, NULL) != 0 &&
	    elffile_symbol(base, size, "environ", &v, NULL) != 0))
		v = 0;
	free(ph.loads);
	munmap(base, size);
	s->vaddr = v;
	s->map_vaddr = mv;
	return s;
}

/* Whether a path names libc. */
static int
henv_is_libc(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b != NULL ? b + 1 : path;
	return strncmp(b, "libc.so", 7) == 0 || strncmp(b, "libc-", 5) == 0;
}

/* Searches the live environment at the address of environ. */
static char *
henv_search(pid_t pid, uint64_t at, const char *name)
{
	uint64_t envp, ptrs[64];
	char buf[HENV_MAX_LEN + 1];
	size_t nlen = strlen(name), i, k, got;
	ssize_t r;

	if (henv_read(pid, at, &envp, sizeof envp) != 0 || envp == 0 ||
	    (envp & 7) != 0)
		return NULL;
	for (i = 0; i < HENV_MAX_VARS; i += got) {
		/* 64 pointers, or those up to the end of their page (the
		 * array may end there). */
		got = 64;
		if (henv_read(pid, envp + i * 8, ptrs, sizeof ptrs) != 0) {
			got = (4096 - ((envp + i * 8) & 4095)) / 8;
			if (got > 64 || henv_read(pid, envp + i * 8, ptrs,
			    got * 8) != 0)
				return NULL;
		}
		for (k = 0; k < got; k++) {
			if (ptrs[k] == 0)
				return NULL;
			r = henv_read_some(pid, ptrs[k], buf, HENV_MAX_LEN);
			if (r <= (ssize_t)nlen)
				continue;
			buf[r] = '\0';
			if (strncmp(buf, name, nlen) == 0 && buf[nlen] == '=')
				return xstrdup(buf + nlen + 1);
		}
	}
	return NULL;
}

/* The variable's value now (see henv.h). */
char *
henv_get(const struct hproc *p, const char *name)
{
	const struct hprocs_map *m;
	struct henv_slot *s;
	size_t i;
	int pass;

	/*
	 * The executable first: one that refers to environ holds the
	 * variable itself (a copy relocation, libc's references bound to
	 * it); else libc's own.
	 */
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < p->nmaps; i++) {
			m = &p->maps[i];
			if (pass == 0 ? p->exe == NULL || strcmp(m->path,
			    p->exe) != 0 : !henv_is_libc(m->path))
				continue;
			if ((s = henv_lookup(p, m)) != NULL && s->vaddr != 0)
				return henv_search(p->pid, m->start -
				    s->map_vaddr + s->vaddr, name);
			break;
		}
	return NULL;
}
