/* SPDX-License-Identifier: BSD-2-Clause */
/* The one array grower of squashkit: every growable array (builder, reader, FUSE, tools) grows
 * through mem_grow, which checks every size computation for overflow. */
#ifndef SQK_GROW_H
#define SQK_GROW_H

#include <stddef.h>

/* Makes the array whose pointer is at *arrp (a T **, passed as void *: any object pointer type)
 * hold at least `need` elements of `elem` bytes: nothing when *cap >= need, else realloc to the
 * larger of need and twice *cap (at least 8). On success *arrp and *cap describe the new array;
 * the elements from the old *cap on are zero when `zero` is set (uninitialised otherwise). On
 * failure (SQK_ENOMEM: out of memory, or need * elem past PTRDIFF_MAX bytes) *arrp and *cap are
 * unchanged and the old array still belongs to the caller. The caller owns the array and frees it
 * with free(). */
int mem_grow(void *arrp, size_t *cap, size_t need, size_t elem, int zero);

#endif
