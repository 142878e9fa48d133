/*
 * Blob metadata encoding. A version byte, then fields, each a tag byte, a
 * 32-bit little-endian length and that many bytes: strings as UTF-8
 * without terminator, integers as 8 bytes little-endian. Every field of
 * the row is written, then the number of labels, then each label as a key
 * field followed by its value field, in the row's order. A decoder skips
 * tags it does not know (fields a later version adds), and refuses
 * anything else it cannot trust: short fields, repeated fields, missing
 * ones, strings that are not UTF-8, more labels than any upload may carry,
 * fewer labels than announced (so no cut-short encoding decodes).
 */
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "common/xmalloc.h"
#include "storage/embedded/blobmeta.h"
#include "storage/embedded/blobs.h"
#include "storage/store_meta.h"

enum blobmeta_tag {
	BLOBMETA_ID = 1,
	BLOBMETA_SERVICE,
	BLOBMETA_TYPE,
	BLOBMETA_CREATED_AT,
	BLOBMETA_SIZE,
	BLOBMETA_SAMPLES,
	BLOBMETA_SAMPLE_TYPES,
	BLOBMETA_DURATION,
	BLOBMETA_NLABELS,
	BLOBMETA_LABEL_KEY,
	BLOBMETA_LABEL_VALUE,
	BLOBMETA_TAGS			/* one past the last */
};

#define BLOBMETA_FIELD_HEAD	5	/* tag + length */

/* A growing output buffer. */
struct blobmeta_buf {
	uint8_t	*p;
	size_t	 len, cap;
};

/* Appends n bytes. */
static void
blobmeta_put(struct blobmeta_buf *b, const void *v, size_t n)
{
	if (b->len + n > b->cap) {
		while (b->len + n > b->cap)
			b->cap = b->cap ? b->cap * 2 : 256;
		b->p = xreallocarray(b->p, b->cap, 1);
	}
	memcpy(b->p + b->len, v, n);
	b->len += n;
}

/* Appends one field: tag, length, bytes. */
static void
blobmeta_field(struct blobmeta_buf *b, enum blobmeta_tag tag, const void *v,
    size_t n)
{
	uint8_t	head[BLOBMETA_FIELD_HEAD];
	size_t	i;

	head[0] = (uint8_t)tag;
	for (i = 0; i < 4; i++)
		head[1 + i] = (uint8_t)((uint32_t)n >> (8 * i));
	blobmeta_put(b, head, sizeof head);
	blobmeta_put(b, v, n);
}

/* Appends a string field (NULL as empty). */
static void
blobmeta_string(struct blobmeta_buf *b, enum blobmeta_tag tag, const char *s)
{
	blobmeta_field(b, tag, s ? s : "", s ? strlen(s) : 0);
}

/* Appends an integer field. */
static void
blobmeta_int(struct blobmeta_buf *b, enum blobmeta_tag tag, int64_t v)
{
	uint8_t	le[8];
	size_t	i;

	for (i = 0; i < 8; i++)
		le[i] = (uint8_t)((uint64_t)v >> (8 * i));
	blobmeta_field(b, tag, le, sizeof le);
}

/* Encodes every field of the row. */
void
blobmeta_encode(const struct profile_meta *m, uint8_t **out, size_t *len)
{
	struct blobmeta_buf	b = { NULL, 0, 0 };
	uint8_t			version = BLOBMETA_VERSION;
	size_t			i;

	blobmeta_put(&b, &version, 1);
	blobmeta_field(&b, BLOBMETA_ID, m->id, strlen(m->id));
	blobmeta_string(&b, BLOBMETA_SERVICE, m->service);
	blobmeta_string(&b, BLOBMETA_TYPE, m->type);
	blobmeta_int(&b, BLOBMETA_CREATED_AT, m->created_at);
	blobmeta_int(&b, BLOBMETA_SIZE, m->size);
	blobmeta_int(&b, BLOBMETA_SAMPLES, m->samples);
	blobmeta_string(&b, BLOBMETA_SAMPLE_TYPES, m->sample_types);
	blobmeta_int(&b, BLOBMETA_DURATION, m->duration_ns);
	blobmeta_int(&b, BLOBMETA_NLABELS, (int64_t)m->nlabels);
	for (i = 0; i < m->nlabels; i++) {
		blobmeta_string(&b, BLOBMETA_LABEL_KEY, m->labels[i].key);
		blobmeta_string(&b, BLOBMETA_LABEL_VALUE, m->labels[i].value);
	}
	*out = b.p;
	*len = b.len;
}

