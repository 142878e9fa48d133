/*
 * Call-frame information of an ELF object (cfi.h tables), read from the
 * file or, for the vDSO, from memory.
 */
#ifndef PROFD_AGENT_CFI_ELF_H
#define PROFD_AGENT_CFI_ELF_H

#include <stddef.h>

#include "agent/core/cfi.h"

/*
 * Reads the CFI of the ELF file at path (its .eh_frame; else its
 * .debug_frame, else that of /usr/lib/debug/.build-id/xx/yyyy.debug).
 * Returns NULL with *cause set when the file cannot be read, or with
 * errno EFBIG when the section to parse is larger than max bytes (the
 * caller's time budget); a file without CFI gives a table with no rows.
 */
struct cfi_table	*cfi_elf_open(const char *path, size_t max,
			    char **cause);
/* The same from an ELF image in memory (the vDSO); not kept. */
struct cfi_table	*cfi_elf_open_mem(const void *image, size_t size,
			    char **cause);

#endif
