/*
 * profd-hostagent: samples every process of the host from outside with
 * perf_event_open (hperf.c) and uploads one CPU profile per service and
 * period to the collector (hsend.c). This file holds the command line,
 * the privilege checks and the loop: poll the rings (at most 100 ms
 * apart), hand each record to the process table (hprocs.c) or the
 * sample path (hsample.c), and at the end of each period turn every
 * group into a profile (hpprof.c). SIGTERM and SIGINT stop it cleanly:
 * the rings are drained, the last period's profiles built and sent
 * (for at most --exit-timeout), then it exits 0.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/core/upload.h"
#include "agent/host/hgroups.h"
#include "agent/host/hkernel.h"
#include "agent/host/hobjs.h"
#include "agent/host/hperf.h"
#include "agent/host/hpprof.h"
#include "agent/host/hprocs.h"
#include "agent/host/hjit.h"
#include "agent/host/hpython.h"
#include "agent/host/hsample.h"
#include "agent/host/hsend.h"
#include "common/notify.h"
#include "common/parse.h"
#include "common/xmalloc.h"

#define MAIN_POLL_MS		100
#define MAIN_POLL_PY_MS		2	/* while CPython programs run, the
					   rings are copied out (their frames
					   read) every quarter sample interval,
					   at least this, at most 100 ms */
#define MAIN_DRAIN_MS		20	/* records handed on at most this
					   often (their ordering waits
					   20 ms anyway) */
#define MAIN_REAP_GRACE_MS	5000	/* exited processes kept */
#define MAIN_MAX_RINGS		4096

struct main_opts {
	const char	*collector;
	const char	*output_dir;
	const char	*labels;
	const char	*token_file;
	const char	*ca_file, *cert_file, *key_file;
	const char	*service_from;
	const char	*only_exe;
	pid_t		 only_pid;
	int		 hz;
	int64_t		 period_ns;
	int64_t		 exit_timeout_ns;
	uint32_t	 stack_size;
	size_t		 max_groups;
	size_t		 queue_windows;
	uint64_t	 cache_bytes;
	int		 include_agent;
	int		 no_python;
	int		 verbose;
};

static volatile sig_atomic_t main_stop;
/*
 * A file the agent has mapped (an object's symbols, a libc read for its
 * environ symbol) can shrink under it (cp over a program, a truncated
 * library): touching the lost pages raises SIGBUS. Record callbacks run
 * guarded: the handler jumps back to the callback, which drops the
 * object mapping the faulting address and the record.
 */
static sigjmp_buf		 main_jmp;
static volatile sig_atomic_t	 main_guarded;
static void *volatile		 main_fault;
static uint64_t			 main_sigbus;

