/*
 * JIT names for the host agent (see hjit.h): a small table of processes'
 * perf maps, searched linearly (at most HJIT_MAX_MAPS).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/core/perfmap.h"
#include "agent/host/hjit.h"
#include "common/xmalloc.h"

struct hjit_map {
	pid_t		 pid;		/* 0: empty */
	char		*path;		/* through /proc/PID/root */
	struct perfmap	*m;
	int64_t		 refreshed_ms;
	int64_t		 started;	/* the process, epoch s */
	uint64_t	 used;		/* clock of the last lookup */
};

struct hjit {
	struct hjit_map	 v[HJIT_MAX_MAPS];
	uint64_t	 clock;
};

struct hjit *
hjit_new(void)
{
	return xcalloc(1, sizeof(struct hjit));
}

/* Empties a slot. */
static void
hjit_drop(struct hjit_map *e)
{
	free(e->path);
	perfmap_free(e->m);
	memset(e, 0, sizeof *e);
}

void
hjit_free(struct hjit *j)
{
	size_t i;

	if (j == NULL)
		return;
	for (i = 0; i < HJIT_MAX_MAPS; i++)
		hjit_drop(&j->v[i]);
	free(j);
}

/* The pid of process pid in its own namespace (NSpid's last), or pid. */
static pid_t
hjit_nspid(pid_t pid)
{
	char path[64], line[256], *s, *last, *save = NULL;
	pid_t ns = pid;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return pid;
	while (fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, "NSpid:", 6) != 0)
			continue;
		last = NULL;
		for (s = strtok_r(line + 6, " \t\n", &save); s != NULL;
		    s = strtok_r(NULL, " \t\n", &save))
			last = s;
		if (last != NULL && atoi(last) > 0)
			ns = (pid_t)atoi(last);
		break;
	}
	fclose(f);
	return ns;
}

/* Bytes read of every map held. */
static uint64_t
hjit_bytes(const struct hjit *j)
{
	struct perfmap_stats st;
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < HJIT_MAX_MAPS; i++) {
		if (j->v[i].pid == 0)
			continue;
		perfmap_stats(j->v[i].m, &st);
		n += st.bytes;
	}
	return n;
}

/* The slot of p, made (the least recently used one dropped) if new. */
static struct hjit_map *
hjit_slot(struct hjit *j, const struct hproc *p)
{
	struct hjit_map *e = NULL, *old = &j->v[0];
	size_t i;

	for (i = 0; i < HJIT_MAX_MAPS; i++) {
		if (j->v[i].pid == p->pid)
			return &j->v[i];
		if (j->v[i].pid == 0 && e == NULL)
			e = &j->v[i];
		if (j->v[i].used < old->used)
			old = &j->v[i];
	}
	if (e == NULL) {
		hjit_drop(old);
		e = old;
	}
	e->pid = p->pid;
	e->path = xasprintf("/proc/%d/root/tmp/perf-%d.map", (int)p->pid,
	    (int)hjit_nspid(p->pid));
	e->m = perfmap_new();
	e->refreshed_ms = -HJIT_REFRESH_MS;
	e->started = perfmap_process_start(p->pid);
	return e;
}

/* The JIT name of addr in p (see hjit.h). */
const char *
hjit_lookup(struct hjit *j, const struct hproc *p, uint64_t addr)
{
	struct hjit_map *e = hjit_slot(j, p), *big;
	const char *name;
	int64_t now;
	size_t i;

	e->used = ++j->clock;
	if ((name = perfmap_lookup(e->m, addr)) != NULL)
		return name;
	now = hprocs_now_ms();
	if (now - e->refreshed_ms < HJIT_REFRESH_MS)
		return NULL;
	e->refreshed_ms = now;
	if (perfmap_refresh(e->m, e->path, e->started) != 0)
		return NULL;
	/* Over the bytes bound: drop the least recently used others. */
	while (hjit_bytes(j) > HJIT_MAX_BYTES) {
		big = NULL;
		for (i = 0; i < HJIT_MAX_MAPS; i++)
			if (j->v[i].pid != 0 && &j->v[i] != e &&
			    (big == NULL || j->v[i].used < big->used))
				big = &j->v[i];
		if (big == NULL)
			break;
		hjit_drop(big);
	}
	return perfmap_lookup(e->m, addr);
}

/* Forgets the maps of processes no longer known. */
void
hjit_reap(struct hjit *j, struct hprocs *procs)
{
	size_t i;

	for (i = 0; i < HJIT_MAX_MAPS; i++)
		if (j->v[i].pid != 0 && hprocs_known(procs, j->v[i].pid) == NULL)
			hjit_drop(&j->v[i]);
}
