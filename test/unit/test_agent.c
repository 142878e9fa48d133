/*
 * Unit tests of the agent's parts, on the real process: the ELF symbolizer
 * names a static function of this binary and an exported one of libz, the
 * SIGPROF sampler records real stacks of a spinning function, the frame
 * walker stops on a bad frame pointer, and the profile built from the
 * samples decodes with protobuf-c into what pprof needs. With an argument,
 * the gzipped profile is also written there (agent_symbols.sh feeds it to
 * go tool pprof).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "profile.pb-c.h"

#include "agent/core/build.h"
#include "agent/core/maps.h"
#include "agent/inproc/sampler.h"
#include "agent/inproc/settings.h"
#include "agent/core/stacks.h"
#include "agent/core/symtab.h"
#include "agent/inproc/unwind.h"
#include "agent/core/upload.h"
#include "common/xmalloc.h"
#include "test/lib/tap.h"

static volatile unsigned long test_sink;

/* A static function: named only in .symtab. */
static __attribute__((noinline)) unsigned long
test_static_target(unsigned long x)
{
	test_sink += x;
	return test_sink * 3;
}

/* Spins for ms of CPU time. */
static __attribute__((noinline)) void
test_spin(long ms)
{
	struct timespec ts;
	double end;
	unsigned long x = 1, i;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	end = ts.tv_sec + ts.tv_nsec / 1e9 + ms / 1e3;
	do {
		for (i = 0; i < 100000; i++)
			x = x * 6364136223846793005UL + 1;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < end);
	test_sink += x;
}

/* Names the function at runtime address addr, or returns NULL. */
static const char *
test_name(struct maps *m, uintptr_t addr, struct symtab **keep)
{
	const struct maps_entry *e = maps_find(m, addr);
	uint64_t vaddr;
	size_t idx;

	*keep = NULL;
	if (e == NULL || e->path[0] != '/')
		return NULL;
	if ((*keep = symtab_open(e->path, NULL)) == NULL)
		return NULL;
	if (symtab_offset_to_vaddr(*keep, addr - e->start + e->offset,
	    &vaddr) != 0)
		return NULL;
	return symtab_lookup(*keep, vaddr, &idx);
}

/* Inflates a gzip buffer. */
static uint8_t *
test_gunzip(const uint8_t *in, size_t len, size_t *outlen)
{
	z_stream zs;
	size_t cap = 1 << 20;
	uint8_t *out = xmalloc(cap);
	int rc;

	memset(&zs, 0, sizeof zs);
	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return NULL;
	zs.next_in = (Bytef *)(uintptr_t)in;
	zs.avail_in = (uInt)len;
	for (;;) {
		zs.next_out = out + zs.total_out;
		zs.avail_out = (uInt)(cap - zs.total_out);
		rc = inflate(&zs, Z_NO_FLUSH);
		if (rc == Z_STREAM_END)
			break;
		if (rc != Z_OK) {
			free(out);
			inflateEnd(&zs);
			return NULL;
		}
		cap *= 2;
		out = xreallocarray(out, cap, 1);
	}
	*outlen = zs.total_out;
	inflateEnd(&zs);
	return out;
}

/* The string at index i of a decoded profile. */
static const char *
test_str(const Perftools__Profiles__Profile *p, int64_t i)
{
	return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] :
	    "<bad index>";
}

