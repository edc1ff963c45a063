/* SPDX-License-Identifier: BSD-2-Clause */
/* The totals of the progress line: a thread of its own walks the source directories once with
 * lstat only (fts), while the build reads them, and publishes how many regular files and bytes
 * the build will read, so that the line can say how much is left. */
#ifndef SQK_MK_COUNT_H
#define SQK_MK_COUNT_H

#include <stdbool.h>
#include <stdint.h>

#include "mk.h"

struct mk_count;

/* Starts counting c->src's directories (SQK_BUILD_DIRS; nothing for another source: *out
 * NULL) as c->opt's walk options say (-one-file-system, -max-depth, -no-hardlinks; excludes are
 * not applied: the total is that of the tree before them). 0, or SQK_ENOMEM. Caller frees *out
 * with mk_count_stop. */
int mk_count_start(struct mk_ctx *c, struct mk_count **out);
/* Whether the totals are known: then *files and *bytes are set. n may be NULL. */
bool mk_count_totals(struct mk_count *n, uint64_t *files, uint64_t *bytes);
/* Stops the walk if it still runs, waits for it and frees n; NULL-safe. */
void mk_count_stop(struct mk_count *n);

#endif
