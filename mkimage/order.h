/* SPDX-License-Identifier: BSD-2-Clause */
/* --order and -sort: the files laid out first (order.c). */
#ifndef SQK_MK_ORDER_H
#define SQK_MK_ORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mk.h"

struct mk_entry;
struct sqk_hint_range;

/* order.c: --order FILE and -sort FILE. mk_order_load reads both lists before anything is
 * written (a malformed line is an error naming FILE and its line; listed paths the source does
 * not hold give one warning); mk_order_front reads the files laid out first (after
 * mk_data_start, before the walk); mk_order_take is asked for each file the walk gives: 1 when
 * it was taken care of (its data already written, or put aside for after the walk: negative
 * priority), 0 to read it now; mk_order_deferred reads the ones put aside (before
 * mk_data_finish). All are no-ops without the options. */
int mk_order_load(struct mk_ctx *c);
int mk_order_front(struct mk_ctx *c);
int mk_order_take(struct mk_ctx *c, const struct mk_file_ref *fr, const struct mk_entry *e);
int mk_order_deferred(struct mk_ctx *c);
/* The prefetch hint's ranges for the finished tables (sb): the superblock and the front files'
 * blocks as one range from 0, the inode and directory tables and the lookup tables when small.
 * Returns how many (0 without --order/-sort). */
#define MK_HINT_RANGES 4
size_t mk_order_hint(const struct mk_ctx *c, const struct sqk_super *sb,
		     struct sqk_hint_range *r);
/* Adds to r[0..*n) (ascending; merged with the last range when they touch) the ranges of the
 * finished tables (sb) as mk_order_hint names them: at most 2 more. Borrows everything. */
void mk_hint_tables(const struct mk_ctx *c, const struct sqk_super *sb,
		    struct sqk_hint_range *r, size_t *n);
/* Files laid out first (found in the source) and their bytes. */
size_t mk_order_count(const struct mk_ctx *c, uint64_t *bytes);
void mk_order_free(struct mk_ctx *c);
/* The line parsers (exposed for the tests). A trace line (len bytes, no '\n'; a trailing '\r'
 * dropped) is decoded in place (\xHH escapes, len updated): 0, 1 for a blank line, SQK_EINVAL
 * with *why. A sort line (NUL-terminated, no '\n') as mksquashfs reads it: PATH PRIORITY, the
 * path up to white space with backslash escaping the next byte, '#' comments; 0 with *path
 * pointing into line and *prio, 1 for a blank or comment line, SQK_EINVAL with *why. */
int mk_trace_line(char *line, size_t *len, const char **why);
int mk_sort_line(char *line, char **path, int *prio, const char **why);
/* Normalizes an image path in place (no leading '/', no empty or "." components); false when
 * it has a ".." component. */
bool mk_order_norm(char *p);

#endif
