/*
 * perf_event_open(2) for the host agent (see hperf.h). Each online CPU
 * gets a software CPU-clock event in frequency mode that samples every
 * task running there (pid -1), with sample_id_all so that the task and
 * mmap records carry pid, time and cpu too, and mmap2 with build ids so
 * an executable mapping names its object even when the process is gone
 * before the record is read. The rings are read without a syscall: the
 * kernel's data_head is loaded with acquire order, the records (which may
 * wrap the ring's end) are copied out and data_tail stored with release
 * order; the records of all rings are then sorted by time, as perf's
 * ordered events are, before they are parsed. (Within one drain: a
 * record written to a ring already read comes in the next drain, which
 * hprocs_fork allows for.) A record whose sizes
 * disagree with its header is counted as bad and skipped whole.
 */
#include <asm/perf_regs.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/host/hperf.h"
#include "common/xmalloc.h"

#define HPERF_REGS_MASK	((1ULL << PERF_REG_X86_BP) | \
			 (1ULL << PERF_REG_X86_SP) | (1ULL << PERF_REG_X86_IP))
#define HPERF_MAX_CPUS	4096
#define HPERF_MAX_KIPS	128	/* kernel frames kept */
#define HPERF_HORIZON_NS 20000000ULL	/* records this young wait */

/* A record copied out of its ring, to be sorted by time. */
struct hperf_rec {
	uint64_t	time;
	size_t		off, len;	/* in hperf.arena */
	size_t		seq;		/* read order: ties keep it */
};

/* One CPU's event and ring. */
struct hperf_ring {
	int			 fd;
	uint32_t		 cpu;
	struct perf_event_mmap_page *meta;
	uint8_t			*data;
	size_t			 size;		/* data bytes, power of 2 */
};

struct hperf {
	struct hperf_ring	*rings;
	size_t			 n;
	size_t			 page;
	uint8_t			*arena;		/* this drain's records */
	size_t			 arena_len, arena_cap;
	struct hperf_rec	*recs;		/* their order */
	size_t			 nrecs, recs_cap;
	uint64_t		 kips[HPERF_MAX_KIPS];	/* a sample's chain */
	struct hperf_stats	 stats;
};

/* perf_event_open has no libc wrapper. */
static int
hperf_syscall(struct perf_event_attr *attr, pid_t pid, int cpu)
{
	return (int)syscall(SYS_perf_event_open, attr, pid, cpu, -1,
	    PERF_FLAG_FD_CLOEXEC);
}

/* The online CPUs from sysfs ("0-3,6"); count into *n. */
static uint32_t *
hperf_online(size_t *n)
{
	char buf[4096], *p, *end;
	uint32_t *v = NULL;
	unsigned long a, b;
	FILE *f;
	size_t cap = 0;

	*n = 0;
	if ((f = fopen("/sys/devices/system/cpu/online", "r")) == NULL ||
	    fgets(buf, sizeof buf, f) == NULL) {
		if (f != NULL)
			fclose(f);
		a = (unsigned long)sysconf(_SC_NPROCESSORS_ONLN);
		snprintf(buf, sizeof buf, "0-%lu", a > 0 ? a - 1 : 0);
	} else
		fclose(f);
	for (p = buf; *p != '\0' && *p != '\n';) {
		a = strtoul(p, &end, 10);
		if (end == p)
			break;
		b = a;
		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		for (; a <= b && a < HPERF_MAX_CPUS; a++) {
			if (*n == cap) {
				cap = cap ? cap * 2 : 16;
				v = xreallocarray(v, cap, sizeof *v);
			}
			v[(*n)++] = (uint32_t)a;
		}
		p = *end == ',' ? end + 1 : end;
	}
	return v;
}

/* The perf_event_paranoid sysctl, or -99 if unreadable. */
static int
hperf_paranoid(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int v = -99;

	if (f != NULL) {
		if (fscanf(f, "%d", &v) != 1)
			v = -99;
		fclose(f);
	}
	return v;
}

