/*
 * Unit tests of the host agent's readers, on what a host gives it:
 * truncated and corrupted copies of Debian's programs and libraries read
 * through the object cache (symbols, CFI tables, a data symbol, a Go
 * program's .gopclntab) without
 * a fault and within the cache's bound; cgroup files of systemd units,
 * containers and sessions; the service rule in its orders; a kallsyms
 * file with damaged lines; the period's groups at their bounds; a file
 * cut short under an object's mapping.
 */
#include <elf.h>
#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent/core/cfi.h"
#include "agent/core/elffile.h"
#include "agent/core/gopcln.h"
#include "agent/core/symtab.h"
#include "agent/host/hgroups.h"
#include "agent/host/hkernel.h"
#include "agent/host/hobjs.h"
#include "agent/host/hprocs.h"
#include "common/xmalloc.h"
#include "test/lib/tap.h"

static char	test_dir[] = "/tmp/test_hostagent.XXXXXX";
static uint64_t	test_rng = 88172645463325252ULL;

/* xorshift64. */
static uint64_t
test_rand(void)
{
	test_rng ^= test_rng << 13;
	test_rng ^= test_rng >> 7;
	test_rng ^= test_rng << 17;
	return test_rng;
}

/* Reads a whole file; NULL if absent. */
static uint8_t *
test_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = xmalloc(n > 0 ? (size_t)n : 1);
	*len = fread(buf, 1, (size_t)n, f);
	fclose(f);
	return buf;
}

/* Writes len bytes to path. */
static void
test_write(const char *path, const uint8_t *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (f == NULL)
		abort();
	if (len > 0 && fwrite(buf, 1, len, f) != len)
		abort();
	fclose(f);
}

/* The file range of a named section, if the image has one. */
static int
test_section(const uint8_t *b, size_t len, const char *name, size_t *off,
    size_t *size)
{
	const ElfW(Ehdr) *eh = (const void *)b;
	const ElfW(Shdr) *sh;
	size_t i;

	if (len < sizeof *eh || eh->e_shoff == 0 || eh->e_shoff +
	    (size_t)eh->e_shnum * sizeof *sh > len || eh->e_shstrndx >=
	    eh->e_shnum)
		return -1;
	sh = (const void *)(b + eh->e_shoff);
	for (i = 0; i < eh->e_shnum; i++)
		if (sh[eh->e_shstrndx].sh_offset + sh[i].sh_name < len &&
		    strcmp((const char *)b + sh[eh->e_shstrndx].sh_offset +
		    sh[i].sh_name, name) == 0 && sh[i].sh_offset + sh[i].sh_size
		    <= len) {
			*off = sh[i].sh_offset;
			*size = sh[i].sh_size;
			return 0;
		}
	return -1;
}

/* gopcln_read's callback: touches the name as a symbol table would. */
static void
test_go_add(void *arg, uint64_t addr, uint64_t size, const char *name)
{
	*(uint64_t *)arg += addr + size + strlen(name);
}

/* Reads one damaged copy every way the agent does; 1 if anything read. */
static int
test_read_variant(struct hobjs *objs, const char *path, unsigned n)
{
	const struct symtab *st;
	const struct cfi_table *t;
	struct hobj *o;
	char key[64];
	size_t size, i, idx;
	uint64_t v, vaddr;
	void *base;
	int any = 0;

	snprintf(key, sizeof key, "ns:0:variant-%u", n);
	o = hobjs_get(objs, key, getpid(), path, 1);
	if ((st = hobjs_symtab(objs, o)) != NULL) {
		any = 1;
		for (i = 0; i < 64; i++) {
			vaddr = test_rand() & 0xfffff;
			symtab_lookup(st, vaddr, &idx);
			symtab_offset_to_vaddr(st, vaddr, &v);
		}
	}
	if ((t = hobjs_cfi(objs, o)) != NULL) {
		any = 1;
		for (i = 0; i < 64; i++)
			cfi_find(t, t->base + (test_rand() & 0xfffff));
	}
	if ((base = elffile_map(path, &size, NULL)) != NULL) {
		if (elffile_ehdr(base, size, NULL) != NULL) {
			elffile_symbol(base, size, "environ", &v, NULL);
			if (gopcln_read(base, size, test_go_add, &v) > 0)
				any = 1;
		}
		munmap(base, size);
	}
	hobjs_trim(objs);
	return any;
}

