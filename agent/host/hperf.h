/*
 * The host agent's perf events: one CPU-clock sampling event per online
 * CPU, each with its ring buffer, taking the user registers (ip, sp, bp),
 * a copy of the top of the user stack and the kernel call chain with
 * every sample, and the task, comm and mmap records that keep the process
 * table (hprocs.c) true. Records are parsed here and handed to the
 * caller's callbacks in time order across all the rings.
 */
#ifndef PROFD_AGENT_HPERF_H
#define PROFD_AGENT_HPERF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct hperf;

/* A sample, pointers valid only during the callback. */
struct hperf_sample {
	pid_t		 pid, tid;
	uint32_t	 cpu;
	uint64_t	 time;
	uint64_t	 ip;
	int		 user_regs;	/* regs below are valid */
	uint64_t	 bp, sp, uip;	/* user registers */
	const uint64_t	*kips;		/* kernel call chain, leaf first */
	uint32_t	 nkips;
	const uint8_t	*stack;		/* copy of [sp, sp + stack_size) */
	uint64_t	 stack_size;
};

/* An executable mapping (PERF_RECORD_MMAP2). */
struct hperf_mmap {
	pid_t		 pid, tid;
	uint64_t	 start, len, pgoff;
	uint32_t	 maj, min;
	uint64_t	 ino;
	const uint8_t	*build_id;	/* NULL when the kernel sent none */
	size_t		 build_id_size;
	const char	*path;
};

struct hperf_ops {
	void	(*sample)(void *, const struct hperf_sample *);
	void	(*mmap)(void *, const struct hperf_mmap *);
	/* comm: exec is set for the comm change of an exec. */
	void	(*comm)(void *, pid_t pid, pid_t tid, const char *comm,
		    int exec);
	void	(*fork)(void *, pid_t pid, pid_t ppid, pid_t tid);
	void	(*exit)(void *, pid_t pid, pid_t tid);
	/*
	 * A sample as it is copied out of its ring, HPERF_HORIZON_NS before
	 * it is handed to sample: for what must be read of the process
	 * soon after the sample (Python frames). May be NULL.
	 */
	void	(*early)(void *, pid_t pid, pid_t tid, uint64_t time);
};

struct hperf_config {
	int		 hz;		/* samples per second per CPU */
	uint32_t	 stack_size;	/* bytes of user stack per sample */
	size_t		 ring_pages;	/* data pages per CPU (power of 2) */
};

struct hperf_stats {
	uint64_t	samples;	/* records parsed */
	uint64_t	lost;		/* PERF_RECORD_LOST: ring full */
	uint64_t	throttled;	/* throttle records */
	uint64_t	bad;		/* records that did not parse */
};

/*
 * Opens the events on every online CPU. Returns NULL with *cause naming
 * what is missing (the privilege, the sysctl) when the kernel refuses.
 */
struct hperf	*hperf_open(const struct hperf_config *, char **cause);
/* The descriptors to poll (one per ring). */
size_t		 hperf_fds(const struct hperf *, int *fds, size_t max);
/*
 * Parses the records waiting in the rings, in time order, up to 20 ms
 * before now (younger ones wait for the next call; flush: all of them).
 * Returns the records parsed.
 */
size_t		 hperf_drain(struct hperf *, const struct hperf_ops *,
		    void *arg, int flush);
/*
 * Copies the rings' records out without handing any on (hperf_drain does
 * that later, in time order), calling ops->early for each sample: what a
 * sample needs read soon after it was taken is read this often.
 */
void		 hperf_copy(struct hperf *, const struct hperf_ops *, void *arg);
/* Counters so far. */
void		 hperf_stats(const struct hperf *, struct hperf_stats *);
/* Number of rings (CPUs). */
size_t		 hperf_ncpus(const struct hperf *);
void		 hperf_close(struct hperf *);

#endif
