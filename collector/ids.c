/*
 * Profile id generation and syntax checks.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "collector/ids.h"
#include "common/log.h"

static const char ids_alphabet[] = "0123456789abcdefghijklmnopqrstuv";

/* Fills buf with random bytes from the kernel; aborts if it cannot. */
static void
ids_random(uint8_t *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = getrandom(buf, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			log_error("%s: getrandom: %s", __func__, strerror(errno));
			abort();
		}
		buf += n;
		len -= (size_t)n;
	}
}

/* Encodes 12 bytes (96 bits, zero-padded to 100) as 20 base32hex chars. */
void
ids_new(int64_t ms, char *out)
{
	uint8_t raw[12];
	unsigned acc = 0, bits = 0;
	size_t i, o = 0;

	for (i = 0; i < 6; i++)
		raw[i] = (uint8_t)((uint64_t)ms >> (40 - 8 * i));
	ids_random(raw + 6, 6);
	for (i = 0; i < sizeof raw; i++) {
		acc = (acc << 8) | raw[i];
		bits += 8;
		while (bits >= 5) {
			out[o++] = ids_alphabet[(acc >> (bits - 5)) & 31];
			bits -= 5;
		}
	}
	out[o++] = ids_alphabet[(acc << (5 - bits)) & 31];
	out[o] = '\0';
}

/* Decodes the first 10 characters (50 bits: the time, 2 random bits). */
int64_t
ids_time_ms(const char *id)
{
	const char *c;
	uint64_t v = 0;
	size_t i;

	if (id == NULL || !ids_valid(id, strlen(id)))
		return -1;
	for (i = 0; i < 10; i++) {
		c = strchr(ids_alphabet, id[i]);
		v = (v << 5) | (uint64_t)(c - ids_alphabet);
	}
	return (int64_t)(v >> 2);
}

/* Checks length and alphabet. */
int
ids_valid(const char *s, size_t len)
{
	size_t i;

	if (len != IDS_LEN)
		return 0;
	for (i = 0; i < len; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'v')))
			return 0;
	}
	return 1;
}