/* Truncations and byte flips of one real file. */
static void
test_damage(const char *src, unsigned variants)
{
	static const char *hot[] = { ".eh_frame", ".eh_frame_hdr", ".dynsym",
	    ".dynstr", ".symtab", ".note.gnu.build-id" };
	char path[512];
	uint8_t *orig, *buf;
	size_t len, cut, off, size, k, j;
	struct hobjs *objs = hobjs_new(1 << 20);
	struct hobjs_stats os;
	unsigned n, read = 0;

	if ((orig = test_slurp(src, &len)) == NULL || len < 4096) {
		ok(1, "# SKIP %s not installed", src);
		free(orig);
		hobjs_free(objs);
		return;
	}
	buf = xmalloc(len);
	for (n = 0; n < variants; n++) {
		/* A new file each time: one rewritten in place would shrink
		 * under the mappings of the objects read before. */
		snprintf(path, sizeof path, "%s/variant", test_dir);
		unlink(path);
		memcpy(buf, orig, len);
		cut = len;
		if (n < variants / 3) {
			/* Truncated: headers, tables, the section headers. */
			cut = n == 0 ? 0 : n < 8 ? (size_t)1 << (n + 3) :
			    test_rand() % len;
		} else {
			/* 64 bytes changed, half of them in the sections
			 * that the readers parse. */
			for (k = 0; k < 64; k++) {
				off = test_rand() % len;
				if ((k & 1) && test_section(orig, len,
				    hot[test_rand() % 6], &off, &size) == 0 &&
				    size > 0)
					off += test_rand() % size;
				else if (k % 4 == 0)
					off = test_rand() % (len < 4096 ? len :
					    4096);
				buf[off] = (uint8_t)test_rand();
			}
			if (n % 5 == 0)	/* a field set to its extreme */
				for (j = 0; j < 8 && 0x28 + j < len; j++)
					buf[0x28 + j] = 0xff;	/* e_shoff */
		}
		test_write(path, buf, cut);
		read += test_read_variant(objs, path, n);
	}
	hobjs_stats(objs, &os);
	ok(1, "%s: %u truncated or corrupted copies read without a fault "
	    "(%u gave tables)", src, variants, read);
	ok(os.bytes <= (1 << 20), "%s: the cache stayed in its bound "
	    "(%llu bytes, %llu dropped)", src, (unsigned long long)os.bytes,
	    (unsigned long long)os.evicted);
	unlink(path);
	free(buf);
	free(orig);
	hobjs_free(objs);
}

/* A Go program's .gopclntab names its functions. */
static void
test_gopcln(const char *path)
{
	uint64_t sum = 0;
	size_t size;
	void *base;
	long n;

	if ((base = elffile_map(path, &size, NULL)) == NULL) {
		ok(1, "# SKIP %s not installed", path);
		return;
	}
	n = gopcln_read(base, size, test_go_add, &sum);
	ok(n > 1000, "gopcln: %s's .gopclntab names %ld functions", path, n);
	munmap(base, size);
}

/* A cgroup file's unit and container. */
static void
test_cgroup(const char *text, const char *unit, const char *container)
{
	struct hproc p;

	memset(&p, 0, sizeof p);
	hprocs_parse_cgroup(&p, text);
	ok((unit == NULL ? p.unit == NULL : p.unit != NULL &&
	    strcmp(p.unit, unit) == 0) && (container == NULL ?
	    p.container == NULL : p.container != NULL &&
	    strcmp(p.container, container) == 0),
	    "cgroup %.*s: unit %s, container %s (got %s, %s)",
	    (int)strcspn(text, "\n"), text,
	    unit ? unit : "none", container ? container : "none",
	    p.unit ? p.unit : "none", p.container ? p.container : "none");
	free(p.unit);
	free(p.container);
}

/* The service rule in a given order. */
static void
test_service(void)
{
	struct hprocs *t;
	struct hproc p;
	char *cause = NULL;

	memset(&p, 0, sizeof p);
	p.exe = "/usr/sbin/nginx";
	p.unit = "web.service";
	p.container = "0123456789ab";
	p.env_service = "shop";
	t = hprocs_new("env,unit,container,exe", &cause);
	ok(strcmp(hprocs_service(t, &p), "shop") == 0, "service: env first");
	p.env_service = NULL;
	ok(strcmp(hprocs_service(t, &p), "web") == 0,
	    "service: then the unit (web.service gives web)");
	p.unit = NULL;
	ok(strcmp(hprocs_service(t, &p), "0123456789ab") == 0,
	    "service: then the container");
	p.container = NULL;
	ok(strcmp(hprocs_service(t, &p), "nginx") == 0,
	    "service: then the executable's name");
	hprocs_free(t);
	p.unit = "web.service";
	t = hprocs_new("exe,unit", &cause);
	ok(strcmp(hprocs_service(t, &p), "nginx") == 0,
	    "service: --service-from exe,unit puts the name first");
	hprocs_free(t);
	ok(hprocs_new("env,pod", &cause) == NULL && cause != NULL &&
	    strstr(cause, "\"pod\"") != NULL, "service: an unknown source "
	    "is refused (%s)", cause ? cause : "");
	free(cause);
}

