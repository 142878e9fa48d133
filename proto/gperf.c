/*
 * Legacy gperftools CPU profiles to pprof, as `go tool pprof -proto`
 * converts them (Go 1.19's pprof, Debian 12's): the file is words of the
 * writer's pointer size and byte order, a header (0, 3, 0, period in us,
 * 0), then records (count, depth, addresses leaf first) up to the record
 * (0, 1, 0), then the text of /proc/self/maps. The conversion follows
 * pprof's steps in order: every address but the leaf moved back one byte
 * onto its call; a second frame shared by (nearly) every sample, the
 * signal handler's, dropped, twice at most; the executable mappings
 * read, adjacent pieces joined and the main binary put first; each
 * address given its mapping (a fake one if none holds it); a leaf
 * duplicated by the unwinder dropped; then the compaction pprof's merge
 * does (zero samples out, identical stacks summed, mappings and
 * locations numbered in order of first use, unused ones left out).
 * Addresses stay unsymbolized: the binaries are not here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/budget.h"
#include "common/xmalloc.h"
#include "proto/gperf.h"
#include "proto/pprof_write.h"

/* The most mapping comparisons a file may need (a hostile one: 32 MB of
 * maps lines and of addresses in none of them). */
#define GPERF_MAX_WORK	200000000

/* What pprof marks as its CPU profiler's own frames (drop_frames). */
#define GPERF_DROP_FRAMES "ProfileData::Add|ProfileData::prof_handler|" \
	"CpuProfiler::prof_handler|__pthread_sighandler|__restore"

/* A distinct address of the input. */
struct gperf_loc {
	uint64_t	 addr;
	int64_t		 map;		/* index into maps, -1: none */
	uint64_t	 out;		/* output location id, 0: not yet */
	int		 used;		/* seen by the first-use walk */
};

/* An executable mapping of the maps text. */
struct gperf_map {
	uint64_t	 start, limit, offset;
	const char	*file;		/* in the text (not NUL-ended) */
	size_t		 filelen;
	uint64_t	 out;		/* output mapping id, 0: not yet */
	int64_t		 adj;		/* address shift into that one */
};

/* A record of the input, or a sample of the output. */
struct gperf_sample {
	size_t		 at, n;		/* its frames in stk (or ostk) */
	uint64_t	 count, cpu;
};

/* A hash table of indices (slot: index + 1) with the hash of each. */
struct gperf_tab {
	size_t		*slot;
	size_t		 nslot;
	uint64_t	*hash;		/* by index */
	size_t		 caphash;
};

/* An output location: the mapping and address that identify it. */
struct gperf_oloc {
	uint64_t	 map, addr, key;	/* key: addr - mapping start */
};

/* The conversion's state. */
struct gperf {
	struct budget_acct	*acct;
	size_t			 wsize;
	int			 big;
	uint64_t		 period;	/* ns */
	struct gperf_sample	*s;		/* records */
	size_t			 ns, caps;
	uint64_t		*stk;		/* records' location indices */
	size_t			 nstk, capstk;
	struct gperf_loc	*loc;
	size_t			 nloc, caploc;
	struct gperf_tab	 addrs;		/* addr -> loc */
	struct gperf_map	*map;
	size_t			 nmap, capmap;
	/* Output. */
	struct gperf_sample	*os;
	size_t			 nos, capos;
	uint64_t		*ostk;		/* output location ids */
	size_t			 nostk, capostk;
	struct gperf_oloc	*oloc;
	size_t			 noloc, capoloc;
	struct gperf_tab	 olocs, osamples;
	uint64_t		*omap;		/* output mappings: map indices */
	size_t			 nomap, capomap;
};

/* Reads a word at p. */
static uint64_t
gperf_word(const uint8_t *p, size_t size, int big)
{
	uint64_t	v = 0;
	size_t		k;

	for (k = 0; k < size; k++) {
		if (big)
			v = (v << 8) | p[k];
		else
			v |= (uint64_t)p[k] << (8 * k);
	}
	return v;
}

