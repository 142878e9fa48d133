/*
 * The host agent's process table (see hprocs.h): a hash table by pid.
 * Reads of /proc/PID/... can fail at any moment (the process exits, or is
 * not ours to read) and every one is bounded: maps are read by maps.c,
 * at most HPROCS_MAX_MAPS executable mappings a process; the environment
 * (first 256 KiB) is searched for PROFD_SERVICE; the cgroup file names
 * the systemd unit (the deepest "*.service" part of a path) and the
 * container (docker-ID.scope, /docker/ID, cri-containerd-ID.scope,
 * crio-ID.scope, libpod-ID.scope: the first 12 hex digits of ID). A
 * child made by fork starts with its parent's mappings and names; exec
 * clears the mappings, and the first executable mapping after it is the
 * new executable.
 */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/core/maps.h"
#include "agent/host/henv.h"
#include "agent/host/hprocs.h"
#include "common/xmalloc.h"

#define HPROCS_BUCKETS	8192		/* power of two */
#define HPROCS_MAX_MAPS	4096		/* executable mappings kept */
#define HPROCS_ENV_MAX	(256 * 1024)	/* environment bytes searched */
#define HPROCS_NAME_MAX	128		/* service, unit, container names */
#define HPROCS_CHECK_MS	10000		/* liveness checks this far apart */

struct hprocs {
	struct hproc		*buckets[HPROCS_BUCKETS];
	size_t			 n;
	enum hprocs_source	 order[HPROCS_NSOURCES];
	size_t			 norder;
	int64_t			 checked_ms;	/* last liveness check */
	char			*buf;		/* /proc reads (HPROCS_ENV_MAX) */
};

/* Monotonic milliseconds. */
int64_t
hprocs_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A new table; service_from "env,unit,container,exe" (any order). */
struct hprocs *
hprocs_new(const char *service_from, char **cause)
{
	static const char *names[HPROCS_NSOURCES] = { "env", "unit",
	    "container", "exe" };
	struct hprocs *t = xcalloc(1, sizeof *t);
	const char *p = service_from, *e;
	size_t len, i;

	while (p != NULL && *p != '\0') {
		e = strchr(p, ',');
		len = e != NULL ? (size_t)(e - p) : strlen(p);
		for (i = 0; i < HPROCS_NSOURCES; i++)
			if (strlen(names[i]) == len &&
			    strncmp(names[i], p, len) == 0)
				break;
		if (i == HPROCS_NSOURCES || t->norder == HPROCS_NSOURCES) {
			xcause(cause, "--service-from: \"%.*s\" is not one of "
			    "env, unit, container, exe", (int)len, p);
			free(t);
			return NULL;
		}
		t->order[t->norder++] = (enum hprocs_source)i;
		p = e != NULL ? e + 1 : NULL;
	}
	if (t->norder == 0) {
		xcause(cause, "--service-from names no source");
		free(t);
		return NULL;
	}
	return t;
}

/* Frees one process's mappings. */
static void
hprocs_clear_maps(struct hproc *p)
{
	size_t i;

	for (i = 0; i < p->nmaps; i++) {
		free(p->maps[i].path);
		free(p->maps[i].key);
	}
	p->nmaps = 0;
}

/* Frees a process. */
static void
hprocs_release(struct hproc *p)
{
	hprocs_clear_maps(p);
	free(p->maps);
	free(p->exe);
	free(p->env_service);
	free(p->unit);
	free(p->container);
	free(p);
}

/* Frees the table. */
void
hprocs_free(struct hprocs *t)
{
	struct hproc *p, *n;
	size_t i;

	if (t == NULL)
		return;
	for (i = 0; i < HPROCS_BUCKETS; i++)
		for (p = t->buckets[i]; p != NULL; p = n) {
			n = p->next;
			hprocs_release(p);
		}
	free(t->buf);
	free(t);
}

/* The bucket of pid. */
static struct hproc **
hprocs_bucket(struct hprocs *t, pid_t pid)
{
	return &t->buckets[((uint32_t)pid * 2654435761U) &
	    (HPROCS_BUCKETS - 1)];
}

