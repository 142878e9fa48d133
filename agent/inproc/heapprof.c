/*
 * Heap profiles from the heap sampler's tables (agent/inproc/heap.c), shaped as
 * Go's runtime writes them (runtime/pprof protomem.go), so `go tool
 * pprof` and profd read them as they read Go's:
 *
 * - heap: sample types alloc_objects/count, alloc_space/bytes,
 *   inuse_objects/count, inuse_space/bytes (default inuse_space), period
 *   type space/bytes, period the sampling rate; one sample per (stack,
 *   block size) with the numeric label "bytes"; allocations counted since
 *   the start, in-use ones as of now. Values are scaled up as Go's
 *   scaleHeapSample does: a block of s bytes is sampled with probability
 *   1 - exp(-s / rate), so count and bytes are multiplied by its inverse.
 * - allocs: what was allocated during a window (Cloud Profiler's
 *   deltaAllocProfile): the allocation counts at its end less those at
 *   its start, in-use values left out (alloc_objects, alloc_space,
 *   default alloc_space).
 */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agent/core/build.h"
#include "agent/inproc/heap.h"
#include "agent/inproc/heapprof.h"
#include "agent/core/stacks.h"
#include "common/xmalloc.h"

struct heapprof {
	struct heap_snapshot	 mark;		/* counts at window start */
	int			 marked;
};

/* A new profiler with no window open. */
struct heapprof *
heapprof_new(void)
{
	return xcalloc(1, sizeof(struct heapprof));
}

/* Frees p. */
void
heapprof_free(struct heapprof *p)
{
	if (p == NULL)
		return;
	heap_snapshot_free(&p->mark);
	free(p);
}

/* Go's scaleHeapSample: count and bytes of blocks of size bytes. */
static void
heapprof_scale(uint64_t count, uint64_t size, int64_t rate, int64_t *n,
    int64_t *bytes)
{
	double scale;

	if (count == 0 || size == 0) {
		*n = 0;
		*bytes = 0;
		return;
	}
	scale = rate > 1 ? 1 / (1 - exp(-(double)size / (double)rate)) : 1;
	*n = (int64_t)((double)count * scale);
	*bytes = (int64_t)((double)count * (double)size * scale);
}

/* Orders buckets by (stack, size). */
static int
heapprof_cmp(const void *a, const void *b)
{
	const struct heap_bucket *x = a, *y = b;

	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	return x->size < y->size ? -1 : x->size > y->size;
}

/* Opens a window: remembers the allocation counts now. */
void
heapprof_mark(struct heapprof *p)
{
	heap_snapshot_free(&p->mark);
	heap_snapshot(&p->mark);
	qsort(p->mark.buckets, p->mark.nbuckets, sizeof *p->mark.buckets,
	    heapprof_cmp);
	p->marked = 1;
}

/* The allocations bucket b had at the mark. */
static uint64_t
heapprof_at_mark(const struct heapprof *p, const struct heap_bucket *b)
{
	const struct heap_bucket *m;

	if (!p->marked)
		return 0;
	m = bsearch(b, p->mark.buckets, p->mark.nbuckets,
	    sizeof *p->mark.buckets, heapprof_cmp);
	return m != NULL ? m->allocs : 0;
}

/* Adds one sample of stack st to s (no merging: one entry per call). */
static void
heapprof_entry(struct stacks *s, const struct heap_snapshot *snap,
    uint32_t st)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->v = xreallocarray(s->v, s->cap, sizeof *s->v);
	}
	memset(&s->v[s->n], 0, sizeof s->v[s->n]);
	s->v[s->n].off = snap->stacks[st].off;
	s->v[s->n].n = snap->stacks[st].n;
	s->v[s->n].count = 1;
	s->n++;
	s->total++;
}