/* The header's word size (and *big), or 0 if raw is not a CPU profile. */
static size_t
gperf_header(const uint8_t *raw, size_t len, int *big, uint64_t *period_us)
{
	size_t	size;
	int	b;

	/* pprof's order: 32-bit LE, 32 BE, 64 LE, 64 BE. */
	for (size = 4; size <= 8; size += 4) {
		if (len < 5 * size)
			continue;
		for (b = 0; b <= 1; b++) {
			if (gperf_word(raw, size, b) == 0 &&
			    gperf_word(raw + size, size, b) == 3 &&
			    gperf_word(raw + 2 * size, size, b) == 0 &&
			    gperf_word(raw + 3 * size, size, b) != 0 &&
			    gperf_word(raw + 4 * size, size, b) == 0) {
				*big = b;
				*period_us = gperf_word(raw + 3 * size, size,
				    b);
				return size;
			}
		}
	}
	return 0;
}

/* True if raw starts like a legacy CPU profile. */
int
gperf_detect(const uint8_t *raw, size_t len)
{
	uint64_t	period;
	int		big;

	return gperf_header(raw, len, &big, &period) != 0;
}

/* FNV-1a of n words. */
static uint64_t
gperf_hash(const uint64_t *w, size_t n)
{
	uint64_t	h = 1469598103934665603ULL;
	size_t		i, k;

	for (i = 0; i < n; i++)
		for (k = 0; k < 64; k += 8)
			h = (h ^ ((w[i] >> k) & 0xff)) * 1099511628211ULL;
	return h;
}

/* Makes room in t for entry n: 0, or -1 when the budget refuses. */
static int
gperf_tab_room(struct gperf *g, struct gperf_tab *t, size_t n)
{
	size_t	i, h, nslot;
	size_t	*slot;

	if (budget_grow(g->acct, &t->hash, &t->caphash, n + 1,
	    sizeof *t->hash) != 0)
		return -1;
	if ((n + 1) * 2 <= t->nslot)
		return 0;
	nslot = t->nslot ? t->nslot * 2 : 256;
	if ((slot = budget_calloc(g->acct, nslot, sizeof *slot)) == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		for (h = t->hash[i]; slot[h & (nslot - 1)] != 0; h++)
			;
		slot[h & (nslot - 1)] = i + 1;
	}
	budget_dealloc(g->acct, t->slot, t->nslot * sizeof *t->slot);
	t->slot = slot;
	t->nslot = nslot;
	return 0;
}

/* Frees a table. */
static void
gperf_tab_free(struct gperf *g, struct gperf_tab *t)
{
	budget_dealloc(g->acct, t->slot, t->nslot * sizeof *t->slot);
	budget_dealloc(g->acct, t->hash, t->caphash * sizeof *t->hash);
}

/* The location of addr, added if new: its index, or -1 when refused. */
static int64_t
gperf_loc_of(struct gperf *g, uint64_t addr)
{
	struct gperf_tab	*t = &g->addrs;
	uint64_t		 hash = gperf_hash(&addr, 1);
	size_t			 h, i;

	if (gperf_tab_room(g, t, g->nloc) != 0 ||
	    budget_grow(g->acct, &g->loc, &g->caploc, g->nloc + 1,
	    sizeof *g->loc) != 0)
		return -1;
	for (h = hash; (i = t->slot[h & (t->nslot - 1)]) != 0; h++)
		if (g->loc[i - 1].addr == addr)
			return (int64_t)i - 1;
	t->slot[h & (t->nslot - 1)] = g->nloc + 1;
	t->hash[g->nloc] = hash;
	memset(&g->loc[g->nloc], 0, sizeof g->loc[g->nloc]);
	g->loc[g->nloc].addr = addr;
	g->loc[g->nloc].map = -1;
	return (int64_t)g->nloc++;
}

/*
 * Reads the records from raw[at..len): 0 with *text at the bytes after
 * the end record (len if there is none), or a GPERF_E*.
 */
