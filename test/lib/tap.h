/*
 * A tiny TAP producer for the C unit tests: ok(cond, fmt, ...) prints
 * "ok N - ..." or "not ok N - ..." with the failing file and line,
 * todo_ok(why, cond, fmt, ...) does the same for a known bug (TAP TODO),
 * and tap_done() prints the plan and returns the exit status.
 */
#ifndef PROFD_TAP_H
#define PROFD_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tap_count, tap_failures;

/*
 * Records one result; a failure with a todo reason (a known bug, TAP's
 * "# TODO") is reported but does not fail the program.
 */
static inline int __attribute__((format(printf, 5, 0)))
tap_vresult(int pass, const char *todo, const char *file, int line,
    const char *fmt, va_list ap)
{
	tap_count++;
	if (!pass && todo == NULL)
		tap_failures++;
	printf("%sok %d - ", pass ? "" : "not ", tap_count);
	vprintf(fmt, ap);
	if (todo != NULL)
		printf(" # TODO %s", todo);
	printf("\n");
	if (!pass)
		printf("#   failed at %s:%d\n", file, line);
	fflush(stdout);
	return pass;
}

/* Records one test result. */
static inline int __attribute__((format(printf, 4, 5)))
tap_ok(int pass, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pass = tap_vresult(pass, NULL, file, line, fmt, ap);
	va_end(ap);
	return pass;
}

/* Records a result expected to fail until a known bug is fixed. */
static inline int __attribute__((format(printf, 5, 6)))
tap_todo(int pass, const char *todo, const char *file, int line,
    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pass = tap_vresult(pass, todo, file, line, fmt, ap);
	va_end(ap);
	return pass;
}

#define ok(cond, ...)	tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
/* ok() for a known bug: "not ok ... # TODO why" (the harness's XFAIL). */
#define todo_ok(why, cond, ...) \
	tap_todo(!!(cond), (why), __FILE__, __LINE__, __VA_ARGS__)

/* Prints the plan; returns the process exit status. */
static inline int
tap_done(void)
{
	printf("1..%d\n", tap_count);
	return tap_failures ? 1 : 0;
}

#endif