static void
test_symbols(void)
{
	struct maps m;
	struct symtab *st;
	const char *name;
	char *cause = NULL;

	ok(maps_read("/proc/self/maps", &m, &cause) == 0 && m.n > 2,
	    "maps_read finds executable mappings");
	name = test_name(&m, (uintptr_t)test_static_target + 2, &st);
	ok(name != NULL && strcmp(name, "test_static_target") == 0,
	    "static function named from .symtab (%s)", name ? name : "NULL");
	ok(st != NULL && strlen(symtab_build_id(st)) == 40,
	    "executable has a 20-byte GNU build id (%s)",
	    st ? symtab_build_id(st) : "");
	symtab_free(st);
	name = test_name(&m, (uintptr_t)zlibVersion, &st);
	ok(name != NULL && strcmp(name, "zlibVersion") == 0,
	    "shared library function named from .dynsym (%s)",
	    name ? name : "NULL");
	symtab_free(st);
	st = symtab_open("/etc/hostname", &cause);
	ok(st == NULL && cause != NULL, "a non-ELF file is refused: %s",
	    cause ? cause : "");
	free(cause);
	maps_clear(&m);

	maps_parse("55d0a0000000-55d0a0001000 r--p 00000000 08:01 12 /bin/x\n"
	    "55d0a0001000-55d0a0005000 r-xp 00001000 08:01 12 /bin/x\n"
	    "7ffd1000-7ffd3000 r-xp 00000000 00:00 0                  [vdso]\n"
	    "7ffe0000-7ffe1000 rw-p 00000000 00:00 0\n", &m);
	ok(m.n == 2 && m.v[1].offset == 0x1000 &&
	    strcmp(m.v[1].path, "/bin/x") == 0 &&
	    strcmp(m.v[0].path, "[vdso]") == 0 &&
	    maps_find(&m, 0x55d0a0004fff) == &m.v[1] &&
	    maps_find(&m, 0x55d0a0005000) == NULL,
	    "maps_parse keeps executable mappings with offsets and paths");
	maps_clear(&m);
	maps_parse("7f00000000-7f00040000 rwxp 00000000 00:00 0 \n"
	    "7f00040000-7f00080000 r-xp 00000000 00:00 0\n"
	    "7f00080000-7f00090000 rw-p 00000000 00:00 0\n"
	    "7f000a0000-7f000b0000 r-xp 00000000 08:01 12 /lib/y\n", &m);
	ok(m.n == 3 && m.v[0].path[0] == '\0' && m.v[1].path[0] == '\0' &&
	    strcmp(m.v[2].path, "/lib/y") == 0,
	    "maps_parse keeps anonymous executable mappings (JIT code) with "
	    "an empty path, the next line's path not taken for theirs");
	{
		struct maps now, later;

		maps_parse("7f00040000-7f00080000 r-xp 00000000 00:00 0\n"
		    "7f00090000-7f000a0000 r-xp 00000000 08:01 12 /lib/z\n",
		    &now);
		maps_carry(&now, &m);
		ok(now.n == 4 && maps_find(&now, 0x7f00000010) != NULL &&
		    maps_find(&now, 0x7f00000010)->gone &&
		    !maps_find(&now, 0x7f00040010)->gone &&
		    strcmp(maps_find(&now, 0x7f000a0010)->path, "/lib/y") == 0,
		    "maps_carry keeps the mappings gone since, marked, and "
		    "none that a new one overlaps");
		maps_parse("7f00090000-7f000a0000 r-xp 00000000 08:01 12 /lib/z\n",
		    &later);
		maps_carry(&later, &now);
		ok(later.n == 2 && maps_find(&later, 0x7f00000010) == NULL &&
		    maps_find(&later, 0x7f00040010)->gone,
		    "a mapping is carried into one more snapshot only");
		maps_clear(&now);
		maps_clear(&later);
	}
	maps_clear(&m);
}

/* A frame-pointer walk: this binary's table is not loaded yet. */
static uint32_t
test_fp_walk(uintptr_t fp, uintptr_t sp, uintptr_t *pcs)
{
	struct unwind_regs r = { (uintptr_t)test_spin, sp, fp };
	uintptr_t link = 0;

	return unwind_walk(&r, pcs, 8, &link);
}

static void
test_walk(void)
{
	uintptr_t pcs[8], sp = (uintptr_t)&pcs;

	unwind_refresh();
	ok(test_fp_walk(sp + (48UL << 20), sp, pcs) == 1,
	    "walk stops at a frame pointer into unmapped memory");
	ok(test_fp_walk(sp - 64, sp, pcs) == 1,
	    "walk stops at a frame pointer below the stack pointer");
	ok(test_fp_walk(sp + 3, sp, pcs) == 1,
	    "walk stops at a misaligned frame pointer");
	ok(test_fp_walk((uintptr_t)__builtin_frame_address(0), sp,
	    pcs) >= 2, "walk follows real frames");
	unwind_refresh();	/* loads this binary's table (it had misses) */
}