static int
gperf_records(struct gperf *g, const uint8_t *raw, size_t len, size_t at,
    size_t *text, char **cause)
{
	size_t		w = g->wsize, i, rec = 0;
	uint64_t	count, depth, addr;
	int64_t		li;

	while (at < len) {
		rec++;
		if (len - at < 2 * w) {
			xcause(cause, "record %zu: cut short", rec);
			return GPERF_EINVAL;
		}
		count = gperf_word(raw + at, w, g->big);
		depth = gperf_word(raw + at + w, w, g->big);
		at += 2 * w;
		if (depth > (len - at) / w) {
			xcause(cause, "record %zu: %llu frames, more than the "
			    "bytes left", rec, (unsigned long long)depth);
			return GPERF_EINVAL;
		}
		if (count == 0 && depth == 1 && gperf_word(raw + at, w,
		    g->big) == 0) {
			*text = at + w;
			return 0;
		}
		if (budget_grow(g->acct, &g->s, &g->caps, g->ns + 1,
		    sizeof *g->s) != 0 || budget_grow(g->acct, &g->stk,
		    &g->capstk, g->nstk + depth, sizeof *g->stk) != 0)
			return GPERF_ENOMEM;
		g->s[g->ns].at = g->nstk;
		g->s[g->ns].n = depth;
		g->s[g->ns].count = count;
		for (i = 0; i < depth; i++, at += w) {
			addr = gperf_word(raw + at, w, g->big);
			if (i > 0)
				addr--;		/* onto the call */
			if ((li = gperf_loc_of(g, addr)) < 0)
				return GPERF_ENOMEM;
			g->stk[g->nstk++] = (uint64_t)li;
		}
		g->ns++;
	}
	*text = len;
	return 0;
}

/* Drops frame 1 of sample s. */
static void
gperf_drop_second(struct gperf *g, struct gperf_sample *s)
{
	memmove(&g->stk[s->at + 1], &g->stk[s->at + 2],
	    (s->n - 2) * sizeof *g->stk);
	s->n--;
}

/*
 * Drops the signal handler's frame: a second frame that all samples but
 * one in 32 share, up to twice (pprof's cpuProfile; so a profile of one
 * sample loses its second and third frames, as in pprof).
 */
static int
gperf_strip_handler(struct gperf *g)
{
	size_t		*cnt, i, iter, margin = g->ns / 32, found;

	if ((cnt = budget_calloc(g->acct, g->nloc + 1, sizeof *cnt)) == NULL)
		return GPERF_ENOMEM;
	for (iter = 0; iter < 2; iter++) {
		memset(cnt, 0, (g->nloc + 1) * sizeof *cnt);
		for (i = 0; i < g->ns; i++)
			if (g->s[i].n > 1)
				cnt[g->stk[g->s[i].at + 1]]++;
		found = g->nloc;
		for (i = 0; i < g->nloc; i++)
			if (cnt[i] > 0 && cnt[i] >= g->ns - margin) {
				found = i;
				break;
			}
		if (found == g->nloc)
			continue;
		for (i = 0; i < g->ns; i++)
			if (g->s[i].n > 1 && g->stk[g->s[i].at + 1] == found)
				gperf_drop_second(g, &g->s[i]);
	}
	budget_dealloc(g->acct, cnt, (g->nloc + 1) * sizeof *cnt);
	return 0;
}

/* Reads hex digits at *p (and an optional 0x): 0, or -1 if none. */
static int
gperf_hex(const char **p, const char *end, uint64_t *v)
{
	const char	*s = *p;
	int		 d, n = 0;

	if (end - s > 2 && s[0] == '0' && s[1] == 'x')
		s += 2;
	for (*v = 0; s < end; s++, n++) {
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		*v = (*v << 4) | (uint64_t)d;
	}
	*p = s;
	return n > 0 && n <= 16 ? 0 : -1;
}

/* The next blank-separated token of [*p, end): its bounds, 0 if none. */
static size_t
gperf_token(const char **p, const char *end, const char **tok)
{
	const char	*s = *p;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	*tok = s;
	while (s < end && *s != ' ' && *s != '\t')
		s++;
	*p = s;
	return (size_t)(s - *tok);
}

/* True if the n bytes at s are all in set. */
static int
gperf_all_in(const char *s, size_t n, const char *set)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (strchr(set, s[i]) == NULL)
			return 0;
	return n > 0;
}

/*
 * Reads a /proc/self/maps line ("start-end perms offset dev inode path")
 * into *m: 1, 0 if it is something else (ignored, as pprof does) or not
 * executable.
 */
