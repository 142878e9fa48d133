/*
 * Pyroscope's sample_type_config: per sample type of the pprof, its units,
 * aggregation, display name and whether its values are cumulative. profd
 * keeps the pprof's own sample types (its names and units win, as its
 * period wins over sampleRate) and uses the config where it changes what
 * the profile is: a display-name that is a Pyroscope type tells block
 * from mutex, and a cumulative type is turned into a delta against
 * prev_profile (api_ingest.c).
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "collector/api/pyro_config.h"
#include "collector/api/pyro_name.h"
#include "common/xmalloc.h"

/* The string member key of o, copied, or NULL; -1 if it is not one. */
static int
pyro_config_str(json_t *o, const char *key, char **out)
{
	json_t	*v = json_object_get(o, key);

	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return -1;
	*out = xstrdup(json_string_value(v));
	return 0;
}

/* Parses the JSON; see the header. */
int
pyro_config_parse(const char *json, size_t len, struct pyro_config *c,
    char **cause)
{
	json_error_t		 err;
	json_t			*root, *v, *cum;
	const char		*key;
	struct pyro_config_entry *e;

	memset(c, 0, sizeof c[0]);
	if (len > PYRO_CONFIG_MAX)
		return xcause(cause, "sample_type_config: more than %d bytes",
		    PYRO_CONFIG_MAX);
	if ((root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &err)) ==
	    NULL)
		return xcause(cause, "sample_type_config: line %d: %s",
		    err.line, err.text);
	if (!json_is_object(root)) {
		json_decref(root);
		return xcause(cause, "sample_type_config: not a JSON object");
	}
	c->e = xcalloc(json_object_size(root) + 1, sizeof *c->e);
	json_object_foreach(root, key, v) {
		e = &c->e[c->n++];
		e->name = xstrdup(key);
		cum = json_is_object(v) ? json_object_get(v, "cumulative") :
		    NULL;
		if (!json_is_object(v) || pyro_config_str(v, "display-name",
		    &e->display) < 0 || pyro_config_str(v, "units",
		    &e->units) < 0 || pyro_config_str(v, "aggregation",
		    &e->agg) < 0 || (cum != NULL && !json_is_boolean(cum))) {
			xcause(cause, "sample_type_config: \"%.64s\": want "
			    "{\"units\": \"...\", \"aggregation\": \"...\", "
			    "\"display-name\": \"...\", \"cumulative\": "
			    "true|false}", key);
			json_decref(root);
			pyro_config_clear(c);
			return -1;
		}
		e->cumulative = cum != NULL && json_is_true(cum);
	}
	json_decref(root);
	return 0;
}

/* Frees a config. */
void
pyro_config_clear(struct pyro_config *c)
{
	size_t	i;

	for (i = 0; i < c->n; i++) {
		free(c->e[i].name);
		free(c->e[i].display);
		free(c->e[i].units);
		free(c->e[i].agg);
	}
	free(c->e);
	memset(c, 0, sizeof c[0]);
}

/* profd's type from the display names; see the header. */
const char *
pyro_config_type(const struct pyro_config *c)
{
	const struct pyro_name_type	*t;
	size_t				 i;

	for (i = 0; i < c->n; i++)
		if (c->e[i].display != NULL &&
		    (t = pyro_name_type(c->e[i].display)) != NULL)
			return t->type;
	return NULL;
}
