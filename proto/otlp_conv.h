/*
 * OTLP profiles to pprof: each (resource, scope, profile) of a decoded
 * ExportProfilesServiceRequest resolved through the request's shared
 * dictionary into a pprof profile of its own, with the service (resource
 * attribute service.name) and labels (the profile's, the scope's and the
 * resource's attributes) it is stored under. Every index is range-checked
 * and the stacks' expansion bounded; a problem anywhere fails the whole
 * request with the path of the field.
 */
#ifndef PROFD_OTLP_CONV_H
#define PROFD_OTLP_CONV_H

#include <stddef.h>
#include <stdint.h>

#include "proto/otlp.h"

/* Labels of a stored profile: keys and values as profd's uploads. */
#define OTLP_CONV_MAX_KEY	63
#define OTLP_CONV_MAX_VALUE	512

struct otlp_label {
	char	*key;
	char	*value;
};

/* One profile of a request, converted. */
struct otlp_profile {
	char			*service;
	struct otlp_label	*labels;	/* profile's, scope's, resource's */
	size_t			 nlabels;
	const char		*type;		/* profd's type (static) */
	int64_t			 time_ns;	/* 0: unknown */
	int64_t			 duration_ns;
	uint8_t			*pprof;		/* raw protobuf, malloc'd */
	size_t			 len;
	char			*where;		/* "resource_profiles[0]...": */
};

/* The bounds of a conversion. */
struct otlp_limits {
	uint64_t	max_refs;	/* frames over all samples, all profiles */
	size_t		max_profiles;	/* profiles in one request */
};

/*
 * Converts every profile of req. 0 with *out (*n of them; otlp_conv_free), or
 * -1 with *cause naming the field (a reference out of range, a table
 * bomb).
 */
int	 otlp_conv_run(const otlp_request_t *req,
	    const struct otlp_limits *lim, struct otlp_profile **out,
	    size_t *n, char **cause);
void	 otlp_conv_free(struct otlp_profile *, size_t n);
/* profd's type of a sample type and period type (names). */
const char *otlp_conv_type(const char *sample_type, const char *unit,
	    const char *period_type);

#endif