static void
test_profile(const char *outpath)
{
	Perftools__Profiles__Profile *p;
	struct sampler_stack ss;
	struct stacks stacks = { 0 };
	struct build_window w;
	struct build *b;
	struct maps m;
	struct symtab *st;
	const char *name;
	uint8_t *gz = NULL, *raw;
	size_t gzlen = 0, rawlen = 0, i, j, spin_leaf = 0, spin_main = 0;
	char *cause = NULL, *exe;
	int found_fn = 0, ids_ok = 1, rc;
	FILE *f;

	rc = sampler_init(SAMPLER_DEFAULT_SIGNAL, 1024, &cause);
	ok(rc == 0, "sampler_init (%s)", cause ? cause : "ok");
	ok(sampler_owns_signal(), "the agent's signal is handled by the sampler");
	test_walk();
	ok(sampler_start(1000, &cause) == 0, "sampler_start");
	test_spin(400);
	sampler_stop();
	maps_read("/proc/self/maps", &m, NULL);
	while (sampler_pop(&ss)) {
		stacks_add(&stacks, ss.pcs, ss.n, ss.weight);
		name = test_name(&m, ss.pcs[0], &st);
		if (name != NULL && strncmp(name, "test_spin", 9) == 0) {
			spin_leaf += ss.weight;
			for (j = 1; j < ss.n; j++) {
				symtab_free(st);
				name = test_name(&m, ss.pcs[j] - 1, &st);
				if (name != NULL && strcmp(name, "main") == 0) {
					spin_main += ss.weight;
					break;
				}
			}
		}
		symtab_free(st);
	}
	for (i = 0; i < stacks.n && getenv("TEST_DUMP"); i++) {
		printf("# stack %zu x%lld:", i, (long long)stacks.v[i].count);
		for (j = 0; j < stacks.v[i].n; j++) {
			name = test_name(&m, stacks.pcs[stacks.v[i].off + j] - (j > 0), &st);
			printf(" %s(%lx)", name ? name : "?", (unsigned long)stacks.pcs[stacks.v[i].off + j]);
			symtab_free(st);
		}
		printf("\n");
	}
	maps_clear(&m);
	printf("# %lld samples, %zu stacks, %zu in test_spin, %zu reach main\n",
	    (long long)stacks.total, stacks.n, spin_leaf, spin_main);
	ok(stacks.total >= 20, "timer samples were recorded");
	ok(spin_leaf * 2 >= (size_t)stacks.total,
	    "most samples are in the spinning function");
	ok(spin_main * 10 >= spin_leaf * 9 && spin_main > 0,
	    "their frame-pointer stacks reach main");
	ok(sampler_drops() == 0, "no samples dropped");
	ok(sampler_lost() == 0, "no samples lost (no thread blocks the signal)");

	b = build_new();
	w.time_nanos = 1700000000LL * 1000000000LL;
	w.duration_nanos = 400000000;
	w.hz = 1000;
	w.drops = 0;
	w.lost = 0;
	rc = build_profile(b, &stacks, &w, &gz, &gzlen, &cause);
	ok(rc == 0, "build_profile (%zu bytes gzipped)", gzlen);
	raw = test_gunzip(gz, gzlen, &rawlen);
	p = raw ? perftools__profiles__profile__unpack(NULL, rawlen, raw) :
	    NULL;
	ok(p != NULL, "the profile is gzip and decodes with protobuf-c");
	if (p == NULL)
		goto out;
	ok(p->n_sample_type == 2 &&
	    strcmp(test_str(p, p->sample_type[0]->type), "samples") == 0 &&
	    strcmp(test_str(p, p->sample_type[0]->unit), "count") == 0 &&
	    strcmp(test_str(p, p->sample_type[1]->type), "cpu") == 0 &&
	    strcmp(test_str(p, p->sample_type[1]->unit), "nanoseconds") == 0,
	    "sample types samples/count, cpu/nanoseconds");
	ok(p->period_type != NULL &&
	    strcmp(test_str(p, p->period_type->type), "cpu") == 0 &&
	    p->period == 1000000, "period type cpu/nanoseconds, period 1e6");
	ok(p->time_nanos == w.time_nanos && p->duration_nanos == 400000000,
	    "time_nanos and duration_nanos");
	ok(p->n_sample == stacks.n, "one sample per distinct stack");
	for (i = 0; i < p->n_function; i++) {
		if (strncmp(test_str(p, p->function[i]->name), "test_spin", 9) == 0)
			found_fn = 1;
	}
	ok(found_fn, "function test_spin is named in the profile");
	for (i = 0; i < p->n_location; i++) {
		if (p->location[i]->id != i + 1 ||
		    p->location[i]->mapping_id > p->n_mapping ||
		    (p->location[i]->n_line == 1 &&
		    p->location[i]->line[0]->function_id > p->n_function))
			ids_ok = 0;
	}
	for (i = 0; i < p->n_sample; i++) {
		for (j = 0; j < p->sample[i]->n_location_id; j++) {
			if (p->sample[i]->location_id[j] == 0 ||
			    p->sample[i]->location_id[j] > p->n_location)
				ids_ok = 0;
		}
		if (p->sample[i]->n_value != 2 || p->sample[i]->value[1] !=
		    p->sample[i]->value[0] * 1000000)
			ids_ok = 0;
	}
	ok(ids_ok, "location, mapping and function ids are consistent");
	exe = realpath("/proc/self/exe", NULL);
	ok(p->n_mapping > 0 && exe != NULL &&
	    strcmp(test_str(p, p->mapping[0]->filename), exe) == 0 &&
	    strlen(test_str(p, p->mapping[0]->build_id)) == 40 &&
	    p->mapping[0]->has_functions,
	    "mapping 1 is the executable, with its build id");
	free(exe);
	perftools__profiles__profile__free_unpacked(p, NULL);
	if (outpath != NULL && (f = fopen(outpath, "w")) != NULL) {
		fwrite(gz, 1, gzlen, f);
		fclose(f);
	}
out:
	free(raw);
	free(gz);
	build_free(b);
	stacks_free(&stacks);
	sampler_fini();
	free(cause);
}

