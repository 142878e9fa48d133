/*
 * Folded stacks at ingest: a folded (or lines) body becomes the pprof
 * that is checked and stored in its place. The converter's tables and
 * output are charged to --merge-memory, the budget of the daemon's heavy
 * work, so a body of millions of distinct frames is refused (413), not
 * held; the number of distinct frames is capped as well.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "collector/api/api_unfold.h"
#include "collector/env.h"
#include "collector/http/httpjob.h"
#include "common/budget.h"
#include "proto/folded.h"

/* Converts body in place; see api_unfold.h. */
int
api_unfold(struct httpjob *job, struct evbuffer *body,
    const struct folded_options *opt)
{
	struct folded_options	 o = *opt;
	struct budget_acct	 acct;
	size_t			 len = evbuffer_get_length(body), want = 0;
	const char		*text = (const char *)evbuffer_pullup(body, -1);
	const char		*what = o.lines ? "lines" : "folded";
	uint8_t			*out;
	size_t			 outlen;
	char			*cause = NULL;
	int			 rc;

	o.max_frames = API_UNFOLD_MAX_FRAMES;
	o.acct = &acct;
	budget_acct_init(&acct, job->env->merge_budget);
	rc = folded_to_pprof(text, len, &o, &out, &outlen, &cause);
	if (rc == FOLDED_EINVAL)
		httpjob_error(job, 400, "invalid %s profile: %s", what, cause);
	else if (rc == FOLDED_ETOOBIG || (rc == FOLDED_ENOMEM &&
	    budget_acct_fail(&acct, &want) == BUDGET_OVER))
		httpjob_error(job, 413, "%s profile too big to convert: %s%s",
		    what, cause, rc == FOLDED_ENOMEM ? " (--merge-memory)" : "");
	else if (rc != 0)
		httpjob_error(job, 503, "cannot convert the %s profile now: "
		    "%s; retry later", what, cause);
	else {
		evbuffer_drain(body, len);
		evbuffer_add(body, out, outlen);
		budget_dealloc(&acct, out, outlen);
	}
	free(cause);
	budget_acct_done(&acct);
	return rc == 0 ? 0 : -1;
}
