/*
 * profd's settings: one table of options serves the command-line flags
 * (--name value) and the config file (name = value lines), so both always
 * take the same names and values. Flags win over the file.
 */
#ifndef PROFD_CONFIG_H
#define PROFD_CONFIG_H

#include <stdint.h>
#include <stdio.h>

struct config {
	char		*addr;			/* host:port */
	char		*data_dir;
	char		*store;			/* postgresql://...; NULL: the
						   embedded store in data_dir */
	int64_t		 store_pool;		/* connections to it */
	int64_t		 retention_ns;		/* 0: keep forever */
	int64_t		 retention_interval_ns;	/* between sweeps */
	int64_t		 rollup_delay_ns;	/* compact buckets this old;
						   0: no compaction */
	int64_t		 compact_pause_ns;	/* between compactions */
	int64_t		 max_future_ns;		/* refuse later profiles */
	int64_t		 workers;
	int64_t		 max_queue;
	int64_t		 io_threads;
	uint64_t	 max_body;
	uint64_t	 max_body_memory;	/* bodies in flight */
	uint64_t	 max_inflated;
	int64_t		 max_labels;
	int64_t		 max_merge_profiles;
	int64_t		 max_merges;		/* merges running at once */
	int64_t		 max_samples;		/* per uploaded profile */
	uint64_t	 merge_memory;		/* all merges together */
	int64_t		 request_timeout;	/* seconds */
	int64_t		 read_timeout;		/* seconds */
	int64_t		 max_connections;
	int64_t		 profile_rate;		/* windows a minute per (service,
						   type), /api/0/agents/poll */
	char		*log_level;
	char		*log_file;
	char		*auth_file;
	char		*tls_cert;		/* PEM chain: HTTPS on --addr */
	char		*tls_key;
	char		*tls_client_ca;		/* mutual TLS */
	char		*config_file;
	int		 rebuild_meta;		/* --rebuild-meta: a mode, not a
						   setting (no config key) */
	char		*copy_to;		/* --copy-to DEST: likewise */
};

/* Fills the defaults (workers = number of cores). */
void	config_defaults(struct config *);
void	config_clear(struct config *);
/*
 * Parses argv (and the --config file it names). Returns 0 to run (or to
 * rebuild, with --rebuild-meta), 1 when --help or --version was printed,
 * -1 with *cause on a bad flag or value.
 */
int	config_parse_args(struct config *, int argc, char **argv, char **cause);
/* Applies a config file; errors name the line. */
int	config_load_file(struct config *, const char *path, char **cause);
/* Writes the flags' help text. */
void	config_usage(FILE *);

#endif
