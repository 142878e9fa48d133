/*
 * UTF-8 as jansson wants its strings: well-formed, no overlong forms, no
 * surrogates (U+D800..DFFF), no code points above U+10FFFF. Used to refuse
 * parameters before anything is stored and to make error messages that
 * quote bad input encodable.
 */
#ifndef PROFD_UTF8_H
#define PROFD_UTF8_H

#include <stddef.h>

/* Length (1..4) of the well-formed sequence at s[0..left), 0 if none. */
size_t	utf8_seq_len(const unsigned char *s, size_t left);
/* True if s[0..len) is well-formed UTF-8 without NUL bytes. */
int	utf8_valid(const char *s, size_t len);
/* Replaces in place each byte of s that starts no sequence with '?'. */
void	utf8_clean(char *s);

#endif
