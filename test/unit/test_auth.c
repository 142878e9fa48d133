/*
 * Unit tests for collector/http/auth.c, the bearer tokens of --auth-file:
 * auth_load on token files written to a temporary directory (valid lines
 * with comments, blank lines, CRLF and tabs; a bad scope, a token holding
 * a space, a line with no scope, a short token, an empty file and a
 * missing file, each refused with an error naming the file and line;
 * duplicate tokens), auth_count, and auth_check's 0/401/403 for a missing
 * header, an unknown token, a token without the scope, admin covering
 * read and write, and malformed headers (another scheme, "Bearer" with no
 * token, extra or odd whitespace, a prefix or extension of a real token).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/http/auth.h"
#include "test/lib/tap.h"

#define READER	"reader-token-0001"
#define WRITER	"writer-token-0002"
#define ADMIN	"admin-token-00003"

static char test_auth_dir[] = "/tmp/profd-test-auth.XXXXXX";

/* Writes text to name in the temporary directory; returns its path. */
static const char *
test_auth_write(const char *name, const char *text)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", test_auth_dir, name);
	if ((f = fopen(path, "w")) == NULL) {
		printf("Bail out! cannot write %s\n", path);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
	return path;
}

/*
 * True if loading text fails, with no tokens returned and a cause that
 * holds want (and the file's path).
 */
static int
test_auth_fails(const char *name, const char *text, const char *want)
{
	const char *path = test_auth_write(name, text);
	struct auth *a;
	char *cause = NULL;
	int r;

	if ((a = auth_load(path, &cause)) != NULL) {
		printf("# %s loaded %d tokens\n", name, auth_count(a));
		auth_free(a);
		return 0;
	}
	r = cause != NULL && strstr(cause, want) != NULL &&
	    strstr(cause, path) != NULL;
	if (!r)
		printf("# cause: %s (want %s)\n", cause ? cause : "(null)",
		    want);
	free(cause);
	return r;
}

/* Valid files: comments, blank lines, whitespace, CRLF; auth_count. */
static void
test_load_valid(void)
{
	struct auth *a;
	char *cause = NULL;
	const char *path;

	path = test_auth_write("good",
	    "# profd tokens\n"
	    "\n"
	    "   \t  \n"
	    READER " read\n"
	    "  # an indented comment\n"
	    "\t" WRITER "\twrite   \n"
	    ADMIN " admin\r\n"
	    "#" READER "x write\n");
	a = auth_load(path, &cause);
	ok(a != NULL, "a file with comments and blank lines loads (%s)",
	    cause ? cause : "ok");
	ok(auth_count(a) == 3, "auth_count is 3 (%d): comments and blanks "
	    "are not tokens", auth_count(a));
	ok(auth_check(a, "Bearer " ADMIN, AUTH_ADMIN) == 0,
	    "the token of a CRLF line has no trailing CR");
	ok(auth_check(a, "Bearer " WRITER, AUTH_WRITE) == 0,
	    "the token of a tab-separated line loads");
	ok(auth_check(a, "Bearer #" READER "x", AUTH_READ) == 401,
	    "a commented-out token is not loaded");
	auth_free(a);
	free(cause);

	ok(auth_count(NULL) == 0, "auth_count(NULL) is 0");
	auth_free(NULL);
	ok(1, "auth_free(NULL) is harmless");

	/* No final newline. */
	path = test_auth_write("nonl", READER " read");
	cause = NULL;
	a = auth_load(path, &cause);
	ok(a != NULL && auth_count(a) == 1 &&
	    auth_check(a, "Bearer " READER, AUTH_READ) == 0,
	    "a last line without a newline loads");
	auth_free(a);
	free(cause);
}