static int
gperf_map_line(const char *s, const char *end, struct gperf_map *m)
{
	const char	*tok, *p = s, *perm = NULL;
	size_t		 n, permlen = 0;
	uint64_t	 dev;

	memset(m, 0, sizeof *m);
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (gperf_hex(&p, end, &m->start) != 0 || p >= end || *p != '-')
		return 0;
	p++;
	if (gperf_hex(&p, end, &m->limit) != 0 || (p < end && *p != ' ' &&
	    *p != '\t'))
		return 0;
	n = gperf_token(&p, end, &tok);
	if (gperf_all_in(tok, n, "-rwxp")) {
		perm = tok;
		permlen = n;
		n = gperf_token(&p, end, &tok);
	}
	if (n > 0 && memchr(tok, ':', n) == NULL) {	/* the offset */
		const char *q = tok;

		if (gperf_hex(&q, tok + n, &m->offset) != 0 || q != tok + n)
			return 0;
		n = gperf_token(&p, end, &tok);
	}
	{						/* dev: hex:hex */
		const char *q = tok;

		if (n == 0 || gperf_hex(&q, tok + n, &dev) != 0 ||
		    q >= tok + n || *q != ':' || (q++, gperf_hex(&q, tok + n,
		    &dev)) != 0 || q != tok + n)
			return 0;
	}
	n = gperf_token(&p, end, &tok);			/* inode */
	if (!gperf_all_in(tok, n, "0123456789"))
		return 0;
	m->filelen = gperf_token(&p, end, &m->file);
	if (perm != NULL && memchr(perm, 'x', permlen) == NULL)
		return 0;
	return 1;
}

/* True if the names are equal (n bytes each). */
static int
gperf_same_file(const struct gperf_map *a, const struct gperf_map *b)
{
	return a->filelen == b->filelen && (a->filelen == 0 ||
	    memcmp(a->file, b->file, a->filelen) == 0);
}

/* True if b continues a (pprof's adjacent). */
static int
gperf_adjacent(const struct gperf_map *a, const struct gperf_map *b)
{
	if (a->filelen > 0 && b->filelen > 0 && !gperf_same_file(a, b))
		return 0;
	if (a->limit != b->start)
		return 0;
	if (a->offset != 0 && b->offset != 0 &&
	    a->offset + (a->limit - a->start) != b->offset)
		return 0;
	return 1;
}

/* True if a file name looks like a shared library (pprof's libRx). */
static int
gperf_is_lib(const char *s, size_t n)
{
	size_t	i;

	for (i = 0; i + 3 <= n; i++) {
		if (memcmp(s + i, ".so", 3) != 0)
			continue;
		if (i + 3 == n)
			return 1;
		if (i + 4 < n && (s[i + 3] == '.' || s[i + 3] == '_') &&
		    s[i + 4] >= '0' && s[i + 4] <= '9')
			return 1;
	}
	return 0;
}

/* Reads the maps text and arranges the mappings as pprof does. */
static int
gperf_maps(struct gperf *g, const char *text, size_t len)
{
	const char		*line, *eol, *end = text + len;
	struct gperf_map	 m, t;
	size_t			 i;

	for (line = text; line < end; line = eol + 1) {
		if ((eol = memchr(line, '\n', (size_t)(end - line))) == NULL)
			eol = end;
		if (!gperf_map_line(line, eol > line && eol[-1] == '\r' ?
		    eol - 1 : eol, &m))
			continue;
		if (g->nmap > 0 && gperf_adjacent(&g->map[g->nmap - 1], &m)) {
			g->map[g->nmap - 1].limit = m.limit;
			if (m.filelen > 0) {
				g->map[g->nmap - 1].file = m.file;
				g->map[g->nmap - 1].filelen = m.filelen;
			}
			continue;
		}
		if (budget_grow(g->acct, &g->map, &g->capmap, g->nmap + 2,
		    sizeof *g->map) != 0)
			return GPERF_ENOMEM;
		g->map[g->nmap++] = m;
	}
	/* The main binary first: the first named one not a library. */
	for (i = 0; i < g->nmap; i++) {
		const char *f = g->map[i].file;
		size_t n = g->map[i].filelen;

		if (n >= 9 && memcmp(f + n - 9, "(deleted)", 9) == 0)
			n -= 9;
		if (n == 0 || gperf_is_lib(f, n) || f[0] == '[')
			continue;
		t = g->map[0];
		g->map[0] = g->map[i];
		g->map[i] = t;
		break;
	}
	/* pprof's remapMappingIDs heuristics for the main mapping. */
	if (g->nmap > 1 && g->map[0].filelen >= 14 && memcmp(g->map[0].file,
	    "/anon_hugepage", 14) == 0 && g->map[0].limit == g->map[1].start) {
		memmove(&g->map[0], &g->map[1], (g->nmap - 1) *
		    sizeof *g->map);
		g->nmap--;
	}
	if (g->nmap > 0 && g->map[0].start - g->map[0].offset == 0x400000) {
		g->map[0].start = 0x400000;
		g->map[0].offset = 0;
	}
	return 0;
}

