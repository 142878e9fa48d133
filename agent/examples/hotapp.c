/*
 * hotapp: a CPU-bound program with a known call tree, in the spirit of
 * profefe's hotapp, to see the agent at work:
 *
 *	main -> busyloop -> foo1 -> bar -> load	(heaviest path)
 *	                         -> baz -> load
 *	                 -> foo2 -> baz -> load
 *
 * so `load` dominates the flat profile and main;busyloop;foo1;bar;load
 * dominates the traces. Functions other than main are static: their names
 * exist only in .symtab. Built with -fno-omit-frame-pointer -fno-inline
 * -fno-optimize-sibling-calls so every call keeps its frame.
 *
 * Built three times: `hotapp` knows nothing about the agent (use
 * LD_PRELOAD); `hotapp-linked` (HOTAPP_LINKED) calls profd_agent_start()
 * from flags, and `hotapp-static` is the same with libprofd-agent.a.
 *
 * usage: hotapp [-s SECONDS | -n UNITS] [-d PERCENT] [-t THREADS] [-f] [-P]
 *	    [-x HOW PROG [ARG...]]
 *	-s  run for SECONDS of wall time (default 5)
 *	-d  work only PERCENT of each 100 ms (with -s; default 100)
 *	-n  do exactly UNITS of work (about 1 ms each) and report the time
 *	-t  run the work in THREADS threads
 *	-f  also fork a child that works for 1 s (prints "child PID")
 *	-P  install the program's own SIGPROF handler first
 *	-x  after the work, unset LD_PRELOAD and exec PROG with the
 *	    exec function HOW (execve, execv, execvp, execvpe, execl, execlp,
 *	    execle, fexecve, execveat; execl* take up to 4 ARGs); if it
 *	    fails, print why and do the work once more (in after_exec)
 * hotapp-linked adds: -c URL -S SERVICE -l LABELS -z HZ -w WINDOW -p PERIOD
 *	-o OUTPUT_DIR -T TOKEN (no -S: the agent is not started)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef HOTAPP_LINKED
#include "agent/inproc/profd_agent.h"
#endif

/* Keep every function whole and uncloned, so its name is the plain one. */
#if defined(__clang__)
#define HOTAPP_NOIPA	__attribute__((noinline))
#else
#define HOTAPP_NOIPA	__attribute__((noipa))
#endif

#define HOTAPP_SPIN	20000	/* load() iterations per weight unit */

static volatile unsigned long	hotapp_sink;
static double			hotapp_seconds = 5;
static long			hotapp_units = -1;

static double	hotapp_duty = 100;	/* percent of the time working */

