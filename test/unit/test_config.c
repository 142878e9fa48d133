/*
 * Unit tests for collector/config.c: defaults, flags in both spellings,
 * the config file (comments, blanks, every kind of value), errors that name
 * the file and line for unknown settings and bad values, flags that win
 * over the file wherever they stand, and the hidden test-only options.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/config.h"
#include "test/lib/tap.h"

#define NS	INT64_C(1000000000)

static char tmpdir[] = "/tmp/profd-test-config.XXXXXX";

/* Writes text to a new file in tmpdir; returns its path (static). */
static const char *
write_conf(const char *name, const char *text)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	return path;
}

/* Parses argv (NULL-terminated) into c; returns the rc, *cause on error. */
static int
parse(struct config *c, char **cause, ...)
{
	char *argv[32];
	int argc = 0;
	va_list ap;

	argv[argc++] = "profd";
	va_start(ap, cause);
	while ((argv[argc] = va_arg(ap, char *)) != NULL)
		argc++;
	va_end(ap);
	config_defaults(c);
	return config_parse_args(c, argc, argv, cause);
}

/* True if loading text as a config file fails with a cause holding want. */
static int
file_fails(const char *text, const char *want)
{
	struct config c;
	const char *path = write_conf("bad.conf", text);
	char *cause = NULL;
	int r;

	config_defaults(&c);
	if (config_load_file(&c, path, &cause) == 0) {
		config_clear(&c);
		return 0;
	}
	r = strstr(cause, want) != NULL;
	if (!r)
		printf("# cause: %s (want %s)\n", cause, want);
	free(cause);
	config_clear(&c);
	return r;
}

/* The defaults. */
static void
test_defaults(void)
{
	struct config c;

	config_defaults(&c);
	ok(strcmp(c.addr, "127.0.0.1:10100") == 0, "default addr");
	ok(c.retention_ns == 7 * 86400 * NS, "default retention 7d");
	ok(c.retention_interval_ns == 60 * NS, "default sweep interval 60s");
	ok(c.workers >= 1, "default workers from the cores");
	ok(c.max_merges >= 1, "default max-merges from the cores");
	ok(c.request_timeout == 60, "default request-timeout 60");
	ok(c.max_body == 32 * 1024 * 1024, "default max-body 32M");
	ok(c.profile_rate == 0, "default profile-rate 0 (pacing off)");
	config_clear(&c);
}

/* Flags, both spellings. */
static void
test_flags(void)
{
	struct config c;
	char *cause = NULL;
	int rc;

	rc = parse(&c, &cause, "--addr", "0.0.0.0:9000", "--retention=36h",
	    "--max-body", "1M", "--workers", "3", "--log-level=debug", NULL);
	ok(rc == 0, "flags parse");
	ok(strcmp(c.addr, "0.0.0.0:9000") == 0, "--addr VALUE");
	ok(c.retention_ns == 36 * 3600 * NS, "--retention=36h");
	ok(c.max_body == 1024 * 1024, "--max-body 1M");
	ok(c.workers == 3, "--workers 3");
	ok(strcmp(c.log_level, "debug") == 0, "--log-level=debug");
	config_clear(&c);
	rc = parse(&c, &cause, "--retention", "0", NULL);
	ok(rc == 0 && c.retention_ns == 0, "--retention 0 keeps forever");
	ok(!c.rebuild_meta, "no --rebuild-meta: serve");
	config_clear(&c);
	rc = parse(&c, &cause, "--data-dir", "/d", "--rebuild-meta", NULL);
	ok(rc == 0 && c.rebuild_meta && strcmp(c.data_dir, "/d") == 0,
	    "--rebuild-meta takes no value and keeps --data-dir");
	config_clear(&c);
	rc = parse(&c, &cause, "--max-merges", "3", "--request-timeout", "2",
	    NULL);
	ok(rc == 0 && c.max_merges == 3 && c.request_timeout == 2,
	    "--max-merges 3 --request-timeout 2");
	config_clear(&c);
	rc = parse(&c, &cause, "--max-merges", "0", NULL);
	ok(rc == -1 && strstr(cause, "max-merges") != NULL,
	    "--max-merges 0 refused: %s", cause);
	free(cause);
	cause = NULL;
	config_clear(&c);
	rc = parse(&c, &cause, "--profile-rate", "600", NULL);
	ok(rc == 0 && c.profile_rate == 600, "--profile-rate 600");
	config_clear(&c);
	rc = parse(&c, &cause, "--profile-rate=601", NULL);
	ok(rc == -1 && strstr(cause, "profile-rate") != NULL,
	    "--profile-rate 601 refused: %s", cause);
	free(cause);
	cause = NULL;
	config_clear(&c);
}

