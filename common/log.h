/*
 * Logging: one line per message with UTC time and level, to stderr or a
 * file (--log-file), safe from any thread. log_reopen() serves SIGHUP.
 */
#ifndef PROFD_LOG_H
#define PROFD_LOG_H

enum log_level { LOG_LEVEL_DEBUG, LOG_LEVEL_INFO, LOG_LEVEL_WARN, LOG_LEVEL_ERROR };

/* Parses "debug", "info", "warn" or "error"; returns -1 if unknown. */
int	log_parse_level(const char *);
void	log_set_level(enum log_level);
/* Logs to path (appending) instead of stderr; NULL means stderr. */
int	log_open(const char *path, char **cause);
/* Reopens the log file (for logrotate); no-op on stderr. */
void	log_reopen(void);
void	log_close(void);

void	log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_error(const char *, ...) __attribute__((format(printf, 1, 2)));

#endif
