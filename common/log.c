/*
 * Logging to stderr or an append-only file, serialized by a mutex so lines
 * from worker threads never interleave.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/xmalloc.h"

static pthread_mutex_t	 log_mutex = PTHREAD_MUTEX_INITIALIZER;
static enum log_level	 log_level = LOG_LEVEL_INFO;
static FILE		*log_file;	/* NULL: stderr */
static char		*log_path;

/* Parses a level name; returns -1 if unknown. */
int
log_parse_level(const char *s)
{
	static const char *names[] = { "debug", "info", "warn", "error" };
	size_t i;

	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (strcmp(s, names[i]) == 0)
			return (int)i;
	}
	return -1;
}

/* Sets the lowest level that is written. */
void
log_set_level(enum log_level level)
{
	log_level = level;
}

/* Directs logging to path, or back to stderr when path is NULL. */
int
log_open(const char *path, char **cause)
{
	FILE *f = NULL;

	if (path != NULL && (f = fopen(path, "a")) == NULL)
		return xcause(cause, "cannot open log file %s: %s", path,
		    strerror(errno));
	if (f != NULL)
		setvbuf(f, NULL, _IOLBF, 0);
	pthread_mutex_lock(&log_mutex);
	if (log_file != NULL)
		fclose(log_file);
	free(log_path);
	log_file = f;
	log_path = path != NULL ? xstrdup(path) : NULL;
	pthread_mutex_unlock(&log_mutex);
	return 0;
}

/* Reopens the log file under the same name (after logrotate moved it). */
void
log_reopen(void)
{
	FILE *f;

	pthread_mutex_lock(&log_mutex);
	if (log_path != NULL && (f = fopen(log_path, "a")) != NULL) {
		setvbuf(f, NULL, _IOLBF, 0);
		fclose(log_file);
		log_file = f;
	}
	pthread_mutex_unlock(&log_mutex);
}

/* Closes the log file, if any; later messages go to stderr. */
void
log_close(void)
{
	pthread_mutex_lock(&log_mutex);
	if (log_file != NULL)
		fclose(log_file);
	log_file = NULL;
	free(log_path);
	log_path = NULL;
	pthread_mutex_unlock(&log_mutex);
}

/* Writes one line: time, level, message. */
static void
log_vwrite(enum log_level level, const char *fmt, va_list ap)
{
	static const char *tags[] = { "debug", "info", "warn", "error" };
	int64_t now = clock_now_ns();
	time_t secs = (time_t)(now / 1000000000);
	struct tm tm;
	char when[32];
	FILE *out;

	if (level < log_level)
		return;
	gmtime_r(&secs, &tm);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
	pthread_mutex_lock(&log_mutex);
	out = log_file != NULL ? log_file : stderr;
	fprintf(out, "%s.%03ldZ %s: ", when, (long)(now / 1000000 % 1000),
	    tags[level]);
	vfprintf(out, fmt, ap);
	fputc('\n', out);
	fflush(out);
	pthread_mutex_unlock(&log_mutex);
}

#define LOG_FN(name, level)				\
void							\
name(const char *fmt, ...)				\
{							\
	va_list ap;					\
							\
	va_start(ap, fmt);				\
	log_vwrite(level, fmt, ap);			\
	va_end(ap);					\
}
LOG_FN(log_debug, LOG_LEVEL_DEBUG)
LOG_FN(log_info, LOG_LEVEL_INFO)
LOG_FN(log_warn, LOG_LEVEL_WARN)
LOG_FN(log_error, LOG_LEVEL_ERROR)