/* Names a tag in error messages. */
static const char *
blobmeta_tag_name(unsigned tag)
{
	static const char *names[BLOBMETA_TAGS] = {
		[BLOBMETA_ID] = "id", [BLOBMETA_SERVICE] = "service",
		[BLOBMETA_TYPE] = "type", [BLOBMETA_CREATED_AT] = "created_at",
		[BLOBMETA_SIZE] = "size", [BLOBMETA_SAMPLES] = "samples",
		[BLOBMETA_SAMPLE_TYPES] = "sample_types",
		[BLOBMETA_DURATION] = "duration_ns",
		[BLOBMETA_NLABELS] = "label count",
		[BLOBMETA_LABEL_KEY] = "label key",
		[BLOBMETA_LABEL_VALUE] = "label value",
	};

	return tag < BLOBMETA_TAGS && names[tag] ? names[tag] : "field";
}

/* Copies a field as a string after checking it is UTF-8 without NUL. */
static int
blobmeta_get_string(unsigned tag, const uint8_t *v, size_t n, int empty_ok,
    char **out, char **cause)
{
	if (n == 0 && !empty_ok)
		return xcause(cause, "empty %s", blobmeta_tag_name(tag));
	if (!utf8_valid((const char *)v, n))
		return xcause(cause, "%s is not UTF-8 (or holds a NUL byte)",
		    blobmeta_tag_name(tag));
	*out = xstrndup((const char *)v, n);
	return 0;
}

/* Reads an 8-byte integer field. */
static int
blobmeta_get_int(unsigned tag, const uint8_t *v, size_t n, int64_t *out,
    char **cause)
{
	uint64_t	u = 0;
	size_t		i;

	if (n != 8)
		return xcause(cause, "%s is %zu bytes, not 8",
		    blobmeta_tag_name(tag), n);
	for (i = 0; i < 8; i++)
		u |= (uint64_t)v[i] << (8 * i);
	*out = (int64_t)u;
	return 0;
}

/* Adds an empty label to m (its key comes next). */
static struct label *
blobmeta_add_label(struct profile_meta *m, size_t *cap)
{
	if (m->nlabels == *cap) {
		*cap = *cap ? *cap * 2 : 8;
		m->labels = xreallocarray(m->labels, *cap, sizeof *m->labels);
	}
	memset(&m->labels[m->nlabels], 0, sizeof m->labels[0]);
	return &m->labels[m->nlabels++];
}

