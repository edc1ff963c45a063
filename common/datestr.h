/* SPDX-License-Identifier: BSD-2-Clause */
/* Times as text: a date string read as mksquashfs reads one (-all-time, -mkfs-time), by
 * `date -d WHEN +%s`, and a duration written for a progress line. */
#ifndef SQK_COMMON_DATESTR_H
#define SQK_COMMON_DATESTR_H

#include <stddef.h>
#include <stdint.h>

/* The seconds since 1970 `date -d when +%s` prints for when (borrowed): 0 with *out (at most
 * UINT32_MAX), or -1 (date failed, refused when or printed no such number). */
int date_seconds(const char *when, uint64_t *out);

/* Writes secs (rounded to whole seconds; negative: 0) into buf as "M:SS", or "H:MM:SS" from an
 * hour on, as the progress lines show the time left. */
void date_duration(char *buf, size_t cap, double secs);

#endif
