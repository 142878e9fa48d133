/*
 * Function names of a Go program from its .gopclntab, the table Go's own
 * runtime uses for tracebacks, kept when a program is built stripped
 * (-ldflags=-s -w: no .symtab). Go 1.18 and later (magic 0xfffffff0,
 * 0xfffffff1); older layouts are refused.
 */
#ifndef PROFD_AGENT_GOPCLN_H
#define PROFD_AGENT_GOPCLN_H

#include <stddef.h>
#include <stdint.h>

/* Takes one function: link address, size, name (inside the image). */
typedef void (*gopcln_add_fn)(void *arg, uint64_t addr, uint64_t size,
    const char *name);

/*
 * Reads the .gopclntab section of a checked ELF image, calling add for
 * each function. Returns the number of functions, or -1 when there is
 * no table or it is not one this reader knows (every offset checked
 * against the section).
 */
long	gopcln_read(const uint8_t *base, size_t size, gopcln_add_fn add,
	    void *arg);

#endif
