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

#endif
