/*
 * SelectSeries of Pyroscope's query API (Connect, POST
 * /querier.v1.QuerierService/SelectSeries): a sample type's totals over
 * time, per group of labels, from the metadata.
 */
#ifndef PROFD_QSERIES_H
#define PROFD_QSERIES_H

#include <stddef.h>
#include <stdint.h>

struct env;
struct evhttp_request;
struct httpjob;
struct qfind;

void	qseries_select(struct env *, struct evhttp_request *);
/*
 * Worker: the sums of f's sample type (f->pt set) per bucket of step
 * seconds, npoints of them from bucket b0 (store_bucket_of): 0 with
 * *sum (caller frees), or -1 with the job answered.
 */
int	qseries_sums(struct httpjob *, const struct qfind *f, int64_t step,
	    int64_t b0, size_t npoints, int64_t **sum);
/* A step in whole seconds: step rounded up, or about 200 buckets over
 * [from, to] (ns) when step is 0. */
int64_t	qseries_step(double step, int64_t from, int64_t to);

#endif
