/*
 * A variable of another process's environment as the process holds it
 * now. /proc/PID/environ shows the memory the environment was first
 * written to, which programs that set their process title (nginx,
 * redis-server, postgres) overwrite early; their environment lives on in
 * copies that libc's environ points at. This reads environ's value (the
 * symbol's address from the process's executable, where a copy
 * relocation or static linking puts it, else from its libc), then the
 * array and the strings, with process_vm_readv: bounded
 * reads that fail cleanly, never a fault.
 */
#ifndef PROFD_AGENT_HENV_H
#define PROFD_AGENT_HENV_H

#include "agent/host/hprocs.h"

/* The value of name in p's live environment (a new string), or NULL. */
char	*henv_get(const struct hproc *p, const char *name);

#endif
