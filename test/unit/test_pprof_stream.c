/*
 * Unit tests of the stream reader (proto/pprof_stream.c) and the wire
 * writer (proto/pprof_write.c). The reader must accept and refuse what
 * the upload check does (itself held to protobuf-c + pprof_validate by
 * the scanner's tests), with the same causes, and read the values
 * protobuf-c decodes (test/lib/stream_testlib.h): on every profile of the
 * corpus, its bad
 * inputs, and hand-made wire forms (bools in every wire type, repeated
 * singular fields, packed and unpacked values mixed, unknown fields,
 * strings with NULs, kinds interleaved). Both must charge their memory to
 * a budget account, give it all back, and fail cleanly when refused.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/budget.h"
#include "proto/pprof.h"
#include "proto/pprof_stream.h"
#include "proto/pprof_write.h"
#include "test/lib/readfile.h"
#include "test/lib/scan_testlib.h"
#include "test/lib/stream_testlib.h"
#include "test/lib/tap.h"

/* Inflates body (gzip or raw) into a new buffer; NULL if it cannot. */
static uint8_t *
inflate_any(const uint8_t *body, size_t len, size_t *rawlen)
{
	uint8_t *raw;

	if (pprof_inflate(body, len, MAX_INFLATED, &raw, rawlen, NULL) != 0)
		return NULL;
	return raw;
}

/* Every profile under the corpus (MANIFEST.tsv and bad/): both ways. */
static void
test_corpus(const char *corpus)
{
	char path[16384], line[8192], *tab, *d;
	size_t len, rawlen, n = 0, nbad = 0, bad = 0;
	uint8_t *body, *raw;
	int accepted, dir;
	FILE *f;

	for (dir = 0; dir < 2; dir++) {
		snprintf(path, sizeof path, "%s/%sMANIFEST.tsv", corpus,
		    dir ? "bad/" : "");
		if ((f = fopen(path, "r")) == NULL) {
			ok(0, "corpus: %s", path);
			return;
		}
		while (fgets(line, sizeof line, f) != NULL) {
			if ((tab = strchr(line, '\t')) == NULL ||
			    strncmp(line, "file", 4) == 0)
				continue;
			*tab = '\0';
			snprintf(path, sizeof path, "%s/%s%s", corpus,
			    dir ? "bad/" : "", line);
			if ((body = read_file(path, &len)) == NULL)
				continue;
			raw = inflate_any(body, len, &rawlen);
			free(body);
			if (raw == NULL)
				continue;	/* an inflate case */
			if ((d = stream_diff(raw, rawlen, &accepted)) != NULL) {
				if (bad++ < 5)
					printf("# %s: %s\n", line, d);
				free(d);
			}
			n++;
			nbad += !accepted;
			free(raw);
		}
		fclose(f);
	}
	ok(n > 400 && bad == 0, "corpus: the reader agrees with protobuf-c on "
	    "%zu profiles (%zu refused, %zu differ)", n, nbad, bad);
}

/* A minimal valid profile's tail: one sample type and the strings. */
static void
put_tail(struct buf *b)
{
	struct buf vt = { NULL, 0, 0 };

	put_int(&vt, 1, 1);
	put_int(&vt, 2, 2);
	put_msg(b, 1, &vt);
	put_str(b, 6, "", 0);
	put_str(b, 6, "samples", 7);
	put_str(b, 6, "count", 5);
}

/* Checks b both ways; says what it is in desc. */
static void
check_case(struct buf *b, int want_ok, const char *desc)
{
	char *d;
	int accepted;

	d = stream_diff(b->p, b->len, &accepted);
	ok(d == NULL && accepted == want_ok, "%s: %s%s", desc,
	    accepted ? "read as protobuf-c decodes it" : "refused as the "
	    "upload check refuses it", d != NULL ? d : "");
	free(d);
	free(b->p);
	memset(b, 0, sizeof *b);
}

