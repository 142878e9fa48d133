/*
 * Option table, flag parsing and config-file parsing.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/config.h"
#include "common/parse.h"
#include "common/log.h"
#include "common/xmalloc.h"

enum config_kind { CONFIG_STRING, CONFIG_INT, CONFIG_SIZE, CONFIG_DURATION,
    CONFIG_LEVEL };

struct config_option {
	const char		*name;
	enum config_kind	 kind;
	size_t			 offset;
	int64_t			 min, max;	/* CONFIG_INT; DURATION: min */
	const char		*help;		/* NULL: hidden (for tests) */
};

#define OFF(f)	offsetof(struct config, f)
static const struct config_option config_options[] = {
	{ "addr", CONFIG_STRING, OFF(addr), 0, 0,
	    "HOST:PORT to listen on (default 127.0.0.1:10100; port 0 = any)" },
	{ "data-dir", CONFIG_STRING, OFF(data_dir), 0, 0,
	    "directory for meta.db and blobs/ (default ./data)" },
	{ "store", CONFIG_STRING, OFF(store), 0, 0,
	    "postgresql://... : keep everything in this PostgreSQL database "
	    "instead of --data-dir (several collectors may share it)" },
	{ "store-pool", CONFIG_INT, OFF(store_pool), 1, 1024,
	    "connections to the --store database (default 8)" },
	{ "retention", CONFIG_DURATION, OFF(retention_ns), 0, 0,
	    "delete profiles older than this (default 7d; 0 keeps forever)" },
	{ "retention-interval", CONFIG_DURATION, OFF(retention_interval_ns),
	    1, 0, NULL },
	{ "rollup-delay", CONFIG_DURATION, OFF(rollup_delay_ns), 0, 0,
	    "compact profiles into rollups once their minute ended this long "
	    "ago (default 2m; 0: no rollups)" },
	{ "compact-pause", CONFIG_DURATION, OFF(compact_pause_ns), 0, 0,
	    NULL },
	{ "max-future", CONFIG_DURATION, OFF(max_future_ns), 0, 0,
	    "refuse profiles dated further ahead than this (default 1h)" },
	{ "workers", CONFIG_INT, OFF(workers), 1, 256,
	    "worker threads (default: number of cores)" },
	{ "io-threads", CONFIG_INT, OFF(io_threads), 1, 1024,
	    "threads that wait on durable writes (default 32)" },
	{ "max-queue", CONFIG_INT, OFF(max_queue), 1, 1000000,
	    "jobs waiting for a worker before 503 (default 1024)" },
	{ "max-body", CONFIG_SIZE, OFF(max_body), 0, 0,
	    "largest upload body (default 32M)" },
	{ "max-body-memory", CONFIG_SIZE, OFF(max_body_memory), 0, 0,
	    "bytes all request bodies in flight may hold; past it 503 "
	    "(default 256M; 0: no limit)" },
	{ "max-inflated", CONFIG_SIZE, OFF(max_inflated), 0, 0,
	    "largest inflated profile (default 256M)" },
	{ "max-labels", CONFIG_INT, OFF(max_labels), 1, 1024,
	    "labels per profile (default 64)" },
	{ "max-merge-profiles", CONFIG_INT, OFF(max_merge_profiles), 1,
	    10000000, "profiles in one merge (default 10000)" },
	{ "max-merges", CONFIG_INT, OFF(max_merges), 1, 1024,
	    "merges at once, on their own threads, before 503 (default: "
	    "cores)" },
	{ "max-samples", CONFIG_INT, OFF(max_samples), 1, INT64_MAX,
	    "samples per uploaded profile (default 1000000)" },
	{ "merge-memory", CONFIG_SIZE, OFF(merge_memory), 0, 0,
	    "memory all merges together may hold (default 512M)" },
	{ "request-timeout", CONFIG_INT, OFF(request_timeout), 1, 86400,
	    "seconds a request may take, then 503/504 and its work is "
	    "cancelled (default 60)" },
	{ "read-timeout", CONFIG_INT, OFF(read_timeout), 1, 86400,
	    "seconds to receive a request (default 60)" },
	{ "max-connections", CONFIG_INT, OFF(max_connections), 1, 1000000,
	    "open client connections (default 1024)" },
	{ "profile-rate", CONFIG_INT, OFF(profile_rate), 0, 600,
	    "profiling windows granted per minute to the agents of a service "
	    "polling /api/0/agents/poll, per profile type; 0: pacing off, "
	    "agents keep their own schedules (default 0)" },
	{ "log-level", CONFIG_LEVEL, OFF(log_level), 0, 0,
	    "debug, info, warn or error (default info)" },
	{ "log-file", CONFIG_STRING, OFF(log_file), 0, 0,
	    "log to this file instead of stderr (reopened on SIGHUP)" },
	{ "auth-file", CONFIG_STRING, OFF(auth_file), 0, 0,
	    "bearer tokens file: lines 'TOKEN read|write|admin'" },
	{ "tls-cert", CONFIG_STRING, OFF(tls_cert), 0, 0,
	    "serve HTTPS with this certificate chain (PEM; re-read on "
	    "SIGHUP)" },
	{ "tls-key", CONFIG_STRING, OFF(tls_key), 0, 0,
	    "the private key of --tls-cert (PEM)" },
	{ "tls-client-ca", CONFIG_STRING, OFF(tls_client_ca), 0, 0,
	    "mutual TLS: client certificates must chain to these CAs" },
};
#define NOPTIONS	(sizeof config_options / sizeof config_options[0])

