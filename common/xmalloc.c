/*
 * Allocation wrappers that abort with a message instead of returning NULL.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"

/* Prints why and aborts; the only place allocation failure is handled. */
static void
xmalloc_fatal(const char *what, size_t n)
{
	fprintf(stderr, "profd: %s: out of memory (%zu bytes)\n", what, n);
	abort();
}

/* malloc that never returns NULL (zero-size requests get one byte). */
void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		xmalloc_fatal(__func__, n);
	return p;
}

/* calloc that never returns NULL. */
void *
xcalloc(size_t nmemb, size_t size)
{
	void *p;

	if (nmemb == 0 || size == 0)
		nmemb = size = 1;
	if ((p = calloc(nmemb, size)) == NULL)
		xmalloc_fatal(__func__, nmemb * size);
	return p;
}

/* realloc of nmemb * size with overflow check. */
void *
xreallocarray(void *ptr, size_t nmemb, size_t size)
{
	void *p;

	if (size != 0 && nmemb > SIZE_MAX / size)
		xmalloc_fatal(__func__, SIZE_MAX);
	if ((p = realloc(ptr, nmemb * size != 0 ? nmemb * size : 1)) == NULL)
		xmalloc_fatal(__func__, nmemb * size);
	return p;
}

/* strdup that never returns NULL. */
char *
xstrdup(const char *s)
{
	char *p = strdup(s);

	if (p == NULL)
		xmalloc_fatal(__func__, strlen(s));
	return p;
}

/* strndup that never returns NULL. */
char *
xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);

	if (p == NULL)
		xmalloc_fatal(__func__, n);
	return p;
}

/* vasprintf that never returns NULL. */
char *
xvasprintf(const char *fmt, va_list ap)
{
	char *s;

	if (vasprintf(&s, fmt, ap) == -1)
		xmalloc_fatal(__func__, 0);
	return s;
}

/* asprintf that never returns NULL. */
char *
xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = xvasprintf(fmt, ap);
	va_end(ap);
	return s;
}

/* Sets *cause (when wanted) to a formatted reason; returns -1. */
int
xcause(char **cause, const char *fmt, ...)
{
	va_list ap;

	if (cause == NULL)
		return -1;
	va_start(ap, fmt);
	*cause = xvasprintf(fmt, ap);
	va_end(ap);
	return -1;
}