/* kallsyms with damaged lines. */
static void
test_kallsyms(void)
{
	char path[512];
	struct hkernel *k;
	FILE *f;
	uint64_t start, limit;
	const char *n;

	snprintf(path, sizeof path, "%s/kallsyms", test_dir);
	f = fopen(path, "w");
	fprintf(f, "ffffffff81000000 T _stext\n"
	    "ffffffff81000100 t do_one\n"
	    "garbage line without fields\n"
	    "ffffffff81000200 D some_data\n"
	    "0000000000000000 T hidden_by_kptr_restrict\n"
	    "ffffffff81000300 T do_two [some_module]\n"
	    "zzzzzzzzzzzzzzzz T bad_address\n"
	    "ffffffff81000400 W weak_one\n"
	    "ffffffff810005");			/* cut mid-line */
	fclose(f);
	k = hkernel_open(path);
	ok(hkernel_count(k) == 4, "kallsyms: 4 text symbols of 9 lines "
	    "(%zu)", hkernel_count(k));
	n = hkernel_lookup(k, 0xffffffff81000150ULL);
	ok(n != NULL && strcmp(n, "do_one") == 0, "kallsyms: an address "
	    "inside do_one");
	n = hkernel_lookup(k, 0xffffffff81000250ULL);
	ok(n != NULL && strcmp(n, "do_one") == 0, "kallsyms: data symbols "
	    "are not functions");
	ok(hkernel_lookup(k, 0xffffffff80000000ULL) == NULL,
	    "kallsyms: below the text, no name");
	hkernel_range(k, &start, &limit);
	ok(start == 0xffffffff81000000ULL && limit > 0xffffffff81000400ULL,
	    "kallsyms: the [kernel] mapping's range");
	hkernel_free(k);
	k = hkernel_open("/nonexistent/kallsyms");
	ok(k != NULL && hkernel_count(k) == 0 && hkernel_lookup(k, 1) ==
	    NULL, "kallsyms: unreadable gives an empty table");
	hkernel_free(k);
	unlink(path);
}

/* The groups' bounds. */
static void
test_groups(void)
{
	struct hgroups gs = { .max = 4 };
	struct hgroups_map m;
	struct hgroup *g, *o;
	uint32_t locs[1], map;
	char name[32];
	int64_t li = 0;
	size_t i;

	for (i = 0; i < 10; i++) {
		snprintf(name, sizeof name, "svc%zu", i);
		g = hgroups_get(&gs, name, NULL, NULL);
	}
	ok(gs.n == 4, "groups: at most --max-groups a period (%zu)", gs.n);
	o = hgroups_get(&gs, "svc9", NULL, NULL);
	ok(strcmp(o->service, HGROUPS_OTHER) == 0, "groups: services past "
	    "the bound share \"other\"");
	g = hgroups_get(&gs, "svc0", "a.service", NULL);
	ok(g == o, "groups: a new unit past the bound is \"other\" too");
	g = hgroups_get(&gs, "svc1", NULL, NULL);
	memset(&m, 0, sizeof m);
	m.pid = 7;
	m.start = 0x1000;
	m.limit = 0x2000;
	m.path = hgroups_str(g, "/bin/x");
	map = hgroups_map(g, &m);
	ok(hgroups_map_find(g, 7, 0x1000) == map &&
	    hgroups_map_find(g, 8, 0x1000) == UINT32_MAX,
	    "groups: mappings by process and start");
	for (i = 0; i < HGROUPS_MAX_LOCS + 10 && li >= 0; i++)
		li = hgroups_loc_add(g, map, 0x1000 + i, i % 2 ? "f" : NULL,
		    "/bin/x");
	ok(li < 0 && g->nlocs == HGROUPS_MAX_LOCS, "groups: locations "
	    "stop at %d", HGROUPS_MAX_LOCS);
	ok(g->nfuncs == 1, "groups: one function for one name and file");
	for (i = 0; i < HGROUPS_MAX_STACKS + 100; i++) {
		locs[0] = (uint32_t)i;
		hgroups_sample(g, (pid_t)(i % 3), "x", locs, 1);
	}
	ok(g->stacks.n == HGROUPS_MAX_STACKS && g->dropped == 100,
	    "groups: distinct stacks stop at %d, the rest counted (%lld)",
	    HGROUPS_MAX_STACKS, (long long)g->dropped);
	hgroups_reset(&gs);
	ok(gs.head == NULL && gs.n == 0, "groups: reset frees the period");
}

