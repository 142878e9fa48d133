/*
 * A group of the host agent's period (hgroups.h) as a gzipped pprof CPU
 * profile: samples/count and cpu/nanoseconds, each sample labelled with
 * its process id (numeric label "pid": go tool pprof -tagfocus
 * pid=1234) and executable (string label "exe"), the mappings of the
 * main executables first, kernel frames under a "[kernel]" mapping.
 */
#ifndef PROFD_AGENT_HPPROF_H
#define PROFD_AGENT_HPPROF_H

#include <stddef.h>
#include <stdint.h>

#include "agent/host/hgroups.h"

struct hpprof_window {
	int64_t		 time_nanos;
	int64_t		 duration_nanos;
	int		 hz;
	const char	*comment;
};

/* Packs and gzips g. *out: OUT new buffer (caller frees). */
int	hpprof_build(const struct hgroup *g, const struct hpprof_window *,
	    uint8_t **out, size_t *outlen, char **cause);

#endif
