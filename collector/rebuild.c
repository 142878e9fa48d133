/*
 * The --rebuild-meta mode. storage/embedded/meta_rebuild.c does the work; this
 * file adds what storage cannot know: how to make a row for a blob that
 * an older profd wrote without metadata. Such a blob is read as a pprof
 * (the upload check, bounded by --max-inflated): its own time_nanos (else
 * the time in its id, which is the arrival time), sample types, sample
 * count and duration are kept; the service, which only the upload's
 * query string knew, becomes "unknown", and the type is guessed from the
 * sample types (cpu, heap, goroutine, threadcreate, else other). Bytes
 * that are not a pprof (a trace, or damage) are left out, in orphans/.
 * The summary goes to stdout, the details (each blob left out) to the
 * log on stderr; the exit status is 0 once meta.db is rebuilt.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/config.h"
#include "collector/ids.h"
#include "collector/rebuild.h"
#include "common/log.h"
#include "common/xmalloc.h"
#include "proto/pprof.h"
#include "storage/store.h"

#define REBUILD_SERVICE	"unknown"	/* for blobs without metadata */

/* The profile type a set of sample types most likely came from. */
static const char *
rebuild_guess_type(const char *sample_types)
{
	static const struct {
		const char	*needle;
		const char	*type;
	} guess[] = {
		{ "cpu/", "cpu" },
		{ "inuse_space/", "heap" },
		{ "alloc_space/", "heap" },
		{ "space/bytes", "heap" },
		{ "goroutine/", "goroutine" },
		{ "threadcreate/", "threadcreate" },
	};
	size_t	i;

	for (i = 0; i < sizeof guess / sizeof guess[0]; i++) {
		if (strstr(sample_types, guess[i].needle) != NULL)
			return guess[i].type;
	}
	return "other";
}

/* store_legacy_cb: a row for a blob without metadata, from its pprof. */
static int
rebuild_legacy_cb(const uint8_t *buf, size_t len, struct profile_meta *m,
    void *arg, char **cause)
{
	const struct config	*cfg = arg;
	struct pprof_summary	 sum;
	char			*why = NULL;
	int64_t			 ms;

	memset(&sum, 0, sizeof sum);
	if (pprof_check(buf, len, cfg->max_inflated, &sum, &why) != 0) {
		xcause(cause, "no metadata, and not a pprof profile (%s)", why);
		free(why);
		return -1;
	}
	ms = ids_time_ms(m->id);
	if (sum.time_nanos <= 0 && ms < 0) {
		pprof_summary_free(&sum);
		return xcause(cause, "no metadata, no time_nanos, and an id "
		    "that holds no time");
	}
	m->service = xstrdup(REBUILD_SERVICE);
	m->sample_types = sum.sample_types != NULL ? sum.sample_types :
	    xstrdup("");
	sum.sample_types = NULL;
	m->totals = sum.totals;
	sum.totals = NULL;
	m->type = xstrdup(rebuild_guess_type(m->sample_types));
	m->created_at = sum.time_nanos > 0 ? sum.time_nanos : ms * 1000000;
	m->samples = sum.samples;
	m->duration_ns = sum.duration_nanos;
	pprof_summary_free(&sum);
	return 0;
}

/* Appends ", NAME N" to the line when n is not 0. */
static void
rebuild_reason(FILE *f, int *first, const char *name, size_t n)
{
	if (n == 0)
		return;
	fprintf(f, "%s%s %zu", *first ? "" : ", ", name, n);
	*first = 0;
}

/* Prints the summary line of a finished rebuild. */
static void
rebuild_print(const char *data_dir, const struct store_rebuild *r)
{
	int	first = 1;

	printf("profd: rebuilt %s/meta.db: %zu profiles, %zu bytes (%zu "
	    "moved back from orphans/, %zu without metadata, under service "
	    "\"" REBUILD_SERVICE "\"); skipped %zu blobs", data_dir,
	    r->rebuilt, r->bytes, r->from_orphans, r->legacy, r->skipped);
	if (r->skipped > 0) {
		printf(" (");
		rebuild_reason(stdout, &first, "damaged", r->skipped_damaged);
		rebuild_reason(stdout, &first, "bad metadata",
		    r->skipped_bad_meta);
		rebuild_reason(stdout, &first, "another id's metadata",
		    r->skipped_wrong_id);
		rebuild_reason(stdout, &first, "no metadata and not pprof",
		    r->skipped_legacy);
		rebuild_reason(stdout, &first, "duplicate",
		    r->skipped_duplicate);
		rebuild_reason(stdout, &first, "unreadable",
		    r->skipped_unreadable);
		printf("; %zu moved to orphans/, the rest left where they "
		    "were)", r->moved_aside);
	}
	printf("; nothing deleted\n");
	fflush(stdout);
}

/* Rebuilds, prints the summary or the reason; returns the exit status. */
int
rebuild_run(const struct config *cfg)
{
	struct store_rebuild	 rep;
	char			*cause = NULL;

	if (cfg->store != NULL) {
		fprintf(stderr, "profd: --rebuild-meta works on an embedded "
		    "store (--data-dir), not on --store\n");
		return 1;
	}
	log_info("%s: rebuilding %s/meta.db from the blobs", __func__,
	    cfg->data_dir);
	if (store_rebuild(cfg->data_dir, rebuild_legacy_cb, (void *)cfg, &rep,
	    &cause) == -1) {
		fprintf(stderr, "profd: --rebuild-meta: %s\n", cause);
		free(cause);
		return 1;
	}
	rebuild_print(cfg->data_dir, &rep);
	return 0;
}
