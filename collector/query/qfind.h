/*
 * What a query of Pyroscope's API selects, found in the store on a
 * worker: the pieces (profiles and rollups) of a merge for a profile
 * type and a label selector, and the rows (profiles' metadata) that
 * label listings and series are computed from. Services are matched
 * against service_name's matchers first; name="value" matchers on labels
 * go to the store; the others are checked here, row by row.
 */
#ifndef PROFD_QFIND_H
#define PROFD_QFIND_H

#include <stddef.h>
#include <stdint.h>

#include "collector/query/qsel.h"
#include "storage/store.h"

struct httpjob;

/* Rows a listing reads at most: this many times --max-merge-profiles. */
#define QFIND_ROWS_PER_MERGE	20

/* A request's selection. */
struct qfind {
	const struct qsel_ptype	*pt;	/* NULL: any type */
	const struct qsel	*sels;	/* OR over them; nsels 0: all */
	size_t			 nsels;
	int64_t			 from, to;	/* ns, inclusive */
	int			 soft;	/* qfind_cands: 1, unanswered, past
					   QFIND_ROWS_PER_MERGE times --max-merge-profiles */
};

/* A row and one of its sample types: what a series is made of. */
struct qfind_cand {
	const struct profile_meta	*m;
	char				*st;	/* "name" */
	char				*unit;
	char				*ptype;	/* its profile type id */
};

/*
 * Worker: the ids to merge for f (f->pt and one selector at most): the
 * window's rollups and profiles carrying f->pt's sample type, of its most
 * common set of sample types. 0 with *ids (store_free_strings; none when
 * nothing matched) and *profiles (how many stored profiles they hold), or
 * -1 with the job answered (413 past the limits, 500, 503).
 */
int	qfind_pieces(struct httpjob *, const struct qfind *f, char ***ids,
	    size_t *nids, int64_t *profiles);
/*
 * Worker: the candidates of f: each matching row once per sample type
 * (of f->pt's when given), with every selector's matchers applied
 * (service_name, __profile_type__, __name__, labels). 0 with *c, *n and
 * *rows (free with qfind_free), or -1 with the job answered (413 when
 * the window holds more than QFIND_ROWS_PER_MERGE times --max-merge-profiles rows; with f->soft, 1 and
 * nothing answered).
 */
int	qfind_cands(struct httpjob *, const struct qfind *f,
	    struct qfind_cand **c, size_t *n, struct profile_meta **rows,
	    size_t *nrows);
void	qfind_free(struct qfind_cand *c, size_t n, struct profile_meta *rows,
	    size_t nrows);
/*
 * Worker: adds f's timeline (f->pt set, one selector at most) into tl,
 * whose sample_type, step, b0, n, value and profiles the caller set,
 * from the store's metadata sums (rollups, any window): 0, 1 when a
 * matcher needs each row's labels (nothing added: use qfind_cands), or
 * -1 with the job answered.
 */
int	qfind_timeline(struct httpjob *, const struct qfind *f,
	    struct store_timeline *tl);
/* Worker: the services f's service_name matchers admit; -1 answered. */
int	qfind_services(struct httpjob *, const struct qfind *f, char ***out,
	    size_t *n);
/*
 * Worker: the profile type ids stored in f's window for the services f
 * admits, from the window's merge plans (rollups: any window), unsorted,
 * repeats possible. 0 with *ids (store_free_strings), or -1 answered.
 */
int	qfind_types(struct httpjob *, const struct qfind *f, char ***ids,
	    size_t *n);
/*
 * Worker: label keys (key NULL) or a key's values stored for the
 * services f admits, from the label tables, whatever their time (for a
 * window too large to read row by row). 0 with *out (store_free_strings),
 * or -1 answered.
 */
int	qfind_labels(struct httpjob *, const struct qfind *f, const char *key,
	    char ***out, size_t *n);
/* A candidate's value of a label name ("" when it has none). */
const char *qfind_value(const struct qfind_cand *, const char *name);
/* Whether a sample type list ("a/u,b/v") holds name/unit. */
int	qfind_has_type(const char *types, const char *name, const char *unit);

#endif