/* Bools in every wire type, as protobuf-c's parse_boolean reads them. */
static void
test_bools(void)
{
	static const struct {
		const char	*what;
		const uint8_t	*bytes;	/* key and value of field 7 */
		size_t		 len;
	} forms[] = {
		{ "varint 1", (const uint8_t *)"\x38\x01", 2 },
		{ "varint 0", (const uint8_t *)"\x38\x00", 2 },
		{ "overlong varint 0", (const uint8_t *)"\x38\x80\x00", 3 },
		{ "varint 0x80 0x01", (const uint8_t *)"\x38\x80\x01", 3 },
		{ "empty bytes", (const uint8_t *)"\x3a\x00", 2 },
		{ "bytes 00", (const uint8_t *)"\x3a\x01\x00", 3 },
		{ "fixed64 0", (const uint8_t *)"\x39\0\0\0\0\0\0\0\0", 9 },
		{ "fixed64 top bit", (const uint8_t *)"\x39\0\0\0\0\0\0\0\x80",
		    9 },
		{ "fixed32 1", (const uint8_t *)"\x3d\0\0\x01\0", 5 },
	};
	struct buf b = { NULL, 0, 0 }, m = { NULL, 0, 0 }, l = { NULL, 0, 0 };
	size_t i;
	char desc[128];

	for (i = 0; i < sizeof forms / sizeof forms[0]; i++) {
		put_int(&m, 1, 1);		/* id */
		put(&m, forms[i].bytes, forms[i].len);	/* has_functions */
		put(&m, forms[i].bytes, forms[i].len);
		m.p[m.len - forms[i].len] += 8 * 3;	/* has_inline_frames */
		put_msg(&b, 3, &m);
		put_int(&l, 1, 1);
		put_int(&l, 2, 1);
		put(&l, forms[i].bytes, forms[i].len);
		l.p[l.len - forms[i].len] -= 8 * 2;	/* is_folded (5) */
		put_msg(&b, 4, &l);
		put_tail(&b);
		snprintf(desc, sizeof desc, "bool as %s", forms[i].what);
		check_case(&b, 1, desc);
	}
}

/* Repeated singular fields, mixed packing, unknown fields, NULs, order. */
static void
test_forms(void)
{
	struct buf b = { NULL, 0, 0 }, s = { NULL, 0, 0 }, x = { NULL, 0, 0 };
	uint64_t v[] = { 1, 2 };

	/* period_type twice: the second one's fields, even unset ones */
	put_int(&x, 1, 1);
	put_int(&x, 2, 2);
	put_msg(&b, 11, &x);
	put_int(&x, 1, 2);
	put_msg(&b, 11, &x);
	put_int(&b, 12, 7);
	put_int(&b, 12, 9);
	put_tail(&b);
	check_case(&b, 1, "period_type and period twice");

	/* a sample's ids and values, packed and not, in one sample */
	put_str(&b, 6, "", 0);
	put_int(&x, 1, 1);
	put_msg(&b, 4, &x);		/* location 1 */
	put_int(&x, 1, 2);
	put_int(&x, 3, 0x1234);
	put_int(&x, 99, 5);		/* unknown field */
	put_msg(&b, 4, &x);		/* location 2 */
	put_int(&s, 1, 2);
	put_packed(&s, 1, v, 2);
	put_packed(&s, 2, v, 1);
	put_int(&s, 2, (uint64_t)-5);
	put_int(&x, 1, 1);
	put_int(&x, 3, 42);
	put_int(&x, 3, 43);		/* num twice: the last */
	put_int(&x, 4, 2);
	put_msg(&s, 3, &x);		/* label */
	put_msg(&b, 2, &s);
	put_int(&x, 1, 1);
	put_int(&x, 2, 2);
	put_msg(&b, 1, &x);
	put_int(&x, 1, 1);
	put_int(&x, 2, 2);
	put_msg(&b, 1, &x);		/* two sample types */
	put_str(&b, 6, "a\0b", 3);	/* a NUL inside */
	put_str(&b, 6, "u", 1);
	put_int(&b, 13, 1);
	put_packed(&b, 13, v, 2);	/* comments both ways */
	put_int(&b, 1000, 1);		/* unknown top-level field */
	check_case(&b, 1, "mixed packing, unknown fields, NUL, out of order");

	/* refusals: the causes must be pprof_validate's */
	put_int(&s, 1, 3);
	put_int(&s, 2, 1);
	put_msg(&b, 2, &s);
	put_tail(&b);
	check_case(&b, 0, "sample with an unknown location");
	put_int(&s, 2, 1);
	put_msg(&b, 2, &s);
	put_str(&b, 6, "", 0);
	check_case(&b, 0, "samples but no sample types");
}