/* The known process pid, or NULL. */
static struct hproc *
hprocs_lookup(struct hprocs *t, pid_t pid)
{
	struct hproc *p;

	for (p = *hprocs_bucket(t, pid); p != NULL; p = p->next)
		if (p->pid == pid)
			return p;
	return NULL;
}

/* The known process pid, or NULL (no /proc read). */
struct hproc *
hprocs_known(struct hprocs *t, pid_t pid)
{
	return hprocs_lookup(t, pid);
}

/* Adds a new empty process (replacing a stale one of the same pid). */
static struct hproc *
hprocs_add(struct hprocs *t, pid_t pid)
{
	struct hproc **pp = hprocs_bucket(t, pid), *p;

	for (; (p = *pp) != NULL; pp = &p->next)
		if (p->pid == pid) {
			*pp = p->next;
			hprocs_release(p);
			t->n--;
			break;
		}
	p = xcalloc(1, sizeof *p);
	p->pid = pid;
	p->next = *hprocs_bucket(t, pid);
	*hprocs_bucket(t, pid) = p;
	t->n++;
	return p;
}

/* Reads /proc/PID/NAME into buf (at most size - 1 bytes); length or -1. */
static ssize_t
hprocs_read(pid_t pid, const char *name, char *buf, size_t size)
{
	char path[64];
	ssize_t r;
	size_t got = 0;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	while (got + 1 < size && (r = read(fd, buf + got, size - 1 - got)) >
	    0)
		got += (size_t)r;
	close(fd);
	buf[got] = '\0';
	return (ssize_t)got;
}

/* The object key of a mapping: the build id, else namespace and path. */
static char *
hprocs_key(const struct hproc *p, const char *path, const char *build_id)
{
	if (build_id != NULL && build_id[0] != '\0')
		return xstrdup(build_id);
	return xasprintf("ns:%llu:%s", (unsigned long long)p->mntns, path);
}

/* Whether a path is one of the in-process agent's libraries. */
static int
hprocs_is_agent(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b != NULL ? b + 1 : path;
	return strncmp(b, "libprofd-agent", 14) == 0 ||
	    strncmp(b, "libprofd-heap", 13) == 0;
}

/* Inserts a mapping, replacing those it overlaps. */
static void
hprocs_insert(struct hproc *p, uint64_t start, uint64_t limit,
    uint64_t pgoff, const char *path, char *key)
{
	size_t i, j;

	for (i = j = 0; i < p->nmaps; i++) {
		if (p->maps[i].start < limit && start < p->maps[i].limit) {
			free(p->maps[i].path);
			free(p->maps[i].key);
			continue;
		}
		p->maps[j++] = p->maps[i];
	}
	p->nmaps = j;
	if (p->nmaps >= HPROCS_MAX_MAPS) {
		free(key);
		return;
	}
	if (p->nmaps == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 16;
		p->maps = xreallocarray(p->maps, p->cap, sizeof *p->maps);
	}
	for (i = p->nmaps; i > 0 && p->maps[i - 1].start > start; i--)
		p->maps[i] = p->maps[i - 1];
	p->maps[i].start = start;
	p->maps[i].limit = limit;
	p->maps[i].pgoff = pgoff;
	p->maps[i].path = xstrdup(path);
	p->maps[i].key = key;
	p->maps[i].anon = strcmp(path, HPROCS_ANON) == 0;
	p->nmaps++;
	if (hprocs_is_agent(path))
		p->agent = 1;
}

/* The mount namespace inode of pid (0 if unreadable). */
static uint64_t
hprocs_mntns(pid_t pid)
{
	char path[64], link[64];
	ssize_t r;

	snprintf(path, sizeof path, "/proc/%d/ns/mnt", (int)pid);
	if ((r = readlink(path, link, sizeof link - 1)) <= 0)
		return 0;
	link[r] = '\0';
	return strtoull(link + strcspn(link, "0123456789"), NULL, 10);
}

