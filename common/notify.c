/*
 * systemd notifications (sd_notify(3) without libsystemd). One socket per
 * process, opened once at start: the protocol is a process-wide channel to
 * the service manager, named by the environment. Sends never block: a
 * manager that is not reading must not stall the event loop.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/notify.h"
#include "common/log.h"
#include "common/xmalloc.h"

static int			notify_fd = -1;
static struct sockaddr_un	notify_addr;
static socklen_t		notify_addrlen;

/* Opens the datagram socket named by $NOTIFY_SOCKET. */
int
notify_open(char **cause)
{
	const char *name = getenv("NOTIFY_SOCKET");
	size_t len;

	notify_close();
	if (name == NULL || *name == '\0')
		return 0;
	len = strlen(name);
	if ((name[0] != '/' && name[0] != '@') ||
	    len >= sizeof notify_addr.sun_path)
		return xcause(cause, "NOTIFY_SOCKET \"%.64s\": want an absolute "
		    "path or @abstract name shorter than %zu bytes", name,
		    sizeof notify_addr.sun_path);
	memset(&notify_addr, 0, sizeof notify_addr);
	notify_addr.sun_family = AF_UNIX;
	memcpy(notify_addr.sun_path, name, len);
	if (name[0] == '@')
		notify_addr.sun_path[0] = '\0';	/* abstract namespace */
	notify_addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
	    len + (name[0] == '@' ? 0 : 1));
	notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0);
	if (notify_fd == -1)
		return xcause(cause, "NOTIFY_SOCKET: socket: %s",
		    strerror(errno));
	return 1;
}

/* Formats and sends one notification. */
int
notify_send(const char *fmt, ...)
{
	va_list ap;
	char *msg;
	ssize_t n;

	if (notify_fd == -1)
		return 0;
	va_start(ap, fmt);
	msg = xvasprintf(fmt, ap);
	va_end(ap);
	n = sendto(notify_fd, msg, strlen(msg), MSG_NOSIGNAL,
	    (struct sockaddr *)&notify_addr, notify_addrlen);
	/* One log line: the first line of the message only. */
	if (n == -1)
		log_warn("%s: %.*s: %s", __func__, (int)strcspn(msg, "\n"), msg,
		    strerror(errno));
	else
		log_debug("%s: %.*s", __func__, (int)strcspn(msg, "\n"), msg);
	free(msg);
	return n == -1 ? -1 : 0;
}

/* $WATCHDOG_USEC if it is meant for this process, else 0. */
int64_t
notify_watchdog_usec(void)
{
	const char *usec = getenv("WATCHDOG_USEC");
	const char *pid = getenv("WATCHDOG_PID");
	char *end;
	long long v;

	if (usec == NULL || *usec == '\0')
		return 0;
	if (pid != NULL && *pid != '\0') {
		errno = 0;
		v = strtoll(pid, &end, 10);
		if (errno != 0 || *end != '\0' || v != (long long)getpid())
			return 0;
	}
	errno = 0;
	v = strtoll(usec, &end, 10);
	if (errno != 0 || *end != '\0' || v <= 0)
		return 0;
	return v;
}

/* Closes the socket. */
void
notify_close(void)
{
	if (notify_fd != -1)
		close(notify_fd);
	notify_fd = -1;
}
