/* SPDX-License-Identifier: BSD-2-Clause */
/* A date string read as mksquashfs reads one (-all-time, -mkfs-time): by `date -d WHEN +%s`. */
#ifndef SQK_COMMON_DATESTR_H
#define SQK_COMMON_DATESTR_H

#include <stdint.h>

/* The seconds since 1970 `date -d when +%s` prints for when (borrowed): 0 with *out (at most
 * UINT32_MAX), or -1 (date failed, refused when or printed no such number). */
int date_seconds(const char *when, uint64_t *out);

#endif
