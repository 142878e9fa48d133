/*
 * A perf map (see perfmap.h). Entries are appended as lines are parsed
 * and sorted by start (then by line order) on the first lookup after;
 * for equal starts the last line is kept. A lookup takes the entry with
 * the greatest start at or below the address and answers only if the
 * address is inside it. Names live in one growing pool.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/core/perfmap.h"
#include "common/xmalloc.h"

struct perfmap_entry {
	uint64_t	start, size;
	uint64_t	seq;		/* line order */
	size_t		name;		/* offset into the pool */
};

struct perfmap {
	struct perfmap_entry	*v;
	size_t			 n, cap;
	int			 sorted;
	char			*pool;
	size_t			 pool_len, pool_cap;
	uint64_t		 seq;
	dev_t			 dev;		/* the file read */
	ino_t			 ino;
	uint64_t		 off;		/* bytes of it consumed */
	char			 head[64];	/* its first bytes, to tell a */
	size_t			 head_len;	/* file rewritten in place */
	struct perfmap_stats	 st;
};

struct perfmap *
perfmap_new(void)
{
	return xcalloc(1, sizeof(struct perfmap));
}

void
perfmap_free(struct perfmap *m)
{
	if (m == NULL)
		return;
	free(m->v);
	free(m->pool);
	free(m);
}

/* Forgets every entry (the file was replaced). */
static void
perfmap_clear(struct perfmap *m)
{
	m->n = 0;
	m->pool_len = 0;
	m->sorted = 1;
	m->off = 0;
	m->head_len = 0;
	m->st.entries = 0;
}

/* A hexadecimal number (0x optional) at *p, which moves past it. */
static int
perfmap_hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0, d;

	if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < end; s++, digits++) {
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (digits >= 16)
			return -1;
		v = v << 4 | (uint64_t)d;
	}
	if (digits == 0)
		return -1;
	*p = s;
	*out = v;
	return 0;
}

/* One line (without its newline). */
static void
perfmap_line(struct perfmap *m, const char *s, const char *end)
{
	struct perfmap_entry *e;
	uint64_t start, size;
	size_t len;

	if (s == end)
		return;
	if (end - s > PERFMAP_MAX_LINE || perfmap_hex(&s, end, &start) != 0 ||
	    s == end || *s++ != ' ' || perfmap_hex(&s, end, &size) != 0 ||
	    s == end || *s++ != ' ' || size == 0 || start + size < start) {
		m->st.bad++;
		return;
	}
	len = (size_t)(end - s);
	while (len > 0 && (s[len - 1] == '\r' || s[len - 1] == ' '))
		len--;
	if (len == 0 || memchr(s, '\0', len) != NULL) {
		m->st.bad++;
		return;
	}
	if (m->n >= PERFMAP_MAX_ENTRIES) {
		m->st.capped = 1;
		return;
	}
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 256;
		m->v = xreallocarray(m->v, m->cap, sizeof *m->v);
	}
	while (m->pool_len + len + 1 > m->pool_cap) {
		m->pool_cap = m->pool_cap ? m->pool_cap * 2 : 4096;
		m->pool = xreallocarray(m->pool, m->pool_cap, 1);
	}
	e = &m->v[m->n++];
	e->start = start;
	e->size = size;
	e->seq = m->seq++;
	e->name = m->pool_len;
	memcpy(m->pool + m->pool_len, s, len);
	m->pool[m->pool_len + len] = '\0';
	m->pool_len += len + 1;
	m->sorted = 0;
}

/* Parses whole lines of text. */
void
perfmap_parse(struct perfmap *m, const char *text, size_t len)
{
	const char *s = text, *end = text + len, *nl;

	while (s < end) {
		if ((nl = memchr(s, '\n', (size_t)(end - s))) == NULL)
			nl = end;
		perfmap_line(m, s, nl);
		s = nl + 1;
	}
	m->st.entries = m->n;
}

