/*
 * Unit tests of the folded-stack converter (proto/folded.c): what it
 * makes passes the upload check with the right samples, sample types and
 * totals (identical stacks summed, lines mode counting each line once, a
 * second sample type of count x period); bad text is refused naming its
 * line; `go tool pprof` reading the output is test/e2e's job.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/budget.h"
#include "proto/folded.h"
#include "proto/pprof.h"
#include "test/lib/tap.h"

#define MAX_INFLATED	(64 << 20)

/* Converts text and checks it: the summary, or NULL cause set. */
static int
convert(const char *text, const struct folded_options *o,
    struct pprof_summary *sum, char **cause)
{
	uint8_t	*out;
	size_t	 len;
	int	 rc;

	memset(sum, 0, sizeof *sum);
	if (folded_to_pprof(text, strlen(text), o, &out, &len, cause) != 0)
		return -1;
	rc = pprof_check(out, len, MAX_INFLATED, sum, cause);
	free(out);
	return rc;
}

/* 1 if text is refused with a cause holding want (printed). */
static int
refused(const char *text, const struct folded_options *o, const char *want,
    const char *what)
{
	struct pprof_summary	 sum;
	char			*cause = NULL;
	int			 rc, got;

	rc = convert(text, o, &sum, &cause);
	if (rc == 0)
		pprof_summary_free(&sum);
	got = rc == -1 && cause != NULL && strstr(cause, want) != NULL;
	ok(got, "%s (%s)", what, cause != NULL ? cause : "accepted");
	free(cause);
	return got;
}

/* Distinct frames past max_frames, and memory past the account's budget. */
static void
limits(struct folded_options *o)
{
	struct budget		*b = budget_new(1 << 20);
	struct budget_acct	 acct;
	char			*text, *cause = NULL;
	uint8_t			*out;
	size_t			 len, i, at = 0, n = 40000;
	int			 rc;

	text = malloc(n * 16);
	for (i = 0; i < n; i++)
		at += (size_t)sprintf(text + at, "main;f%zu 1\n", i);
	o->max_frames = 1000;
	rc = folded_to_pprof(text, at, o, &out, &len, &cause);
	ok(rc == FOLDED_ETOOBIG && cause && strstr(cause, "line 1000:"),
	    "more distinct frames than max_frames: refused (%s)", cause);
	free(cause);
	cause = NULL;
	o->max_frames = 0;
	budget_acct_init(&acct, b);
	o->acct = &acct;
	rc = folded_to_pprof(text, at, o, &out, &len, &cause);
	ok(rc == FOLDED_ENOMEM && budget_acct_fail(&acct, NULL) ==
	    BUDGET_OVER, "tables past the budget: refused (%s)", cause);
	ok(budget_used(b) == 0, "... and every byte given back (%zu)",
	    budget_used(b));
	free(cause);
	cause = NULL;
	for (at = 2000; text[at - 1] != '\n'; at--)
		;
	rc = folded_to_pprof(text, at, o, &out, &len, &cause);
	ok(rc == 0 && budget_used(b) == len, "within the budget it converts, "
	    "the output charged (%zu of %zu bytes; %s)", budget_used(b), len,
	    cause ? cause : "");
	if (rc == 0)
		budget_dealloc(&acct, out, len);
	ok(budget_used(b) == 0, "freed, nothing is held");
	free(cause);
	budget_acct_done(&acct);
	budget_free(b);
	o->acct = NULL;
	free(text);
}

int
main(void)
{
	struct folded_options	 o = { "samples", "count", NULL, NULL, 0, 0,
	    1700000000000000000LL, 10000000000LL, 0 };
	struct pprof_summary	 sum;
	char			*cause = NULL;

	ok(convert("main;work;hash 3\nmain;work 2\nmain;work;hash 4\n", &o,
	    &sum, &cause) == 0, "folded text converts and passes the check "
	    "(%s)", cause ? cause : "");
	ok(sum.samples == 2, "identical stacks are one sample (%lld)",
	    (long long)sum.samples);
	ok(sum.sample_types && strcmp(sum.sample_types, "samples/count") == 0,
	    "sample type samples/count (%s)", sum.sample_types);
	ok(sum.totals && strncmp(sum.totals, "9", 1) == 0, "totals 9 (%s)",
	    sum.totals);
	ok(sum.time_nanos == 1700000000000000000LL, "time_nanos kept");
	pprof_summary_free(&sum);

	o.type2 = "cpu";
	o.unit2 = "nanoseconds";
	o.period = 10000000;
	ok(convert("a;b 1\r\n\n  \na;c 2", &o, &sum, &cause) == 0,
	    "CRLF, blank lines and no final newline are fine");
	ok(sum.sample_types && strcmp(sum.sample_types,
	    "samples/count,cpu/nanoseconds") == 0, "two sample types (%s)",
	    sum.sample_types);
	ok(sum.totals && strncmp(sum.totals, "3,30000000", 10) == 0,
	    "the second is count x period (%s)", sum.totals);
	pprof_summary_free(&sum);

	o.lines = 1;
	ok(convert("a;b\na;b\na;c\n", &o, &sum, &cause) == 0 &&
	    sum.totals && strncmp(sum.totals, "3,", 2) == 0,
	    "lines mode: each line counts once (%s)", sum.totals);
	pprof_summary_free(&sum);
	o.lines = 0;

	free(cause);
	cause = NULL;
	refused("a;b 1\na;b\n", &o, "line 2", "no count: refused at line 2");
	refused("a;;b 1\n", &o, "empty frame", "an empty frame is refused");
	refused("a;\xff\xfe 1\n", &o, "UTF-8", "a frame that is not UTF-8 is "
	    "refused");
	refused("\n\n", &o, "no stacks", "no stacks: refused");
	refused("a 99999999999999999999\n", &o, "line 1", "a count too large "
	    "is refused");
	ok(convert("java.lang.Thread.run ()V;a b 2\n", &o, &sum, &cause) ==
	    0 && sum.totals && strncmp(sum.totals, "2,", 2) == 0, "frames may "
	    "hold spaces: the count is after the last one (%s)", cause ?
	    cause : sum.totals);
	pprof_summary_free(&sum);
	free(cause);
	limits(&o);
	return tap_done();
}