/* Decodes one known field into m; seen marks the singular ones. */
static int
blobmeta_get_field(struct profile_meta *m, unsigned tag, const uint8_t *v,
    size_t n, unsigned *seen, int64_t *nlabels, size_t *lcap, char **cause)
{
	struct label	*l;

	if (tag == 0 || tag >= BLOBMETA_TAGS)
		return 0;	/* a later version's field: skipped */
	if (tag != BLOBMETA_LABEL_KEY && tag != BLOBMETA_LABEL_VALUE) {
		if (*seen & (1u << tag))
			return xcause(cause, "%s given twice",
			    blobmeta_tag_name(tag));
		*seen |= 1u << tag;
	}
	l = m->nlabels > 0 ? &m->labels[m->nlabels - 1] : NULL;
	switch (tag) {
	case BLOBMETA_ID:
		if (n != STORE_ID_LEN)
			return xcause(cause, "id is %zu bytes, not %d", n,
			    STORE_ID_LEN);
		memcpy(m->id, v, n);
		m->id[n] = '\0';
		if (!blobs_id_valid(m->id))
			return xcause(cause, "id has characters outside "
			    "[0-9A-Za-z]");
		return 0;
	case BLOBMETA_SERVICE:
		return blobmeta_get_string(tag, v, n, 0, &m->service, cause);
	case BLOBMETA_TYPE:
		return blobmeta_get_string(tag, v, n, 0, &m->type, cause);
	case BLOBMETA_SAMPLE_TYPES:
		return blobmeta_get_string(tag, v, n, 1, &m->sample_types,
		    cause);
	case BLOBMETA_CREATED_AT:
		return blobmeta_get_int(tag, v, n, &m->created_at, cause);
	case BLOBMETA_SIZE:
		if (blobmeta_get_int(tag, v, n, &m->size, cause) == -1)
			return -1;
		return m->size < 0 ? xcause(cause, "negative size") : 0;
	case BLOBMETA_SAMPLES:
		return blobmeta_get_int(tag, v, n, &m->samples, cause);
	case BLOBMETA_DURATION:
		return blobmeta_get_int(tag, v, n, &m->duration_ns, cause);
	case BLOBMETA_NLABELS:
		if (blobmeta_get_int(tag, v, n, nlabels, cause) == -1)
			return -1;
		if (*nlabels < 0 || *nlabels > BLOBMETA_MAX_LABELS)
			return xcause(cause, "label count %lld is not in [0, "
			    "%d]", (long long)*nlabels, BLOBMETA_MAX_LABELS);
		return 0;
	case BLOBMETA_LABEL_KEY:
		if (l != NULL && l->value == NULL)
			return xcause(cause, "label key without a value");
		if (m->nlabels == BLOBMETA_MAX_LABELS)
			return xcause(cause, "more than %d labels",
			    BLOBMETA_MAX_LABELS);
		l = blobmeta_add_label(m, lcap);
		return blobmeta_get_string(tag, v, n, 0, &l->key, cause);
	case BLOBMETA_LABEL_VALUE:
		if (l == NULL || l->value != NULL)
			return xcause(cause, "label value without a key");
		return blobmeta_get_string(tag, v, n, 1, &l->value, cause);
	}
	return 0;
}

/* Decodes and checks; see the top of the file. */
int
blobmeta_decode(const uint8_t *buf, size_t len, struct profile_meta *m,
    char **cause)
{
	/* Every singular field: version 1 writes them all. */
	static const unsigned	 need = ((1u << BLOBMETA_LABEL_KEY) - 1) &
				    ~1u;
	unsigned		 seen = 0, tag, t;
	int64_t			 nlabels = -1;
	size_t			 off = 1, n, lcap = 0, i;
	char			*why = NULL;

	memset(m, 0, sizeof *m);
	if (len == 0)
		return xcause(cause, "metadata: empty");
	if (buf[0] != BLOBMETA_VERSION)
		return xcause(cause, "metadata: format version %u, this profd "
		    "reads %d", buf[0], BLOBMETA_VERSION);
	while (off < len) {
		if (len - off < BLOBMETA_FIELD_HEAD) {
			why = xasprintf("cut short in a field header at byte "
			    "%zu", off);
			goto fail;
		}
		tag = buf[off];
		n = 0;
		for (i = 0; i < 4; i++)
			n |= (size_t)buf[off + 1 + i] << (8 * i);
		off += BLOBMETA_FIELD_HEAD;
		if (n > len - off) {
			why = xasprintf("%s of %zu bytes overruns the metadata "
			    "(%zu bytes left)", blobmeta_tag_name(tag), n,
			    len - off);
			goto fail;
		}
		if (blobmeta_get_field(m, tag, buf + off, n, &seen, &nlabels,
		    &lcap, &why) == -1)
			goto fail;
		off += n;
	}
	if (m->nlabels > 0 && m->labels[m->nlabels - 1].value == NULL) {
		why = xstrdup("label key without a value");
		goto fail;
	}
	if ((seen & need) != need) {
		for (t = 0; !((need & ~seen) & (1u << t)); t++)
			;
		why = xasprintf("no %s", blobmeta_tag_name(t));
		goto fail;
	}
	if ((size_t)nlabels != m->nlabels) {
		why = xasprintf("%zu labels of %lld", m->nlabels,
		    (long long)nlabels);
		goto fail;
	}
	return 0;

fail:
	store_meta_clear(m);
	xcause(cause, "metadata: %s", why);
	free(why);
	return -1;
}