/* The attributes of one CPU's event. */
static void
hperf_attr(const struct hperf_config *c, struct perf_event_attr *a)
{
	memset(a, 0, sizeof *a);
	a->size = sizeof *a;
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	a->freq = 1;
	a->sample_freq = (uint64_t)c->hz;
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
	    PERF_SAMPLE_CPU | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER |
	    PERF_SAMPLE_STACK_USER;
	a->sample_regs_user = HPERF_REGS_MASK;
	a->sample_stack_user = c->stack_size;
	a->exclude_callchain_user = 1;	/* unwound here, from the copy */
	a->exclude_guest = 1;
	a->sample_id_all = 1;
	a->mmap = 1;
	a->mmap2 = 1;
	a->build_id = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->disabled = 1;
	a->watermark = 1;	/* wakeup_watermark: set by the caller */
	a->use_clockid = 1;	/* times comparable with hperf_horizon's */
	a->clockid = CLOCK_MONOTONIC;
}

/* Opens the events (see hperf.h). */
struct hperf *
hperf_open(const struct hperf_config *c, char **cause)
{
	struct perf_event_attr attr;
	struct hperf *h;
	uint32_t *cpus;
	size_t i, ncpus, pages = c->ring_pages;
	void *m;
	int fd, err, par;

	if (pages == 0 || (pages & (pages - 1)) != 0)
		pages = 64;
	cpus = hperf_online(&ncpus);
	if (ncpus == 0) {
		free(cpus);
		xcause(cause, "no online CPU found in /sys/devices/system/cpu/"
		    "online");
		return NULL;
	}
	h = xcalloc(1, sizeof *h);
	h->page = (size_t)sysconf(_SC_PAGESIZE);
	h->rings = xcalloc(ncpus, sizeof *h->rings);
	hperf_attr(c, &attr);
	attr.wakeup_watermark = (uint32_t)(128 * h->page / 4);	/* 128 KiB */
	for (i = 0; i < ncpus; i++) {
		if ((fd = hperf_syscall(&attr, -1, (int)cpus[i])) < 0) {
			err = errno;
			if (err == ENODEV || err == ENOENT)
				continue;	/* went offline */
			par = hperf_paranoid();
			if (err == EACCES || err == EPERM)
				xcause(cause, "perf_event_open on CPU %u: %s: "
				    "sampling every process needs CAP_PERFMON "
				    "(or CAP_SYS_ADMIN, or root) or "
				    "kernel.perf_event_paranoid <= -1 "
				    "(it is %d)", cpus[i], strerror(err), par);
			else
				xcause(cause, "perf_event_open on CPU %u: %s",
				    cpus[i], strerror(err));
			goto fail;
		}
		m = mmap(NULL, (pages + 1) * h->page, PROT_READ | PROT_WRITE,
		    MAP_SHARED, fd, 0);
		/* Past the locked-memory allowance (perf_event_mlock_kb per
		 * CPU, without CAP_IPC_LOCK): the allowance's size. */
		while (m == MAP_FAILED && errno == EPERM && pages > 128) {
			pages /= 2;
			m = mmap(NULL, (pages + 1) * h->page, PROT_READ |
			    PROT_WRITE, MAP_SHARED, fd, 0);
		}
		if (m == MAP_FAILED) {
			err = errno;
			close(fd);
			xcause(cause, "mmap of the ring of CPU %u (%zu KiB): %s"
			    "%s", cpus[i], pages * h->page / 1024,
			    strerror(err), err == EPERM ? " (raise "
			    "kernel.perf_event_mlock_kb or give CAP_IPC_LOCK)"
			    : "");
			goto fail;
		}
		h->rings[h->n].fd = fd;
		h->rings[h->n].cpu = cpus[i];
		h->rings[h->n].meta = m;
		h->rings[h->n].data = (uint8_t *)m + h->page;
		h->rings[h->n].size = pages * h->page;
		h->n++;
	}
	free(cpus);
	for (i = 0; i < h->n; i++)
		ioctl(h->rings[i].fd, PERF_EVENT_IOC_ENABLE, 0);
	return h;
fail:
	free(cpus);
	hperf_close(h);
	return NULL;
}

/* The ring descriptors, for poll. */
size_t
hperf_fds(const struct hperf *h, int *fds, size_t max)
{
	size_t i;

	for (i = 0; i < h->n && i < max; i++)
		fds[i] = h->rings[i].fd;
	return i;
}