/* Reads what the file gained (see perfmap.h). */
int
perfmap_refresh(struct perfmap *m, const char *path, int64_t not_before)
{
	struct stat sb;
	char head[sizeof m->head], *buf;
	size_t want, got = 0, lines;
	ssize_t r;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
		return -1;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) ||
	    (int64_t)sb.st_mtime < not_before) {
		close(fd);
		return -1;
	}
	if (sb.st_dev != m->dev || sb.st_ino != m->ino ||
	    (uint64_t)sb.st_size < m->off || (m->head_len > 0 &&
	    (pread(fd, head, m->head_len, 0) != (ssize_t)m->head_len ||
	    memcmp(head, m->head, m->head_len) != 0))) {
		perfmap_clear(m);
		m->dev = sb.st_dev;
		m->ino = sb.st_ino;
	}
	if ((uint64_t)sb.st_size == m->off || m->st.bytes >= PERFMAP_MAX_BYTES) {
		if ((uint64_t)sb.st_size > m->off)
			m->st.capped = 1;
		close(fd);
		return 0;
	}
	want = (size_t)((uint64_t)sb.st_size - m->off);
	if (want > PERFMAP_MAX_BYTES - m->st.bytes) {
		want = (size_t)(PERFMAP_MAX_BYTES - m->st.bytes);
		m->st.capped = 1;
	}
	buf = xmalloc(want + 1);
	while (got < want) {
		r = pread(fd, buf + got, want - got, (off_t)(m->off + got));
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	/* Whole lines only: a line being written is read next time. */
	for (lines = got; lines > 0 && buf[lines - 1] != '\n'; lines--)
		;
	if (lines == 0 && got == want && got >= PERFMAP_MAX_LINE)
		lines = got;	/* no newline in a line too long: skip it */
	perfmap_parse(m, buf, lines);
	if (m->off == 0) {
		/* Truncated and written again past where we were: its
		 * first bytes tell. */
		m->head_len = lines < sizeof m->head ? lines : sizeof m->head;
		memcpy(m->head, buf, m->head_len);
	}
	m->off += lines;
	m->st.bytes += lines;
	free(buf);
	return 0;
}

/* When process pid started (see perfmap.h): boot time plus its start in
 * clock ticks (/proc/PID/stat's 22nd field). */
int64_t
perfmap_process_start(int pid)
{
	char path[64], buf[1024], *s;
	long long btime = 0, ticks;
	ssize_t r;
	int fd, i;
	FILE *f;

	if ((f = fopen("/proc/stat", "re")) == NULL)
		return 0;
	while (fgets(buf, sizeof buf, f) != NULL)
		if (sscanf(buf, "btime %lld", &btime) == 1)
			break;
	fclose(f);
	if (pid > 0)
		snprintf(path, sizeof path, "/proc/%d/stat", pid);
	else
		snprintf(path, sizeof path, "/proc/self/stat");
	if (btime == 0 || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	r = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (r <= 0)
		return 0;
	buf[r] = '\0';
	/* After the comm's closing parenthesis: field 3 on. */
	if ((s = strrchr(buf, ')')) == NULL)
		return 0;
	for (i = 2; i < 22 && s != NULL; i++)
		s = strchr(s + 1, ' ');
	if (s == NULL || (ticks = strtoll(s + 1, NULL, 10)) <= 0)
		return 0;
	return btime + ticks / sysconf(_SC_CLK_TCK);
}

/* Orders entries by start, then line order. */
static int
perfmap_cmp(const void *a, const void *b)
{
	const struct perfmap_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sorts and keeps the last line of each start. */
static void
perfmap_sort(struct perfmap *m)
{
	size_t i, j = 0;

	if (m->n > 1)
		qsort(m->v, m->n, sizeof *m->v, perfmap_cmp);
	for (i = 0; i < m->n; i++) {
		if (j > 0 && m->v[j - 1].start == m->v[i].start)
			j--;
		m->v[j++] = m->v[i];
	}
	m->n = j;
	m->st.entries = j;
	m->sorted = 1;
}

/* The name of the code holding addr (see perfmap.h). */
const char *
perfmap_lookup(struct perfmap *m, uint64_t addr)
{
	size_t lo = 0, hi;

	if (!m->sorted)
		perfmap_sort(m);
	hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr - m->v[lo - 1].start >= m->v[lo - 1].size)
		return NULL;
	return m->pool + m->v[lo - 1].name;
}

void
perfmap_stats(const struct perfmap *m, struct perfmap_stats *out)
{
	*out = m->st;
}