static sigjmp_buf	 test_jmp;
static void *volatile	 test_fault;

/* SIGBUS: back to the test. */
static void
test_on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	test_fault = si->si_addr;
	siglongjmp(test_jmp, 1);
}

/*
 * A file cut short under an object's mapping: reading a name faults, and
 * the agent's recovery (hobjs_forget_addr with the faulting address)
 * finds and drops that object.
 */
static void
test_shrunk(void)
{
	struct sigaction sa, old;
	const struct symtab *st;
	struct hobjs *objs = hobjs_new(64 << 20);
	struct hobj *o;
	char path[512];
	uint8_t *orig;
	size_t len, i, idx, n = 0;
	const char *name;
	volatile int faulted = 0;
	FILE *f;

	snprintf(path, sizeof path, "%s/shrinks", test_dir);
	if ((orig = test_slurp("/usr/lib/x86_64-linux-gnu/libc.so.6",
	    &len)) == NULL) {
		ok(1, "# SKIP libc not found");
		hobjs_free(objs);
		return;
	}
	test_write(path, orig, len);
	o = hobjs_get(objs, "ns:0:shrinks", getpid(), path, 1);
	st = hobjs_symtab(objs, o);
	ok(st != NULL && symtab_count(st) > 1000, "shrunk: libc's copy read");
	f = fopen(path, "r+");
	if (f == NULL || ftruncate(fileno(f), 4096) != 0)
		abort();
	fclose(f);
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = test_on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGBUS, &sa, &old);
	if (sigsetjmp(test_jmp, 0) == 0) {
		for (i = 0; i < 1 << 20 && st != NULL; i += 64)
			if ((name = symtab_lookup(st, i, &idx)) != NULL)
				n += strlen(name);
	} else
		faulted = 1;
	sigaction(SIGBUS, &old, NULL);
	ok(faulted, "shrunk: reading its names faults (SIGBUS)");
	ok(faulted && hobjs_forget_addr(objs, test_fault) == 1,
	    "shrunk: the faulting address names the object, which is dropped");
	ok(hobjs_forget_addr(objs, test_fault) == 0,
	    "shrunk: and it is gone (%zu bytes of names read before)", n);
	unlink(path);
	free(orig);
	hobjs_free(objs);
}

int
main(void)
{
	if (mkdtemp(test_dir) == NULL)
		return 1;
	test_damage("/usr/bin/gzip", 150);
	test_damage("/usr/bin/xz", 90);
	test_damage("/usr/lib/x86_64-linux-gnu/liblzma.so.5", 120);
	test_damage("/usr/lib/x86_64-linux-gnu/libc.so.6", 45);
	test_damage("/usr/bin/python3.11", 12);
	test_damage("/usr/lib/go-1.19/bin/gofmt", 24);	/* .gopclntab */
	test_gopcln("/usr/lib/go-1.19/bin/gofmt");
	test_cgroup("0::/system.slice/nginx.service\n", "nginx.service", NULL);
	test_cgroup("12:pids:/system.slice/redis-server.service\n"
	    "1:name=systemd:/system.slice/redis-server.service\n",
	    "redis-server.service", NULL);
	test_cgroup("0::/system.slice/docker-4f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2"
	    "b3c4d5e6f708192a3b4c5d6e7f8.scope\n", NULL, "4f1a2b3c4d5e");
	test_cgroup("0::/kubepods.slice/kubepods-burstable.slice/cri-containerd-"
	    "abcdef0123456789abcdef.scope\n", NULL, "abcdef012345");
	test_cgroup("11:memory:/docker/0123456789abcdef0123\n", NULL,
	    "0123456789ab");
	test_cgroup("0::/user.slice/user-1000.slice/session-2.scope\n", NULL,
	    NULL);
	test_cgroup("0::/system.slice/containerd.service/kubepods/crio-"
	    "fedcba9876543210.scope\n", "containerd.service", "fedcba987654");
	test_cgroup("garbage\n::\n0:\n0::/\n", NULL, NULL);
	test_cgroup("0::/system.slice/docker-xyz.scope\n", NULL, NULL);
	test_service();
	test_kallsyms();
	test_groups();
	test_shrunk();
	rmdir(test_dir);
	return tap_done();
}
