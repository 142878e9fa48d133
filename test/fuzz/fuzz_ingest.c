/*
 * Fuzz target for what /ingest parses before a profile is read
 * (collector/api/pyro_name.c, collector/http/multipart.c). The input's
 * first line is a name (and a from/until value, and a Content-Type); the
 * rest is a multipart body whose boundary is "XyZ", searched for the
 * parts an SDK sends, and a sample_type_config. Properties: an error has a reason; a parsed name
 * has a non-empty application of its characters, a type from the table
 * and sorted labels with valid keys; a time is not negative; a part lies
 * inside the body.
 */
#include <string.h>

#include "collector/api/params.h"
#include "collector/api/pyro_config.h"
#include "collector/api/pyro_name.h"
#include "collector/http/multipart.h"
#include "common/xmalloc.h"
#include "storage/store.h"
#include "test/fuzz/fuzz.h"

/* Checks a parsed name. */
static void
fuzz_ingest_name_ok(const struct pyro_name *n)
{
	size_t i;

	FUZZ_ASSERT(n->app != NULL && n->app[0] != '\0');
	FUZZ_ASSERT(strspn(n->app, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"
	    "OPQRSTUVWXYZ0123456789_.-/") == strlen(n->app));
	FUZZ_ASSERT(n->type == NULL || pyro_name_type(n->type->name) ==
	    n->type);
	for (i = 0; i < n->nlabels; i++) {
		FUZZ_ASSERT(params_label_key_valid(n->labels[i].key));
		FUZZ_ASSERT(strlen(n->labels[i].value) <= PARAMS_MAX_VALUE);
		FUZZ_ASSERT(i == 0 || strcmp(n->labels[i - 1].key,
		    n->labels[i].key) < 0);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = { "profile", "prev_profile",
	    "sample_type_config" };
	const uint8_t *nl = memchr(data, '\n', size), *part;
	size_t linelen = nl != NULL ? (size_t)(nl - data) : size, plen, i;
	char *line = xstrndup((const char *)data, linelen), *cause = NULL;
	char *b = NULL;
	struct pyro_name n;
	int64_t t;
	int rc;

	if (strlen(line) == linelen) {
		if (pyro_name_parse(line, 16, &n, &cause) == 0) {
			fuzz_ingest_name_ok(&n);
			pyro_name_clear(&n);
		} else
			FUZZ_ASSERT(cause != NULL && *cause != '\0');
		free(cause);
		cause = NULL;
		if (pyro_name_time(line, &t, &cause) == 0)
			FUZZ_ASSERT(t >= 0);
		else
			FUZZ_ASSERT(cause != NULL);
		free(cause);
		cause = NULL;
		rc = multipart_boundary(line, &b, &cause);
		FUZZ_ASSERT(rc == 0 || (rc == 1 && b != NULL && *b != '\0' &&
		    strlen(b) <= 70) || (rc == -1 && cause != NULL));
		free(b);
		free(cause);
		cause = NULL;
		(void)pyro_name_type_of_samples(line);
	}
	free(line);
	if (nl == NULL)
		return 0;
	{
		struct pyro_config	c;

		if (pyro_config_parse((const char *)nl + 1, size - linelen - 1,
		    &c, &cause) == 0) {
			for (i = 0; i < c.n; i++)
				FUZZ_ASSERT(c.e[i].name != NULL);
			(void)pyro_config_type(&c);
			pyro_config_clear(&c);
		} else
			FUZZ_ASSERT(cause != NULL);
		free(cause);
		cause = NULL;
	}
	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		rc = multipart_find(nl + 1, size - linelen - 1, "XyZ",
		    names[i], &part, &plen, &cause);
		if (rc == 1)
			FUZZ_ASSERT(part >= nl + 1 && part + plen <= data +
			    size);
		else
			FUZZ_ASSERT(rc == 0 || cause != NULL);
		free(cause);
		cause = NULL;
	}
	return 0;
}
