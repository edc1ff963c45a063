/* SPDX-License-Identifier: BSD-2-Clause */
/* Small byte-string helpers shared by the reader, the builder and the tools (not installed). */
#ifndef SQK_BYTES_H
#define SQK_BYTES_H

#include <stdbool.h>
#include <stddef.h>

/* Whether p[0..len) holds only zero bytes (true for len 0). Borrows p. */
bool bytes_all_zero(const void *p, size_t len);

/* Writes the lower-case hex of in[0..n) into out: exactly 2 * n digits, no NUL. Borrows in. */
void bytes_hex(const void *in, size_t n, char *out);

/* The value of one hex digit (either case), -1 for any other character. */
int bytes_hex_digit(int ch);

/* Parses exactly 2 * n hex digits (either case) of hex (a NUL-terminated string, borrowed)
 * into out[0..n): 0, or -1 when hex is not exactly that (out then undefined). */
int bytes_from_hex(const char *hex, void *out, size_t n);

#endif
