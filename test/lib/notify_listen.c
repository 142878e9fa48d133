/*
 * notify_listen: plays systemd's part for test/e2e/ops_notify.sh. Binds a
 * unix datagram socket (a path, or an abstract name starting with '@'),
 * and prints every notification line it receives as "MS LINE", MS being
 * milliseconds since it started. When a datagram says READY=1 it probes
 * the address from its "STATUS=listening on HOST:PORT" line at once:
 * connects, sends GET /healthz, and prints "MS probe STATUS-LINE" (or
 * "MS probe failed: why"). It exits after STOPPING=1 or the timeout.
 *
 * usage: notify_listen SOCKET TIMEOUT_SECONDS
 */
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct timespec start;

/* Milliseconds since start. */
static long long
elapsed_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - start.tv_sec) * 1000LL +
	    (now.tv_nsec - start.tv_nsec) / 1000000;
}

/* Connects to addr ("HOST:PORT" or "[V6]:PORT") and asks for /healthz. */
static void
probe(const char *addr)
{
	struct addrinfo hints, *ai = NULL;
	struct timeval tv = { 2, 0 };
	char host[256], buf[256], *colon, *eol;
	const char *req = "GET /healthz HTTP/1.0\r\n\r\n";
	ssize_t n;
	size_t got = 0;
	int fd = -1, rc;

	snprintf(host, sizeof host, "%s", addr[0] == '[' ? addr + 1 : addr);
	if ((colon = strrchr(host, ':')) == NULL) {
		printf("%lld probe failed: no port in \"%s\"\n", elapsed_ms(),
		    addr);
		return;
	}
	*colon = '\0';
	if (colon > host && colon[-1] == ']')
		colon[-1] = '\0';
	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	if ((rc = getaddrinfo(host, colon + 1, &hints, &ai)) != 0) {
		printf("%lld probe failed: %s\n", elapsed_ms(), gai_strerror(rc));
		return;
	}
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == -1) {
		printf("%lld probe failed: connect: %s\n", elapsed_ms(),
		    strerror(errno));
		goto out;
	}
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		printf("%lld probe failed: write: %s\n", elapsed_ms(),
		    strerror(errno));
		goto out;
	}
	while (got < sizeof buf - 1 &&
	    (n = read(fd, buf + got, sizeof buf - 1 - got)) > 0) {
		got += (size_t)n;
		buf[got] = '\0';
		if (strchr(buf, '\n') != NULL)
			break;
	}
	buf[got] = '\0';
	if ((eol = strpbrk(buf, "\r\n")) != NULL)
		*eol = '\0';
	if (got == 0)
		printf("%lld probe failed: no reply\n", elapsed_ms());
	else
		printf("%lld probe %s\n", elapsed_ms(), buf);
out:
	close(fd);
	freeaddrinfo(ai);
}

int
main(int argc, char **argv)
{
	struct sockaddr_un sun;
	struct pollfd pfd;
	socklen_t len;
	char buf[4096], *line, *save, *status;
	long long deadline;
	size_t namelen;
	ssize_t n;
	int fd, stopping = 0, ready;

	if (argc != 3) {
		fprintf(stderr, "usage: notify_listen SOCKET TIMEOUT_SECONDS\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	clock_gettime(CLOCK_MONOTONIC, &start);
	deadline = atoll(argv[2]) * 1000;
	namelen = strlen(argv[1]);
	if (namelen >= sizeof sun.sun_path) {
		fprintf(stderr, "notify_listen: socket name too long\n");
		return 2;
	}
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, argv[1], namelen);
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + namelen);
	if (argv[1][0] == '@')
		sun.sun_path[0] = '\0';
	else {
		len++;
		unlink(argv[1]);
	}
	if ((fd = socket(AF_UNIX, SOCK_DGRAM, 0)) == -1 ||
	    bind(fd, (struct sockaddr *)&sun, len) == -1) {
		fprintf(stderr, "notify_listen: %s: %s\n", argv[1],
		    strerror(errno));
		return 1;
	}
	printf("%lld listening\n", elapsed_ms());
	pfd.fd = fd;
	pfd.events = POLLIN;
	while (!stopping && elapsed_ms() < deadline) {
		if (poll(&pfd, 1, (int)(deadline - elapsed_ms())) <= 0)
			continue;
		if ((n = recv(fd, buf, sizeof buf - 1, 0)) <= 0)
			continue;
		buf[n] = '\0';
		ready = 0;
		status = NULL;
		for (line = strtok_r(buf, "\n", &save); line != NULL;
		    line = strtok_r(NULL, "\n", &save)) {
			printf("%lld %s\n", elapsed_ms(), line);
			if (strcmp(line, "READY=1") == 0)
				ready = 1;
			else if (strcmp(line, "STOPPING=1") == 0)
				stopping = 1;
			else if (strncmp(line, "STATUS=listening on ", 20) == 0)
				status = line + 20;
		}
		if (ready && status != NULL)
			probe(status);
		else if (ready)
			printf("%lld probe failed: READY=1 without an address "
			    "in STATUS\n", elapsed_ms());
	}
	if (!stopping)
		printf("%lld timeout\n", elapsed_ms());
	close(fd);
	if (argv[1][0] != '@')
		unlink(argv[1]);
	return 0;
}
