/*
 * Agent settings: struct settings is the checked copy of a struct
 * profd_agent_config (defaults filled in) that the agent runs with;
 * settings_from_env reads a profd_agent_config from the PROFD_*
 * environment for LD_PRELOAD mode. (Named so it cannot be confused with
 * the collector's struct config.)
 */
#ifndef PROFD_AGENT_SETTINGS_H
#define PROFD_AGENT_SETTINGS_H

#include "agent/inproc/profd_agent.h"

#define SETTINGS_DEFAULT_COLLECTOR	"http://127.0.0.1:10100"
#define SETTINGS_DEFAULT_EXIT_TIMEOUT_MS	200
#define SETTINGS_MAX_EXIT_TIMEOUT_MS	10000

/* A checked, owned copy of the settings. */
struct settings {
	char	*collector;	/* NULL: no uploads (files only) */
	char	*service;
	char	*labels;	/* NULL or "k=v,..." */
	char	*token;
	char	*ca_file;	/* https://: PROFD_CA_FILE, PROFD_CERT_FILE, */
	char	*cert_file;	/* PROFD_KEY_FILE (in both modes: the */
	char	*key_file;	/* public config has no field for them) */
	char	*output_dir;
	int	 hz;
	int	 window_sec;
	int	 period_sec;
	int	 queue_max;
	int	 verbose;
	int	 signal;	/* a real-time signal number */
	int	 exit_timeout_ms;	/* 0: do not wait at exit */
};

/* Checks in and fills *out with defaults applied. */
int	settings_check(const struct profd_agent_config *in,
	    struct settings *out, char **cause);
/* Frees the strings of *s and zeroes it. */
void	settings_clear(struct settings *s);

/*
 * Reads PROFD_COLLECTOR, PROFD_SERVICE, PROFD_LABELS, PROFD_TOKEN,
 * PROFD_HZ, PROFD_WINDOW, PROFD_PERIOD, PROFD_QUEUE, PROFD_OUTPUT_DIR,
 * PROFD_SIGNAL, PROFD_EXIT_TIMEOUT and PROFD_VERBOSE. Returns 0 if PROFD_SERVICE is unset (agent off), 1 when
 * *out is filled (strings point into the environment), -1 on a bad value.
 */
int	settings_from_env(struct profd_agent_config *out, char **cause);

/*
 * Reads PROFD_HEAP_RATE (bytes, or with k/m) into *out, 0 if unset;
 * -1 on a bad value.
 */
int	settings_heap_rate(int *out, char **cause);

/*
 * Reads PROFD_PACING: *off is 1 for "off" (the agent never polls the
 * collector for its windows), 0 for auto (the default); -1 on a bad value.
 */
int	settings_pacing_off(int *off, char **cause);
/*
 * Reads PROFD_PYTHON_FRAMES: *on is 0 for "off" (CPython programs keep
 * their native stacks), 1 for on (the default); -1 on a bad value.
 */
int	settings_python_frames(int *on, char **cause);

/*
 * The labels sent with each profile: labels ("k=v,..." or NULL) plus pid
 * and exe (this process's; the executable's base name) unless there
 * already. Returns a new string.
 */
char	*settings_process_labels(const char *labels);

/* Parses a real-time signal: RTMIN+n, RTMAX-n (SIG prefix optional) or
 * a number in SIGRTMIN..SIGRTMAX. */
int	settings_parse_signal(const char *s, int *out, char **cause);

/* Checks "k=v,k=v" label syntax (profd's key and value rules). */
int	settings_check_labels(const char *labels, char **cause);

#endif
