/*
 * The host agent's process table: every process it has seen, with its
 * executable mappings, its executable, and what names its service. Filled
 * from /proc for processes that ran before the agent (or whose records it
 * missed), and kept true by the perf records of fork, exec (comm), mmap
 * and exit, so a process that lived 50 ms still has its mappings when its
 * samples are read. An exited process stays for a grace period, since
 * samples of it may still wait in another CPU's ring.
 */
#ifndef PROFD_AGENT_HPROCS_H
#define PROFD_AGENT_HPROCS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* An executable mapping. */
#define HPROCS_ANON	"//anon"	/* perf's name of anonymous memory */

struct hprocs_map {
	uint64_t	 start, limit, pgoff;
	char		*path;		/* as the process sees it; "//anon"
					   for anonymous memory */
	char		*key;		/* object cache key (hobjs.h) */
	int		 anon;		/* anonymous executable memory (JIT
					   code): no object behind it */
};

/* Where a service name came from (struct hproc.source). */
enum hprocs_source {
	HPROCS_FROM_ENV,		/* PROFD_SERVICE in its environment */
	HPROCS_FROM_UNIT,		/* its systemd unit */
	HPROCS_FROM_CONTAINER,		/* its container */
	HPROCS_FROM_EXE,		/* its executable's name */
	HPROCS_NSOURCES
};

struct hproc {
	struct hproc		*next;		/* hash chain */
	pid_t			 pid, ppid;
	char			 comm[17];
	char			*exe;		/* path, or NULL */
	char			*env_service;	/* PROFD_SERVICE, or NULL */
	char			*unit;		/* "nginx.service", or NULL */
	char			*container;	/* short id, or NULL */
	uint64_t		 mntns;		/* mount namespace inode */
	struct hprocs_map	*maps;		/* sorted by start */
	size_t			 nmaps, cap;
	int			 described;	/* /proc read since exec */
	int			 execd;		/* exec'd: the next executable
						   mapping is the program */
	int			 agent;		/* runs libprofd-agent */
	int			 kernel;	/* a kernel thread */
	int64_t			 exited_ms;	/* 0: alive */
};

struct hprocs;

/* service_from: the sources to try in order, "env,unit,container,exe". */
struct hprocs	*hprocs_new(const char *service_from, char **cause);
void		 hprocs_free(struct hprocs *);
/*
 * The process pid, read from /proc when it is not known yet (NULL if it
 * is gone or pid is 0). Its environment and cgroup are read on the first
 * call after it was made or exec'd, while it lives.
 */
struct hproc	*hprocs_get(struct hprocs *, pid_t pid);
/* The process pid if it is known already (no /proc read), or NULL. */
struct hproc	*hprocs_known(struct hprocs *, pid_t pid);
/* The mapping holding addr, or NULL. */
const struct hprocs_map *hprocs_find(const struct hproc *, uint64_t addr);
/* The service name by the configured rule (never NULL). */
const char	*hprocs_service(const struct hprocs *, const struct hproc *);
/* The executable's file name (its comm when unknown). */
const char	*hprocs_exe_name(const struct hproc *);

/* Records (hperf.h callbacks). */
void		 hprocs_fork(struct hprocs *, pid_t pid, pid_t ppid,
		    pid_t tid);
void		 hprocs_exec(struct hprocs *, pid_t pid, const char *comm);
void		 hprocs_comm(struct hprocs *, pid_t pid, const char *comm);
void		 hprocs_mmap(struct hprocs *, pid_t pid, uint64_t start,
		    uint64_t len, uint64_t pgoff, const char *path,
		    const char *build_id);
void		 hprocs_exit(struct hprocs *, pid_t pid, pid_t tid);
/* Takes the unit and container named by a cgroup file's text. */
void		 hprocs_parse_cgroup(struct hproc *, const char *text);
/* Reads every process in /proc (at start). Returns how many. */
size_t		 hprocs_scan(struct hprocs *);
/* Forgets processes that exited more than grace_ms ago. */
void		 hprocs_reap(struct hprocs *, int64_t grace_ms);
/* Processes known (alive or in their grace period). */
size_t		 hprocs_count(const struct hprocs *);
/* Monotonic milliseconds. */
int64_t		 hprocs_now_ms(void);

#endif