/* Bad files: each error names the file and the line. */
static void
test_load_errors(void)
{
	char *cause = NULL;
	struct auth *a;
	char missing[300];

	ok(test_auth_fails("badscope", READER " read\n"
	    "\n" WRITER " rw\n", ":3: want \"TOKEN read|write|admin\""),
	    "an unknown scope is refused with its line number");
	ok(test_auth_fails("upper", READER " READ\n",
	    ":1: want \"TOKEN read|write|admin\""),
	    "scopes are case-sensitive (READ refused)");
	ok(test_auth_fails("space", "# tokens\n"
	    "reader token 0001 read\n", ":2: want"),
	    "a token holding a space is refused (too many fields)");
	ok(test_auth_fails("noscope", READER " read\n" WRITER "\n",
	    ":2: want"), "a token without a scope is refused");
	ok(test_auth_fails("extra", READER " read write\n", ":1: want"),
	    "two scopes on a line are refused");
	ok(test_auth_fails("short", READER " read\n# c\nshort12 write\n",
	    ":3: token shorter than 8 characters"),
	    "a token under 8 characters is refused");
	ok(test_auth_fails("empty", "", "no tokens"),
	    "an empty file is refused");
	ok(test_auth_fails("comments", "# only\n\n  # comments\n",
	    "no tokens"), "a file of comments and blank lines is refused");

	snprintf(missing, sizeof missing, "%s/does-not-exist", test_auth_dir);
	a = auth_load(missing, &cause);
	ok(a == NULL && cause != NULL &&
	    strstr(cause, "cannot open auth file") != NULL &&
	    strstr(cause, missing) != NULL &&
	    strstr(cause, "No such file") != NULL,
	    "a missing file is refused: %s", cause ? cause : "(null)");
	free(cause);

	/* cause may be NULL. */
	a = auth_load(missing, NULL);
	ok(a == NULL, "auth_load with a NULL cause fails quietly");
}

/* Duplicate tokens: both lines load and their scopes add up. */
static void
test_load_duplicates(void)
{
	struct auth *a;
	char *cause = NULL;
	const char *path;

	path = test_auth_write("dup", READER " read\n" READER " read\n");
	a = auth_load(path, &cause);
	ok(a != NULL && auth_count(a) == 2,
	    "a token listed twice loads as two entries (%d)", auth_count(a));
	ok(auth_check(a, "Bearer " READER, AUTH_READ) == 0 &&
	    auth_check(a, "Bearer " READER, AUTH_WRITE) == 403,
	    "a duplicate read token still only reads");
	auth_free(a);

	path = test_auth_write("dup2", READER " read\n" READER " write\n");
	a = auth_load(path, &cause);
	ok(a != NULL && auth_check(a, "Bearer " READER, AUTH_READ) == 0 &&
	    auth_check(a, "Bearer " READER, AUTH_WRITE) == 0,
	    "a token listed with read and with write gets both");
	auth_free(a);
	free(cause);
}

/* auth_check: 0, 401 and 403 by token and scope; malformed headers. */
static void
test_check(void)
{
	struct auth *a;
	char *cause = NULL;
	const char *path;

	path = test_auth_write("check", READER " read\n" WRITER " write\n"
	    ADMIN " admin\n");
	if ((a = auth_load(path, &cause)) == NULL) {
		printf("Bail out! %s\n", cause);
		exit(1);
	}

	ok(auth_check(a, NULL, AUTH_READ) == 401, "no header: 401");
	ok(auth_check(a, "", AUTH_READ) == 401, "an empty header: 401");
	ok(auth_check(a, "Bearer x", AUTH_READ) == 401,
	    "\"Bearer x\", an unknown token: 401");
	ok(auth_check(a, "Bearer unknown-token-9999", AUTH_WRITE) == 401,
	    "an unknown token of plausible length: 401");

	ok(auth_check(a, "Bearer " READER, AUTH_READ) == 0,
	    "a read token may read");
	ok(auth_check(a, "Bearer " READER, AUTH_WRITE) == 403,
	    "a read token may not write: 403");
	ok(auth_check(a, "Bearer " WRITER, AUTH_WRITE) == 0,
	    "a write token may write");
	ok(auth_check(a, "Bearer " WRITER, AUTH_READ) == 403,
	    "a write token may not read: 403");
	ok(auth_check(a, "Bearer " ADMIN, AUTH_READ) == 0 &&
	    auth_check(a, "Bearer " ADMIN, AUTH_WRITE) == 0 &&
	    auth_check(a, "Bearer " ADMIN, AUTH_ADMIN) == 0,
	    "an admin token may read, write and both");
	ok(auth_check(a, "Bearer " READER, AUTH_ADMIN) == 403 &&
	    auth_check(a, "Bearer " WRITER, AUTH_ADMIN) == 403,
	    "neither read nor write alone covers admin: 403");

	/* Other schemes and malformed headers. */
	ok(auth_check(a, "Basic cmVhZGVyOnB3", AUTH_READ) == 401,
	    "Basic: 401");
	ok(auth_check(a, "Basic " READER, AUTH_READ) == 401,
	    "Basic with a valid token: 401");
	ok(auth_check(a, READER, AUTH_READ) == 401,
	    "the token without a scheme: 401");
	ok(auth_check(a, "Bearer", AUTH_READ) == 401,
	    "\"Bearer\" with no token: 401");
	ok(auth_check(a, "Bearer ", AUTH_READ) == 401,
	    "\"Bearer \" with an empty token: 401");
	ok(auth_check(a, "Bearer    ", AUTH_READ) == 401,
	    "\"Bearer\" and only spaces: 401");
	ok(auth_check(a, "Bearer" READER, AUTH_READ) == 401,
	    "no space after Bearer: 401");
	ok(auth_check(a, "Bearer   " READER, AUTH_READ) == 0,
	    "extra spaces before the token are skipped");
	ok(auth_check(a, "Bearer " READER "  \t ", AUTH_READ) == 0,
	    "trailing whitespace after the token is ignored");
	ok(auth_check(a, "bearer " READER, AUTH_READ) == 0 &&
	    auth_check(a, "BEARER " READER, AUTH_READ) == 0,
	    "the scheme is case-insensitive");
	ok(auth_check(a, "Bearer " READER " extra", AUTH_READ) == 401,
	    "a token followed by another word: 401");
	ok(auth_check(a, "Bearer reader-token-000", AUTH_READ) == 401,
	    "a prefix of a token: 401");
	ok(auth_check(a, "Bearer " READER "1", AUTH_READ) == 401,
	    "a token with a character added: 401");
	ok(auth_check(a, "Bearer reader-token-0002", AUTH_READ) == 401,
	    "a token differing in its last character: 401");
	ok(auth_check(a, "Bearer READER-TOKEN-0001", AUTH_READ) == 401,
	    "tokens are case-sensitive: 401");
	auth_free(a);
}