/* Cursor over one record's body. */
struct hperf_cur {
	const uint8_t	*p, *end;
	int		 bad;
};

/* Takes n bytes; NULL (and bad set) past the end. */
static const uint8_t *
hperf_take(struct hperf_cur *c, size_t n)
{
	const uint8_t *p = c->p;

	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = 1;
		return NULL;
	}
	c->p += n;
	return p;
}

/* Takes one u64 (0 past the end). */
static uint64_t
hperf_u64(struct hperf_cur *c)
{
	const uint8_t *p = hperf_take(c, 8);
	uint64_t v = 0;

	if (p != NULL)
		memcpy(&v, p, 8);
	return v;
}

/* Parses a PERF_RECORD_SAMPLE body (its kernel chain into kips). */
static int
hperf_parse_sample(struct hperf_cur *c, uint64_t *kips,
    struct hperf_sample *s)
{
	uint64_t v, nr, i, abi, size, dyn;
	const uint8_t *p;

	memset(s, 0, sizeof *s);
	s->ip = hperf_u64(c);
	v = hperf_u64(c);
	s->pid = (pid_t)(uint32_t)v;
	s->tid = (pid_t)(uint32_t)(v >> 32);
	s->time = hperf_u64(c);
	s->cpu = (uint32_t)hperf_u64(c);
	nr = hperf_u64(c);
	if (nr > (uint64_t)(c->end - c->p) / 8)
		return -1;
	p = hperf_take(c, nr * 8);
	/* The kernel chain: a context marker, then the pc and return
	 * addresses (the user part is excluded). */
	s->kips = kips;
	for (i = 0; p != NULL && i < nr && s->nkips < HPERF_MAX_KIPS; i++) {
		memcpy(&v, p + i * 8, 8);
		if (v >= (uint64_t)PERF_CONTEXT_MAX)
			continue;
		kips[s->nkips++] = v;
	}
	abi = hperf_u64(c);
	if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
		s->bp = hperf_u64(c);
		s->sp = hperf_u64(c);
		s->uip = hperf_u64(c);
		s->user_regs = abi == PERF_SAMPLE_REGS_ABI_64;
	}
	size = hperf_u64(c);
	if (size > 0) {
		if ((p = hperf_take(c, size)) == NULL)
			return -1;
		dyn = hperf_u64(c);
		s->stack = p;
		s->stack_size = dyn < size ? dyn : size;
	}
	return c->bad ? -1 : 0;
}

