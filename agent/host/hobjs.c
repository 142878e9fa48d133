/*
 * The host agent's object cache (see hobjs.h). A hash table of objects by
 * key and a use counter per object for the least-recently-used trim. An
 * object's memory is estimated from what its tables hold: 12 bytes a CFI
 * row, and per symbol its entry and name (the file itself stays mapped
 * by the symbol table; pages of it that are touched are file-backed and
 * reclaimable, and are counted in the same estimate through the names).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <link.h>
#include <sys/auxv.h>

#include "agent/core/cfi.h"
#include "agent/core/cfi_elf.h"
#include "agent/core/symtab.h"
#include "agent/host/hobjs.h"
#include "common/strhash.h"
#include "common/xmalloc.h"

#define HOBJS_BUCKETS		4096	/* power of two */
#define HOBJS_SYM_BYTES		64	/* per symbol: entry and name */
#define HOBJS_ROW_BYTES		12	/* per CFI row */
#define HOBJS_BASE_BYTES	512	/* per object */
#define HOBJS_CFI_MAX		(256UL << 20)	/* largest section parsed */
#define HOBJS_MAX_ENTRIES	8192	/* objects, loaded or not */

struct hobj {
	struct hobj		*next;		/* bucket chain */
	char			*key;
	char			*open_path;	/* latest path to read it by */
	char			*alt_path;
	char			 build_id[129];
	struct cfi_table	*cfi;
	struct symtab		*st;
	int			 cfi_tried, st_tried;
	int			 use_alt;	/* alt_path gave the symbols */
	int			 forgotten;	/* shrank under us: not again */
	int			 vdso;		/* the agent's own vDSO */
	size_t			 bytes;
	uint64_t		 used;		/* hobjs.clock at last use */
};

struct hobjs {
	struct hobj		*buckets[HOBJS_BUCKETS];
	size_t			 max_bytes;
	uint64_t		 clock;
	struct hobjs_stats	 stats;
};

/* A new empty cache bounded at max_bytes (estimated). */
struct hobjs *
hobjs_new(size_t max_bytes)
{
	struct hobjs *c = xcalloc(1, sizeof *c);

	c->max_bytes = max_bytes;
	return c;
}

/* Frees one object's tables, keeping the entry. */
static void
hobjs_unload(struct hobjs *c, struct hobj *o)
{
	cfi_free(o->cfi);
	symtab_free(o->st);
	o->cfi = NULL;
	o->st = NULL;
	o->cfi_tried = o->st_tried = 0;
	c->stats.bytes -= o->bytes;
	o->bytes = 0;
}

/* Frees an object entirely. */
static void
hobjs_drop(struct hobjs *c, struct hobj *o)
{
	hobjs_unload(c, o);
	free(o->key);
	free(o->open_path);
	free(o->alt_path);
	free(o);
	c->stats.objects--;
}

/* Frees the cache. */
void
hobjs_free(struct hobjs *c)
{
	struct hobj *o, *n;
	size_t i;

	if (c == NULL)
		return;
	for (i = 0; i < HOBJS_BUCKETS; i++)
		for (o = c->buckets[i]; o != NULL; o = n) {
			n = o->next;
			hobjs_drop(c, o);
		}
	free(c);
}

/* Replaces a path string; 1 if it changed. */
static int
hobjs_set_path(char **slot, const char *path)
{
	if (path == NULL || (*slot != NULL && strcmp(*slot, path) == 0))
		return 0;
	free(*slot);
	*slot = xstrdup(path);
	return 1;
}

/* The object of key (see hobjs.h). */
struct hobj *
hobjs_get(struct hobjs *c, const char *key, int pid, const char *path,
    int own_ns)
{
	size_t b = strhash_str(STRHASH_INIT, key) & (HOBJS_BUCKETS - 1);
	char *open_path;
	struct hobj *o;
	int changed;

	for (o = c->buckets[b]; o != NULL; o = o->next)
		if (strcmp(o->key, key) == 0)
			break;
	if (o == NULL) {
		o = xcalloc(1, sizeof *o);
		o->key = xstrdup(key);
		if (strncmp(key, "ns:", 3) != 0 && strlen(key) < sizeof
		    o->build_id)
			strcpy(o->build_id, key);
		o->next = c->buckets[b];
		c->buckets[b] = o;
		c->stats.objects++;
	}
	/* Paths matter until the file is read; a read that failed is
	 * tried again by another process's path. */
	/* Until the file is read (the symbols, or the CFI when its read
	 * failed: the process it was read through may be gone). */
	if (!o->forgotten && (o->st == NULL || (o->cfi == NULL &&
	    o->cfi_tried))) {
		o->vdso = strcmp(path, "[vdso]") == 0;
		open_path = o->vdso ? xstrdup(path) : xasprintf(
		    "/proc/%d/root%s", pid, path);
		changed = hobjs_set_path(&o->open_path, open_path);
		changed += hobjs_set_path(&o->alt_path, own_ns && !o->vdso ?
		    path : NULL);
		free(open_path);
		if (changed > 0) {
			if (o->st == NULL)
				o->st_tried = 0;
			o->cfi_tried = 0;
			o->use_alt = 0;
		}
	}
	o->used = ++c->clock;
	return o;
}

/* The size of the vDSO image at addr: its sections' end. */
static size_t
hobjs_vdso_size(unsigned long addr)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)addr;

	return (size_t)eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
}

/* Whether a symbol table read from a path is the object (build id). */
static int
hobjs_matches(const struct hobj *o, const struct symtab *st)
{
	return o->build_id[0] == '\0' ||
	    strcmp(symtab_build_id(st), o->build_id) == 0;
}

