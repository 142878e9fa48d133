/*
 * A merged profile reduced to what Pyroscope's pprof answers hold: one
 * sample type (SelectMergeProfile, SelectMergeStacktraces' PPROF
 * format), or an empty profile of one sample type when nothing matched.
 */
#ifndef PROFD_VIEW_PICK_H
#define PROFD_VIEW_PICK_H

#include "proto/pprof.h"

/*
 * Keeps only sample type idx of p (decoded with protobuf-c's default
 * allocator), in place: one sample type, each sample its one value,
 * samples whose value is 0 dropped.
 */
void		 view_pick_type(pprof_profile_t *p, int idx);
/* A new profile with sample type name/unit and no samples (pprof_free). */
pprof_profile_t	*view_pick_empty(const char *name, const char *unit);

#endif