/* Copies a name of at most HPROCS_NAME_MAX printable bytes. */
static char *
hprocs_name(const char *s, size_t len)
{
	char *v;
	size_t i;

	if (len > HPROCS_NAME_MAX)
		len = HPROCS_NAME_MAX;
	v = xstrndup(s, len);
	for (i = 0; v[i] != '\0'; i++)
		if (!isalnum((unsigned char)v[i]) && strchr("._-:@",
		    v[i]) == NULL)
			v[i] = '_';
	return v;
}

/* The unit and container of one cgroup path. */
static void
hprocs_cgroup_path(struct hproc *p, const char *path)
{
	static const char *scopes[] = { "docker-", "cri-containerd-",
	    "crio-", "libpod-" };
	const char *c, *e, *id = NULL;
	size_t len, i, n;

	for (c = path; *c != '\0'; c = *e == '/' ? e + 1 : e) {
		e = c + strcspn(c, "/\n");
		len = (size_t)(e - c);
		if (len > 8 && strncmp(e - 8, ".service", 8) == 0) {
			free(p->unit);
			p->unit = hprocs_name(c, len);
		}
		for (i = 0; i < sizeof scopes / sizeof scopes[0]; i++) {
			n = strlen(scopes[i]);
			if (len > n && strncmp(c, scopes[i], n) == 0)
				id = c + n;
		}
		if (c - path >= 7 && strncmp(c - 7, "docker/", 7) == 0 &&
		    len >= 12)
			id = c;
		if (id != NULL && isxdigit((unsigned char)id[0])) {
			for (n = 0; n < 12 && isxdigit((unsigned char)id[n]);
			    n++)
				;
			if (n == 12) {
				free(p->container);
				p->container = hprocs_name(id, 12);
			}
		}
		id = NULL;
		if (*e == '\0' || *e == '\n')
			break;
	}
}

/* Takes the unit and container of every line "ID:CONTROLLERS:PATH". */
void
hprocs_parse_cgroup(struct hproc *p, const char *text)
{
	const char *line, *s;

	for (line = text; *line != '\0'; line += strcspn(line, "\n") +
	    (line[strcspn(line, "\n")] == '\n')) {
		s = strchr(line, ':');
		s = s != NULL ? strchr(s + 1, ':') : NULL;
		if (s != NULL && s < line + strcspn(line, "\n"))
			hprocs_cgroup_path(p, s + 1);
	}
}

/*
 * The executable's path as the process's mappings name it: /proc/PID/exe
 * is seen from the agent's root, so a chroot's or a container's program
 * reads longer than its mapping's path (its tail).
 */
static const char *
hprocs_exe_path(const struct hproc *p, const char *exe)
{
	size_t i, len = strlen(exe), ml;

	for (i = 0; i < p->nmaps; i++)
		if (strcmp(p->maps[i].path, exe) == 0)
			return exe;
	for (i = 0; i < p->nmaps; i++) {
		ml = strlen(p->maps[i].path);
		if (p->maps[i].path[0] == '/' && ml < len &&
		    strcmp(exe + len - ml, p->maps[i].path) == 0)
			return p->maps[i].path;
	}
	return exe;
}

/*
 * Reads a process's executable, environment and cgroup. The environment
 * read, if it works, decides PROFD_SERVICE (a name inherited through fork
 * is kept only when the process cannot be read any more). The buffer is
 * the table's own (a SIGBUS in henv.c, which jumps out of here, leaks
 * nothing).
 */
