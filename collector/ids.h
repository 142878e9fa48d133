/*
 * Profile ids: 20 characters of lowercase base32hex (profefe's xid alphabet)
 * encoding 48 bits of millisecond time followed by 48 random bits, so ids
 * sort by time and cannot be enumerated.
 */
#ifndef PROFD_IDS_H
#define PROFD_IDS_H

#include <stddef.h>
#include <stdint.h>

#define IDS_LEN	20

/* Writes a new id for time ms (ms since the epoch) into out[IDS_LEN + 1]. */
void	ids_new(int64_t ms, char *out);
/* The millisecond time id was made for (its first 48 bits); -1 if none. */
int64_t	ids_time_ms(const char *id);
/* True if s[0..len) is a well-formed id. */
int	ids_valid(const char *s, size_t len);

#endif
