/*
 * Fuzz target for the config-file parser (config_load_file in
 * collector/config.c): the input is written to an in-memory file (memfd,
 * or a temp file where memfd is missing) and loaded over the defaults.
 * Properties: an error has a reason naming the file; loaded values stay
 * within the option table's ranges and strings are never empty.
 */
#include <sys/mman.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "collector/config.h"
#include "test/fuzz/fuzz.h"

static int	fuzz_config_fd = -1;
static char	fuzz_config_path[64];

/* Removes the fallback temp file at exit. */
static void
fuzz_config_unlink(void)
{
	unlink(fuzz_config_path);
}

/* Opens the file the inputs are written to, once per process. */
static void
fuzz_config_open(void)
{
#ifdef MFD_CLOEXEC
	fuzz_config_fd = memfd_create("fuzz_config", MFD_CLOEXEC);
	if (fuzz_config_fd >= 0) {
		snprintf(fuzz_config_path, sizeof fuzz_config_path,
		    "/proc/self/fd/%d", fuzz_config_fd);
		if (access(fuzz_config_path, R_OK) == 0)
			return;
		close(fuzz_config_fd);
	}
#endif
	snprintf(fuzz_config_path, sizeof fuzz_config_path,
	    "/tmp/fuzz_config.XXXXXX");
	fuzz_config_fd = mkstemp(fuzz_config_path);
	FUZZ_ASSERT(fuzz_config_fd >= 0);
	atexit(fuzz_config_unlink);
}

/* Replaces the file's contents with the input. */
static void
fuzz_config_write(const uint8_t *data, size_t size)
{
	size_t	off = 0;
	ssize_t	n;

	FUZZ_ASSERT(ftruncate(fuzz_config_fd, 0) == 0);
	while (off < size) {
		n = pwrite(fuzz_config_fd, data + off, size - off, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		FUZZ_ASSERT(n > 0);
		off += (size_t)n;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config	 c;
	char		*cause = NULL;

	if (fuzz_config_fd < 0)
		fuzz_config_open();
	fuzz_config_write(data, size);
	config_defaults(&c);
	if (config_load_file(&c, fuzz_config_path, &cause) != 0) {
		FUZZ_ASSERT(cause != NULL &&
		    strncmp(cause, fuzz_config_path,
		    strlen(fuzz_config_path)) == 0);
		free(cause);
	} else {
		FUZZ_ASSERT(cause == NULL);
		FUZZ_ASSERT(c.addr != NULL && *c.addr != '\0');
		FUZZ_ASSERT(c.data_dir != NULL && *c.data_dir != '\0');
		FUZZ_ASSERT(c.workers >= 1 && c.workers <= 256);
		FUZZ_ASSERT(c.max_queue >= 1 && c.max_queue <= 1000000);
		FUZZ_ASSERT(c.max_body > 0 && c.max_inflated > 0);
		FUZZ_ASSERT(c.max_labels >= 1 && c.max_labels <= 1024);
		FUZZ_ASSERT(c.request_timeout >= 1 && c.read_timeout >= 1);
		FUZZ_ASSERT(c.retention_ns >= 0);
		FUZZ_ASSERT(c.log_level != NULL);
	}
	config_clear(&c);
	return 0;
}
