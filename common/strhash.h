/*
 * FNV-1a, the string hash of the agents' tables (interned strings,
 * object keys, Python frame keys): cheap, no table, good enough for
 * open addressing whose probes compare the strings themselves.
 */
#ifndef PROFD_COMMON_STRHASH_H
#define PROFD_COMMON_STRHASH_H

#include <stdint.h>

#define STRHASH_INIT	1469598103934665603ULL

/* FNV-1a of the string s, continuing from h (STRHASH_INIT to start). */
static inline uint64_t
strhash_str(uint64_t h, const char *s)
{
	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

#endif
