/* SPDX-License-Identifier: BSD-2-Clause */
/* The prefetch hint: where an image's working set lies (the byte ranges a start reads: the
 * files `sqk mkimage --order` or `-sort` laid out first, and the metadata), for a reader that
 * fetches them in parallel when it opens a remote image. Invisible to the kernel and to other
 * readers: it sits between the padded SquashFS image and the integrity digests, inside the
 * bytes those digests cover (common/integrity.h), so it is as authenticated as the image.
 *
 * Layout (all integers little-endian):
 *   [round_up(bytes_used, 4096), + len)  the hint block, len a multiple of 4096, at most 64 KiB;
 *                                        its end is the integrity trailer's `covered`
 *   block + 0           nranges x (u64 start, u64 length): ascending, non-overlapping, non-empty,
 *                       each inside [0, bytes_used)
 *   ...                 zero
 *   block + len - 32    u32 nranges, u32 version (1), u64 len, u64 zero, u8[8] magic "SQKHINT1"
 */
#ifndef SQK_HINT_H
#define SQK_HINT_H

#include "sqk/types.h"

#include <stddef.h>
#include <stdint.h>

#define SQK_HINT_MAGIC "SQKHINT1"
#define SQK_HINT_VERSION 1u
#define SQK_HINT_ALIGN 4096u

/* The block length that holds n ranges (a multiple of 4096), or 0 when n is too many. */
size_t hint_len(size_t n);

/* Checks r[0..n) against the rules above for an image of bytes_used bytes: 0 or SQK_ECORRUPT. */
int hint_check(const struct sqk_hint_range *r, size_t n, uint64_t bytes_used);

/* Encodes r[0..n) (borrowed, checked) into out, a block of len bytes (len = hint_len(n)),
 * zeros included. SQK_EINVAL for bad ranges or a wrong len. */
int hint_encode(const struct sqk_hint_range *r, size_t n, uint64_t bytes_used,
			    uint8_t *out, size_t len);

/* Reads the footer of a hint: footer is the last 32 bytes of the block. Sets *nranges and
 * *len after checking magic, version, zero field, len (a multiple of 4096, <= 64 KiB, at most
 * avail bytes) and that nranges fits in len. SQK_ENOENT when the magic is not there,
 * SQK_ECORRUPT for any other mismatch. */
int hint_footer(const uint8_t footer[SQK_HINT_FOOTER_SIZE], uint64_t avail,
			    uint32_t *nranges, size_t *len);

/* Decodes the whole block in[0..len) (borrowed) for an image of bytes_used bytes: distrusts
 * every field (footer, ranges, the zero bytes). Writes up to max ranges to out (caller's array)
 * and the count in *n; SQK_ETOOBIG when there are more than max, SQK_ENOENT without the magic,
 * SQK_ECORRUPT otherwise. */
int hint_decode(const uint8_t *in, size_t len, uint64_t bytes_used,
			    struct sqk_hint_range *out, size_t max, size_t *n);

#endif
