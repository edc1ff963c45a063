/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk info -s: the superblock as `unsquashfs -s` reports it (info_stat.c). */
#ifndef SQK_INFO_STAT_H
#define SQK_INFO_STAT_H

#include <stdbool.h>

#include "cmd.h"

/* Prints the report of c's open image on stdout, its time in UTC when utc, else local time.
 * Borrows c. Returns 0, or 1 after a message naming what could not be read. */
int info_stat(struct cmd *c, bool utc);

#endif
