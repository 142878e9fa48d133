/*
 * profd --copy-to: moving a store between backends (the embedded store
 * into PostgreSQL, or back) without losing history.
 *
 * The source is read a page of COPY_PAGE rows at a time in id order
 * (store_scan), so memory stays bounded whatever the size of the store.
 * Each page's profiles are written by COPY_THREADS threads at once, so the
 * destination's group commit takes many in one transaction. A profile the
 * destination already holds is left alone: a copy cut short (a crash, ^C,
 * the network) is resumed by running the same command again. The id, time,
 * labels, summary and bytes are kept as they were.
 *
 * Then the check: every profile of the source is looked up in the
 * destination, its row compared and its bytes read from both and compared;
 * the summary says how many profiles and bytes were compared and whether
 * anything differed (exit status 1 if so). The source should not be
 * written meanwhile (an embedded store is locked while profd runs on it;
 * on PostgreSQL, stop the collectors or run the copy again after).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/config.h"
#include "collector/copy.h"
#include "collector/retention.h"
#include "common/log.h"
#include "common/xmalloc.h"
#include "storage/store.h"
#include "storage/store_meta.h"

#define COPY_PAGE	512
#define COPY_THREADS	8

/* A copy in progress: the two stores, a page, and the figures. */
struct copy {
	struct store		*src, *dst;
	struct profile_meta	*page;
	size_t			 n;
	size_t			 next;	/* the next to take */
	int			 verify;	/* 0: copying, 1: checking */
	pthread_mutex_t		 mu;		/* guards the rest */
	int64_t			 copied, copied_bytes, present;
	int64_t			 checked, checked_bytes, differ;
	char			*error;		/* first failure */
};

/* Records the first failure. */
static void
copy_fail(struct copy *cp, const char *id, char *why)
{
	pthread_mutex_lock(&cp->mu);
	if (cp->error == NULL)
		cp->error = xasprintf("profile %s: %s", id, why ? why : "?");
	pthread_mutex_unlock(&cp->mu);
	free(why);
}

/* Records a difference found by the check. */
static void
copy_differ(struct copy *cp, const char *id, const char *what)
{
	pthread_mutex_lock(&cp->mu);
	if (cp->differ++ < 10)
		log_warn("copy: profile %s differs in the destination: %s", id,
		    what);
	pthread_mutex_unlock(&cp->mu);
}

/* Whether two rows say the same (labels included). */
static int
copy_same_row(const struct profile_meta *a, const struct profile_meta *b)
{
	size_t	i;

	if (strcmp(a->service, b->service) != 0 ||
	    strcmp(a->type, b->type) != 0 || a->created_at != b->created_at ||
	    a->size != b->size || a->nlabels != b->nlabels)
		return 0;
	for (i = 0; i < a->nlabels; i++)
		if (strcmp(a->labels[i].key, b->labels[i].key) != 0 ||
		    strcmp(a->labels[i].value, b->labels[i].value) != 0)
			return 0;
	return 1;
}

/* Copies one profile unless the destination has it. */
static void
copy_one(struct copy *cp, const struct profile_meta *m)
{
	struct profile_meta	 d;
	uint8_t			*buf = NULL;
	size_t			 len = 0;
	char			*why = NULL;
	int			 rc;

	rc = store_get(cp->dst, m->id, &d, &why);
	if (rc == 0) {
		store_meta_clear(&d);
		pthread_mutex_lock(&cp->mu);
		cp->present++;
		pthread_mutex_unlock(&cp->mu);
		return;
	}
	if (rc < 0) {
		copy_fail(cp, m->id, why);
		return;
	}
	rc = store_read_blob(cp->src, m->id, &buf, &len, &why);
	if (rc == 1)
		return;		/* deleted since the page was read */
	if (rc != 0 || store_put(cp->dst, m, buf, len, &why) != 0) {
		copy_fail(cp, m->id, why);
		free(buf);
		return;
	}
	free(buf);
	pthread_mutex_lock(&cp->mu);
	cp->copied++;
	cp->copied_bytes += (int64_t)len;
	pthread_mutex_unlock(&cp->mu);
}

