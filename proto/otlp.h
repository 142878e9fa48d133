/*
 * OpenTelemetry's profiles (OTLP, the Alpha signal of opentelemetry-proto
 * 1.11): an ExportProfilesServiceRequest decoded within bounds (nesting
 * checked on the wire first, every allocation charged to a budget).
 * otlp_conv.h turns it into pprof profiles.
 */
#ifndef PROFD_OTLP_H
#define PROFD_OTLP_H

#include <stddef.h>
#include <stdint.h>

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"

struct budget_acct;

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
    otlp_request_t;

/* Messages nested deeper than this are refused before decoding. */
#define OTLP_MAX_DEPTH		32

/*
 * Decodes a protobuf request of len bytes: nesting past OTLP_MAX_DEPTH
 * and bad wire format refused, every allocation charged to acct (which
 * may refuse: *nomem set). NULL with *cause, or the request (free with
 * otlp_request_free).
 */
otlp_request_t	*otlp_decode(const uint8_t *buf, size_t len,
		    struct budget_acct *acct, int *nomem, char **cause);
/* The allocator otlp_decode uses (for pbjson_decode), charged to acct. */
void		 otlp_allocator(struct budget_acct *acct,
		    ProtobufCAllocator *a);
void		 otlp_request_free(otlp_request_t *, struct budget_acct *acct);
#endif
