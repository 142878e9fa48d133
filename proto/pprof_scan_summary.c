/*
 * The summary of a checked profile (sample types, samples, time and
 * duration), written the same way by the fast path and the exact passes:
 * each hands in its own reader of the sample type strings.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "proto/pprof.h"
#include "proto/pprof_scan_wire.h"

/* Fills *sum like pprof_summarize(), for either path (see the header). */
void
pprof_scan_summary_fill(struct pprof_summary *sum, size_t n_types,
    const uint8_t *(*str)(const void *ctx, size_t j, size_t *len),
    const void *ctx, int64_t samples, int64_t time_nanos,
    int64_t duration_nanos)
{
	const uint8_t	*type, *unit;
	size_t		 i, len = 1, tl, ul;
	char		*w;

	for (i = 0; i < n_types; i++) {
		(void)str(ctx, 2 * i, &tl);
		(void)str(ctx, 2 * i + 1, &ul);
		len += tl + ul + 2;
	}
	w = sum->sample_types = xmalloc(len);
	for (i = 0; i < n_types; i++) {
		type = str(ctx, 2 * i, &tl);
		unit = str(ctx, 2 * i + 1, &ul);
		if (i != 0)
			*w++ = ',';
		memcpy(w, type, tl);
		w += tl;
		*w++ = '/';
		memcpy(w, unit, ul);
		w += ul;
	}
	*w = '\0';
	sum->samples = samples;
	sum->time_nanos = time_nanos;
	sum->duration_nanos = duration_nanos;
}

/* Formats the per-type sums and the default's index (see pprof.h). */
void
pprof_scan_summary_totals(struct pprof_summary *sum, size_t n_types,
    const uint64_t *tot, const uint8_t *(*str)(const void *ctx, size_t j,
    size_t *len), const void *ctx, const uint8_t *def, size_t def_len)
{
	const uint8_t	*type;
	size_t		 i, tl, len = 24, off = 0;
	long long	 k = -1;
	char		*w;

	if (n_types > PPROF_TOTALS_MAX_TYPES) {
		sum->totals = xstrdup("");
		return;
	}
	len += n_types * 21;
	w = sum->totals = xmalloc(len);
	*w = '\0';
	for (i = 0; i < n_types; i++) {
		off += (size_t)snprintf(w + off, len - off, "%s%lld",
		    i != 0 ? "," : "", (long long)(int64_t)tot[i]);
		type = str(ctx, 2 * i, &tl);
		if (def_len != 0 && k < 0 && tl == def_len &&
		    memcmp(type, def, tl) == 0)
			k = (long long)i;
	}
	if (k >= 0)
		snprintf(w + off, len - off, ";%lld", k);
}