/* Gives each used location its mapping, in order of first use. */
static int
gperf_assign(struct gperf *g, char **cause)
{
	struct gperf_loc	*l;
	struct gperf_map	*m;
	size_t			 i, j, k, work = 0;
	int64_t			 fake = -1;

	for (i = 0; i < g->ns; i++) {
		for (j = 0; j < g->s[i].n; j++) {
			l = &g->loc[g->stk[g->s[i].at + j]];
			if (l->used)
				continue;
			l->used = 1;
			if (l->addr == 0)
				continue;
			/* pprof's search is linear; bound it (a real file
			 * needs far less: 30 mappings x 300 addresses). */
			if ((work += 2 * g->nmap) > GPERF_MAX_WORK) {
				xcause(cause, "%zu executable mappings for %zu "
				    "addresses: more than %d lookups", g->nmap,
				    g->nloc, GPERF_MAX_WORK);
				return GPERF_EINVAL;
			}
			for (k = 0; k < g->nmap; k++) {
				m = &g->map[k];
				if (m->start <= l->addr && l->addr < m->limit)
					break;
			}
			if (k == g->nmap)
				for (k = 0; k < g->nmap; k++) {
					m = &g->map[k];
					if (m->offset != 0 && m->start -
					    m->offset <= l->addr &&
					    l->addr < m->start) {
						m->start -= m->offset;
						m->offset = 0;
						break;
					}
				}
			if (k == g->nmap) {
				if (fake < 0) {
					if (budget_grow(g->acct, &g->map,
					    &g->capmap, g->nmap + 1,
					    sizeof *g->map) != 0)
						return GPERF_ENOMEM;
					memset(&g->map[g->nmap], 0,
					    sizeof *g->map);
					g->map[g->nmap].limit = UINT64_MAX;
					fake = (int64_t)g->nmap++;
				}
				k = (size_t)fake;
			}
			l->map = (int64_t)k;
		}
	}
	/* A leaf the unwinder saw twice (once moved back a byte): once. */
	for (i = 0; i < g->ns; i++)
		if (g->s[i].n > 1 && g->loc[g->stk[g->s[i].at]].addr ==
		    g->loc[g->stk[g->s[i].at + 1]].addr + 1)
			gperf_drop_second(g, &g->s[i]);
	return 0;
}

/* Rounds a mapping's size up to 4 KiB, as pprof's mapping key does. */
static uint64_t
gperf_map_size(const struct gperf_map *m)
{
	uint64_t	size = m->limit - m->start;

	size = size + 0x1000 - 1;
	return size - size % 0x1000;
}

/* The output mapping of input mapping k (merge's mapMapping). */
static int
gperf_out_map(struct gperf *g, size_t k)
{
	struct gperf_map	*m = &g->map[k], *o;
	size_t			 i;

	if (m->out != 0)
		return 0;
	for (i = 0; i < g->nomap; i++) {
		o = &g->map[g->omap[i]];
		if (gperf_map_size(o) == gperf_map_size(m) &&
		    o->offset == m->offset && gperf_same_file(o, m)) {
			m->out = i + 1;
			m->adj = (int64_t)(o->start - m->start);
			return 0;
		}
	}
	if (budget_grow(g->acct, &g->omap, &g->capomap, g->nomap + 1,
	    sizeof *g->omap) != 0)
		return GPERF_ENOMEM;
	g->omap[g->nomap++] = k;
	m->out = g->nomap;
	m->adj = 0;
	return 0;
}

/* The output location of input location li (merge's mapLocation). */
static int
gperf_out_loc(struct gperf *g, size_t li)
{
	struct gperf_loc	*l = &g->loc[li];
	struct gperf_oloc	 o;
	struct gperf_tab	*t = &g->olocs;
	uint64_t		 w[2], hash;
	size_t			 h, i;

	if (l->out != 0)
		return 0;
	memset(&o, 0, sizeof o);
	o.addr = l->addr;
	o.key = l->addr;
	if (l->map >= 0) {
		if (gperf_out_map(g, (size_t)l->map) != 0)
			return GPERF_ENOMEM;
		o.map = g->map[l->map].out;
		o.addr = l->addr + (uint64_t)g->map[l->map].adj;
		o.key = o.addr - g->map[g->omap[o.map - 1]].start;
	}
	w[0] = o.map;
	w[1] = o.key;
	hash = gperf_hash(w, 2);
	if (gperf_tab_room(g, t, g->noloc) != 0 || budget_grow(g->acct,
	    &g->oloc, &g->capoloc, g->noloc + 1, sizeof *g->oloc) != 0)
		return GPERF_ENOMEM;
	for (h = hash; (i = t->slot[h & (t->nslot - 1)]) != 0; h++)
		if (g->oloc[i - 1].map == o.map && g->oloc[i - 1].key == o.key) {
			l->out = i;
			return 0;
		}
	t->slot[h & (t->nslot - 1)] = g->noloc + 1;
	t->hash[g->noloc] = hash;
	g->oloc[g->noloc++] = o;
	l->out = g->noloc;
	return 0;
}