/* Sets every option to its default. */
void
config_defaults(struct config *c)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	memset(c, 0, sizeof *c);
	c->addr = xstrdup("127.0.0.1:10100");
	c->data_dir = xstrdup("./data");
	c->store_pool = 8;
	c->retention_ns = INT64_C(7) * 86400 * 1000000000;
	c->retention_interval_ns = INT64_C(60) * 1000000000;
	c->rollup_delay_ns = INT64_C(120) * 1000000000;
	c->compact_pause_ns = INT64_C(5) * 1000000;
	c->max_future_ns = INT64_C(3600) * 1000000000;
	c->workers = cores > 0 ? cores : 2;
	c->max_queue = 1024;
	c->io_threads = 32;
	c->max_body = 32 * 1024 * 1024;
	c->max_body_memory = 256 * 1024 * 1024;
	c->max_inflated = 256 * 1024 * 1024;
	c->max_labels = 64;
	c->max_merge_profiles = 10000;
	c->max_merges = cores > 0 ? cores : 2;
	c->max_samples = 1000000;
	c->merge_memory = 512 * 1024 * 1024;
	c->request_timeout = 60;
	c->read_timeout = 60;
	c->max_connections = 1024;
	c->profile_rate = 0;
	c->log_level = xstrdup("info");
}

/* Frees the strings. */
void
config_clear(struct config *c)
{
	free(c->addr);
	free(c->data_dir);
	free(c->store);
	free(c->copy_to);
	free(c->log_level);
	free(c->log_file);
	free(c->auth_file);
	free(c->tls_cert);
	free(c->tls_key);
	free(c->tls_client_ca);
	free(c->config_file);
	memset(c, 0, sizeof *c);
}

/* Finds an option by name. */
static const struct config_option *
config_find(const char *name)
{
	size_t i;

	for (i = 0; i < NOPTIONS; i++) {
		if (strcmp(config_options[i].name, name) == 0)
			return &config_options[i];
	}
	return NULL;
}

/* Stores value into the option's field. */
static int
config_set(struct config *c, const struct config_option *o, const char *value,
    char **cause)
{
	char *field = (char *)c + o->offset, *why = NULL;
	int64_t v;
	uint64_t u;

	switch (o->kind) {
	case CONFIG_STRING:
	case CONFIG_LEVEL:
		if (o->kind == CONFIG_LEVEL && log_parse_level(value) < 0)
			return xcause(cause, "%s: unknown level \"%s\" (want "
			    "debug, info, warn or error)", o->name, value);
		if (*value == '\0')
			return xcause(cause, "%s: empty value", o->name);
		free(*(char **)field);
		*(char **)field = xstrdup(value);
		return 0;
	case CONFIG_INT:
		if (parse_int(value, o->min, o->max, &v, &why) < 0)
			break;
		*(int64_t *)field = v;
		return 0;
	case CONFIG_SIZE:
		if (parse_size(value, &u, &why) < 0)
			break;
		if (u == 0) {
			why = xstrdup("must be more than 0");
			break;
		}
		*(uint64_t *)field = u;
		return 0;
	case CONFIG_DURATION:
		if (parse_duration(value, &v, &why) < 0)
			break;
		if (v < o->min) {
			why = xstrdup("must be more than 0");
			break;
		}
		*(int64_t *)field = v;
		return 0;
	}
	xcause(cause, "%s: %s", o->name, why);
	free(why);
	return -1;
}

/* Strips leading and trailing blanks in place. */
static char *
config_trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' ||
	    e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/* Reads name = value lines; '#' starts a comment line. */
