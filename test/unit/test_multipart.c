/*
 * Unit tests of multipart/form-data (collector/http/multipart.c): the
 * boundary from Content-Types as clients write them, parts found by name
 * (quoted or not, first or later, empty, holding CRLFs and near-boundary
 * bytes), and malformed bodies refused.
 */
#include <stdlib.h>
#include <string.h>

#include "collector/http/multipart.h"
#include "test/lib/tap.h"

/* The boundary of ct: the string, "-" if not multipart, "!" refused. */
static char *
bnd(const char *ct)
{
	char *b = NULL, *cause = NULL;
	int rc = multipart_boundary(ct, &b, &cause);

	free(cause);
	return rc == 1 ? b : strdup(rc == 0 ? "-" : "!");
}

/* The part name of body (boundary XyZ): its text, "-" absent, "!" bad. */
static char *
part(const char *body, const char *name)
{
	const uint8_t *p;
	size_t n;
	char *cause = NULL, *s;
	int rc = multipart_find((const uint8_t *)body, strlen(body), "XyZ",
	    name, &p, &n, &cause);

	free(cause);
	if (rc != 1)
		return strdup(rc == 0 ? "-" : "!");
	s = malloc(n + 1);
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

/* ok() that got (freed) is want. */
static void
is_str(char *got, const char *want, const char *what)
{
	ok(strcmp(got, want) == 0, "%s (%s)", what, got);
	free(got);
}

#define BODY \
	"preamble\r\n--XyZ\r\n" \
	"Content-Disposition: form-data; name=\"sample_type_config\"\r\n" \
	"Content-Type: application/json\r\n\r\n{\"a\":1}\r\n" \
	"--XyZ\r\n" \
	"Content-Disposition: form-data; name=\"profile\"; " \
	"filename=\"profile.pprof\"\r\n" \
	"Content-Type: application/octet-stream\r\n\r\n" \
	"bin\r\n--Xy\r\n--XyZZ?\r\nend\r\n" \
	"--XyZ\r\n" \
	"content-disposition: form-data; name=prev_profile\r\n\r\n" \
	"\r\n--XyZ--\r\nepilogue"

int
main(void)
{
	is_str(bnd("multipart/form-data; boundary=XyZ"), "XyZ", "boundary");
	is_str(bnd("Multipart/Form-Data;boundary=\"a b;c\""), "a b;c",
	    "quoted boundary, any case");
	is_str(bnd("multipart/form-data; charset=x; boundary=q1; x=y"), "q1",
	    "boundary among parameters");
	is_str(bnd("application/octet-stream"), "-", "octet-stream: not one");
	is_str(bnd("multipart/form-dataX; boundary=a"), "-", "a longer type");
	is_str(bnd(NULL), "-", "no Content-Type");
	is_str(bnd("multipart/form-data"), "!", "no boundary: refused");
	is_str(bnd("multipart/form-data; boundary="), "!", "empty boundary");
	is_str(bnd("multipart/form-data; boundary=\"abc"), "!",
	    "unclosed quote");
	is_str(bnd("multipart/form-data; boundary=01234567890123456789012345"
	    "678901234567890123456789012345678901234567890123456789"), "!",
	    "a boundary of 80: refused");

	is_str(part(BODY, "profile"), "bin\r\n--Xy\r\n--XyZZ?\r\nend",
	    "the second part, with CRLFs and lookalike boundaries");
	is_str(part(BODY, "sample_type_config"), "{\"a\":1}", "the first");
	is_str(part(BODY, "prev_profile"), "", "an unquoted name, empty part");
	is_str(part(BODY, "prof"), "-", "a prefix of a name is not it");
	is_str(part("--XyZ\r\nContent-Disposition: form-data; name=\"profile\""
	    "\r\n\r\nabc\r\n--XyZ--", "profile"), "abc", "boundary first");
	is_str(part("--XyZ\r\n\r\nabc\r\n--XyZ--", "profile"), "-",
	    "a part without headers");
	is_str(part("--XyZ\r\nContent-Disposition: form-data; name=\"profile\""
	    "\r\n\r\nabc", "profile"), "!", "a part never closed");
	is_str(part("--XyZ\r\nContent-Disposition: form-data; name=\"profile\""
	    "\r\nabc", "profile"), "!", "headers never ended");
	is_str(part("no boundary here", "profile"), "!", "no boundary");
	is_str(part("--XyZ garbage", "profile"), "!", "boundary line without "
	    "CRLF");
	is_str(part("--XyZ--\r\n", "profile"), "-", "no parts");
	is_str(part("--XyZ", "profile"), "!", "cut after the boundary");
	return tap_done();
}
