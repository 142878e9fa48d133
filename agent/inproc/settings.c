/*
 * Agent settings: checks a struct profd_agent_config into a struct
 * settings with defaults, and reads one from the PROFD_* environment.
 * Every problem is reported as one sentence naming the setting, so
 * LD_PRELOAD users see a single clear line on stderr and the program keeps
 * running unprofiled.
 */
#include <ctype.h>
#include <signal.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <limits.h>

#include "agent/inproc/settings.h"
#include "common/xmalloc.h"

/* Checks label pairs: keys [A-Za-z_][A-Za-z0-9_.-]{0,63}, values <= 512. */
int
settings_check_labels(const char *labels, char **cause)
{
	const char *p = labels, *k, *eq, *end;
	size_t n = 0;

	if (labels == NULL || *labels == '\0')
		return 0;
	while (*p != '\0') {
		end = strchr(p, ',');
		if (end == NULL)
			end = p + strlen(p);
		eq = memchr(p, '=', (size_t)(end - p));
		if (eq == NULL || eq == p)
			return xcause(cause, "label \"%.*s\" is not key=value",
			    (int)(end - p), p);
		if (eq - p > 64 || !(isalpha((unsigned char)*p) || *p == '_'))
			return xcause(cause, "label key \"%.*s\" is not valid",
			    (int)(eq - p), p);
		for (k = p; k < eq; k++) {
			if (!isalnum((unsigned char)*k) && *k != '_' &&
			    *k != '.' && *k != '-')
				return xcause(cause, "label key \"%.*s\" is not"
				    " valid", (int)(eq - p), p);
		}
		if (end - eq - 1 > 512)
			return xcause(cause, "label \"%.*s\" has a value over "
			    "512 bytes", (int)(eq - p), p);
		if (++n > 64)
			return xcause(cause, "more than 64 labels");
		p = *end == ',' ? end + 1 : end;
	}
	return 0;
}

/*
 * The TLS files for https:// from the environment (empty: unset), checked
 * now so that a wrong path is a bad setting, not a silent upload failure.
 */
static int
settings_tls_files(struct settings *out, char **cause)
{
	static const char *const names[] = { "PROFD_CA_FILE",
	    "PROFD_CERT_FILE", "PROFD_KEY_FILE" };
	char **fields[] = { &out->ca_file, &out->cert_file, &out->key_file };
	const char *v;
	size_t i;

	for (i = 0; i < 3; i++) {
		if ((v = getenv(names[i])) == NULL || *v == '\0')
			continue;
		if (access(v, R_OK) != 0)
			return xcause(cause, "%s=\"%s\": %s", names[i], v,
			    strerror(errno));
		*fields[i] = xstrdup(v);
	}
	if ((out->cert_file == NULL) != (out->key_file == NULL))
		return xcause(cause, "PROFD_CERT_FILE and PROFD_KEY_FILE go "
		    "together");
	return 0;
}

/* Copies in into *out with defaults, checking every field. */
int
settings_check(const struct profd_agent_config *in, struct settings *out,
    char **cause)
{
	const char *s;

	memset(out, 0, sizeof *out);
	if (in == NULL || in->service == NULL || *in->service == '\0')
		return xcause(cause, "service is required");
	for (s = in->service; *s != '\0'; s++) {
		if (iscntrl((unsigned char)*s))
			return xcause(cause, "service has a control character");
	}
	if (strlen(in->service) > 256)
		return xcause(cause, "service is longer than 256 bytes");
	if (in->hz < 0 || in->hz > 1000)
		return xcause(cause, "hz %d is not in 1..1000", in->hz);
	if (in->window_sec < 0 || in->period_sec < 0)
		return xcause(cause, "window and period must be positive");
	if (settings_check_labels(in->labels, cause) != 0)
		return -1;
	out->hz = in->hz ? in->hz : 100;
	out->period_sec = in->period_sec ? in->period_sec : 60;
	out->window_sec = in->window_sec ? in->window_sec :
	    out->period_sec < 10 ? out->period_sec : 10;
	if (out->window_sec > out->period_sec)
		return xcause(cause, "window (%d s) is longer than period "
		    "(%d s)", out->window_sec, out->period_sec);
	if (in->queue_max < 0 || in->queue_max > 1024)
		return xcause(cause, "queue size %d is not in 1..1024",
		    in->queue_max);
	out->queue_max = in->queue_max ? in->queue_max : 8;
	if (in->exit_timeout_ms < -1 ||
	    in->exit_timeout_ms > SETTINGS_MAX_EXIT_TIMEOUT_MS)
		return xcause(cause, "exit timeout %d ms is not in -1..%d",
		    in->exit_timeout_ms, SETTINGS_MAX_EXIT_TIMEOUT_MS);
	out->exit_timeout_ms = in->exit_timeout_ms == 0 ?
	    SETTINGS_DEFAULT_EXIT_TIMEOUT_MS :
	    in->exit_timeout_ms < 0 ? 0 : in->exit_timeout_ms;
	out->verbose = in->verbose;
	if (in->signal != 0 && (in->signal < SIGRTMIN ||
	    in->signal > SIGRTMAX))
		return xcause(cause, "signal %d is not a real-time signal "
		    "(%d..%d)", in->signal, SIGRTMIN, SIGRTMAX);
	out->signal = in->signal ? in->signal : SIGRTMAX - 4;
	if (!in->no_upload)
		out->collector = xstrdup(in->collector_url != NULL &&
		    *in->collector_url != '\0' ? in->collector_url :
		    SETTINGS_DEFAULT_COLLECTOR);
	else if (in->output_dir == NULL || *in->output_dir == '\0')
		return xcause(cause, "no collector and no output directory");
	out->service = xstrdup(in->service);
	if (in->labels != NULL && *in->labels != '\0')
		out->labels = xstrdup(in->labels);
	if (in->token != NULL && *in->token != '\0')
		out->token = xstrdup(in->token);
	if (settings_tls_files(out, cause) != 0)
		return -1;
	if (in->output_dir != NULL && *in->output_dir != '\0')
		out->output_dir = xstrdup(in->output_dir);
	return 0;
}

