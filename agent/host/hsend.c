/*
 * The host agent's sender (see hsend.h). The sampling loop hands
 * profiles over under a mutex; the sender thread moves them into the
 * uploader's queue (which drops the oldest past queue_max) and runs it,
 * waking when a profile arrives or a retry is due. A hand-over list
 * that the thread has not emptied (it is inside a 10-second exchange
 * with a collector that does not answer) is bounded the same way.
 * Drops are counted, and logged once until a profile gets through
 * again.
 */
#include <sys/queue.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/core/upload.h"
#include "agent/host/hsend.h"
#include "common/xmalloc.h"

struct hsend_item {
	TAILQ_ENTRY(hsend_item)	 entry;
	char			*service;
	char			*labels;
	uint8_t			*data;
	size_t			 len;
};

struct hsend {
	struct upload		*up;		/* NULL: writing files */
	char			*dir;
	uint64_t		 seq;
	size_t			 queue_max;
	pthread_t		 thread;
	int			 started;
	pthread_mutex_t		 lock;
	pthread_cond_t		 cond;
	TAILQ_HEAD(, hsend_item) items;
	size_t			 nitems;
	int			 stopping;
	int64_t			 deadline;
	uint64_t		 dropped;	/* from the hand-over list */
	int			 said_drop;
	struct hsend_stats	 last;		/* the uploader's, copied */
};

/* Frees an item. */
static void
hsend_item_free(struct hsend_item *it)
{
	free(it->service);
	free(it->labels);
	free(it->data);
	free(it);
}

/* Writes one profile to the output directory. */
static void
hsend_write(struct hsend *s, struct hsend_item *it)
{
	char *path, *tmp, *c;
	size_t off = 0;
	ssize_t w;
	int fd;

	for (c = it->service; *c != '\0'; c++)	/* a file name, not a path */
		if (*c == '/')
			*c = '_';
	path = xasprintf("%s/%s-cpu-%llu.pb.gz", s->dir, it->service,
	    (unsigned long long)++s->seq);
	tmp = xasprintf("%s.tmp", path);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0644)) < 0) {
		fprintf(stderr, "profd-hostagent: %s: %s\n", tmp,
		    strerror(errno));
		s->last.failures++;
		goto out;
	}
	while (off < it->len && (w = write(fd, it->data + off,
	    it->len - off)) > 0)
		off += (size_t)w;
	close(fd);
	if (off != it->len || rename(tmp, path) != 0) {
		unlink(tmp);
		s->last.failures++;
		goto out;
	}
	s->last.sent++;
out:
	free(tmp);
	free(path);
}

/* Moves the hand-over list into the uploader (lock held). */
static void
hsend_take(struct hsend *s)
{
	struct hsend_item *it;

	while ((it = TAILQ_FIRST(&s->items)) != NULL) {
		TAILQ_REMOVE(&s->items, it, entry);
		s->nitems--;
		upload_push_to(s->up, it->data, it->len, it->service,
		    it->labels);
		it->data = NULL;
		hsend_item_free(it);
	}
}

/* Copies the uploader's counters; logs the first drop of a run. */
static void
hsend_note(struct hsend *s)
{
	struct upload_stats us;
	uint64_t before = s->last.sent;

	upload_stats(s->up, &us);
	s->last.sent = us.sent;
	s->last.rejected = us.rejected;
	s->last.failures = us.failures;
	s->last.dropped = us.dropped + s->dropped;
	if (s->last.sent > before)
		s->said_drop = 0;
	if (s->last.dropped > 0 && !s->said_drop) {
		fprintf(stderr, "profd-hostagent: the collector is not taking "
		    "profiles: the oldest waiting ones are dropped (%llu so "
		    "far)\n", (unsigned long long)s->last.dropped);
		s->said_drop = 1;
	}
}