static void
hprocs_describe(struct hprocs *t, struct hproc *p)
{
	char *buf, path[64], exe[PATH_MAX], *live;
	const char *s;
	ssize_t n, r;

	p->described = 1;
	/* The executable first: the live environment may be its own. */
	snprintf(path, sizeof path, "/proc/%d/exe", (int)p->pid);
	if (p->exe == NULL && (r = readlink(path, exe, sizeof exe - 1)) > 0) {
		exe[r] = '\0';
		p->exe = xstrdup(hprocs_exe_path(p, exe));
	}
	if (t->buf == NULL)
		t->buf = xmalloc(HPROCS_ENV_MAX + 1);
	buf = t->buf;
	if ((n = hprocs_read(p->pid, "environ", buf, HPROCS_ENV_MAX + 1)) >
	    0) {
		free(p->env_service);
		p->env_service = NULL;
		for (s = buf; s < buf + n; s += strlen(s) + 1)
			if (strncmp(s, "PROFD_SERVICE=", 14) == 0 &&
			    s[14] != '\0') {
				free(p->env_service);
				p->env_service = hprocs_name(s + 14,
				    strlen(s + 14));
			}
	}
	/* A program that set its title overwrote that copy: read its live
	 * environment. */
	if (p->env_service == NULL && (live = henv_get(p, "PROFD_SERVICE")) !=
	    NULL) {
		if (live[0] != '\0')
			p->env_service = hprocs_name(live, strlen(live));
		free(live);
	}
	if (hprocs_read(p->pid, "cgroup", buf, 65536) > 0)
		hprocs_parse_cgroup(p, buf);
}

static struct hproc *hprocs_load(struct hprocs *, pid_t, int);

/*
 * A forked process that runs its parent's program and has no service of
 * its own in its environment takes its parent's (nginx's workers, whose
 * environment nginx empties, read before the fork's record arrived).
 */
static void
hprocs_inherit(struct hprocs *t, struct hproc *p)
{
	struct hproc *parent;

	if (p->env_service != NULL || p->ppid <= 1)
		return;
	/* Its parent's records may have been lost in a full ring too. */
	if ((parent = hprocs_lookup(t, p->ppid)) == NULL &&
	    (parent = hprocs_load(t, p->ppid, 0)) == NULL)
		return;
	if (!parent->described && parent->exited_ms == 0)
		hprocs_describe(t, parent);
	if (parent->env_service == NULL || p->exe == NULL ||
	    parent->exe == NULL || strcmp(p->exe, parent->exe) != 0)
		return;
	p->env_service = xstrdup(parent->env_service);
}

/*
 * Reads a process from /proc: comm, namespace, mappings; with inherit,
 * what it takes from its parent (hprocs_inherit, one level up only).
 */
static struct hproc *
hprocs_load(struct hprocs *t, pid_t pid, int inherit)
{
	char buf[512], mpath[64];
	struct maps m;
	struct hproc *p;
	const char *s, *path;
	size_t i;

	snprintf(mpath, sizeof mpath, "/proc/%d/maps", (int)pid);
	if (maps_read(mpath, &m, NULL) != 0)
		return NULL;
	p = hprocs_add(t, pid);
	if (hprocs_read(pid, "comm", buf, sizeof buf) > 0) {
		buf[strcspn(buf, "\n")] = '\0';
		snprintf(p->comm, sizeof p->comm, "%.16s", buf);
	}
	if (hprocs_read(pid, "stat", buf, sizeof buf) > 0 &&
	    (s = strrchr(buf, ')')) != NULL)
		p->ppid = (pid_t)strtol(s + 4, NULL, 10);
	p->mntns = hprocs_mntns(pid);
	p->kernel = m.n == 0 && hprocs_read(pid, "cmdline", buf, 2) == 0;
	for (i = 0; i < m.n; i++) {
		/* Anonymous executable memory is JIT code (hjit.h). */
		path = m.v[i].path[0] == '\0' ? HPROCS_ANON : m.v[i].path;
		if (path[0] != '/' && strcmp(path, "[vdso]") != 0)
			continue;
		hprocs_insert(p, m.v[i].start, m.v[i].limit, m.v[i].offset,
		    path, hprocs_key(p, path, NULL));
	}
	maps_clear(&m);
	hprocs_describe(t, p);
	if (inherit)
		hprocs_inherit(t, p);
	return p;
}