/* "cert SCOPE NAME" lines: names with blanks, scopes joined with tokens. */
static void
test_certs(void)
{
	struct auth *a;
	char *cause = NULL;
	const char *path;

	path = test_auth_write("certs", READER " read\n"
	    "cert write agent fleet  \r\n\tcert read dashboard\n"
	    "# cert admin commented out\n");
	if ((a = auth_load(path, &cause)) == NULL) {
		printf("Bail out! %s\n", cause);
		exit(1);
	}
	ok(auth_count(a) == 1, "cert lines are not tokens");
	ok(auth_check_peer(a, NULL, "agent fleet", AUTH_WRITE) == 0,
	    "a name with a blank, trailing blanks and CRLF trimmed: write");
	ok(auth_check_peer(a, NULL, "agent fleet", AUTH_READ) == 403,
	    "the same certificate cannot read: 403");
	ok(auth_check_peer(a, "Bearer " READER, "agent fleet",
	    AUTH_ADMIN) == 0, "token and certificate together: both scopes");
	ok(auth_check_peer(a, NULL, "dashboard", AUTH_READ) == 0,
	    "a line indented with a tab");
	ok(auth_check_peer(a, NULL, "agent", AUTH_WRITE) == 401 &&
	    auth_check_peer(a, NULL, "agent fleet ", AUTH_WRITE) == 401 &&
	    auth_check_peer(a, NULL, "Agent fleet", AUTH_WRITE) == 401,
	    "names match whole and exactly: 401 otherwise");
	ok(auth_check_peer(a, NULL, NULL, AUTH_READ) == 401,
	    "no token, no certificate: 401");
	ok(auth_check(a, NULL, AUTH_WRITE) == 401,
	    "auth_check alone never matches a cert line");
	auth_free(a);
	ok(test_auth_fails("certbad", "cert write\n", "want \"cert"),
	    "a cert line without a name is refused");
	ok(test_auth_fails("certbad", "cert everything agent\n",
	    "want \"cert"), "a cert line with an unknown scope is refused");
	path = test_auth_write("certonly", "cert admin ops\n");
	a = auth_load(path, &cause);
	ok(a != NULL && auth_check_peer(a, NULL, "ops", AUTH_ADMIN) == 0,
	    "a file of cert lines only is valid");
	auth_free(a);
}

int
main(void)
{
	const char *names[] = { "good", "nonl", "badscope", "upper", "space",
	    "noscope", "extra", "short", "empty", "comments", "dup", "dup2",
	    "check", "certs", "certbad", "certonly" };
	char path[300];
	size_t i;

	if (mkdtemp(test_auth_dir) == NULL) {
		printf("Bail out! mkdtemp failed\n");
		return 1;
	}
	test_load_valid();
	test_load_errors();
	test_load_duplicates();
	test_check();
	test_certs();
	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", test_auth_dir, names[i]);
		unlink(path);
	}
	ok(rmdir(test_auth_dir) == 0, "the temporary directory is cleaned up");
	return tap_done();
}