/* Bad flags: unknown, out of range, without value, stray. */
static void
test_bad_flags(void)
{
	struct config c;
	char *cause = NULL;
	int rc;

	rc = parse(&c, &cause, "--nope", "1", NULL);
	ok(rc == -1 && strstr(cause, "unknown option --nope") != NULL,
	    "unknown flag refused: %s", cause);
	free(cause);
	cause = NULL;
	config_clear(&c);
	rc = parse(&c, &cause, "--workers", "0", NULL);
	ok(rc == -1 && strstr(cause, "workers") != NULL,
	    "out-of-range flag refused: %s", cause);
	free(cause);
	cause = NULL;
	config_clear(&c);
	rc = parse(&c, &cause, "--workers", NULL);
	ok(rc == -1 && strstr(cause, "needs a value") != NULL,
	    "flag without value refused: %s", cause);
	free(cause);
	cause = NULL;
	config_clear(&c);
	rc = parse(&c, &cause, "stray", NULL);
	ok(rc == -1 && strstr(cause, "unexpected argument") != NULL,
	    "stray argument refused: %s", cause);
	free(cause);
	cause = NULL;
	config_clear(&c);
}

/*
 * A good config file: comments, blanks, spaces, CRLF. Returns its path
 * (write_conf's, good until its next call).
 */
static const char *
test_good_file(void)
{
	struct config c;
	const char *path;
	char *cause = NULL;
	int rc;

	path = write_conf("good.conf",
	    "# profd settings\n"
	    "\n"
	    "addr = 127.0.0.1:9999\n"
	    "   data-dir=/var/lib/profd   \n"
	    "retention = 14d\r\n"
	    "\t# indented comment\n"
	    "workers = 5\n"
	    "max-inflated = 64M\n"
	    "log-level = warn\n"
	    "retention-interval = 250ms\n");
	config_defaults(&c);
	rc = config_load_file(&c, path, &cause);
	ok(rc == 0, "good config file loads");
	ok(strcmp(c.addr, "127.0.0.1:9999") == 0, "file: addr");
	ok(strcmp(c.data_dir, "/var/lib/profd") == 0, "file: blanks trimmed");
	ok(c.retention_ns == 14 * 86400 * NS, "file: retention 14d (CRLF)");
	ok(c.workers == 5, "file: workers");
	ok(c.max_inflated == 64 * 1024 * 1024, "file: max-inflated 64M");
	ok(strcmp(c.log_level, "warn") == 0, "file: log-level");
	ok(c.retention_interval_ns == 250 * 1000000,
	    "file: hidden retention-interval 250ms");
	config_clear(&c);
	return path;
}

/* Flags win over the file at path, before or after --config. */
static void
test_flags_win(const char *path)
{
	struct config c;
	char *cause = NULL;
	int rc;

	rc = parse(&c, &cause, "--workers", "7", "--config", path,
	    "--retention", "1h", NULL);
	ok(rc == 0, "flags with --config parse");
	ok(c.workers == 7, "a flag before --config wins over the file");
	ok(c.retention_ns == 3600 * NS, "a flag after --config wins too");
	ok(strcmp(c.addr, "127.0.0.1:9999") == 0,
	    "the file still sets what no flag names");
	ok(c.config_file != NULL && strcmp(c.config_file, path) == 0,
	    "config_file is remembered");
	config_clear(&c);
}

