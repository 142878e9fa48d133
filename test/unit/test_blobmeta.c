/*
 * Unit tests for the metadata a blob carries (storage/embedded/blobmeta.c):
 * round trips (UTF-8, no labels, 1024 labels), and hostile encodings, which
 * a rebuild reads from whatever is on disk: every cut-short prefix, every
 * single-byte change, random garbage, huge lengths and counts, repeated,
 * missing and unknown fields. Decoding must refuse with a reason or
 * succeed with checked fields, never crash or read out of bounds (run it
 * under ASan).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "common/xmalloc.h"
#include "storage/embedded/blobmeta.h"
#include "storage/store_meta.h"
#include "test/lib/tap.h"

/* A row with labels like an upload's. */
static void
sample_meta(struct profile_meta *m, struct label *l, size_t nl)
{
	static const char *kv[][2] = {
		{ "host", "h1" }, { "région", "été" }, { "zone", "" },
		{ "版本", "二" },
	};
	size_t	i;

	memset(m, 0, sizeof *m);
	snprintf(m->id, sizeof m->id, "06h0f7l5j8n1asgpu70g");
	m->service = (char *)"sé-svc";
	m->type = (char *)"cpu";
	m->created_at = 1795000000123456789LL;
	m->size = 13185;
	m->samples = 378;
	m->sample_types = (char *)"samples/count,cpu/nanoseconds";
	m->duration_ns = 2143082230;
	for (i = 0; i < nl; i++) {
		l[i].key = (char *)kv[i % 4][0];
		l[i].value = (char *)kv[i % 4][1];
	}
	m->labels = l;
	m->nlabels = nl;
}

/* 1 if a and b hold the same row. */
static int
same_meta(const struct profile_meta *a, const struct profile_meta *b)
{
	size_t	i;

	if (strcmp(a->id, b->id) != 0 || strcmp(a->service, b->service) != 0 ||
	    strcmp(a->type, b->type) != 0 || a->created_at != b->created_at ||
	    a->size != b->size || a->samples != b->samples ||
	    strcmp(a->sample_types, b->sample_types) != 0 ||
	    a->duration_ns != b->duration_ns || a->nlabels != b->nlabels)
		return 0;
	for (i = 0; i < a->nlabels; i++) {
		if (strcmp(a->labels[i].key, b->labels[i].key) != 0 ||
		    strcmp(a->labels[i].value, b->labels[i].value) != 0)
			return 0;
	}
	return 1;
}

/* 1 if a decoded row is one the rebuild may store. */
static int
sane_meta(const struct profile_meta *m)
{
	size_t	i;

	if (strlen(m->id) != STORE_ID_LEN || m->service == NULL ||
	    *m->service == '\0' || m->type == NULL || *m->type == '\0' ||
	    m->sample_types == NULL || m->size < 0 ||
	    m->nlabels > BLOBMETA_MAX_LABELS ||
	    !utf8_valid(m->service, strlen(m->service)) ||
	    !utf8_valid(m->type, strlen(m->type)))
		return 0;
	for (i = 0; i < m->nlabels; i++) {
		if (m->labels[i].key == NULL || m->labels[i].value == NULL ||
		    !utf8_valid(m->labels[i].key, strlen(m->labels[i].key)))
			return 0;
	}
	return 1;
}

/* Decodes buf; returns the result and checks a success is sane. */
static int
decode(const uint8_t *buf, size_t len, int *insane, char **cause)
{
	struct profile_meta	m;
	int			rc;

	rc = blobmeta_decode(buf, len, &m, cause);
	if (rc == 0) {
		if (!sane_meta(&m))
			(*insane)++;
		store_meta_clear(&m);
	}
	return rc;
}

