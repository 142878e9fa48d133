/*
 * A tiny TAP producer for the C unit tests: ok(cond, fmt, ...) prints
 * "ok N - ..." or "not ok N - ..." with the failing file and line, and
 * tap_done() prints the plan and returns the exit status.
 */
#ifndef PROFD_TAP_H
#define PROFD_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tap_count, tap_failures;

/* Records one test result. */
static inline int __attribute__((format(printf, 4, 5)))
tap_ok(int pass, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	tap_count++;
	if (!pass)
		tap_failures++;
	printf("%sok %d - ", pass ? "" : "not ", tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!pass)
		printf("#   failed at %s:%d\n", file, line);
	fflush(stdout);
	return pass;
}

#define ok(cond, ...)	tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

/* Prints the plan; returns the process exit status. */
static inline int
tap_done(void)
{
	printf("1..%d\n", tap_count);
	return tap_failures ? 1 : 0;
}

#endif
