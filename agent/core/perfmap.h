/*
 * A process's perf map, /tmp/perf-PID.map: the convention JIT compilers
 * (node --perf-basic-prof, the JVM with a perf-map agent, LuaJIT, ...)
 * follow to name the code they generate, one "START SIZE NAME" line per
 * code object (hexadecimal, with or without 0x). The file is appended to
 * while the program runs: a refresh reads only what was added since, or
 * the whole file again when it shrank, was replaced or its first bytes
 * changed (truncated and written again). A later line for
 * the same start wins, as in perf. Bounded: at most PERFMAP_MAX_BYTES of
 * the file are read in all and PERFMAP_MAX_ENTRIES kept; lines longer
 * than PERFMAP_MAX_LINE, or that do not parse, are skipped and counted.
 */
#ifndef PROFD_AGENT_PERFMAP_H
#define PROFD_AGENT_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

#define PERFMAP_MAX_BYTES	(16 * 1024 * 1024)
#define PERFMAP_MAX_ENTRIES	(1024 * 1024)
#define PERFMAP_MAX_LINE	4096

struct perfmap;

struct perfmap_stats {
	size_t		entries;	/* kept */
	uint64_t	bad;		/* lines skipped */
	uint64_t	bytes;		/* of the file read in all */
	int		capped;		/* a bound was reached */
};

struct perfmap	*perfmap_new(void);
void		 perfmap_free(struct perfmap *);
/*
 * Reads what path gained since the last refresh (all of it the first
 * time, or when it shrank or is another file). A file last written
 * before not_before (seconds since the epoch: the process's start) is
 * another process's, left behind under a pid used again, and is not
 * read. 0, or -1 when it cannot be read (what was read stays).
 */
int		 perfmap_refresh(struct perfmap *, const char *path,
		    int64_t not_before);
/* When process pid (0: this one) started, seconds since the epoch; 0 if
 * unknown. */
int64_t		 perfmap_process_start(int pid);
/* Parses text as a perf map's lines (tests; refresh's own parser). */
void		 perfmap_parse(struct perfmap *, const char *text, size_t len);
/* The name of the code holding addr, or NULL. Valid until the next
 * refresh or parse. */
const char	*perfmap_lookup(struct perfmap *, uint64_t addr);
void		 perfmap_stats(const struct perfmap *, struct perfmap_stats *);

#endif
