/*
 * One side of a merging query of Pyroscope's API (a profile type id, a
 * label selector, a window, a call site): its request fields checked,
 * its pieces selected (qfind.c) and merged on the merge pool by profd's
 * engine (api_merge_bytes), the merge decoded with what it holds charged
 * to --merge-memory; then its call tree or its pprof of the one sample
 * type. Used by SelectMergeStacktraces, SelectMergeProfile, Diff and
 * /pyroscope/render.
 */
#ifndef PROFD_QSIDE_H
#define PROFD_QSIDE_H

#include <stddef.h>
#include <stdint.h>

#include "collector/query/qfind.h"
#include "collector/query/qsel.h"
#include "proto/pprof.h"

#define QSIDE_MAX_NODES		8192	/* max_nodes 0 */
#define QSIDE_NODES_LIMIT	1000000
#define QSIDE_CALL_SITE_MAX	1024	/* frames of a call-site selector */

struct budget_acct;
struct httpjob;
struct view_tree;
struct Types__V1__StackTraceSelector;

/* A side: what it selects, and its merge. */
struct qside {
	struct qsel_ptype	 pt;
	struct qsel		 sel;
	struct qfind		 f;
	char			**call_site;	/* root first */
	size_t			 ncall_site;
	pprof_profile_t		*prof;		/* NULL: nothing matched */
	int			 idx;		/* the sample type's, or -1 */
	int64_t			 profiles;
};

/* Frees a side. */
void	qside_clear(struct qside *);
/*
 * Charges n bytes to --merge-memory; when refused answers 413 (more than
 * the limit) or 503 (other merges hold it now) and returns -1.
 */
int	qside_charge(struct httpjob *, struct budget_acct *, size_t n);
/* The index of the sample type name/unit in p, or -1. */
int	qside_index(const pprof_profile_t *p, const char *name,
	    const char *unit);
/*
 * Reads a side's request fields (what prefixes its errors); -1 with the
 * job answered (400). sts may be NULL.
 */
int	qside_parse(struct httpjob *, struct qside *s, const char *ptype,
	    const char *selector, int64_t start, int64_t end,
	    const struct Types__V1__StackTraceSelector *sts, const char *what);
/* Worker: merges and decodes (s->prof NULL: nothing matched); -1 answered. */
int	qside_load(struct httpjob *, struct budget_acct *, struct qside *s);
/* max_nodes of a request (0: QSIDE_MAX_NODES); -1 answered if past. */
int	qside_max_nodes(struct httpjob *, int64_t asked, size_t *out);
/* Adds a side's samples to a call tree (as the baseline when base). */
void	qside_tree_add(struct view_tree *, const struct qside *s, int base);
/*
 * A side's merge reduced to its sample type and call site, as pprof:
 * s->prof changed in place, or an empty profile of that sample type.
 */
pprof_profile_t *qside_pprof(struct qside *s);

#endif