/* The program's ITIMER_PROF interval in microseconds. */
static long
test_itimer_usec(void)
{
	struct itimerval it;

	if (getitimer(ITIMER_PROF, &it) != 0)
		return -1;
	return (long)it.it_interval.tv_sec * 1000000 + it.it_interval.tv_usec;
}

/*
 * sampler_fini must never put SIG_DFL back: a signal still pending then
 * killed the program at exit. Also: re-init after fini, SIG_IGN put back,
 * a signal the program handles refused, the program's SIGPROF and
 * ITIMER_PROF never touched, and a stray (non-timer) signal ignored.
 */
static void
test_fini(void)
{
	struct sigaction sa, prof;
	struct itimerval it;
	char *cause = NULL;
	int sig = SAMPLER_DEFAULT_SIGNAL;

	/* After test_profile's sampler_fini (the old disposition was SIG_DFL). */
	ok(sampler_owns_signal(), "after fini our handler stays (was SIG_DFL)");
	raise(sig);
	ok(1, "a signal arriving after fini is harmless");

	/* The program's own SIGPROF timer, armed before: left alone. */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPROF, &sa, NULL);
	memset(&it, 0, sizeof it);
	it.it_value.tv_usec = 10000;
	it.it_interval.tv_usec = 10000;
	setitimer(ITIMER_PROF, &it, NULL);
	ok(sampler_init(sig, 1024, &cause) == 0 && sampler_owns_signal(),
	    "sampler_init again after fini, beside the program's ITIMER_PROF "
	    "(%s)", cause ? cause : "ok");
	ok(sampler_start(1000, &cause) == 0, "sampler_start again");
	test_spin(50);
	raise(sig);		/* not from a timer: ignored */
	sampler_fini();
	ok(test_itimer_usec() == 10000, "the program's ITIMER_PROF is intact");
	sigaction(SIGPROF, NULL, &prof);
	ok(!(prof.sa_flags & SA_SIGINFO) && prof.sa_handler == SIG_IGN,
	    "the program's SIGPROF disposition is intact");
	memset(&it, 0, sizeof it);
	setitimer(ITIMER_PROF, &it, NULL);
	raise(sig);
	ok(sampler_owns_signal(), "second fini: still inert, not SIG_DFL");

	/* The program had SIG_IGN: that is safe to put back. */
	sa.sa_handler = SIG_IGN;
	sigaction(sig, &sa, NULL);
	ok(sampler_init(sig, 1024, &cause) == 0 && sampler_owns_signal(),
	    "sampler_init over SIG_IGN");
	sampler_fini();
	sigaction(sig, NULL, &sa);
	ok(!(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_IGN,
	    "fini puts SIG_IGN back");

	/* A non-real-time signal is refused. */
	free(cause);
	cause = NULL;
	ok(sampler_init(SIGPROF, 1024, &cause) != 0 && cause != NULL &&
	    strstr(cause, "real-time") != NULL,
	    "SIGPROF is refused (%s)", cause ? cause : "?");
	free(cause);
}

