/*
 * The perf map reader (agent/core/perfmap.c): lines as node and the JVM
 * write them, with and without 0x; garbage, overflow, NULs, CRs and
 * lines too long skipped and counted; a later line for a start wins;
 * overlapping and adjacent code; a file that grows (a line half written
 * is read when whole), shrinks or is replaced; the bounds on bytes.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/core/perfmap.h"
#include "test/lib/tap.h"

/* Appends s to path (created if need be). */
static void
append(const char *path, const char *s, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);

	if (fd < 0 || write(fd, s, len) != (ssize_t)len)
		abort();
	close(fd);
}

static const char *
name(struct perfmap *m, uint64_t a)
{
	const char *n = perfmap_lookup(m, a);

	return n != NULL ? n : "(none)";
}

/* Parsing lines. */
static void
test_parse(void)
{
	struct perfmap *m = perfmap_new();
	struct perfmap_stats st;
	static const char text[] =
	    "3a0adca0a5de 5 Eval:~ /tmp/jit/burn.js:1:1\n"
	    "0x7f8694005b80 0x2c8 JS:*burnCpuInJsHot /tmp/jit/burn.js:1:24\n"
	    "7f8694005e80 124 JS:^burnCpuInJsHot /tmp/jit/burn.js:1:24\r\n"
	    "not a line\n"
	    "12345678901234567 10 overflow\n"
	    "1000 0 empty\n"
	    "ffffffffffffff00 200 wraps\n"
	    "2000 10\n"
	    "2000 10 \n"
	    "\n"
	    "3000 10 first\n"
	    "3000 20 second wins\n"
	    "4000 100 outer\n"
	    "4010 10 inner\n";

	perfmap_parse(m, text, sizeof text - 1);
	ok(strcmp(name(m, 0x3a0adca0a5de), "Eval:~ /tmp/jit/burn.js:1:1") == 0,
	    "a node line: its name, blanks kept");
	ok(strcmp(name(m, 0x7f8694005b80 + 0x2c7),
	    "JS:*burnCpuInJsHot /tmp/jit/burn.js:1:24") == 0,
	    "0x prefixes; the code's last byte");
	ok(perfmap_lookup(m, 0x7f8694005b80 + 0x2c8) == NULL,
	    "the byte after the code: nothing");
	ok(strcmp(name(m, 0x7f8694005e80), "JS:^burnCpuInJsHot "
	    "/tmp/jit/burn.js:1:24") == 0, "a CR before the newline dropped");
	ok(strcmp(name(m, 0x3005), "second wins") == 0 &&
	    strcmp(name(m, 0x3015), "second wins") == 0,
	    "a later line for the same start wins (%s)", name(m, 0x3005));
	ok(strcmp(name(m, 0x4015), "inner") == 0,
	    "overlapping code: the nearest start below (%s)", name(m, 0x4015));
	ok(perfmap_lookup(m, 0x4050) == NULL,
	    "past the nearest code: nothing, never the outer one's name");
	ok(perfmap_lookup(m, 0x1000) == NULL && perfmap_lookup(m, 0x2000) ==
	    NULL && perfmap_lookup(m, 0xffffffffffffff10ULL) == NULL,
	    "no entry from empty sizes, missing names or wrapping ranges");
	ok(perfmap_lookup(m, 0x10) == NULL, "below every entry: nothing");
	perfmap_stats(m, &st);
	ok(st.bad == 6, "six bad lines counted (%llu)",
	    (unsigned long long)st.bad);
	ok(st.entries == 6, "six entries kept (%zu)", st.entries);
	perfmap_parse(m, "5000 10 a\0b\n", 12);
	ok(perfmap_lookup(m, 0x5000) == NULL, "a name with a NUL: skipped");
	perfmap_free(m);
}