/* Adds record i to the output, summing it into an identical stack. */
static int
gperf_out_sample(struct gperf *g, size_t i)
{
	struct gperf_sample	*s = &g->s[i], *o;
	struct gperf_tab	*t = &g->osamples;
	size_t			 j, h, k, first = g->nostk;
	uint64_t		 hash;

	/* (+ 1: never a NULL array, even for a record of no frames) */
	if (budget_grow(g->acct, &g->ostk, &g->capostk, g->nostk + s->n + 1,
	    sizeof *g->ostk) != 0)
		return GPERF_ENOMEM;
	for (j = 0; j < s->n; j++) {
		if (gperf_out_loc(g, (size_t)g->stk[s->at + j]) != 0)
			return GPERF_ENOMEM;
		g->ostk[g->nostk++] = g->loc[g->stk[s->at + j]].out;
	}
	hash = gperf_hash(g->ostk + first, s->n);
	if (gperf_tab_room(g, t, g->nos) != 0 || budget_grow(g->acct, &g->os,
	    &g->capos, g->nos + 1, sizeof *g->os) != 0)
		return GPERF_ENOMEM;
	for (h = hash; (k = t->slot[h & (t->nslot - 1)]) != 0; h++) {
		o = &g->os[k - 1];
		if (o->n == s->n && memcmp(g->ostk + o->at, g->ostk + first,
		    s->n * sizeof *g->ostk) == 0) {
			o->count += s->count;
			o->cpu += s->count * g->period;
			g->nostk = first;
			return 0;
		}
	}
	t->slot[h & (t->nslot - 1)] = g->nos + 1;
	t->hash[g->nos] = hash;
	o = &g->os[g->nos++];
	o->at = first;
	o->n = s->n;
	o->count = s->count;
	o->cpu = s->count * g->period;
	return 0;
}

/* String indices: "", samples, count, cpu, nanoseconds, drop, files. */
#define GPERF_STR_FILE(i)	((uint64_t)(i) + 6)

