/*
 * The vocabulary of Pyroscope's query API, pure and unit-tested:
 * Prometheus-style label selectors ({service_name="api", env=~"prod|.*"})
 * and their matching, profile type ids
 * (NAME:SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT) and their mapping
 * onto profd's types, and query windows in milliseconds.
 * See docs/DESIGN.md, "Pyroscope's query API".
 */
#ifndef PROFD_QSEL_H
#define PROFD_QSEL_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/store.h"

#define QSEL_MAX_MATCHERS	64
#define QSEL_MAX_TEXT		4096	/* bytes of one selector */
#define QSEL_MAX_REGEX		256	/* bytes of one regex */

/* The label names profd answers besides its profiles' own. */
#define QSEL_SERVICE		"service_name"
#define QSEL_PROFILE_TYPE	"__profile_type__"
#define QSEL_NAME		"__name__"

enum qsel_op {
	QSEL_EQ,	/* = */
	QSEL_NE,	/* != */
	QSEL_RE,	/* =~ */
	QSEL_NRE,	/* !~ */
};

struct qsel_matcher {
	char		*name;
	enum qsel_op	 op;
	char		*value;
	regex_t		 re;		/* QSEL_RE, QSEL_NRE: anchored */
};

/* A selector: every matcher must hold (n 0: everything). */
struct qsel {
	struct qsel_matcher	*m;
	size_t			 n;
};

/* Parses "{...}" (or "" for everything); -1 with *cause on error. */
int	qsel_parse(const char *text, struct qsel *out, char **cause);
void	qsel_clear(struct qsel *);

/* A label's value as a candidate has it ("" when absent). */
typedef const char *(*qsel_lookup_fn)(void *arg, const char *name);
/* Whether every matcher holds for the values lookup gives. */
int	qsel_matches(const struct qsel *, qsel_lookup_fn lookup, void *arg);
/* Whether one matcher holds for value. */
int	qsel_matcher_holds(const struct qsel_matcher *, const char *value);
/* Whether the matchers on name (none: true) hold for value. */
int	qsel_holds_for(const struct qsel *, const char *name,
	    const char *value);
/*
 * The matchers the store can apply itself: name=value with a non-empty
 * value on a profile label (not service_name nor a __name__). Returns
 * them as a new sorted label array (params_labels_free), and *rest: how
 * many other matchers on profile labels are left to check.
 */
int	qsel_store_labels(const struct qsel *, struct label **out, size_t *n,
	    size_t *rest, char **cause);

/* A profile type id taken apart. */
struct qsel_ptype {
	char		*id;		/* as given */
	char		*name;		/* Pyroscope's NAME */
	const char	*type;		/* profd's type (static) */
	char		*sample_type;	/* "cpu" */
	char		*sample_unit;	/* "nanoseconds" */
};

/* Parses an id; -1 with *cause if it is not one profd knows. */
int	qsel_ptype_parse(const char *id, struct qsel_ptype *out, char **cause);
void	qsel_ptype_clear(struct qsel_ptype *);
/* Pyroscope's NAME of a profd type ("cpu" -> "process_cpu"). */
const char *qsel_ptype_name(const char *type);
/* The id of a profd type's sample type (new string). */
char	*qsel_ptype_id(const char *type, const char *sample_type,
	    const char *sample_unit);
/* The period type and unit listed for a profd type's sample type. */
void	qsel_ptype_period(const char *type, const char *sample_type,
	    const char *sample_unit, const char **ptype, const char **punit);

/*
 * A request's window [start, end] in milliseconds (end 0: now; start 0:
 * an hour before end) as nanoseconds; -1 with *cause if start > end or
 * out of range.
 */
int	qsel_window(int64_t start_ms, int64_t end_ms, int64_t now_ns,
	    int64_t *from_ns, int64_t *to_ns, char **cause);

#endif
