/*
 * read_file() for the C tests that read corpus files whole.
 */
#ifndef PROFD_TEST_READFILE_H
#define PROFD_TEST_READFILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Reads a whole file into a new buffer; NULL on error. */
static inline uint8_t *
read_file(const char *path, size_t *len)
{
	FILE	*f;
	uint8_t	*buf;
	long	 n;

	if ((f = fopen(path, "rb")) == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0) {
		fclose(f);
		return NULL;
	}
	buf = malloc((size_t)n + 1);
	if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

#endif