/* Serializes the output profile. */
static int
gperf_write(struct gperf *g, uint8_t **out, size_t *outlen, char **cause)
{
	static const char *const fixed[] = { "", "samples", "count", "cpu",
	    "nanoseconds", GPERF_DROP_FRAMES };
	struct pprof_write	 w;
	struct gperf_sample	*s;
	struct gperf_map	*m;
	struct gperf_oloc	*o;
	size_t			 i, j, len, vlen;

	if (pprof_write_init(&w, g->acct, 1, cause) != 0)
		return GPERF_ENOMEM;
	pprof_write_value_type(&w, 1, 1, 2);
	pprof_write_value_type(&w, 1, 3, 4);
	for (i = 0; i < g->nos; i++) {
		s = &g->os[i];
		for (len = 0, j = 0; j < s->n; j++)
			len += pprof_write_varint_size(g->ostk[s->at + j]);
		vlen = pprof_write_varint_size(s->count) +
		    pprof_write_varint_size(s->cpu);
		pprof_write_len(&w, 2, (len ? 1 + pprof_write_varint_size(len)
		    + len : 0) + 1 + pprof_write_varint_size(vlen) + vlen);
		if (len) {
			pprof_write_len(&w, 1, len);
			for (j = 0; j < s->n; j++)
				pprof_write_varint(&w, g->ostk[s->at + j]);
		}
		pprof_write_len(&w, 2, vlen);
		pprof_write_varint(&w, s->count);
		pprof_write_varint(&w, s->cpu);
	}
	for (i = 0; i < g->nomap; i++) {
		m = &g->map[g->omap[i]];
		pprof_write_len(&w, 3, pprof_write_field_size(i + 1) +
		    pprof_write_field_size(m->start) +
		    pprof_write_field_size(m->limit) +
		    pprof_write_field_size(m->offset) +
		    pprof_write_field_size(m->filelen ? GPERF_STR_FILE(i) : 0));
		pprof_write_uint(&w, 1, i + 1);
		pprof_write_uint(&w, 2, m->start);
		pprof_write_uint(&w, 3, m->limit);
		pprof_write_uint(&w, 4, m->offset);
		pprof_write_uint(&w, 5, m->filelen ? GPERF_STR_FILE(i) : 0);
	}
	for (i = 0; i < g->noloc; i++) {
		o = &g->oloc[i];
		pprof_write_len(&w, 4, pprof_write_field_size(i + 1) +
		    pprof_write_field_size(o->map) +
		    pprof_write_field_size(o->addr));
		pprof_write_uint(&w, 1, i + 1);
		pprof_write_uint(&w, 2, o->map);
		pprof_write_uint(&w, 3, o->addr);
	}
	for (i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
		pprof_write_bytes(&w, 6, fixed[i], strlen(fixed[i]));
	for (i = 0; i < g->nomap; i++) {
		m = &g->map[g->omap[i]];
		pprof_write_bytes(&w, 6, m->filelen ? m->file : "", m->filelen);
	}
	pprof_write_uint(&w, 7, 5);		/* drop_frames */
	pprof_write_value_type(&w, 11, 3, 4);
	pprof_write_uint(&w, 12, g->period);
	if (pprof_write_finish(&w, out, outlen, cause) != 0)
		return GPERF_ENOMEM;
	return 0;
}

/* Frees the state. */
static void
gperf_free(struct gperf *g)
{
	budget_dealloc(g->acct, g->s, g->caps * sizeof *g->s);
	budget_dealloc(g->acct, g->stk, g->capstk * sizeof *g->stk);
	budget_dealloc(g->acct, g->loc, g->caploc * sizeof *g->loc);
	budget_dealloc(g->acct, g->map, g->capmap * sizeof *g->map);
	budget_dealloc(g->acct, g->os, g->capos * sizeof *g->os);
	budget_dealloc(g->acct, g->ostk, g->capostk * sizeof *g->ostk);
	budget_dealloc(g->acct, g->oloc, g->capoloc * sizeof *g->oloc);
	budget_dealloc(g->acct, g->omap, g->capomap * sizeof *g->omap);
	gperf_tab_free(g, &g->addrs);
	gperf_tab_free(g, &g->olocs);
	gperf_tab_free(g, &g->osamples);
}

/* Converts a legacy CPU profile; see the header. */
int
gperf_to_pprof(const uint8_t *raw, size_t len, struct budget_acct *acct,
    uint8_t **out, size_t *outlen, char **cause)
{
	struct gperf	 g;
	uint64_t	 period_us;
	size_t		 text = len, i;
	int		 rc;

	*out = NULL;
	*outlen = 0;
	memset(&g, 0, sizeof g);
	g.acct = acct;
	if ((g.wsize = gperf_header(raw, len, &g.big, &period_us)) == 0) {
		xcause(cause, "not a gperftools CPU profile (no header 0, 3, "
		    "0, period, 0)");
		return GPERF_EINVAL;
	}
	if (period_us > (uint64_t)INT64_MAX / 1000) {
		xcause(cause, "header: a period of %llu us",
		    (unsigned long long)period_us);
		return GPERF_EINVAL;
	}
	g.period = period_us * 1000;
	rc = gperf_records(&g, raw, len, 5 * g.wsize, &text, cause);
	if (rc == 0)
		rc = gperf_strip_handler(&g);
	if (rc == 0)
		rc = gperf_maps(&g, (const char *)raw + text, len - text);
	if (rc == 0)
		rc = gperf_assign(&g, cause);
	if (rc == 0 && g.nmap > 0)
		rc = gperf_out_map(&g, 0);
	for (i = 0; rc == 0 && i < g.ns; i++)
		if (g.s[i].count != 0)
			rc = gperf_out_sample(&g, i);
	if (rc == 0)
		rc = gperf_write(&g, out, outlen, cause);
	if (rc == GPERF_ENOMEM && *cause == NULL)
		xcause(cause, "converting needs more memory than allowed");
	gperf_free(&g);
	return rc;
}
