/*
 * Plain driver for the fuzz targets: without libFuzzer, runs
 * LLVMFuzzerTestOneInput once on every file named on the command line (a
 * directory stands for the files in it, in name order). Used by
 * test/fuzz/regress.sh to replay the regression inputs in every build;
 * a crash, a sanitizer report or a failed FUZZ_ASSERT makes it fail.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "test/fuzz/fuzz.h"

/* Reads a whole file into a new buffer; *len: OUT its size. */
static uint8_t *
fuzz_main_read(const char *path, size_t *len)
{
	FILE	*f;
	uint8_t	*buf = NULL;
	size_t	 cap = 0, n;

	*len = 0;
	if ((f = fopen(path, "rb")) == NULL) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return NULL;
	}
	for (;;) {
		if (*len == cap) {
			cap = cap ? cap * 2 : 65536;
			buf = xreallocarray(buf, cap, 1);
		}
		n = fread(buf + *len, 1, cap - *len, f);
		if (n == 0)
			break;
		*len += n;
	}
	fclose(f);
	return buf;
}

/* Runs the target on one file; returns 0 or -1 if it cannot be read. */
static int
fuzz_main_file(const char *path)
{
	uint8_t	*buf;
	size_t	 len;

	if ((buf = fuzz_main_read(path, &len)) == NULL)
		return -1;
	printf("running %s (%zu bytes)\n", path, len);
	fflush(stdout);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

/* Orders directory entries by name. */
static int
fuzz_main_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs the target on every regular file in dir. */
static int
fuzz_main_dir(const char *dir)
{
	DIR		 *d;
	struct dirent	 *de;
	char		**names = NULL, *path;
	size_t		  n = 0, i;
	int		  ret = 0;

	if ((d = opendir(dir)) == NULL) {
		fprintf(stderr, "%s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		names = xreallocarray(names, n + 1, sizeof *names);
		names[n++] = xstrdup(de->d_name);
	}
	closedir(d);
	if (n > 0)
		qsort(names, n, sizeof *names, fuzz_main_cmp);
	for (i = 0; i < n; i++) {
		path = xasprintf("%s/%s", dir, names[i]);
		if (fuzz_main_file(path) < 0)
			ret = -1;
		free(path);
		free(names[i]);
	}
	free(names);
	return ret;
}

/* Replays every FILE or DIR argument; exits 1 if one cannot be read. */
int
main(int argc, char **argv)
{
	struct stat	st;
	int		i, ret = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR ...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			if (fuzz_main_dir(argv[i]) < 0)
				ret = 1;
		} else if (fuzz_main_file(argv[i]) < 0)
			ret = 1;
	}
	return ret;
}