/* Bad config files name the line. */
static void
test_bad_files(void)
{
	ok(file_fails("addr = x:1\n\nbogus = 1\n", "bad.conf:3: unknown "
	    "setting \"bogus\""), "unknown setting names file and line 3");
	ok(file_fails("# c\nworkers = many\n", "bad.conf:2: workers:"),
	    "bad integer names line 2");
	ok(file_fails("workers = 100000\n", "bad.conf:1: workers:"),
	    "out-of-range integer names line 1");
	ok(file_fails("\n\n\n\nretention = 7 days\n", "bad.conf:5: retention:"),
	    "bad duration names line 5");
	ok(file_fails("max-body = 0\n", "bad.conf:1: max-body: must be more"),
	    "zero size refused");
	ok(file_fails("profile-rate = -1\n", "bad.conf:1: profile-rate:"),
	    "profile-rate -1 refused");
	ok(file_fails("log-level = loud\n", "bad.conf:1: log-level: unknown "
	    "level"), "bad log level refused");
	ok(file_fails("addr =\n", "bad.conf:1: addr: empty value"),
	    "empty value refused");
	ok(file_fails("workers 4\n", "bad.conf:1: want name = value"),
	    "line without '=' refused");
	ok(file_fails("retention-interval = 0\n", "bad.conf:1: "
	    "retention-interval: must be more than 0"),
	    "zero sweep interval refused");
	ok(file_fails("config = other.conf\n", "unknown setting \"config\""),
	    "a config file cannot include another");
	ok(file_fails("rebuild-meta = 1\n", "unknown setting \"rebuild-meta\""),
	    "--rebuild-meta is no config key (a file would rebuild each start)");
}

/* A bad or missing file fails the whole parse, with the line. */
static void
test_bad_config_flag(void)
{
	struct config c;
	const char *path;
	char *cause = NULL;
	int rc;

	path = write_conf("bad2.conf", "workers = 2\nnope = 3\n");
	rc = parse(&c, &cause, "--config", path, NULL);
	ok(rc == -1 && strstr(cause, "bad2.conf:2: unknown setting") != NULL,
	    "--config with a bad line fails: %s", cause);
	free(cause);
	cause = NULL;
	config_clear(&c);
	rc = parse(&c, &cause, "--config", "/nonexistent/profd.conf", NULL);
	ok(rc == -1 && strstr(cause, "/nonexistent/profd.conf") != NULL,
	    "missing config file named: %s", cause);
	free(cause);
	cause = NULL;
	config_clear(&c);
	/* the file is read first even when a bad flag comes later */
	rc = parse(&c, &cause, "--config", path, "--workers", "x", NULL);
	ok(rc == -1 && strstr(cause, "bad2.conf:2") != NULL,
	    "file errors are reported first");
	free(cause);
	cause = NULL;
	config_clear(&c);
}

/* Usage lists the options but not the hidden ones. */
static void
test_usage(void)
{
	char *usage = NULL;
	size_t usage_len = 0;
	FILE *f;

	f = open_memstream(&usage, &usage_len);
	config_usage(f);
	fclose(f);
	ok(strstr(usage, "--retention ") != NULL &&
	    strstr(usage, "--config FILE") != NULL, "usage lists options");
	ok(strstr(usage, "retention-interval") == NULL,
	    "usage hides retention-interval");
	free(usage);
}

/* Runs the tests in a new directory for the config files, then removes it. */
int
main(void)
{
	const char *path;

	if (mkdtemp(tmpdir) == NULL)
		return 1;
	test_defaults();
	test_flags();
	test_bad_flags();
	path = test_good_file();
	test_flags_win(path);
	test_bad_files();
	test_bad_config_flag();
	test_usage();

	unlink(write_conf("good.conf", ""));
	unlink(write_conf("bad.conf", ""));
	unlink(write_conf("bad2.conf", ""));
	rmdir(tmpdir);
	return tap_done();
}
