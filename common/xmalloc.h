/*
 * Allocation wrappers. Running out of memory is fatal in one place (here),
 * so callers never carry half-handled NULL checks.
 */
#ifndef PROFD_XMALLOC_H
#define PROFD_XMALLOC_H

#include <stdarg.h>
#include <stddef.h>

void	*xmalloc(size_t);
void	*xcalloc(size_t, size_t);
void	*xreallocarray(void *, size_t, size_t);
char	*xstrdup(const char *);
char	*xstrndup(const char *, size_t);
/* Formats into a new string; aborts on failure. */
char	*xasprintf(const char *, ...) __attribute__((format(printf, 1, 2)));
char	*xvasprintf(const char *, va_list) __attribute__((format(printf, 1, 0)));
/* If cause is not NULL, sets *cause to a new formatted string. Returns -1. */
int	 xcause(char **cause, const char *, ...) __attribute__((format(printf, 2, 3)));

#endif
