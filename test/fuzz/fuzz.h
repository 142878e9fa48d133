/*
 * The libFuzzer entry point every target in test/fuzz defines. The same
 * function links either with libFuzzer (--enable-fuzzing) or with
 * fuzz_main.c, a plain driver that replays files, so the regression inputs
 * in test/fuzz/regress/ run in every build.
 */
#ifndef PROFD_FUZZ_H
#define PROFD_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts with a message: a property the target checks does not hold. */
#define FUZZ_ASSERT(cond) do {						\
	if (!(cond))							\
		fuzz_fail(__FILE__, __LINE__, #cond);			\
} while (0)

/* Reports a failed property and aborts, as a crash would. */
static inline void __attribute__((noreturn))
fuzz_fail(const char *file, int line, const char *what)
{
	fprintf(stderr, "%s:%d: fuzz property failed: %s\n", file, line, what);
	abort();
}

#endif