/* Reads the symbol table through open_path, else alt_path. */
static void
hobjs_load_symtab(struct hobjs *c, struct hobj *o)
{
	struct symtab *st = NULL;
	unsigned long vdso;

	o->st_tried = 1;
	vdso = getauxval(AT_SYSINFO_EHDR);
	if (o->vdso && vdso != 0)
		st = symtab_open_mem((const void *)vdso, hobjs_vdso_size(vdso),
		    NULL);
	else if (o->open_path != NULL && !o->vdso)
		st = symtab_open(o->open_path, NULL);
	if (st != NULL && !hobjs_matches(o, st)) {
		symtab_free(st);
		st = NULL;
	}
	o->use_alt = st == NULL;
	if (st == NULL && o->alt_path != NULL &&
	    (st = symtab_open(o->alt_path, NULL)) != NULL &&
	    !hobjs_matches(o, st)) {
		symtab_free(st);
		st = NULL;
	}
	if (st == NULL) {
		c->stats.failures++;
		return;
	}
	c->stats.loads++;
	if (o->build_id[0] == '\0')
		snprintf(o->build_id, sizeof o->build_id, "%s",
		    symtab_build_id(st));
	o->st = st;
	o->bytes += HOBJS_BASE_BYTES + symtab_count(st) * HOBJS_SYM_BYTES;
	c->stats.bytes += HOBJS_BASE_BYTES + symtab_count(st) *
	    HOBJS_SYM_BYTES;
}

/* The symbol table (see hobjs.h). */
const struct symtab *
hobjs_symtab(struct hobjs *c, struct hobj *o)
{
	o->used = ++c->clock;
	if (!o->st_tried)
		hobjs_load_symtab(c, o);
	return o->st;
}

/* The CFI table (see hobjs.h): read from the path the symbols came by. */
const struct cfi_table *
hobjs_cfi(struct hobjs *c, struct hobj *o)
{
	const char *path;
	unsigned long vdso;
	size_t add;

	o->used = ++c->clock;
	if (o->cfi_tried)
		return o->cfi;
	if (hobjs_symtab(c, o) == NULL) {
		o->cfi_tried = 1;
		return NULL;
	}
	o->cfi_tried = 1;
	/* The path whose build id matched is the one to read. */
	path = o->use_alt ? o->alt_path : o->open_path;
	vdso = getauxval(AT_SYSINFO_EHDR);
	if (o->vdso && vdso != 0)
		o->cfi = cfi_elf_open_mem((const void *)vdso,
		    hobjs_vdso_size(vdso), NULL);
	else if (path != NULL) {
		o->cfi = cfi_elf_open(path, HOBJS_CFI_MAX, NULL);
		/* The process may have exited since its symbols were read:
		 * the file as the agent sees it, when it is the same. */
		if (o->cfi == NULL && !o->use_alt && o->alt_path != NULL)
			o->cfi = cfi_elf_open(o->alt_path, HOBJS_CFI_MAX, NULL);
	}
	if (o->cfi != NULL) {
		add = o->cfi->n * HOBJS_ROW_BYTES + (o->cfi->npages + 1) *
		    sizeof(uint32_t);
		o->bytes += add;
		c->stats.bytes += add;
	}
	return o->cfi;
}

/* The build id known (see hobjs.h). */
const char *
hobjs_build_id(const struct hobj *o)
{
	return o->build_id;
}

/* Unloads the object mapping addr (see hobjs.h). */
int
hobjs_forget_addr(struct hobjs *c, const void *addr)
{
	struct hobj *o;
	size_t i;

	for (i = 0; i < HOBJS_BUCKETS; i++)
		for (o = c->buckets[i]; o != NULL; o = o->next)
			if (o->st != NULL && symtab_holds(o->st, addr)) {
				hobjs_unload(c, o);
				o->st_tried = o->cfi_tried = 1;
				o->forgotten = 1;
				return 1;
			}
	return 0;
}

/*
 * Unloads least recently used objects until under the bound; past
 * HOBJS_MAX_ENTRIES entries, drops the oldest that hold no tables too
 * (files that could not be read, forgotten ones), so the entries of
 * short-lived containers' files do not pile up.
 */
void
hobjs_trim(struct hobjs *c)
{
	struct hobj *o, *oldest, **pp, **oldest_pp;
	size_t i;

	while (c->stats.bytes > c->max_bytes) {
		oldest = NULL;
		oldest_pp = NULL;
		for (i = 0; i < HOBJS_BUCKETS; i++)
			for (pp = &c->buckets[i]; (o = *pp) != NULL;
			    pp = &o->next)
				if (o->bytes > 0 && (oldest == NULL ||
				    o->used < oldest->used)) {
					oldest = o;
					oldest_pp = pp;
				}
		if (oldest == NULL)
			break;
		*oldest_pp = oldest->next;
		hobjs_drop(c, oldest);
		c->stats.evicted++;
	}
	while (c->stats.objects > HOBJS_MAX_ENTRIES) {
		oldest = NULL;
		oldest_pp = NULL;
		for (i = 0; i < HOBJS_BUCKETS; i++)
			for (pp = &c->buckets[i]; (o = *pp) != NULL;
			    pp = &o->next)
				if (oldest == NULL || o->used < oldest->used) {
					oldest = o;
					oldest_pp = pp;
				}
		if (oldest == NULL)
			break;
		*oldest_pp = oldest->next;
		hobjs_drop(c, oldest);
		c->stats.evicted++;
	}
}

/* Copies the counters. */
void
hobjs_stats(const struct hobjs *c, struct hobjs_stats *st)
{
	*st = c->stats;
}
