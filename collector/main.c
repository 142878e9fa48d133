/*
 * profd: the collector daemon. Reads the flags and config file, sets up
 * logging, and runs the server until SIGTERM or SIGINT; or, with
 * --rebuild-meta, rebuilds meta.db from the blobs and exits, or with
 * --copy-to, copies the store into another and exits (logging to
 * stderr, for the operator at the terminal).
 */
#include <stdio.h>
#include <stdlib.h>

#include "collector/config.h"
#include "collector/copy.h"
#include "collector/rebuild.h"
#include "collector/server.h"
#include "common/log.h"

int
main(int argc, char **argv)
{
	struct config cfg;
	struct server srv;
	char *cause = NULL;
	int rc;

	config_defaults(&cfg);
	rc = config_parse_args(&cfg, argc, argv, &cause);
	if (rc != 0) {
		if (rc < 0) {
			fprintf(stderr, "profd: %s\n", cause);
			free(cause);
		}
		config_clear(&cfg);
		return rc < 0 ? 2 : 0;
	}
	log_set_level(log_parse_level(cfg.log_level));
	if (cfg.copy_to != NULL) {
		rc = copy_run(&cfg);
		config_clear(&cfg);
		return rc;
	}
	if (cfg.rebuild_meta) {
		rc = rebuild_run(&cfg);
		config_clear(&cfg);
		return rc;
	}
	if (log_open(cfg.log_file, &cause) < 0) {
		fprintf(stderr, "profd: %s\n", cause);
		free(cause);
		config_clear(&cfg);
		return 1;
	}
	if (server_start(&srv, &cfg, &cause) < 0) {
		log_error("%s", cause);
		free(cause);
		server_free(&srv);
		log_close();
		config_clear(&cfg);
		return 1;
	}
	server_run(&srv);
	server_free(&srv);
	log_info("stopped");
	log_close();
	config_clear(&cfg);
	return 0;
}