/* The process pid (see hprocs.h). */
struct hproc *
hprocs_get(struct hprocs *t, pid_t pid)
{
	struct hproc *p, *q;

	if (pid <= 0)
		return NULL;
	if ((p = hprocs_lookup(t, pid)) == NULL)
		return hprocs_load(t, pid, 1);
	/* Made by a fork or exec whose records came before we knew it. */
	if (p->nmaps == 0 && !p->kernel && p->exited_ms == 0 &&
	    (q = hprocs_load(t, pid, 1)) != NULL)
		return q;
	if (!p->described && p->exited_ms == 0)
		hprocs_describe(t, p);
	return p;
}

/* The mapping holding addr (binary search). */
const struct hprocs_map *
hprocs_find(const struct hproc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->nmaps, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (addr < p->maps[mid].start)
			hi = mid;
		else if (addr >= p->maps[mid].limit)
			lo = mid + 1;
		else
			return &p->maps[mid];
	}
	return NULL;
}

/* The executable's file name. */
const char *
hprocs_exe_name(const struct hproc *p)
{
	const char *b;

	if (p->exe == NULL)
		return p->comm[0] != '\0' ? p->comm : "unknown";
	b = strrchr(p->exe, '/');
	return b != NULL && b[1] != '\0' ? b + 1 : p->exe;
}

/* The executable's name as a service: hprocs_name's characters only. */
static const char *
hprocs_exe_service(const struct hproc *p)
{
	static char name[HPROCS_NAME_MAX + 1];
	const char *e = p->kernel ? "kernel" : hprocs_exe_name(p);
	size_t i;

	snprintf(name, sizeof name, "%s", e);
	for (i = 0; name[i] != '\0'; i++)
		if (!isalnum((unsigned char)name[i]) && strchr("._-:@",
		    name[i]) == NULL)
			name[i] = '_';
	if (name[0] == '.')
		name[0] = '_';
	return name;
}

/* The service name by the rule. */
const char *
hprocs_service(const struct hprocs *t, const struct hproc *p)
{
	static char unit[HPROCS_NAME_MAX + 1];
	size_t i;

	for (i = 0; i < t->norder; i++) {
		switch (t->order[i]) {
		case HPROCS_FROM_ENV:
			if (p->env_service != NULL)
				return p->env_service;
			break;
		case HPROCS_FROM_UNIT:
			if (p->unit != NULL) {
				snprintf(unit, sizeof unit, "%.*s",
				    (int)(strlen(p->unit) - 8), p->unit);
				return unit;
			}
			break;
		case HPROCS_FROM_CONTAINER:
			if (p->container != NULL)
				return p->container;
			break;
		default:
			return hprocs_exe_service(p);
		}
	}
	return hprocs_exe_service(p);
}

/* fork: a new process (not a thread) starts with its parent's state. */
void
hprocs_fork(struct hprocs *t, pid_t pid, pid_t ppid, pid_t tid)
{
	struct hproc *parent, *p;
	size_t i;

	if (pid != tid || pid == ppid)
		return;				/* a thread */
	parent = hprocs_lookup(t, ppid);
	/*
	 * Known and alive: its exec, read from another CPU's ring in an
	 * earlier drain, came first; what it has now is newer.
	 */
	if ((p = hprocs_lookup(t, pid)) != NULL && p->exited_ms == 0) {
		p->ppid = ppid;
		hprocs_inherit(t, p);
		return;
	}
	p = hprocs_add(t, pid);
	p->ppid = ppid;
	if (parent == NULL)
		return;				/* read from /proc if sampled */
	/* What it inherits is the parent's now, before the child changes
	 * anything (nginx's workers get a new environment). */
	if (!parent->described && parent->exited_ms == 0)
		hprocs_describe(t, parent);
	memcpy(p->comm, parent->comm, sizeof p->comm);
	p->exe = parent->exe != NULL ? xstrdup(parent->exe) : NULL;
	p->env_service = parent->env_service != NULL ?
	    xstrdup(parent->env_service) : NULL;
	p->unit = parent->unit != NULL ? xstrdup(parent->unit) : NULL;
	p->container = parent->container != NULL ?
	    xstrdup(parent->container) : NULL;
	p->mntns = parent->mntns;
	p->agent = parent->agent;
	p->kernel = parent->kernel;
	p->described = 1;
	for (i = 0; i < parent->nmaps; i++)
		hprocs_insert(p, parent->maps[i].start, parent->maps[i].limit,
		    parent->maps[i].pgoff, parent->maps[i].path,
		    xstrdup(parent->maps[i].key));
}