/* Frees the strings and zeroes the settings. */
void
settings_clear(struct settings *c)
{
	free(c->collector);
	free(c->service);
	free(c->labels);
	free(c->token);
	free(c->ca_file);
	free(c->cert_file);
	free(c->key_file);
	free(c->output_dir);
	memset(c, 0, sizeof *c);
}

/* Parses RTMIN+n, RTMAX-n, SIGRTMIN+n, SIGRTMAX-n or a signal number. */
int
settings_parse_signal(const char *s, int *out, char **cause)
{
	const char *p = s;
	char *end;
	long n = 0;
	int base = 0;

	if (strncmp(p, "SIG", 3) == 0)
		p += 3;
	if (strncmp(p, "RTMIN", 5) == 0 || strncmp(p, "RTMAX", 5) == 0) {
		base = p[4] == 'N' ? SIGRTMIN : SIGRTMAX;
		p += 5;
		if (*p == '\0')
			n = base;
		else if ((*p == '+' && base == SIGRTMIN) ||
		    (*p == '-' && base == SIGRTMAX)) {
			errno = 0;
			n = strtol(p + 1, &end, 10);
			if (errno != 0 || end == p + 1 || *end != '\0' ||
			    n > 64)
				n = -1;
			else
				n = *p == '+' ? base + n : base - n;
		} else
			n = -1;
	} else {
		errno = 0;
		n = strtol(p, &end, 10);
		if (errno != 0 || end == p || *end != '\0')
			n = -1;
	}
	if (n < SIGRTMIN || n > SIGRTMAX)
		return xcause(cause, "PROFD_SIGNAL=\"%s\" is not a real-time "
		    "signal (RTMIN+n, RTMAX-n or %d..%d)", s, SIGRTMIN,
		    SIGRTMAX);
	*out = (int)n;
	return 0;
}

/* A unit a number may carry, and what it multiplies the number by. */
struct settings_unit {
	const char	*suffix;
	long		 scale;
};

static const struct settings_unit settings_seconds[] = {
	{ "s", 1 }, { "m", 60 }, { "h", 3600 }, { NULL, 0 }
};
#define SETTINGS_DURATION	"a duration (seconds, or with s/m/h)"

static const struct settings_unit settings_millis[] = {
	{ "ms", 1 }, { "s", 1000 }, { NULL, 0 }
};

static const struct settings_unit settings_bytes[] = {
	{ "k", 1024 }, { "K", 1024 }, { "KiB", 1024 }, { "m", 1 << 20 },
	{ "M", 1 << 20 }, { "MiB", 1 << 20 }, { NULL, 0 }
};

/*
 * Parses the integer variable name into *out (unset or empty: left as
 * is), within [lo, hi] once scaled by one of units (NULL: a bare number);
 * what says what was expected.
 */
static int
settings_env_int(const char *name, int lo, int hi,
    const struct settings_unit *units, const char *what, int *out,
    char **cause)
{
	const char *v = getenv(name);
	const struct settings_unit *u;
	char *end;
	long n;

	if (v == NULL || *v == '\0')
		return 0;
	errno = 0;
	n = strtol(v, &end, 10);
	for (u = units; u != NULL && u->suffix != NULL && end != v; u++) {
		if (strcmp(end, u->suffix) == 0 && n <= hi / u->scale) {
			n *= u->scale;
			end += strlen(u->suffix);
			break;
		}
	}
	if (errno != 0 || end == v || *end != '\0' || n < lo || n > hi)
		return xcause(cause, "%s=\"%s\" is not %s in %d..%d", name, v,
		    what, lo, hi);
	*out = (int)n;
	return 0;
}