/* The reader's memory: charged, refused cleanly, all given back. */
static void
test_budget(void)
{
	struct budget *bg = budget_new(64);
	struct budget_acct a;
	struct pprof_stream s;
	struct buf b = { NULL, 0, 0 }, x = { NULL, 0, 0 };
	volatile int cancel = 1;
	enum budget_fail why;
	char *cause = NULL;
	size_t i, want;
	int rc;

	for (i = 0; i < 100; i++)
		put_str(&b, 6, "", 0);
	put_int(&x, 1, 1);
	put_int(&x, 2, 1);
	put_msg(&b, 1, &x);
	budget_acct_init(&a, bg);
	rc = pprof_stream_open(&s, b.p, b.len, &a, NULL, &cause);
	why = budget_acct_fail(&a, &want);
	ok(rc == PPROF_ENOMEM && why == BUDGET_OVER,
	    "a 64-byte budget refuses the string table (%s, %zu bytes)",
	    cause ? cause : "", want);
	pprof_stream_close(&s);
	ok(budget_used(bg) == 0 && atomic_load(&a.held) == 0,
	    "... and nothing stays charged");
	free(cause);
	cause = NULL;
	budget_acct_done(&a);
	budget_free(bg);

	bg = budget_new(1 << 20);
	budget_acct_init(&a, bg);
	rc = pprof_stream_open(&s, b.p, b.len, &a, NULL, &cause);
	ok(rc == 0 && atomic_load(&a.held) >= 100 * sizeof(void *),
	    "a 1 MiB budget holds it (%zu bytes charged)",
	    (size_t)atomic_load(&a.held));
	pprof_stream_close(&s);
	ok(budget_used(bg) == 0, "closing gives every byte back");
	rc = pprof_stream_open(&s, b.p, b.len, &a, &cancel, &cause);
	ok(rc == PPROF_ECANCELED, "a set cancel flag stops the open (%s)",
	    cause ? cause : "");
	pprof_stream_close(&s);
	free(cause);
	budget_acct_done(&a);
	budget_free(bg);
	free(b.p);
}

/* The writer: protobuf bytes, gzipped alike, within its budget. */
static void
test_writer(void)
{
	static const uint8_t want[] = { 0x08, 0x96, 0x01, 0x12, 0x03, 'a',
	    'b', 'c', 0x1a, 0x02, 0x08, 0x01, 0x20, 0xff, 0xff, 0xff, 0xff,
	    0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
	struct budget *bg = budget_new(1 << 20);
	struct budget_acct a;
	struct pprof_write w;
	uint8_t *out, *raw;
	size_t len, rawlen, i;
	int gz, okay;

	budget_acct_init(&a, bg);
	for (gz = 0; gz < 2; gz++) {
		ok(pprof_write_init(&w, &a, gz, NULL) == 0, "writer starts "
		    "(%s)", gz ? "gzip" : "raw");
		pprof_write_uint(&w, 1, 150);
		pprof_write_uint(&w, 9, 0);		/* left out */
		pprof_write_bytes(&w, 2, "abc", 3);
		pprof_write_len(&w, 3, 2);
		pprof_write_uint(&w, 1, 1);
		pprof_write_uint(&w, 4, (uint64_t)-1);
		okay = pprof_write_finish(&w, &out, &len, NULL) == 0;
		raw = NULL;
		if (okay && gz)
			okay = pprof_inflate(out, len, 1 << 20, &raw, &rawlen,
			    NULL) == 0;
		else {
			raw = NULL;
			rawlen = len;
		}
		ok(okay && rawlen == sizeof want && memcmp(raw ? raw : out,
		    want, sizeof want) == 0, "%s writer: the expected bytes",
		    gz ? "gzip" : "raw");
		ok(atomic_load(&a.held) == (len ? len : 1),
		    "only the output stays charged (%zu bytes)", len);
		budget_dealloc(&a, out, len);
		free(raw);
	}
	ok(budget_used(bg) == 0, "writers give every byte back");

	/* Refused: 1 MiB of strings into a 1 MiB budget. */
	ok(pprof_write_init(&w, &a, 0, NULL) == 0, "writer starts again");
	for (i = 0; i < 70000; i++)
		pprof_write_bytes(&w, 6, "0123456789abcdef", 16);
	ok(pprof_write_finish(&w, &out, &len, NULL) != 0 && out == NULL,
	    "a writer past its budget fails at the end");
	ok(budget_used(bg) == 0, "... and gives every byte back");
	budget_acct_done(&a);
	budget_free(bg);
}

int
main(void)
{
	const char *corpus = getenv("PROFD_CORPUS");

	if (corpus == NULL)
		corpus = "test/corpus";
	test_corpus(corpus);
	test_bools();
	test_forms();
	test_budget();
	test_writer();
	return tap_done();
}