/* Round trips: labels in order, UTF-8, none, the most an upload has. */
static void
test_round_trip(void)
{
	struct profile_meta	 m, got;
	struct label		*l = xcalloc(BLOBMETA_MAX_LABELS, sizeof *l);
	uint8_t			*buf;
	size_t			 len, n[] = { 4, 0, BLOBMETA_MAX_LABELS };
	size_t			 i;
	char			*cause = NULL;
	int			 rc;

	for (i = 0; i < 3; i++) {
		sample_meta(&m, l, n[i]);
		blobmeta_encode(&m, &buf, &len);
		rc = blobmeta_decode(buf, len, &got, &cause);
		ok(rc == 0 && same_meta(&m, &got), "round trip with %zu labels "
		    "(%zu bytes)%s%s", n[i], len, cause ? ": " : "",
		    cause ? cause : "");
		if (rc == 0)
			store_meta_clear(&got);
		free(cause);
		cause = NULL;
		free(buf);
	}
	free(l);
}

/* Every prefix of a valid encoding is refused; the whole one decodes. */
static void
test_cut_short(void)
{
	struct profile_meta	 m;
	struct label		 l[4];
	uint8_t			*buf;
	size_t			 len, cut, decoded = 0;
	char			*cause = NULL;
	int			 insane = 0;

	sample_meta(&m, l, 4);
	blobmeta_encode(&m, &buf, &len);
	for (cut = 0; cut < len; cut++) {
		uint8_t *copy = xmalloc(cut + 1);	/* exact size for ASan */

		memcpy(copy, buf, cut);
		if (decode(copy, cut, &insane, &cause) == 0)
			decoded++;
		free(cause);
		cause = NULL;
		free(copy);
	}
	ok(decoded == 0 && insane == 0, "none of %zu cut-short prefixes "
	    "decodes", len);
	decode(buf, 60, &insane, &cause);
	ok(cause != NULL && strncmp(cause, "metadata: ", 10) == 0,
	    "a cut-short one says why (%s)", cause ? cause : "");
	free(cause);
	free(buf);
}

/* Each byte changed to each of a few values: no crash, nothing insane. */
static void
test_byte_changes(void)
{
	static const uint8_t	 vals[] = { 0x00, 0x01, 0x7f, 0x80, 0xc3,
				    0xff };
	struct profile_meta	 m;
	struct label		 l[4];
	uint8_t			*buf;
	size_t			 len, i, v, refused = 0, tries = 0;
	char			*cause = NULL;
	int			 insane = 0;

	sample_meta(&m, l, 4);
	blobmeta_encode(&m, &buf, &len);
	for (i = 0; i < len; i++) {
		uint8_t	keep = buf[i];

		for (v = 0; v < sizeof vals; v++) {
			if (vals[v] == keep)
				continue;
			buf[i] = vals[v];
			tries++;
			if (decode(buf, len, &insane, &cause) == -1)
				refused++;
			free(cause);
			cause = NULL;
		}
		buf[i] = keep;
	}
	ok(insane == 0, "%zu single-byte changes: %zu refused, no insane "
	    "row decoded", tries, refused);
	free(buf);
}

/* Random garbage of random lengths, with and without the version byte. */
static void
test_garbage(void)
{
	uint8_t		 buf[512];
	uint64_t	 x = 0x9e3779b97f4a7c15ULL;
	size_t		 i, j, len, decoded = 0;
	char		*cause = NULL;
	int		 insane = 0;

	for (i = 0; i < 20000; i++) {
		len = (size_t)(x % sizeof buf);
		for (j = 0; j < len; j++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			buf[j] = (uint8_t)x;
		}
		if (len > 0 && (i & 1))
			buf[0] = BLOBMETA_VERSION;
		if (decode(buf, len, &insane, &cause) == 0)
			decoded++;
		free(cause);
		cause = NULL;
	}
	ok(decoded == 0 && insane == 0, "20,000 random buffers refused");
}

/* Appends a field to buf at *off. */
static void
field(uint8_t *buf, size_t *off, uint8_t tag, const void *v, uint32_t n,
    uint32_t claim)
{
	buf[(*off)++] = tag;
	buf[(*off)++] = (uint8_t)claim;
	buf[(*off)++] = (uint8_t)(claim >> 8);
	buf[(*off)++] = (uint8_t)(claim >> 16);
	buf[(*off)++] = (uint8_t)(claim >> 24);
	memcpy(buf + *off, v, n);
	*off += n;
}