/* Settings (defaults, errors, PROFD_* reads) and upload's URL escaping. */
static void
test_settings(void)
{
	struct profd_agent_config in;
	struct settings c;
	char *cause = NULL, *s;
	struct upload *up;
	struct upload_tls tls = { NULL, NULL, NULL };
	int rc;

	memset(&in, 0, sizeof in);
	in.service = "svc";
	ok(settings_check(&in, &c, NULL) == 0 && c.hz == 100 &&
	    c.window_sec == 10 && c.period_sec == 60 && c.queue_max == 8 &&
	    strcmp(c.collector, SETTINGS_DEFAULT_COLLECTOR) == 0,
	    "defaults: 100 Hz, 10 s every 60 s, queue 8, local collector");
	settings_clear(&c);
	in.labels = "env=prod,9x=1";
	rc = settings_check(&in, &c, &cause);
	ok(rc == -1 && strstr(cause, "9x"), "bad label key refused: %s", cause);
	free(cause);
	cause = NULL;
	in.labels = "env=prod,zone=eu-1";
	in.window_sec = 20;
	in.period_sec = 10;
	rc = settings_check(&in, &c, &cause);
	ok(rc == -1 && cause != NULL, "window > period refused: %s", cause);
	free(cause);
	cause = NULL;
	setenv("PROFD_SERVICE", "svc", 1);
	setenv("PROFD_HZ", "abc", 1);
	rc = settings_from_env(&in, &cause);
	ok(rc == -1 && strstr(cause, "PROFD_HZ"), "PROFD_HZ=abc refused: %s",
	    cause);
	free(cause);
	cause = NULL;
	setenv("PROFD_HZ", "250", 1);
	setenv("PROFD_WINDOW", "2m", 1);
	ok(settings_from_env(&in, &cause) == 1 && in.hz == 250 &&
	    in.window_sec == 120, "PROFD_HZ=250 PROFD_WINDOW=2m read");
	setenv("PROFD_SIGNAL", "RTMIN+3", 1);
	ok(settings_from_env(&in, &cause) == 1 && in.signal == SIGRTMIN + 3,
	    "PROFD_SIGNAL=RTMIN+3 read");
	setenv("PROFD_SIGNAL", "SIGRTMAX-2", 1);
	ok(settings_from_env(&in, &cause) == 1 && in.signal == SIGRTMAX - 2,
	    "PROFD_SIGNAL=SIGRTMAX-2 read");
	setenv("PROFD_SIGNAL", "27", 1);
	free(cause);
	cause = NULL;
	ok(settings_from_env(&in, &cause) == -1 && cause != NULL &&
	    strstr(cause, "PROFD_SIGNAL") != NULL,
	    "PROFD_SIGNAL=27 (SIGPROF) refused: %s", cause ? cause : "?");
	free(cause);
	cause = NULL;
	unsetenv("PROFD_SIGNAL");
	unsetenv("PROFD_SERVICE");
	ok(settings_from_env(&in, &cause) == 0, "no PROFD_SERVICE: agent off");
	s = upload_escape("env=prod,team=a b/ü");
	ok(strcmp(s, "env%3Dprod%2Cteam%3Da%20b%2F%C3%BC") == 0,
	    "labels are percent-encoded (%s)", s);
	free(s);
	up = upload_new("http://h:1/pfx/", "svc x", "env=a b,zone=eu",
	    NULL, NULL, 0, 0, NULL);
	ok(up != NULL && strcmp(upload_target(up), "/pfx/api/0/profiles?"
	    "service=svc%20x&type=cpu&labels=env=a%20b,zone=eu") == 0,
	    "upload target: %s", up ? upload_target(up) : "NULL");
	upload_free(up);
	up = upload_new("https://h/p", "svc", NULL, NULL, NULL, 0, 0, &cause);
	ok(up != NULL && strcmp(upload_target(up), "/p/api/0/profiles?"
	    "service=svc&type=cpu") == 0, "https parses (port 443): %s",
	    cause != NULL ? cause : "ok");
	upload_free(up);
	free(cause);
	cause = NULL;
	tls.ca_file = "/nonexistent/ca.pem";
	up = upload_new("https://h/", "svc", NULL, NULL, &tls, 0, 0, &cause);
	ok(up == NULL && cause != NULL && strstr(cause, "/nonexistent/ca.pem"),
	    "an unreadable CA file is refused at once: %s", cause);
	free(cause);
	cause = NULL;
	tls.ca_file = NULL;
	tls.cert_file = "/nonexistent/cert.pem";
	up = upload_new("https://h/", "svc", NULL, NULL, &tls, 0, 0, &cause);
	ok(up == NULL && cause != NULL && strstr(cause, "go together"),
	    "a client certificate without its key is refused: %s", cause);
	free(cause);
	cause = NULL;
	up = upload_new("ftp://h/", "svc", NULL, NULL, NULL, 0, 0, &cause);
	ok(up == NULL && cause != NULL, "ftp is refused: %s", cause);
	free(cause);
	cause = NULL;
	up = upload_new("http://h:99999/", "svc", NULL, NULL, NULL, 0, 0,
	    &cause);
	ok(up == NULL && cause != NULL, "port 99999 is refused: %s", cause);
	free(cause);
	cause = NULL;
	up = upload_new("http://[::1]:10100", "svc", NULL, NULL, NULL, 0, 0,
	    &cause);
	ok(up != NULL && strcmp(upload_target(up), "/api/0/profiles?"
	    "service=svc&type=cpu") == 0, "an IPv6 literal with a port parses");
	upload_free(up);
	memset(&in, 0, sizeof in);
	in.service = "svc";
	ok(settings_check(&in, &c, NULL) == 0 && c.exit_timeout_ms == 200,
	    "exit timeout: 200 ms by default");
	settings_clear(&c);
	in.exit_timeout_ms = -1;
	ok(settings_check(&in, &c, NULL) == 0 && c.exit_timeout_ms == 0,
	    "exit timeout -1: no wait");
	settings_clear(&c);
	setenv("PROFD_SERVICE", "svc", 1);
	unsetenv("PROFD_HZ");
	unsetenv("PROFD_WINDOW");
	setenv("PROFD_EXIT_TIMEOUT", "1s", 1);
	ok(settings_from_env(&in, &cause) == 1 && in.exit_timeout_ms == 1000,
	    "PROFD_EXIT_TIMEOUT=1s read as 1000 ms");
	setenv("PROFD_EXIT_TIMEOUT", "0", 1);
	ok(settings_from_env(&in, &cause) == 1 && in.exit_timeout_ms == -1,
	    "PROFD_EXIT_TIMEOUT=0: do not wait");
	setenv("PROFD_EXIT_TIMEOUT", "10001ms", 1);
	ok(settings_from_env(&in, &cause) == -1 &&
	    strstr(cause, "PROFD_EXIT_TIMEOUT") != NULL,
	    "PROFD_EXIT_TIMEOUT=10001ms refused: %s", cause);
	free(cause);
	unsetenv("PROFD_EXIT_TIMEOUT");
	unsetenv("PROFD_SERVICE");
}

int
main(int argc, char **argv)
{
	test_static_target(1);
	test_symbols();
	test_profile(argc > 1 ? argv[1] : NULL);
	test_fini();
	test_settings();
	return tap_done();
}