/* The sender thread. */
static void *
hsend_main(void *arg)
{
	struct hsend *s = arg;
	struct timespec ts;
	int64_t wait;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		hsend_take(s);
		if (s->stopping) {
			pthread_mutex_unlock(&s->lock);
			upload_flush(s->up, s->deadline);
			pthread_mutex_lock(&s->lock);
			hsend_note(s);
			break;
		}
		pthread_mutex_unlock(&s->lock);
		wait = upload_run(s->up);
		pthread_mutex_lock(&s->lock);
		hsend_note(s);
		if (!TAILQ_EMPTY(&s->items) || s->stopping)
			continue;
		if (wait < 0 || wait > 1000)
			wait = 1000;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += (wait + ts.tv_nsec / 1000000) / 1000;
		ts.tv_nsec = ((wait + ts.tv_nsec / 1000000) % 1000) * 1000000;
		pthread_cond_timedwait(&s->cond, &s->lock, &ts);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Starts the sender (see hsend.h). */
struct hsend *
hsend_new(const struct hsend_config *c, char **cause)
{
	struct hsend *s = xcalloc(1, sizeof *s);
	pthread_condattr_t ca;

	TAILQ_INIT(&s->items);
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);	/* not the wall's */
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	s->queue_max = c->queue_max > 0 ? c->queue_max : 64;
	if (c->output_dir != NULL) {
		s->dir = xstrdup(c->output_dir);
		return s;
	}
	s->up = upload_new(c->collector, "host", c->labels, c->token,
	    &c->tls, s->queue_max, c->verbose, cause);
	if (s->up == NULL) {
		free(s);
		return NULL;
	}
	if (pthread_create(&s->thread, NULL, hsend_main, s) != 0) {
		upload_free(s->up);
		free(s);
		xcause(cause, "cannot start the sender thread");
		return NULL;
	}
	s->started = 1;
	return s;
}

/* Hands a profile over (see hsend.h). */
void
hsend_push(struct hsend *s, const char *service, const char *labels,
    uint8_t *data, size_t len)
{
	struct hsend_item *it = xcalloc(1, sizeof *it), *old;

	it->service = xstrdup(service);
	it->labels = labels != NULL ? xstrdup(labels) : NULL;
	it->data = data;
	it->len = len;
	if (s->up == NULL) {
		hsend_write(s, it);
		hsend_item_free(it);
		return;
	}
	pthread_mutex_lock(&s->lock);
	if (s->nitems >= s->queue_max &&
	    (old = TAILQ_FIRST(&s->items)) != NULL) {
		TAILQ_REMOVE(&s->items, old, entry);
		s->nitems--;
		hsend_item_free(old);
		s->dropped++;
	}
	TAILQ_INSERT_TAIL(&s->items, it, entry);
	s->nitems++;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* Flushes, stops the thread and frees (see hsend.h). */
void
hsend_stop(struct hsend *s, int64_t deadline_ms, struct hsend_stats *final)
{
	struct hsend_item *it;

	if (s->started) {
		pthread_mutex_lock(&s->lock);
		s->stopping = 1;
		s->deadline = deadline_ms;
		pthread_cond_signal(&s->cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->thread, NULL);
	}
	if (final != NULL) {
		*final = s->last;
		final->queued = s->up != NULL ? s->nitems +
		    (upload_idle(s->up) ? 0 : 1) : 0;
	}
	while ((it = TAILQ_FIRST(&s->items)) != NULL) {
		TAILQ_REMOVE(&s->items, it, entry);
		hsend_item_free(it);
	}
	if (s->up != NULL)
		upload_free(s->up);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s->dir);
	free(s);
}

/* Copies the counters. */
void
hsend_stats(struct hsend *s, struct hsend_stats *st)
{
	pthread_mutex_lock(&s->lock);
	*st = s->last;
	st->queued = s->nitems;
	if (s->up == NULL)
		st->dropped = 0;
	pthread_mutex_unlock(&s->lock);
}
