/*
 * POST /api/0/profiles/merge: a merge of a list of ids too long for a URL
 * (the id+id form meets the 64 KiB header limit near 3,000 ids, below
 * --max-merge-profiles). The body is the list, as a form field
 * (ids=ID1+ID2+... as application/x-www-form-urlencoded sends it) or as
 * plain text, the ids separated by '+', ',' or white space. The merge is
 * the same as GET /api/0/profiles/{id1}+{id2}+... (api_merge_ids) and
 * needs the read scope, like any merge.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "collector/api/api_merge.h"
#include "collector/api/api_merge_post.h"
#include "collector/http/reply.h"
#include "common/xmalloc.h"

/* Separates ids in a posted list. */
static int
api_merge_post_sep(char c)
{
	return c == '+' || c == ',' || c == ' ' || c == '\t' || c == '\r' ||
	    c == '\n';
}

/* Joins the ids of list with '+' into a new string ("" when none). */
static char *
api_merge_post_join(const char *list, size_t len)
{
	char *out = xmalloc(len + 1), *o = out;
	size_t i = 0;

	while (i < len) {
		while (i < len && api_merge_post_sep(list[i]))
			i++;
		if (i == len)
			break;
		if (o != out)
			*o++ = '+';
		while (i < len && !api_merge_post_sep(list[i]))
			*o++ = list[i++];
	}
	*o = '\0';
	return out;
}

/* POST /api/0/profiles/merge with the ids in the body. */
void
api_merge_post(struct env *env, struct evhttp_request *req,
    const struct params *p)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(in), n;
	const char *body = (const char *)evbuffer_pullup(in, -1);
	char *decoded = NULL, *ids;
	const char *amp;

	(void)p;
	if (len > 4 && memcmp(body, "ids=", 4) == 0) {
		amp = memchr(body, '&', len);
		decoded = xstrndup(body + 4, (amp != NULL ? (size_t)(amp -
		    body) : len) - 4);
		ids = evhttp_uridecode(decoded, 1, &n);	/* '+' is a space */
		free(decoded);
		if (ids == NULL || strlen(ids) != n) {
			free(ids);
			reply_error(env, req, 400, "malformed ids field");
			return;
		}
		decoded = ids;
		body = ids;
		len = n;
	} else if (len > 0 && memchr(body, '\0', len) != NULL) {
		reply_error(env, req, 400, "the id list holds a NUL byte");
		return;
	}
	ids = api_merge_post_join(body, len);
	free(decoded);
	if (*ids == '\0')
		reply_error(env, req, 400, "no profile ids in the body (send "
		    "ids=ID1+ID2+... or the ids separated by ',', '+' or "
		    "white space)");
	else
		api_merge_ids(env, req, ids);
	free(ids);
}
