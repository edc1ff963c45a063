/* SPDX-License-Identifier: BSD-2-Clause */
/* A growing NUL-terminated string for the SigV4 signer (not installed). An allocation failure
 * is remembered and reported once, by sb_take. */
#ifndef SQK_SBUF_H
#define SQK_SBUF_H

#include <stdbool.h>
#include <stddef.h>

/* Start from {0}; the string is the caller's after sb_take. */
struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

/* Appends s[0..n) (borrowed). */
void sb_addn(struct sbuf *b, const char *s, size_t n);
/* Appends the string s (borrowed). */
void sb_add(struct sbuf *b, const char *s);
/* The string (caller frees), or NULL after an allocation failure. */
char *sb_take(struct sbuf *b);

#endif