/* SIGBUS: back to the guarded callback, else the default action. */
static void
main_on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (main_guarded) {
		main_guarded = 0;
		main_fault = si->si_addr;
		siglongjmp(main_jmp, 1);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* SIGTERM, SIGINT: stop after this period's profiles. */
static void
main_on_signal(int sig)
{
	(void)sig;
	main_stop = 1;
}

/* Prints the usage on f. */
static void
main_usage(FILE *f)
{
	fprintf(f,
"usage: profd-hostagent --collector URL [--OPTION VALUE ...]\n"
"       profd-hostagent --output-dir DIR [--OPTION VALUE ...]\n"
"       profd-hostagent --help | --version\n"
"Samples every process of this host with perf_event_open and uploads one\n"
"CPU profile per service and period to a profd collector.\n"
"\n"
"options:\n"
"  --collector URL        http[s]://host[:port][/prefix] of the collector\n"
"  --output-dir DIR       write the profiles to DIR instead (a dry run)\n"
"  --hz N                 samples per second per CPU, 1..1000 (default 19)\n"
"  --period DURATION      how often each service's profile is sent (60s)\n"
"  --labels K=V,...       labels of every profile (host= is added unless\n"
"                         given here)\n"
"  --token-file FILE      bearer token for the collector, its first line\n"
"  --ca-file FILE         CAs (PEM) the collector's certificate must chain to\n"
"  --cert-file FILE       client certificate (PEM) for mutual TLS\n"
"  --key-file FILE        its key (PEM)\n"
"  --pid PID              profile only this process and its descendants\n"
"  --exe NAME             profile only executables of this file name\n"
"  --service-from LIST    where service names come from, in order\n"
"                         (default env,unit,container,exe)\n"
"  --stack-size BYTES     user stack copied per sample, 1024..65528 (16384)\n"
"  --max-groups N         profiles per period at most (64; more services\n"
"                         share one named other)\n"
"  --queue N              periods of profiles kept while the collector is\n"
"                         away (4)\n"
"  --cache-size SIZE      memory for symbol and unwind tables (64M)\n"
"  --include-agent-processes\n"
"                         also profile processes running libprofd-agent\n"
"  --no-python-frames     keep CPython programs' native stacks\n"
"  --exit-timeout DURATION\n"
"                         at SIGTERM, the most spent sending (5s)\n"
"  --verbose              one line per profile and period\n"
"See profd-hostagent(8).\n");
}

/* Fails with one line. */
static void __attribute__((noreturn))
main_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("profd-hostagent: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* A whole number in [min, max] for option name. */
static int64_t
main_int(const char *name, const char *v, int64_t min, int64_t max)
{
	char *cause = NULL;
	int64_t out;

	if (parse_int(v, min, max, &out, &cause) != 0)
		main_die("--%s %s: %s", name, v, cause);
	return out;
}

/* A duration of at least min_ns for option name. */
static int64_t
main_duration(const char *name, const char *v, int64_t min_ns)
{
	char *cause = NULL;
	int64_t out;

	if (parse_duration(v, &out, &cause) != 0)
		main_die("--%s %s: %s", name, v, cause);
	if (out < min_ns)
		main_die("--%s %s: at least %" PRId64 " ms", name, v,
		    min_ns / 1000000);
	return out;
}

/* Checks "k=v,k=v": non-empty keys and values. */
static void
main_check_labels(const char *labels)
{
	const char *p = labels, *e, *eq;

	while (*p != '\0') {
		e = p + strcspn(p, ",");
		eq = memchr(p, '=', (size_t)(e - p));
		if (eq == NULL || eq == p || eq + 1 == e)
			main_die("--labels %s: \"%.*s\" is not key=value",
			    labels, (int)(e - p), p);
		p = *e == ',' ? e + 1 : e;
	}
}

/* Parses the command line. */
static void
main_parse(int argc, char **argv, struct main_opts *o)
{
	static const struct option longs[] = {
		{ "collector", required_argument, NULL, 'c' },
		{ "hz", required_argument, NULL, 'z' },
		{ "period", required_argument, NULL, 'p' },
		{ "labels", required_argument, NULL, 'l' },
		{ "token-file", required_argument, NULL, 't' },
		{ "ca-file", required_argument, NULL, 'A' },
		{ "cert-file", required_argument, NULL, 'C' },
		{ "key-file", required_argument, NULL, 'K' },
		{ "pid", required_argument, NULL, 'P' },
		{ "exe", required_argument, NULL, 'e' },
		{ "output-dir", required_argument, NULL, 'o' },
		{ "stack-size", required_argument, NULL, 's' },
		{ "service-from", required_argument, NULL, 'S' },
		{ "max-groups", required_argument, NULL, 'g' },
		{ "queue", required_argument, NULL, 'q' },
		{ "cache-size", required_argument, NULL, 'm' },
		{ "include-agent-processes", no_argument, NULL, 'I' },
		{ "no-python-frames", no_argument, NULL, 'n' },
		{ "exit-timeout", required_argument, NULL, 'x' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	char *cause = NULL;
	int c;

	memset(o, 0, sizeof *o);
	o->hz = 19;
	o->period_ns = 60 * 1000000000LL;
	o->exit_timeout_ns = 5 * 1000000000LL;
	o->stack_size = 16384;
	o->service_from = "env,unit,container,exe";
	o->max_groups = 64;
	o->queue_windows = 4;
	o->cache_bytes = 64ULL << 20;
	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		switch (c) {
		case 'c': o->collector = optarg; break;
		case 'z': o->hz = (int)main_int("hz", optarg, 1, 1000); break;
		case 'p':
			o->period_ns = main_duration("period", optarg,
			    1000000000LL);
			break;
		case 'l': main_check_labels(optarg); o->labels = optarg; break;
		case 't': o->token_file = optarg; break;
		case 'A': o->ca_file = optarg; break;
		case 'C': o->cert_file = optarg; break;
		case 'K': o->key_file = optarg; break;
		case 'P':
			o->only_pid = (pid_t)main_int("pid", optarg, 1,
			    INT_MAX);
			break;
		case 'e': o->only_exe = optarg; break;
		case 'o': o->output_dir = optarg; break;
		case 's':
			o->stack_size = (uint32_t)main_int("stack-size",
			    optarg, 1024, 65528) & ~7U;
			break;
		case 'S': o->service_from = optarg; break;
		case 'g':
			o->max_groups = (size_t)main_int("max-groups", optarg,
			    2, 100000);
			break;
		case 'q':
			o->queue_windows = (size_t)main_int("queue", optarg, 1,
			    1000);
			break;
		case 'm':
			if (parse_size(optarg, &o->cache_bytes, &cause) != 0)
				main_die("--cache-size %s: %s", optarg, cause);
			break;
		case 'I': o->include_agent = 1; break;
		case 'n': o->no_python = 1; break;
		case 'x':
			o->exit_timeout_ns = main_duration("exit-timeout",
			    optarg, 0);
			break;
		case 'v': o->verbose = 1; break;
		case 'h': main_usage(stdout); exit(0);
		case 'V': printf("profd-hostagent %s\n", PACKAGE_VERSION);
			exit(0);
		default: main_usage(stderr); exit(2);
		}
	}
	if (optind < argc)
		main_die("unexpected argument \"%s\" (see --help)",
		    argv[optind]);
	if (o->collector == NULL && o->output_dir == NULL)
		main_die("--collector URL is required (or --output-dir DIR "
		    "for a dry run)");
	if ((o->cert_file == NULL) != (o->key_file == NULL))
		main_die("--cert-file and --key-file go together");
}

/* The token in a file: its first line, trimmed. */
static char *
main_read_token(const char *path)
{
	char buf[4096];
	size_t n;
	FILE *f;

	if ((f = fopen(path, "r")) == NULL)
		main_die("--token-file %s: %s", path, strerror(errno));
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	for (n = strlen(buf); n > 0 && (buf[n - 1] == ' ' ||
	    buf[n - 1] == '\t'); n--)
		buf[n - 1] = '\0';
	if (buf[0] == '\0')
		main_die("--token-file %s: the file holds no token", path);
	return xstrdup(buf);
}

/*
 * Checks that other processes' /proc files (maps, environ, root) can be
 * read: that needs CAP_SYS_PTRACE in the effective set (root has it).
 */
static void
main_check_proc(void)
{
	char line[256];
	unsigned long long eff = 0;
	FILE *f;

	if ((f = fopen("/proc/self/status", "r")) == NULL)
		return;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	if ((eff & (1ULL << 19)) == 0)	/* CAP_SYS_PTRACE */
		main_die("reading other processes' /proc/PID/maps, environ "
		    "and root needs CAP_SYS_PTRACE (or root)");
}

/* Our own mount namespace. */
static uint64_t
main_own_mntns(void)
{
	char link[64];
	ssize_t r;

	if ((r = readlink("/proc/self/ns/mnt", link, sizeof link - 1)) <= 0)
		return 0;
	link[r] = '\0';
	return strtoull(link + strcspn(link, "0123456789"), NULL, 10);
}

/* Replaces ',', '=' and '&' (label and query syntax) in a label value. */
static void
main_label_value(char *dst, size_t size, const char *v)
{
	size_t i;

	snprintf(dst, size, "%s", v);
	for (i = 0; dst[i] != '\0'; i++)
		if (dst[i] == ',' || dst[i] == '=' || dst[i] == '&')
			dst[i] = '_';
}

/* Loop state. */
struct main_state {
	struct main_opts	*o;
	struct hperf		*perf;
	struct hsample		 hs;
	struct hsend		*send;
	char			 host[256];
	int			 host_in_labels;
	int64_t			 period_wall;	/* ns, wall clock */
	int64_t			 period_mono;	/* ms, monotonic */
	struct hperf_stats	 perf_last;
	struct hsample_stats	 hs_last;
	struct hpython_stats	 py_last;
	uint64_t		 profiles;
};

/* After a SIGBUS in a guarded callback: the object is dropped. */
static void
main_faulted(struct main_state *st)
{
	main_sigbus++;
	hobjs_forget_addr(st->hs.objs, main_fault);
	if (main_sigbus == 1)
		fprintf(stderr, "profd-hostagent: a mapped file shrank under "
		    "the agent (SIGBUS): its object is dropped\n");
}

/* A sample copied out of its ring: its Python frames, read now. */
static void
main_early(void *arg, pid_t pid, pid_t tid, uint64_t time)
{
	struct main_state *st = arg;

	if (st->hs.python == NULL)
		return;
	if (sigsetjmp(main_jmp, 0) != 0) {
		main_faulted(st);
		return;
	}
	main_guarded = 1;
	hsample_early(&st->hs, pid, tid, time);
	main_guarded = 0;
}

/* Record callbacks: to the process table or the sample path. */
static void
main_sample(void *arg, const struct hperf_sample *s)
{
	struct main_state *st = arg;

	if (sigsetjmp(main_jmp, 0) != 0) {
		main_faulted(st);
		return;
	}
	main_guarded = 1;
	hsample_take(&st->hs, s);
	main_guarded = 0;
}

/* mmap record. */
static void
main_mmap(void *arg, const struct hperf_mmap *m)
{
	struct main_state *st = arg;
	char id[41];
	size_t i;

	id[0] = '\0';
	for (i = 0; m->build_id != NULL && i < m->build_id_size && i < 20; i++)
		snprintf(id + 2 * i, 3, "%02x", m->build_id[i]);
	hprocs_mmap(st->hs.procs, m->pid, m->start, m->len, m->pgoff, m->path,
	    id);
}

/* comm record. */
static void
main_comm(void *arg, pid_t pid, pid_t tid, const char *comm, int exec)
{
	struct main_state *st = arg;

	if (exec && pid == tid)
		hprocs_exec(st->hs.procs, pid, comm);
	else if (pid == tid)
		hprocs_comm(st->hs.procs, pid, comm);
}

/* fork record (reads the parent's environment: guarded). */
static void
main_fork(void *arg, pid_t pid, pid_t ppid, pid_t tid)
{
	struct main_state *st = arg;

	if (sigsetjmp(main_jmp, 0) != 0) {
		main_faulted(st);
		return;
	}
	main_guarded = 1;
	hprocs_fork(st->hs.procs, pid, ppid, tid);
	main_guarded = 0;
}

/* exit record. */
static void
main_exit(void *arg, pid_t pid, pid_t tid)
{
	hprocs_exit(((struct main_state *)arg)->hs.procs, pid, tid);
}

/* Wall clock in ns. */
static int64_t
main_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* One line of the period's counters (--verbose). */
static void
main_say_stats(struct main_state *st, const struct hperf_stats *ps)
{
	const struct hsample_stats *a = &st->hs.stats, *b = &st->hs_last;
	struct hobjs_stats os;

	hobjs_stats(st->hs.objs, &os);
	fprintf(stderr, "profd-hostagent: period: %" PRIu64 " samples (%"
	    PRIu64 " lost, %" PRIu64 " bad): %" PRIu64 " taken, %" PRIu64
	    " idle, %" PRIu64 " of unknown processes, %" PRIu64 " filtered, %"
	    PRIu64 " in libprofd-agent processes; user walks: %" PRIu64
	    " outermost, %" PRIu64 " truncated, %" PRIu64 " unmapped, %"
	    PRIu64 " failed, %" PRIu64 " at max depth; %" PRIu64 " us "
	    "handling samples; %zu processes known; object cache: %" PRIu64
	    " objects, %" PRIu64 " KiB\n",
	    ps->samples - st->perf_last.samples, ps->lost - st->perf_last.lost,
	    ps->bad - st->perf_last.bad, a->taken - b->taken,
	    a->idle - b->idle, a->unknown - b->unknown,
	    a->filtered - b->filtered, a->agent - b->agent,
	    a->ends[HUNWIND_OUTERMOST] - b->ends[HUNWIND_OUTERMOST],
	    a->ends[HUNWIND_TRUNCATED] - b->ends[HUNWIND_TRUNCATED],
	    a->ends[HUNWIND_UNMAPPED] - b->ends[HUNWIND_UNMAPPED],
	    a->ends[HUNWIND_FAILED] - b->ends[HUNWIND_FAILED],
	    a->ends[HUNWIND_MAX_DEPTH] - b->ends[HUNWIND_MAX_DEPTH],
	    (a->spent_ns - b->spent_ns) / 1000, hprocs_count(st->hs.procs),
	    os.objects, os.bytes / 1024);
}

/* How long to wait for samples: short while CPython programs run. */
static int
main_poll_ms(struct main_state *st)
{
	int ms = 250 / st->o->hz;

	if (st->hs.python == NULL || !hpython_active(st->hs.python))
		return MAIN_POLL_MS;
	return ms < MAIN_POLL_PY_MS ? MAIN_POLL_PY_MS : ms > MAIN_POLL_MS ?
	    MAIN_POLL_MS : ms;
}

/* Ends the period: one profile per group. */
static void
main_flush(struct main_state *st)
{
	struct hperf_stats ps;
	struct hsample_stats *hs = &st->hs.stats, *last = &st->hs_last;
	struct hpprof_window w;
	struct hgroup *g;
	struct hpython_stats py;
	char comment[768], labels[1024], v[256];
	uint8_t *out;
	size_t outlen, len;
	char *cause = NULL;
	int64_t now = main_wall_ns();
	uint64_t mixed, native;
	int c;

	hperf_stats(st->perf, &ps);
	memset(&py, 0, sizeof py);
	if (st->hs.python != NULL)
		hpython_stats(st->hs.python, &py);
	mixed = py.mixed - st->py_last.mixed;
	native = py.native - st->py_last.native;
	c = snprintf(comment, sizeof comment, "profd-hostagent: %d Hz per CPU "
	    "on %zu CPUs, %u-byte stack copies; this period on the host: "
	    "%" PRIu64 " samples, %" PRIu64 " lost (ring full), %" PRIu64
	    " user stacks truncated at the stack copy's end, %" PRIu64
	    " ended in code of no known mapping",
	    st->o->hz, hperf_ncpus(st->perf), st->o->stack_size,
	    ps.samples - st->perf_last.samples, ps.lost - st->perf_last.lost,
	    hs->ends[HUNWIND_TRUNCATED] - last->ends[HUNWIND_TRUNCATED],
	    hs->ends[HUNWIND_UNMAPPED] - last->ends[HUNWIND_UNMAPPED]);
	if (mixed + native > 0 && c > 0 && (size_t)c < sizeof comment)
		snprintf(comment + c, sizeof comment - (size_t)c, "; Python "
		    "frames in %" PRIu64 " samples of CPython programs, read "
		    "%.1f ms after the sample on average (%" PRIu64 " checked "
		    "against the frame running at the sample, %" PRIu64
		    " with evaluator frames left native: ended before the "
		    "read), %" PRIu64 " with none (no frames)", mixed,
		    mixed > 0 ? (double)(py.late_ns - st->py_last.late_ns) /
		    1e6 / (double)mixed : 0.0, py.anchored -
		    st->py_last.anchored, py.partial - st->py_last.partial,
		    native);
	st->py_last = py;
	if (st->hs.python != NULL)
		hpython_reap(st->hs.python, st->hs.procs);
	hjit_reap(st->hs.jit, st->hs.procs);
	w.time_nanos = st->period_wall;
	w.duration_nanos = now - st->period_wall;
	w.hz = st->o->hz;
	w.comment = comment;
	for (g = st->hs.groups->head; g != NULL; g = g->next) {
		if (g->samples == 0)
			continue;
		if (hpprof_build(g, &w, &out, &outlen, &cause) != 0) {
			fprintf(stderr, "profd-hostagent: profile of %s: %s\n",
			    g->service, cause);
			free(cause);
			cause = NULL;
			continue;
		}
		labels[0] = '\0';
		len = 0;
		if (!st->host_in_labels) {
			main_label_value(v, sizeof v, st->host);
			len += (size_t)snprintf(labels + len, sizeof labels -
			    len, "host=%s", v);
		}
		if (!g->multi_exe && g->exe != UINT32_MAX && len <
		    sizeof labels) {
			main_label_value(v, sizeof v, g->strs[g->exe]);
			len += (size_t)snprintf(labels + len, sizeof labels -
			    len, "%sexe=%s", len ? "," : "", v);
		}
		if (g->unit != NULL && len < sizeof labels)
			len += (size_t)snprintf(labels + len, sizeof labels -
			    len, "%sunit=%s", len ? "," : "", g->unit);
		if (g->container != NULL && len < sizeof labels)
			snprintf(labels + len, sizeof labels - len,
			    "%scontainer=%s", len ? "," : "", g->container);
		if (st->o->verbose)
			fprintf(stderr, "profd-hostagent: %s (%s): %" PRId64
			    " samples, %zu locations, %zu bytes\n", g->service,
			    labels, g->samples, g->nlocs, outlen);
		hsend_push(st->send, g->service, labels, out, outlen);
		st->profiles++;
	}
	if (st->o->verbose)
		main_say_stats(st, &ps);
	hgroups_reset(st->hs.groups);
	hobjs_trim(st->hs.objs);
	st->perf_last = ps;
	st->hs_last = *hs;
	st->period_wall = now;
}

/* The loop: until a signal, then one last period. */
static void
main_loop(struct main_state *st)
{
	static const struct hperf_ops ops = { main_sample, main_mmap,
	    main_comm, main_fork, main_exit, main_early };
	struct pollfd pfd[MAIN_MAX_RINGS];
	int fds[MAIN_MAX_RINGS];
	size_t n, i;
	int64_t now, period_ms = st->o->period_ns / 1000000, reaped;
	int64_t drained = 0;

	n = hperf_fds(st->perf, fds, MAIN_MAX_RINGS);
	for (i = 0; i < n; i++) {
		pfd[i].fd = fds[i];
		pfd[i].events = POLLIN;
	}
	st->period_mono = hprocs_now_ms();
	reaped = st->period_mono;
	while (!main_stop) {
		poll(pfd, n, main_poll_ms(st));
		now = hprocs_now_ms();
		if (st->hs.python != NULL)
			hpython_tick(st->hs.python, now);
		if (now - drained < MAIN_DRAIN_MS) {
			/* Python's frames read; records handed on later. */
			hperf_copy(st->perf, &ops, st);
			continue;
		}
		hperf_drain(st->perf, &ops, st, 0);
		drained = now;
		if (now - reaped >= 1000) {
			hprocs_reap(st->hs.procs, MAIN_REAP_GRACE_MS);
			reaped = now;
		}
		if (now - st->period_mono >= period_ms) {
			main_flush(st);
			st->period_mono += period_ms;
			if (now - st->period_mono >= period_ms)
				st->period_mono = now;	/* fell behind */
		}
	}
	hperf_drain(st->perf, &ops, st, 1);
	main_flush(st);
}

/* Options, privileges, events, the loop, the last period, the report. */
int
main(int argc, char **argv)
{
	struct main_opts o;
	struct main_state st;
	struct hperf_config pc;
	struct hsend_config sc;
	struct hsend_stats ss;
	struct hperf_stats ps;
	struct hgroups groups;
	struct sigaction sa;
	char *cause = NULL, *token = NULL;
	size_t nprocs;

	main_parse(argc, argv, &o);
	memset(&st, 0, sizeof st);
	memset(&groups, 0, sizeof groups);
	st.o = &o;
	if (gethostname(st.host, sizeof st.host - 1) != 0)
		snprintf(st.host, sizeof st.host, "unknown");
	st.host_in_labels = o.labels != NULL && (strncmp(o.labels, "host=", 5)
	    == 0 || strstr(o.labels, ",host=") != NULL);
	if (o.token_file != NULL)
		token = main_read_token(o.token_file);
	if (o.output_dir != NULL && access(o.output_dir, W_OK) != 0)
		main_die("--output-dir %s: %s", o.output_dir, strerror(errno));
	if ((st.hs.procs = hprocs_new(o.service_from, &cause)) == NULL)
		main_die("%s", cause);

	memset(&sc, 0, sizeof sc);
	sc.collector = o.collector;
	sc.output_dir = o.output_dir;
	sc.labels = o.labels;
	sc.token = token;
	sc.tls.ca_file = o.ca_file;
	sc.tls.cert_file = o.cert_file;
	sc.tls.key_file = o.key_file;
	sc.queue_max = o.queue_windows * o.max_groups;
	sc.verbose = o.verbose;
	upload_set_prog("profd-hostagent");
	if ((st.send = hsend_new(&sc, &cause)) == NULL)
		main_die("--collector %s: %s", o.collector, cause);

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = main_on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = main_on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;	/* siglongjmp leaves it */
	sigaction(SIGBUS, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	memset(&pc, 0, sizeof pc);
	pc.hz = o.hz;
	pc.stack_size = o.stack_size;
	pc.ring_pages = 128;	/* 512 KiB a CPU: 32 MiB on 64 CPUs */
	if ((st.perf = hperf_open(&pc, &cause)) == NULL)
		main_die("%s", cause);
	main_check_proc();
	st.hs.objs = hobjs_new(o.cache_bytes);
	st.hs.kernel = hkernel_open("/proc/kallsyms");
	st.hs.groups = &groups;
	groups.max = o.max_groups;
	st.hs.own_mntns = main_own_mntns();
	st.hs.only_pid = o.only_pid;
	st.hs.only_exe = o.only_exe;
	st.hs.include_agent = o.include_agent;
	st.hs.python = o.no_python ? NULL : hpython_new();
	st.hs.jit = hjit_new();
	nprocs = hprocs_scan(st.hs.procs);
	st.period_wall = main_wall_ns();
	if (notify_open(&cause) < 0) {
		fprintf(stderr, "profd-hostagent: %s\n", cause);
		free(cause);
		cause = NULL;
	}
	fprintf(stderr, "profd-hostagent: sampling %zu CPUs at %d Hz "
	    "(%u-byte stack copies), %zu processes running, %zu kernel "
	    "symbols; %s %s every %" PRId64 " s\n", hperf_ncpus(st.perf), o.hz,
	    o.stack_size, nprocs, hkernel_count(st.hs.kernel),
	    o.output_dir != NULL ? "writing to" : "uploading to",
	    o.output_dir != NULL ? o.output_dir : o.collector,
	    (int64_t)(o.period_ns / 1000000000LL));
	notify_send("READY=1\nSTATUS=sampling %zu CPUs at %d Hz",
	    hperf_ncpus(st.perf), o.hz);

	main_loop(&st);

	notify_send("STOPPING=1");
	hperf_stats(st.perf, &ps);
	hperf_close(st.perf);
	hsend_stop(st.send, hprocs_now_ms() + o.exit_timeout_ns / 1000000,
	    &ss);
	fprintf(stderr, "profd-hostagent: stopped: %" PRIu64 " samples, %"
	    PRIu64 " taken, %" PRIu64 " lost (ring full), %" PRIu64
	    " in processes running libprofd-agent; %" PRIu64 " profiles, %"
	    PRIu64 " %s, %" PRIu64 " dropped, %" PRIu64 " rejected\n",
	    ps.samples, st.hs.stats.taken, ps.lost, st.hs.stats.agent,
	    st.profiles, ss.sent, o.output_dir != NULL ? "written" : "sent",
	    ss.dropped, ss.rejected);
	hgroups_reset(&groups);
	hobjs_free(st.hs.objs);
	hpython_free(st.hs.python);
	hjit_free(st.hs.jit);
	hkernel_free(st.hs.kernel);
	hprocs_free(st.hs.procs);
	notify_close();
	free(token);
	return 0;
}
