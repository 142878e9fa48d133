/*
 * Collector-directed pacing: the scheduler that hands out profiling
 * windows ("slots") to the agents that poll for them, so that each
 * (service, type) is profiled at most --profile-rate times a minute
 * however many replicas it has (like Cloud Profiler's CreateProfile).
 *
 * Pure bookkeeping: no sockets, no libevent, no HTTP. Time comes from an
 * injected clock (milliseconds, monotonic) and held polls are answered
 * through a callback, so the whole thing runs under a fake clock in unit
 * tests; collector/api/api_pacing.c drives it from the HTTP route and a
 * loop timer. Loop thread only.
 *
 * The rules: grants of a (service, type) are at least 60/rate seconds
 * apart; a due grant goes to the waiting instance whose last grant of the
 * type is oldest (never granted first, ties by arrival) among those not
 * in a window now; a grant due with nobody waiting is not stored up (the
 * next poll takes it at once, one poll only). A granted slot must be
 * claimed by a busy poll within PACING_CLAIM_MS; the busy poll is held
 * until the window ends (plus PACING_SLACK_MS). A busy poll whose client
 * goes away, or a slot never claimed, cancels the slot: the spacing is
 * reset so the next grant may happen at once.
 */
#ifndef PROFD_PACING_H
#define PROFD_PACING_H

#include <stddef.h>
#include <stdint.h>

#define PACING_NTYPES		8	/* profile types, by index */
#define PACING_MAX_INSTANCES	10000	/* default limits */
#define PACING_MAX_STREAMS	4096	/* (service, type) pairs */
#define PACING_SLACK_MS		2000	/* a window's end, for its busy poll */
#define PACING_CLAIM_MS		5000	/* a slot with no busy poll is freed */
#define PACING_FORGET_MS	600000	/* instances unseen this long go */
#define PACING_SWEEP_MS		10000	/* how often they are looked for */

struct pacing;
struct pacing_waiter;

/* What a poll is answered. */
enum pacing_action {
	PACING_PROFILE,		/* collect a window now */
	PACING_WAIT,		/* poll again after delay_ms */
	PACING_STOP		/* the collector is stopping */
};

struct pacing_answer {
	enum pacing_action	 action;
	int			 type;		/* PROFILE: the type's index */
	int64_t			 duration_s;	/* PROFILE */
	uint64_t		 slot;		/* PROFILE: the slot's id */
	int64_t			 delay_ms;	/* WAIT */
};

struct pacing_ops {
	/* The clock: monotonic milliseconds. */
	int64_t	(*now_ms)(void *arg);
	/* A poll is answered; its waiter (if it was held) is gone. */
	void	(*answer)(void *arg, void *ctx, const struct pacing_answer *);
};

struct pacing_config {
	int64_t		 rate;		/* windows per minute per (service,
					   type), 1..600 */
	size_t		 max_instances;	/* 0: PACING_MAX_INSTANCES */
	size_t		 max_streams;	/* 0: PACING_MAX_STREAMS */
	uint64_t	 first_slot;	/* the first slot id (0: 1) */
};

/* One poll, its parameters checked by the caller. */
struct pacing_request {
	const char	*service;
	const char	*instance;
	unsigned	 types;		/* bit i: the type of index i (at
					   least one) */
	int64_t		 window_s;	/* a grant's duration */
	int64_t		 wait_ms;	/* hold at most this long */
	int		 busy;		/* a busy poll, of: */
	uint64_t	 slot;		/* the slot's id */
};

struct pacing_stats {
	uint64_t	 grants[PACING_NTYPES];
	uint64_t	 cancelled;	/* slots given back early */
	int		 held;		/* polls held now */
	int		 instances;	/* instances tracked */
	int		 streams;	/* (service, type) pairs tracked */
	int		 slots;		/* windows not ended */
};

/* What pacing_poll did with a poll. */
#define PACING_ANSWERED	0	/* answered through ops->answer already */
#define PACING_HELD	1	/* held: *held is its waiter */
#define PACING_FULL	(-1)	/* refused: too many instances or pairs */

/* A scheduler; ops and arg are kept. */
struct pacing	*pacing_new(const struct pacing_config *,
		    const struct pacing_ops *, void *arg);
/* Frees it; held polls are dropped without an answer. */
void		 pacing_free(struct pacing *);
/*
 * Takes a poll: answers it now through ops->answer with ctx, or holds it
 * (PACING_HELD, *held set until it is answered or forgotten), or refuses
 * it (PACING_FULL; nothing answered). Other held polls may be answered
 * meanwhile (a poll of the same instance that it supersedes).
 */
int		 pacing_poll(struct pacing *, const struct pacing_request *,
		    void *ctx, struct pacing_waiter **held);
/*
 * The client of a held poll went away: forgets it without an answer. A
 * busy poll's slot is cancelled (its window given back at once), which
 * may answer other held polls (a grant).
 */
void		 pacing_forget(struct pacing *, struct pacing_waiter *);
/* Does what is due now: grants, holds run out, windows ended, slots
 * never claimed, instances unseen for PACING_FORGET_MS. */
void		 pacing_run(struct pacing *);
/* When pacing_run next has something to do (the clock's ms; INT64_MAX:
 * nothing until the next poll). May be early, never late. */
int64_t		 pacing_next_wake(const struct pacing *);
/* Answers every held poll PACING_STOP (shutdown). */
void		 pacing_stop(struct pacing *);
void		 pacing_stats(const struct pacing *, struct pacing_stats *);

#endif