/* Compares one profile's row and bytes in both stores. */
static void
copy_check(struct copy *cp, const struct profile_meta *m)
{
	struct profile_meta	 d;
	uint8_t			*a = NULL, *b = NULL;
	size_t			 alen = 0, blen = 0;
	char			*why = NULL;
	int			 rc;

	if ((rc = store_get(cp->dst, m->id, &d, &why)) != 0) {
		if (rc < 0)
			copy_fail(cp, m->id, why);
		else
			copy_differ(cp, m->id, "missing");
		return;
	}
	if (!copy_same_row(m, &d))
		copy_differ(cp, m->id, "metadata");
	store_meta_clear(&d);
	if (store_read_blob(cp->src, m->id, &a, &alen, &why) != 0 ||
	    store_read_blob(cp->dst, m->id, &b, &blen, &why) != 0)
		copy_fail(cp, m->id, why);
	else if (alen != blen || memcmp(a, b, alen) != 0)
		copy_differ(cp, m->id, "bytes");
	else {
		pthread_mutex_lock(&cp->mu);
		cp->checked++;
		cp->checked_bytes += (int64_t)alen;
		pthread_mutex_unlock(&cp->mu);
	}
	free(a);
	free(b);
}

/* A worker: takes the page's profiles one by one. */
static void *
copy_worker(void *arg)
{
	struct copy	*cp = arg;
	size_t		 i;

	for (;;) {
		pthread_mutex_lock(&cp->mu);
		i = cp->error == NULL && cp->next < cp->n ? cp->next++ : cp->n;
		pthread_mutex_unlock(&cp->mu);
		if (i >= cp->n)
			return NULL;
		if (cp->verify)
			copy_check(cp, &cp->page[i]);
		else
			copy_one(cp, &cp->page[i]);
	}
}

/* One pass over the source (copying or checking); 0 or -1. */
static int
copy_pass(struct copy *cp, int verify)
{
	pthread_t	 t[COPY_THREADS];
	char		 after[STORE_ID_LEN + 1] = "";
	char		*why = NULL;
	int64_t		 seen = 0;
	size_t		 i;

	cp->verify = verify;
	for (;;) {
		if (store_scan(cp->src, after, COPY_PAGE, &cp->page, &cp->n,
		    &why) != 0) {
			copy_fail(cp, "(scan)", why);
			return -1;
		}
		if (cp->n == 0) {
			store_meta_free_array(cp->page, 0);
			cp->page = NULL;
			break;
		}
		cp->next = 0;
		for (i = 0; i < COPY_THREADS; i++)
			pthread_create(&t[i], NULL, copy_worker, cp);
		for (i = 0; i < COPY_THREADS; i++)
			pthread_join(t[i], NULL);
		memcpy(after, cp->page[cp->n - 1].id, sizeof after);
		seen += (int64_t)cp->n;
		store_meta_free_array(cp->page, cp->n);
		cp->page = NULL;
		if (cp->error != NULL)
			return -1;
		if (seen % (COPY_PAGE * 100) == 0)
			log_info("copy: %s %lld profiles so far",
			    verify ? "checked" : "went through",
			    (long long)seen);
	}
	return 0;
}

/* Copies cfg's store into cfg->copy_to, checks, prints a summary. */
int
copy_run(const struct config *cfg)
{
	struct store_options	 so = {
		cfg->store ? cfg->store : cfg->data_dir,
		64 + (size_t)cfg->io_threads + RETENTION_BATCH,
		(size_t)cfg->store_pool
	};
	struct store_options	 dsto = so;
	struct copy		 cp;
	char			*why = NULL;
	int			 rc = 1;

	memset(&cp, 0, sizeof cp);
	pthread_mutex_init(&cp.mu, NULL);
	dsto.location = cfg->copy_to;
	if (strcmp(so.location, dsto.location) == 0) {
		fprintf(stderr, "profd: --copy-to: the source and the "
		    "destination are the same store\n");
		goto out;
	}
	if ((cp.src = store_open_options(&so, NULL, &why)) == NULL ||
	    (cp.dst = store_open_options(&dsto, NULL, &why)) == NULL) {
		fprintf(stderr, "profd: --copy-to: %s\n", why);
		goto out;
	}
	log_info("copy: from the %s store to the %s store at %s",
	    store_backend(cp.src), store_backend(cp.dst),
	    store_is_postgresql(dsto.location) ? "the --copy-to URI" :
	    dsto.location);
	if (copy_pass(&cp, 0) != 0 || copy_pass(&cp, 1) != 0) {
		fprintf(stderr, "profd: --copy-to: %s (run the same command "
		    "again to resume)\n", cp.error);
		goto out;
	}
	printf("copied %lld profiles (%lld bytes), %lld were there already; "
	    "checked %lld profiles (%lld bytes): %s\n", (long long)cp.copied,
	    (long long)cp.copied_bytes, (long long)cp.present,
	    (long long)cp.checked, (long long)cp.checked_bytes,
	    cp.differ ? "SOME DIFFER (see the log)" : "all identical");
	rc = cp.differ ? 1 : 0;
out:
	free(why);
	free(cp.error);
	store_close(cp.dst);
	store_close(cp.src);
	pthread_mutex_destroy(&cp.mu);
	return rc;
}