/* Dispatches one whole record. */
static void
hperf_record(struct hperf *h, const uint8_t *rec, size_t len,
    const struct hperf_ops *ops, void *arg)
{
	struct perf_event_header hdr;
	struct hperf_cur c;
	struct hperf_sample s;
	struct hperf_mmap m;
	const uint8_t *p;
	uint32_t u[4];
	size_t n;

	memcpy(&hdr, rec, sizeof hdr);
	c.p = rec + sizeof hdr;
	c.end = rec + len;
	c.bad = 0;
	switch (hdr.type) {
	case PERF_RECORD_SAMPLE:
		h->stats.samples++;
		if (hperf_parse_sample(&c, h->kips, &s) != 0) {
			h->stats.bad++;
			return;
		}
		if (ops->sample != NULL)
			ops->sample(arg, &s);
		return;
	case PERF_RECORD_LOST:
		hperf_u64(&c);
		h->stats.lost += hperf_u64(&c);
		return;
	case PERF_RECORD_THROTTLE:
		h->stats.throttled++;
		return;
	default:
		break;
	}
	/* The rest end with the 24-byte sample_id trailer. */
	if (len < sizeof hdr + 24) {
		h->stats.bad++;
		return;
	}
	c.end -= 24;
	switch (hdr.type) {
	case PERF_RECORD_MMAP2:
		memset(&m, 0, sizeof m);
		if ((p = hperf_take(&c, 8)) == NULL)
			break;
		memcpy(u, p, 8);
		m.pid = (pid_t)u[0];
		m.tid = (pid_t)u[1];
		m.start = hperf_u64(&c);
		m.len = hperf_u64(&c);
		m.pgoff = hperf_u64(&c);
		if ((p = hperf_take(&c, 24)) == NULL)
			break;
		if (hdr.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			m.build_id_size = p[0] <= 20 ? p[0] : 20;
			m.build_id = p + 4;
		} else {
			memcpy(u, p, 8);
			m.maj = u[0];
			m.min = u[1];
			memcpy(&m.ino, p + 8, 8);
		}
		if ((p = hperf_take(&c, 8)) == NULL)	/* prot, flags */
			break;
		memcpy(u, p, 8);
		if ((u[0] & PROT_EXEC) == 0)
			return;
		n = (size_t)(c.end - c.p);
		if (n == 0 || memchr(c.p, '\0', n) == NULL)
			break;
		m.path = (const char *)c.p;
		if (ops->mmap != NULL)
			ops->mmap(arg, &m);
		return;
	case PERF_RECORD_COMM:
		if ((p = hperf_take(&c, 8)) == NULL)
			break;
		memcpy(u, p, 8);
		n = (size_t)(c.end - c.p);
		if (n == 0 || memchr(c.p, '\0', n) == NULL)
			break;
		if (ops->comm != NULL)
			ops->comm(arg, (pid_t)u[0], (pid_t)u[1],
			    (const char *)c.p,
			    (hdr.misc & PERF_RECORD_MISC_COMM_EXEC) != 0);
		return;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if ((p = hperf_take(&c, 16)) == NULL)
			break;
		memcpy(u, p, 16);	/* pid, ppid, tid, ptid */
		if (hdr.type == PERF_RECORD_FORK && ops->fork != NULL)
			ops->fork(arg, (pid_t)u[0], (pid_t)u[1], (pid_t)u[2]);
		if (hdr.type == PERF_RECORD_EXIT && ops->exit != NULL)
			ops->exit(arg, (pid_t)u[0], (pid_t)u[2]);
		return;
	default:
		return;		/* other records: not needed */
	}
	h->stats.bad++;
}

/* The time of a whole record (sample_id_all), or 0. */
static uint64_t
hperf_time(const uint8_t *rec, size_t len)
{
	struct perf_event_header hdr;
	uint64_t t = 0;

	memcpy(&hdr, rec, sizeof hdr);
	if (hdr.type == PERF_RECORD_SAMPLE) {
		if (len >= 32)		/* header, ip, pid/tid, time */
			memcpy(&t, rec + 24, 8);
	} else if (len >= sizeof hdr + 24)
		memcpy(&t, rec + len - 16, 8);	/* pid/tid, time, cpu */
	return t;
}

/* Copies the records waiting in one ring into the arena (ops->early
 * for each sample). */
static void
hperf_copy_ring(struct hperf *h, struct hperf_ring *r,
    const struct hperf_ops *ops, void *arg)
{
	uint32_t ids[2];
	struct perf_event_header hdr;
	uint64_t head, tail, off;
	size_t first;
	uint8_t *dst;

	head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	tail = r->meta->data_tail;
	while (tail + sizeof hdr <= head) {
		off = tail & (r->size - 1);
		first = r->size - off;
		if (first >= sizeof hdr)
			memcpy(&hdr, r->data + off, sizeof hdr);
		else {
			memcpy(&hdr, r->data + off, first);
			memcpy((uint8_t *)&hdr + first, r->data,
			    sizeof hdr - first);
		}
		if (hdr.size < sizeof hdr || tail + hdr.size > head) {
			h->stats.bad++;
			tail = head;	/* lost our place: skip all */
			break;
		}
		while (h->arena_len + hdr.size > h->arena_cap) {
			h->arena_cap = h->arena_cap ? h->arena_cap * 2 :
			    1 << 20;
			h->arena = xreallocarray(h->arena, h->arena_cap, 1);
		}
		dst = h->arena + h->arena_len;
		if (first >= hdr.size)
			memcpy(dst, r->data + off, hdr.size);
		else {
			memcpy(dst, r->data + off, first);
			memcpy(dst + first, r->data, hdr.size - first);
		}
		if (h->nrecs == h->recs_cap) {
			h->recs_cap = h->recs_cap ? h->recs_cap * 2 : 1024;
			h->recs = xreallocarray(h->recs, h->recs_cap,
			    sizeof *h->recs);
		}
		h->recs[h->nrecs].time = hperf_time(dst, hdr.size);
		if (ops->early != NULL && hdr.type == PERF_RECORD_SAMPLE &&
		    hdr.size >= 32) {
			memcpy(ids, dst + 16, sizeof ids);	/* pid, tid */
			ops->early(arg, (pid_t)ids[0], (pid_t)ids[1],
			    h->recs[h->nrecs].time);
		}
		h->recs[h->nrecs].off = h->arena_len;
		h->recs[h->nrecs].len = hdr.size;
		h->recs[h->nrecs].seq = h->nrecs;
		h->nrecs++;
		h->arena_len += hdr.size;
		tail += hdr.size;
	}
	__atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
}