/* Refreshing a growing, shrinking, replaced file. */
static void
test_refresh(void)
{
	char dir[] = "/tmp/test_perfmap.XXXXXX", path[64], other[64];
	struct perfmap *m = perfmap_new();
	struct perfmap_stats st;
	char *big;
	size_t i;

	if (mkdtemp(dir) == NULL)
		abort();
	snprintf(path, sizeof path, "%s/perf-1.map", dir);
	snprintf(other, sizeof other, "%s/other.map", dir);
	ok(perfmap_refresh(m, path, 0) == -1, "no file: -1");
	append(path, "500 10 stale\n", 13);
	ok(perfmap_refresh(m, path, (int64_t)time(NULL) + 60) == -1 &&
	    perfmap_lookup(m, 0x500) == NULL,
	    "a file older than the process: another's, not read");
	ok(perfmap_process_start(0) > 1000000000 &&
	    perfmap_process_start(0) <= (int64_t)time(NULL),
	    "this process's start time");
	unlink(path);
	append(path, "1000 10 one\n2000 10 tw", 22);
	ok(perfmap_refresh(m, path, 0) == 0 && strcmp(name(m, 0x1000), "one") == 0,
	    "the first refresh reads the file");
	ok(perfmap_lookup(m, 0x2000) == NULL,
	    "a line being written is not read yet");
	append(path, "o\n3000 10 three\n", 16);
	ok(perfmap_refresh(m, path, 0) == 0 && strcmp(name(m, 0x2000), "two") == 0 &&
	    strcmp(name(m, 0x3000), "three") == 0 &&
	    strcmp(name(m, 0x1000), "one") == 0,
	    "the next reads what was added, the half line whole");
	perfmap_stats(m, &st);
	ok(st.bytes == 38, "every byte read once (%llu)",
	    (unsigned long long)st.bytes);
	append(other, "1000 10 new\n", 12);
	if (rename(other, path) != 0)
		abort();
	ok(perfmap_refresh(m, path, 0) == 0 && strcmp(name(m, 0x1000), "new") == 0 &&
	    perfmap_lookup(m, 0x3000) == NULL,
	    "a replaced file is read again from its start");
	if (truncate(path, 0) != 0)
		abort();
	append(path, "9000 10 nine\n", 13);
	ok(perfmap_refresh(m, path, 0) == 0 && strcmp(name(m, 0x9000), "nine") == 0,
	    "a file that shrank is read again from its start");

	/* One line longer than PERFMAP_MAX_LINE, then a good one. */
	big = malloc(PERFMAP_MAX_LINE + 64);
	memset(big, 'x', PERFMAP_MAX_LINE + 63);
	memcpy(big, "a000 10 ", 8);
	big[PERFMAP_MAX_LINE + 63] = '\n';
	append(path, big, PERFMAP_MAX_LINE + 64);
	append(path, "b000 10 after\n", 14);
	ok(perfmap_refresh(m, path, 0) == 0 && perfmap_lookup(m, 0xa000) == NULL &&
	    strcmp(name(m, 0xb000), "after") == 0,
	    "a line too long is skipped, the next one read");
	free(big);

	/* Past PERFMAP_MAX_BYTES: the rest is not read. */
	unlink(path);
	big = malloc((1 << 20) + 1);
	for (i = 0; i < (1 << 20) / 32; i++)
		snprintf(big + 32 * i, 33, "%08zx 1 f%019zu\n", i * 16, i);
	for (i = 0; i < PERFMAP_MAX_BYTES / (1 << 20) + 2; i++)
		append(path, big, 1 << 20);
	free(big);
	perfmap_free(m);
	m = perfmap_new();
	ok(perfmap_refresh(m, path, 0) == 0, "a map over the bound is read");
	perfmap_stats(m, &st);
	ok(st.capped && st.bytes <= PERFMAP_MAX_BYTES,
	    "at most %d bytes read (%llu), the bound said", PERFMAP_MAX_BYTES,
	    (unsigned long long)st.bytes);
	ok(strcmp(name(m, 0x10), "f0000000000000000001") == 0,
	    "what was read is named");
	unlink(path);
	rmdir(dir);
	perfmap_free(m);
}

int
main(void)
{
	test_parse();
	test_refresh();
	return tap_done();
}
