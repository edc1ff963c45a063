/* SPDX-License-Identifier: BSD-2-Clause */
/* Number parsing for every command-line number of squashkit (one rule everywhere): decimal
 * digits only (no sign, no base prefix, no spaces: "08" is eight, "-1" and "0x10" are errors),
 * sizes with an optional K, M or G suffix (powers of 1024), a bound checked without overflow. */
#ifndef SQK_PARSE_H
#define SQK_PARSE_H

#include <stdint.h>

/* Parses s (borrowed) as a decimal number <= max into *out. 0 or SQK_EINVAL. */
int parse_u64(const char *s, uint64_t max, uint64_t *out);

/* Parses s (borrowed) as a size: decimal, optional K/M/G suffix, result <= max. 0 or
 * SQK_EINVAL. */
int parse_bytes(const char *s, uint64_t max, uint64_t *out);

/* Parses s (borrowed) as an octal permission mode, 0..07777 (no sign). 0 or SQK_EINVAL. */
int parse_mode(const char *s, uint32_t *out);

#endif