/* exec: a new image; the environment may have changed too. */
void
hprocs_exec(struct hprocs *t, pid_t pid, const char *comm)
{
	struct hproc *p = hprocs_lookup(t, pid);

	if (p == NULL)
		p = hprocs_add(t, pid);
	hprocs_clear_maps(p);
	free(p->exe);
	p->exe = NULL;
	p->agent = 0;
	p->kernel = 0;
	p->described = 0;
	p->execd = 1;
	snprintf(p->comm, sizeof p->comm, "%s", comm);
}

/* comm: a process renamed itself (prctl). */
void
hprocs_comm(struct hprocs *t, pid_t pid, const char *comm)
{
	struct hproc *p = hprocs_lookup(t, pid);

	if (p != NULL && p->exe == NULL)
		snprintf(p->comm, sizeof p->comm, "%s", comm);
}

/* mmap: one more executable mapping. */
void
hprocs_mmap(struct hprocs *t, pid_t pid, uint64_t start, uint64_t len,
    uint64_t pgoff, const char *path, const char *build_id)
{
	struct hproc *p = hprocs_lookup(t, pid);

	if (p == NULL || (path[0] != '/' && strcmp(path, "[vdso]") != 0) ||
	    len == 0 || start + len < start)
		return;		/* unknown: read whole from /proc if sampled */
	if (p->mntns == 0)
		p->mntns = hprocs_mntns(pid);
	if (p->execd && path[0] == '/') {
		free(p->exe);
		p->exe = xstrdup(path);	/* the first after exec */
		p->execd = 0;
	}
	hprocs_insert(p, start, start + len, pgoff, path,
	    hprocs_key(p, path, build_id));
}

/* exit: the process (its main thread) is gone. */
void
hprocs_exit(struct hprocs *t, pid_t pid, pid_t tid)
{
	struct hproc *p;

	if (pid != tid || (p = hprocs_lookup(t, pid)) == NULL)
		return;
	p->exited_ms = hprocs_now_ms();
}

/* Reads every process in /proc. */
size_t
hprocs_scan(struct hprocs *t)
{
	struct dirent *d;
	DIR *dir;
	size_t n = 0;
	char *end;
	long pid;

	if ((dir = opendir("/proc")) == NULL)
		return 0;
	while ((d = readdir(dir)) != NULL) {
		pid = strtol(d->d_name, &end, 10);
		if (*end != '\0' || pid <= 0 || pid > INT_MAX ||
		    hprocs_lookup(t, (pid_t)pid) != NULL)
			continue;
		if (hprocs_load(t, (pid_t)pid, 1) != NULL)
			n++;
	}
	closedir(dir);
	return n;
}

/*
 * Forgets processes past their grace period. Every HPROCS_CHECK_MS it
 * also asks the kernel whether each process it holds alive still is
 * (kill with signal 0): an exit record lost in a full ring must not keep
 * an entry for good.
 */
void
hprocs_reap(struct hprocs *t, int64_t grace_ms)
{
	int64_t now = hprocs_now_ms();
	struct hproc **pp, *p;
	size_t i;
	int check = now - t->checked_ms >= HPROCS_CHECK_MS;

	if (check)
		t->checked_ms = now;
	for (i = 0; i < HPROCS_BUCKETS; i++)
		for (pp = &t->buckets[i]; (p = *pp) != NULL;) {
			if (check && p->exited_ms == 0 && kill(p->pid, 0) != 0 &&
			    errno == ESRCH)
				p->exited_ms = now;
			if (p->exited_ms != 0 && now - p->exited_ms > grace_ms) {
				*pp = p->next;
				hprocs_release(p);
				t->n--;
			} else
				pp = &p->next;
		}
}

/* Processes known. */
size_t
hprocs_count(const struct hprocs *t)
{
	return t->n;
}