/* Fills a struct profd_agent_config from the PROFD_* variables. */
int
settings_from_env(struct profd_agent_config *out, char **cause)
{
	const char *v;

	memset(out, 0, sizeof *out);
	if ((out->service = getenv("PROFD_SERVICE")) == NULL)
		return 0;
	if (*out->service == '\0')
		return xcause(cause, "PROFD_SERVICE is empty");
	out->collector_url = getenv("PROFD_COLLECTOR");
	out->labels = getenv("PROFD_LABELS");
	out->token = getenv("PROFD_TOKEN");
	out->output_dir = getenv("PROFD_OUTPUT_DIR");
	if ((out->collector_url == NULL || *out->collector_url == '\0') &&
	    out->output_dir != NULL && *out->output_dir != '\0')
		out->no_upload = 1;
	if (settings_env_int("PROFD_HZ", 1, 1000, NULL, "a whole number",
	    &out->hz, cause) != 0 ||
	    settings_env_int("PROFD_WINDOW", 1, 86400, settings_seconds,
	    SETTINGS_DURATION, &out->window_sec, cause) != 0 ||
	    settings_env_int("PROFD_PERIOD", 1, 86400, settings_seconds,
	    SETTINGS_DURATION, &out->period_sec, cause) != 0 ||
	    settings_env_int("PROFD_QUEUE", 1, 1024, NULL, "a whole number",
	    &out->queue_max, cause) != 0 ||
	    settings_env_int("PROFD_EXIT_TIMEOUT", 0,
	    SETTINGS_MAX_EXIT_TIMEOUT_MS, settings_millis,
	    "a duration (milliseconds, or with ms/s)", &out->exit_timeout_ms,
	    cause) != 0)
		return -1;
	/* 0 in the variable: do not wait; 0 in the config: the default. */
	if ((v = getenv("PROFD_EXIT_TIMEOUT")) != NULL && *v != '\0' &&
	    out->exit_timeout_ms == 0)
		out->exit_timeout_ms = -1;
	if ((v = getenv("PROFD_SIGNAL")) != NULL && *v != '\0' &&
	    settings_parse_signal(v, &out->signal, cause) != 0)
		return -1;
	if ((v = getenv("PROFD_VERBOSE")) != NULL && *v != '\0' &&
	    strcmp(v, "0") != 0)
		out->verbose = 1;
	if (settings_check_labels(out->labels, cause) != 0) {
		if (cause == NULL)
			return -1;
		v = *cause;
		*cause = xasprintf("PROFD_LABELS: %s", v);
		free((char *)(uintptr_t)v);
		return -1;
	}
	return 1;
}

/* PROFD_HEAP_RATE: the heap profiler's mean bytes between samples. */
int
settings_heap_rate(int *out, char **cause)
{
	*out = 0;
	return settings_env_int("PROFD_HEAP_RATE", 1, 1 << 30, settings_bytes,
	    "a size in bytes (or with k/m)", out, cause);
}

/* PROFD_PACING: auto (or unset, on) uses the collector's pacing; off not. */
int
settings_pacing_off(int *off, char **cause)
{
	const char *v = getenv("PROFD_PACING");

	*off = 0;
	if (v == NULL || *v == '\0' || strcmp(v, "auto") == 0 ||
	    strcmp(v, "on") == 0)
		return 0;
	if (strcmp(v, "off") == 0) {
		*off = 1;
		return 0;
	}
	return xcause(cause, "PROFD_PACING=\"%s\" is not auto or off", v);
}

/* PROFD_PYTHON_FRAMES: on (or unset) shows Python's own functions; off
 * keeps a CPython program's native stacks. */
int
settings_python_frames(int *on, char **cause)
{
	const char *v = getenv("PROFD_PYTHON_FRAMES");

	*on = 1;
	if (v == NULL || *v == '\0' || strcmp(v, "on") == 0 ||
	    strcmp(v, "1") == 0)
		return 0;
	if (strcmp(v, "off") == 0 || strcmp(v, "0") == 0) {
		*on = 0;
		return 0;
	}
	return xcause(cause, "PROFD_PYTHON_FRAMES=\"%s\" is not on or off",
	    v);
}

/*
 * The labels sent with each profile: the configured ones plus pid and
 * exe (the executable's base name), unless configured already.
 */
char *
settings_process_labels(const char *labels)
{
	char exe[PATH_MAX], *base, *p, *out;
	ssize_t r;
	int has_pid, has_exe;

	has_pid = labels != NULL && (strncmp(labels, "pid=", 4) == 0 ||
	    strstr(labels, ",pid=") != NULL);
	has_exe = labels != NULL && (strncmp(labels, "exe=", 4) == 0 ||
	    strstr(labels, ",exe=") != NULL);
	if ((r = readlink("/proc/self/exe", exe, sizeof exe - 1)) <= 0)
		r = 0;
	exe[r] = '\0';
	base = strrchr(exe, '/') != NULL ? strrchr(exe, '/') + 1 : exe;
	if (strlen(base) > 200)
		base[200] = '\0';
	for (p = base; *p != '\0'; p++) {
		if (*p == ',' || *p == '=' || (unsigned char)*p < 0x20)
			*p = '_';
	}
	out = xstrdup(labels != NULL ? labels : "");
	if (!has_pid) {
		p = xasprintf("%s%spid=%d", out, *out ? "," : "",
		    (int)getpid());
		free(out);
		out = p;
	}
	if (!has_exe && *base != '\0') {
		p = xasprintf("%s%sexe=%s", out, *out ? "," : "", base);
		free(out);
		out = p;
	}
	return out;
}