/* Builds a valid encoding by hand with extra fields spliced in. */
static size_t
handmade(uint8_t *buf, int dup_id, int unknown, int64_t nlabels,
    size_t nkeys, uint32_t huge)
{
	static const uint8_t	 zero8[8];
	uint8_t			 n8[8];
	size_t			 off = 0, i;

	for (i = 0; i < 8; i++)
		n8[i] = (uint8_t)((uint64_t)nlabels >> (8 * i));
	buf[off++] = BLOBMETA_VERSION;
	field(buf, &off, 1, "06h0f7l5j8n1asgpu70g", 20, 20);
	if (dup_id)
		field(buf, &off, 1, "06h0f7l5j8n1asgpu70h", 20, 20);
	if (unknown)
		field(buf, &off, 200, "later", 5, 5);
	field(buf, &off, 2, "svc", 3, 3);
	field(buf, &off, 3, "cpu", 3, 3);
	field(buf, &off, 4, zero8, 8, 8);
	field(buf, &off, 5, zero8, 8, 8);
	field(buf, &off, 6, zero8, 8, 8);
	field(buf, &off, 7, "", 0, 0);
	field(buf, &off, 8, zero8, 8, 8);
	field(buf, &off, 9, n8, 8, 8);
	for (i = 0; i < nkeys; i++) {
		field(buf, &off, 10, "k", 1, 1);
		field(buf, &off, 11, "v", 1, 1);
	}
	if (huge)
		field(buf, &off, 2, "x", 1, huge);
	return off;
}

/* Checks that buf is refused with a reason holding word. */
static void
refused(const uint8_t *buf, size_t len, const char *word, const char *desc,
    int *insane)
{
	char	*cause = NULL;
	int	 rc;

	rc = decode(buf, len, insane, &cause);
	ok(rc == -1 && cause != NULL && strstr(cause, word) != NULL,
	    "%s is refused (%s)", desc, cause ? cause : "decoded");
	free(cause);
}

/* Fields repeated, unknown, missing, huge; counts past the limits. */
static void
test_handmade(void)
{
	uint8_t		*buf = xmalloc(64 * 1024);
	size_t		 len;
	char		*cause = NULL;
	int		 insane = 0;

	len = handmade(buf, 0, 0, 0, 0, 0);
	ok(decode(buf, len, &insane, &cause) == 0, "hand-made encoding "
	    "decodes");
	len = handmade(buf, 0, 1, 0, 0, 0);
	ok(decode(buf, len, &insane, &cause) == 0, "an unknown (later) field "
	    "is skipped");
	len = handmade(buf, 1, 0, 0, 0, 0);
	refused(buf, len, "id given twice", "a repeated id", &insane);
	len = handmade(buf, 0, 0, 0, 0, 0xffffffffu);
	refused(buf, len, "overruns", "a 4 GiB field length", &insane);
	len = handmade(buf, 0, 0, 3, 2, 0);
	refused(buf, len, "2 labels of 3", "fewer labels than announced",
	    &insane);
	len = handmade(buf, 0, 0, INT64_MAX, 0, 0);
	refused(buf, len, "label count", "a huge label count", &insane);
	len = handmade(buf, 0, 0, 1024, 1025, 0);
	refused(buf, len, "more than 1024 labels", "1025 labels", &insane);
	len = handmade(buf, 0, 0, 0, 0, 0);
	buf[0] = 2;
	refused(buf, len, "version 2", "a later format version", &insane);
	len = handmade(buf, 0, 0, 0, 0, 0);
	refused(buf, len - 13, "no label count", "a missing field", &insane);
	ok(insane == 0, "nothing insane decoded");
	free(buf);
}

int
main(void)
{
	test_round_trip();
	test_cut_short();
	test_byte_changes();
	test_garbage();
	test_handmade();
	return tap_done();
}