/* Monotonic seconds. */
static double
hotapp_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The hot leaf: an LCG the compiler cannot fold away. */
static HOTAPP_NOIPA unsigned long
load(unsigned long weight)
{
	unsigned long x = hotapp_sink | 1, i;

	for (i = 0; i < weight * HOTAPP_SPIN; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	hotapp_sink = x;
	return x;
}

/* Heavy: six units of load. */
static HOTAPP_NOIPA unsigned long
bar(void)
{
	unsigned long r = load(6);

	hotapp_sink += r;
	return r ^ 1;
}

/* Light: one unit of load. */
static HOTAPP_NOIPA unsigned long
baz(void)
{
	unsigned long r = load(1);

	hotapp_sink += r;
	return r ^ 2;
}

/* Mostly bar. */
static HOTAPP_NOIPA unsigned long
foo1(void)
{
	unsigned long r = bar();

	r += baz();
	hotapp_sink += r;
	return r ^ 3;
}

/* Only baz. */
static HOTAPP_NOIPA unsigned long
foo2(void)
{
	unsigned long r = baz();

	hotapp_sink += r;
	return r ^ 4;
}

/* Runs units of work (or until the deadline when units < 0). */
static HOTAPP_NOIPA unsigned long
busyloop(long units, double deadline)
{
	unsigned long r = 0;
	long i;

	double cycle = hotapp_now(), now;

	for (i = 0; units < 0 || i < units; i++) {
		r += foo1();
		r += foo2();
		if (units < 0 && (i & 7) == 0 && (now = hotapp_now()) >=
		    deadline)
			break;
		/* -d: work duty percent of each 100 ms, sleep the rest. */
		if (hotapp_duty < 100 && (i & 7) == 0 &&
		    (now = hotapp_now()) - cycle >= hotapp_duty / 1000.0) {
			usleep((useconds_t)((cycle + 0.1 - now) * 1e6 > 0 ?
			    (cycle + 0.1 - now) * 1e6 : 0));
			cycle = hotapp_now();
		}
	}
	hotapp_sink += r;
	return r;
}

/* Worker thread body. */
static void *
hotapp_thread(void *arg)
{
	double deadline = *(double *)arg;

	busyloop(hotapp_units, deadline);
	return NULL;
}

/* The work again after a failed exec (its own frame, seen in profiles). */
static HOTAPP_NOIPA unsigned long
after_exec(void)
{
	return busyloop(hotapp_units, hotapp_now() + hotapp_seconds);
}

/* Execs argv[0] with how; returns only on failure (-1). */
static int
hotapp_exec(const char *how, char **argv, int argc)
{
	extern char **environ;
	char *a[5] = { NULL, NULL, NULL, NULL, NULL };
	int i, fd, rc;

	if (argc < 1 || argc > 5) {
		errno = E2BIG;
		return -1;
	}
	for (i = 1; i < argc; i++)
		a[i - 1] = argv[i];
	if (strcmp(how, "execve") == 0)
		return execve(argv[0], argv, environ);
	if (strcmp(how, "execv") == 0)
		return execv(argv[0], argv);
	if (strcmp(how, "execvp") == 0)
		return execvp(argv[0], argv);
	if (strcmp(how, "execvpe") == 0)
		return execvpe(argv[0], argv, environ);
	if (strcmp(how, "execl") == 0)
		return execl(argv[0], argv[0], a[0], a[1], a[2], a[3],
		    (char *)NULL);
	if (strcmp(how, "execlp") == 0)
		return execlp(argv[0], argv[0], a[0], a[1], a[2], a[3],
		    (char *)NULL);
	if (strcmp(how, "execle") == 0)
		return execle(argv[0], argv[0], a[0], a[1], a[2], a[3],
		    (char *)NULL, environ);
	if (strcmp(how, "fexecve") == 0 || strcmp(how, "execveat") == 0) {
		if ((fd = open(argv[0], O_RDONLY | O_CLOEXEC)) == -1)
			return -1;
		if (how[1] == 'e')
			rc = fexecve(fd, argv, environ);
		else
			rc = execveat(fd, "", argv, environ, AT_EMPTY_PATH);
		i = errno;
		close(fd);
		errno = i;
		return rc;
	}
	errno = EINVAL;
	return -1;
}

/* The program's own SIGPROF handler (for -P). */
static void
hotapp_sigprof(int sig)
{
	(void)sig;
	hotapp_sink++;
}

int
main(int argc, char **argv)
{
	struct rusage ru;
	pthread_t *th;
	double t0, deadline, cpu;
	int c, i, threads = 1, do_fork = 0, own_prof = 0;
	const char *exec_how = NULL;
	pid_t child = -1;
#ifdef HOTAPP_LINKED
	struct profd_agent_config cfg;
	char *err = NULL;

	memset(&cfg, 0, sizeof cfg);
#define HOTAPP_OPTS "+s:n:t:fPx:d:c:S:l:z:w:p:o:T:v"
#else
#define HOTAPP_OPTS "+s:n:t:fPx:d:"
#endif

	while ((c = getopt(argc, argv, HOTAPP_OPTS)) != -1) {
		switch (c) {
		case 's':
			hotapp_seconds = atof(optarg);
			break;
		case 'n':
			hotapp_units = atol(optarg);
			break;
		case 't':
			threads = atoi(optarg) > 0 ? atoi(optarg) : 1;
			break;
		case 'f':
			do_fork = 1;
			break;
		case 'P':
			own_prof = 1;
			break;
		case 'd':
			hotapp_duty = atof(optarg);
			break;
		case 'x':
			exec_how = optarg;
			break;
#ifdef HOTAPP_LINKED
		case 'c': cfg.collector_url = optarg; break;
		case 'S': cfg.service = optarg; break;
		case 'l': cfg.labels = optarg; break;
		case 'z': cfg.hz = atoi(optarg); break;
		case 'w': cfg.window_sec = atoi(optarg); break;
		case 'p': cfg.period_sec = atoi(optarg); break;
		case 'T': cfg.token = optarg; break;
		case 'v': cfg.verbose = 1; break;
		case 'o':
			cfg.output_dir = optarg;
			cfg.no_upload = cfg.collector_url == NULL;
			break;
#endif
		default:
			fprintf(stderr, "usage: %s [-s SECONDS | -n UNITS] "
			    "[-t THREADS] [-f] [-P] [-x HOW PROG [ARG...]]\n",
			    argv[0]);
			return 2;
		}
	}
	if (exec_how != NULL && optind >= argc) {
		fprintf(stderr, "%s: -x needs a program\n", argv[0]);
		return 2;
	}
	if (own_prof)
		signal(SIGPROF, hotapp_sigprof);
#ifdef HOTAPP_LINKED
	if (cfg.service != NULL) {
		if (cfg.collector_url != NULL)
			cfg.no_upload = 0;
		if (profd_agent_start(&cfg, &err) != 0) {
			fprintf(stderr, "hotapp: agent not started: %s\n", err);
			free(err);
		}
	}
#endif
	t0 = hotapp_now();
	deadline = t0 + hotapp_seconds;
	if (do_fork) {
		fflush(stdout);
		if ((child = fork()) == 0) {
			printf("child %d\n", (int)getpid());
			fflush(stdout);
			busyloop(-1, hotapp_now() + 1.0);
			_exit(0);
		}
	}
	th = calloc((size_t)threads, sizeof *th);
	for (i = 1; i < threads; i++)
		pthread_create(&th[i], NULL, hotapp_thread, &deadline);
	busyloop(hotapp_units, deadline);
	for (i = 1; i < threads; i++)
		pthread_join(th[i], NULL);
	free(th);
	if (child > 0)
		waitpid(child, NULL, 0);
	if (exec_how != NULL) {
		fflush(stdout);
		unsetenv("LD_PRELOAD");
		hotapp_exec(exec_how, argv + optind, argc - optind);
		printf("hotapp: %s %s: %s\n", exec_how, argv[optind],
		    strerror(errno));
		after_exec();
	}
	getrusage(RUSAGE_SELF, &ru);
	cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	    (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	printf("hotapp %d done: wall %.3f s cpu %.3f s\n", (int)getpid(),
	    hotapp_now() - t0, cpu);
	fflush(stdout);
#ifdef HOTAPP_LINKED
	profd_agent_stop();
#endif
	return 0;
}