int
config_load_file(struct config *c, const char *path, char **cause)
{
	const struct config_option *o;
	FILE *f;
	char *line = NULL, *s, *eq, *name, *value, *why = NULL;
	size_t cap = 0, lineno = 0;
	int rc = -1;

	if ((f = fopen(path, "r")) == NULL)
		return xcause(cause, "cannot open config %s: %s", path,
		    strerror(errno));
	while (getline(&line, &cap, f) != -1) {
		lineno++;
		s = config_trim(line);
		if (*s == '\0' || *s == '#')
			continue;
		if ((eq = strchr(s, '=')) == NULL) {
			xcause(cause, "%s:%zu: want name = value", path, lineno);
			goto out;
		}
		*eq = '\0';
		name = config_trim(s);
		value = config_trim(eq + 1);
		if ((o = config_find(name)) == NULL) {
			xcause(cause, "%s:%zu: unknown setting \"%s\"", path,
			    lineno, name);
			goto out;
		}
		if (config_set(c, o, value, &why) < 0) {
			xcause(cause, "%s:%zu: %s", path, lineno, why);
			free(why);
			goto out;
		}
	}
	rc = 0;
out:
	free(line);
	fclose(f);
	return rc;
}

/* Prints usage. */
void
config_usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: profd [--config FILE] [--OPTION VALUE ...]\n"
	    "       profd --rebuild-meta [--config FILE] [--data-dir DIR]\n"
	    "       profd --copy-to DIR|URI [--config FILE] [--data-dir DIR | "
	    "--store URI]\n"
	    "       profd --help | --version\n\noptions:\n");
	fprintf(f, "  --%-20s %s\n", "config FILE",
	    "read name = value lines (same names as the flags)");
	fprintf(f, "  --%-20s %s\n%25s%s\n", "rebuild-meta",
	    "rebuild a missing or empty DATA_DIR/meta.db from the blobs",
	    "", "(and orphans/), print what was done and exit");
	fprintf(f, "  --%-20s %s\n%25s%s\n", "copy-to DIR|URI",
	    "copy every profile of the store into another (a data directory",
	    "", " or postgresql://...), verify, print what was done and exit");
	for (i = 0; i < NOPTIONS; i++) {
		if (config_options[i].help != NULL)
			fprintf(f, "  --%-20s %s\n", config_options[i].name,
			    config_options[i].help);
	}
}

/* Splits "--name=value" or "--name value". */
static int
config_flag(int argc, char **argv, int *i, char **name, const char **value,
    char **cause)
{
	char *arg = argv[*i] + 2, *eq = strchr(arg, '=');

	if (eq != NULL) {
		*name = xstrndup(arg, eq - arg);
		*value = eq + 1;
		return 0;
	}
	*name = xstrdup(arg);
	if (*i + 1 >= argc) {
		xcause(cause, "--%s needs a value", *name);
		free(*name);
		return -1;
	}
	*value = argv[++*i];
	return 0;
}

/* Reads the flags: the config file first, then the flags over it. */
int
config_parse_args(struct config *c, int argc, char **argv, char **cause)
{
	const struct config_option *o;
	const char *value;
	char *name, *why = NULL;
	int i, pass;

	for (pass = 0; pass < 2; pass++) {
		for (i = 1; i < argc; i++) {
			if (strcmp(argv[i], "--help") == 0 ||
			    strcmp(argv[i], "-h") == 0) {
				if (pass == 0)
					continue;
				config_usage(stdout);
				return 1;
			}
			if (strcmp(argv[i], "--version") == 0) {
				if (pass == 0)
					continue;
				printf("profd %s\n", PACKAGE_VERSION);
				return 1;
			}
			if (strcmp(argv[i], "--rebuild-meta") == 0) {
				c->rebuild_meta = 1;
				continue;
			}
			if (strncmp(argv[i], "--", 2) != 0)
				return xcause(cause, "unexpected argument \"%s\""
				    " (see --help)", argv[i]);
			if (config_flag(argc, argv, &i, &name, &value, cause) < 0)
				return -1;
			if (strcmp(name, "copy-to") == 0) {
				free(c->copy_to);
				c->copy_to = xstrdup(value);
				free(name);
				continue;
			}
			if (strcmp(name, "config") == 0) {
				if (pass == 0 &&
				    config_load_file(c, value, cause) < 0) {
					free(name);
					return -1;
				}
				free(c->config_file);
				c->config_file = xstrdup(value);
				free(name);
				continue;
			}
			if ((o = config_find(name)) == NULL) {
				xcause(cause, "unknown option --%s (see --help)",
				    name);
				free(name);
				return -1;
			}
			free(name);
			if (pass == 1 && config_set(c, o, value, &why) < 0) {
				xcause(cause, "--%s", why);
				free(why);
				return -1;
			}
		}
	}
	if ((c->tls_cert == NULL) != (c->tls_key == NULL))
		return xcause(cause, "--tls-cert and --tls-key go together");
	if (c->tls_client_ca != NULL && c->tls_cert == NULL)
		return xcause(cause, "--tls-client-ca needs --tls-cert");
	return 0;
}
