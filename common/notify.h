/*
 * The systemd notify protocol, spoken directly (no libsystemd): datagrams
 * of "NAME=value" lines sent to the unix socket named by $NOTIFY_SOCKET
 * (a path, or an abstract socket when it starts with '@'). Without
 * NOTIFY_SOCKET every call is a no-op, so profd runs the same way under
 * systemd, under another supervisor, or from a shell.
 */
#ifndef PROFD_NOTIFY_H
#define PROFD_NOTIFY_H

#include <stdint.h>

/*
 * Reads NOTIFY_SOCKET and opens the socket. Returns 1 when notifications
 * will be sent, 0 when there is no NOTIFY_SOCKET, -1 with *cause when it is
 * set but unusable (profd logs that and runs on).
 */
int	notify_open(char **cause);
/* Sends one datagram ("READY=1\nSTATUS=..."); 0 sent or disabled, -1 error. */
int	notify_send(const char *, ...) __attribute__((format(printf, 1, 2)));
/*
 * The watchdog period systemd asked for in microseconds ($WATCHDOG_USEC),
 * or 0 when there is none or $WATCHDOG_PID names another process.
 */
int64_t	notify_watchdog_usec(void);
/* Closes the socket. */
void	notify_close(void);

#endif