/* Orders records by time, then by read order. */
static int
hperf_rec_cmp(const void *a, const void *b)
{
	const struct hperf_rec *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* CLOCK_MONOTONIC in ns: the events' clock (use_clockid). */
static uint64_t
hperf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * Keeps the records from index first on (sorted) for the next drain:
 * their bytes move to the arena's start.
 */
static void
hperf_keep(struct hperf *h, size_t first)
{
	uint8_t *a;
	size_t i, len = 0;

	if (first == 0)
		return;		/* nothing handed on: all stay where they are */
	for (i = first; i < h->nrecs; i++)
		len += h->recs[i].len;
	a = xmalloc(len > 0 ? len : 1);
	len = 0;
	for (i = first; i < h->nrecs; i++) {
		memcpy(a + len, h->arena + h->recs[i].off, h->recs[i].len);
		h->recs[i - first] = h->recs[i];
		h->recs[i - first].off = len;
		h->recs[i - first].seq = i - first;
		len += h->recs[i].len;
	}
	h->nrecs -= first;
	free(h->arena);
	h->arena = a;
	h->arena_len = h->arena_cap = len;
}

/*
 * Parses the rings (see hperf.h). All rings' records are copied out and
 * sorted by time (the events' clock is CLOCK_MONOTONIC), and only those
 * older than HPERF_HORIZON_NS before the drain began are handed over:
 * a record is written to its ring microseconds after its time, so by then
 * every ring holds all records up to that time, and a fork seen on one
 * CPU comes before its child's exec and samples seen on another. The
 * younger ones wait for the next drain (all of them with flush, at the
 * end).
 */
size_t
hperf_drain(struct hperf *h, const struct hperf_ops *ops, void *arg,
    int flush)
{
	uint64_t horizon = hperf_now_ns() - HPERF_HORIZON_NS;
	size_t n;

	hperf_copy(h, ops, arg);
	if (h->nrecs > 1)
		qsort(h->recs, h->nrecs, sizeof *h->recs, hperf_rec_cmp);
	for (n = 0; n < h->nrecs && (flush || h->recs[n].time < horizon); n++)
		hperf_record(h, h->arena + h->recs[n].off, h->recs[n].len, ops,
		    arg);
	hperf_keep(h, n);
	return n;
}

/* Copies every ring's records out, calling ops->early for the samples
 * (see hperf.h). */
void
hperf_copy(struct hperf *h, const struct hperf_ops *ops, void *arg)
{
	size_t i;

	for (i = 0; i < h->n; i++)
		hperf_copy_ring(h, &h->rings[i], ops, arg);
}

/* Copies the counters. */
void
hperf_stats(const struct hperf *h, struct hperf_stats *st)
{
	*st = h->stats;
}

/* Rings open. */
size_t
hperf_ncpus(const struct hperf *h)
{
	return h->n;
}

/* Disables and unmaps everything. */
void
hperf_close(struct hperf *h)
{
	size_t i;

	if (h == NULL)
		return;
	for (i = 0; i < h->n; i++) {
		ioctl(h->rings[i].fd, PERF_EVENT_IOC_DISABLE, 0);
		munmap(h->rings[i].meta, h->rings[i].size + h->page);
		close(h->rings[i].fd);
	}
	free(h->rings);
	free(h->arena);
	free(h->recs);
	free(h);
}