/* Fills the parts of a build_values both profiles share. */
static void
heapprof_values(struct build_values *v, const struct heap_snapshot *snap,
    char *comment, size_t commentsize)
{
	memset(v, 0, sizeof *v);
	v->period_type[0] = "space";
	v->period_type[1] = "bytes";
	v->period = snap->rate;
	v->return_addresses = 1;
	snprintf(comment, commentsize, "profd-agent heap: one sample per %lld "
	    "bytes allocated on average, %llu samples not recorded (tables "
	    "full)", (long long)snap->rate, (unsigned long long)snap->dropped);
	v->comment = comment;
}

/* Builds the heap and the window's allocs profiles (see heapprof.h). */
int
heapprof_build(struct heapprof *p, struct build *b,
    const struct build_window *w, int remark, uint8_t **heap,
    size_t *heaplen, uint8_t **allocs, size_t *allocslen, char **cause)
{
	struct heap_snapshot snap;
	struct build_values v;
	struct stacks hs, as;
	int64_t *hvals, *hbytes, *avals, *abytes, n, bytes;
	uint64_t d;
	size_t i, k = 0, ka = 0;
	char comment[192];
	int ret = 0;

	*heap = *allocs = NULL;
	*heaplen = *allocslen = 0;
	heap_snapshot(&snap);
	memset(&hs, 0, sizeof hs);
	memset(&as, 0, sizeof as);
	hs.pcs = as.pcs = snap.pcs;
	hs.npcs = as.npcs = snap.npcs;
	hvals = xcalloc(4 * snap.nbuckets + 1, sizeof *hvals);
	hbytes = xcalloc(snap.nbuckets + 1, sizeof *hbytes);
	avals = xcalloc(2 * snap.nbuckets + 1, sizeof *avals);
	abytes = xcalloc(snap.nbuckets + 1, sizeof *abytes);
	for (i = 0; i < snap.nbuckets; i++) {
		const struct heap_bucket *bk = &snap.buckets[i];

		if (bk->allocs == 0)
			continue;
		heapprof_entry(&hs, &snap, bk->stack);
		heapprof_scale(bk->allocs, bk->size, snap.rate, &n, &bytes);
		hvals[4 * k] = n;
		hvals[4 * k + 1] = bytes;
		heapprof_scale(bk->allocs - bk->frees, bk->size, snap.rate,
		    &n, &bytes);
		hvals[4 * k + 2] = n;
		hvals[4 * k + 3] = bytes;
		hbytes[k++] = (int64_t)bk->size;
		if ((d = bk->allocs - heapprof_at_mark(p, bk)) == 0)
			continue;
		heapprof_entry(&as, &snap, bk->stack);
		heapprof_scale(d, bk->size, snap.rate, &n, &bytes);
		avals[2 * ka] = n;
		avals[2 * ka + 1] = bytes;
		abytes[ka++] = (int64_t)bk->size;
	}
	heapprof_values(&v, &snap, comment, sizeof comment);
	v.ntypes = 4;
	v.types[0][0] = "alloc_objects";
	v.types[0][1] = "count";
	v.types[1][0] = "alloc_space";
	v.types[1][1] = "bytes";
	v.types[2][0] = "inuse_objects";
	v.types[2][1] = "count";
	v.types[3][0] = "inuse_space";
	v.types[3][1] = "bytes";
	v.default_type = "inuse_space";
	v.vals = hvals;
	v.bytes = hbytes;
	if (hs.n > 0)
		ret = build_profile_values(b, &hs, w, &v, heap, heaplen,
		    cause);
	v.ntypes = 2;
	v.default_type = "alloc_space";
	v.vals = avals;
	v.bytes = abytes;
	if (ret == 0 && as.n > 0)
		ret = build_profile_values(b, &as, w, &v, allocs, allocslen,
		    cause);
	free(hvals);
	free(hbytes);
	free(avals);
	free(abytes);
	free(hs.v);
	free(as.v);
	if (remark) {
		/* The next window starts where this one's counts were read. */
		heap_snapshot_free(&p->mark);
		p->mark = snap;
		qsort(p->mark.buckets, p->mark.nbuckets,
		    sizeof *p->mark.buckets, heapprof_cmp);
		p->marked = 1;
	} else
		heap_snapshot_free(&snap);
	return ret;
}
