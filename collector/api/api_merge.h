/*
 * Merged downloads: by query (service, type, time range, labels: read
 * from rollups where compaction made them) or by a list of ids. Both run as watched jobs on the merge pool, at most
 * --max-merges at once, so a client that goes away cancels the merge.
 */
#ifndef PROFD_API_MERGE_H
#define PROFD_API_MERGE_H

#include <stddef.h>
#include <stdint.h>

struct env;
struct evhttp_request;
struct httpjob;
struct params;
struct params_query;

/* GET /api/0/profiles/merge */
void	api_merge_query(struct env *, struct evhttp_request *,
	    const struct params *);
/* GET /api/0/profiles/{id1}+{id2}+...: merges those profiles. */
void	api_merge_ids(struct env *, struct evhttp_request *,
	    const char *ids);

/*
 * Worker: the inputs of the merge qa selects: without a limit, the
 * window's rollups and the profiles no rollup of it holds (store_plan);
 * with one, the newest profiles (at most --max-merge-profiles). Those
 * with the most common set of sample types. 0 with *ids and *nids
 * (caller frees; none if nothing matched and empty_ok) and *profiles
 * (how many stored profiles they hold), or -1 with the job answered
 * (404, 413, 500).
 */
int	api_merge_select(struct httpjob *, const struct params_query *qa,
	    int empty_ok, char ***ids, size_t *nids, int64_t *profiles);
/*
 * Worker: merges the stored profiles ids on the merge pool into one
 * gzipped pprof (raw: not gzipped). 0 with *out (caller frees) and
 * *outlen, or -1 with the job answered (404, 413, 422, 499, 500, 503).
 */
int	api_merge_bytes(struct httpjob *, char **ids, size_t nids, int raw,
	    uint8_t **out, size_t *outlen);
/*
 * Of n inputs with sample types types[i] ("name/unit,...") each holding
 * weight[i] profiles, sets keep[i] for those whose set of sample types is
 * the most common among the profiles (a tie goes to the first input's);
 * returns how many profiles are left out.
 */
int64_t	api_merge_pick_types(const char *const *types, const int64_t *weight,
	    size_t n, unsigned char *keep);

#endif
