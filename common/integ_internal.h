/* SPDX-License-Identifier: BSD-2-Clause */
/* What the integrity files share (not installed): the trailer's layout and size checks, the
 * root digest, and the fast checksum block's encoder. integ_trailer.c is the trailer codec,
 * integ_writer.c the builder's side, integ_reader.c the readers', integ_fast.c the fast
 * checksums. */
#ifndef SQK_INTEG_INTERNAL_H
#define SQK_INTEG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "integrity.h"

/* The trailer ends on a PAD boundary; its field offsets. */
#define PAD 4096u
#define MAGIC_LEN 8u
#define ROOT_AT 40u
#define TREE_AT 72u   /* version 2: group_chunks, zero, groups_at, ngroups */
#define TREE_END 96u

/* Chunks of chunk_size bytes that cover `covered` bytes (the last one may be short). */
static inline uint64_t nchunks_for(uint64_t covered, uint32_t chunk_size)
{
	return covered / chunk_size + (covered % chunk_size != 0);
}

/* Sizes a trailer may give: powers of two within the format's bounds. */
static inline bool chunk_size_ok(uint32_t cs)
{
	return cs >= SQK_INTEG_CHUNK_MIN && cs <= SQK_INTEG_CHUNK_MAX && (cs & (cs - 1)) == 0;
}

static inline bool group_size_ok(uint32_t g)
{
	return g >= SQK_INTEG_GROUP_MIN && g <= SQK_INTEG_GROUP_MAX && (g & (g - 1)) == 0;
}

/* Where the digests that precede the padding end (the group digests' end in version 2), 0 on
 * overflow. */
uint64_t integ_digests_end(const struct sqk_integ_trailer *t);

/* Root digest: SHA-256(trailer with the root zeroed || what it covers: the chunk digests in
 * version 1, the group digests in version 2, passed as `digests`). */
int integ_root_digest(const struct sqk_integ_trailer *t, const uint8_t *digests,
		      uint8_t out[SQK_INTEG_DIGEST_SIZE]);

/* Encodes the fast checksum block of n entries sums[0..n) into a new buffer of *len bytes
 * (caller frees *blk). */
int integ_fast_encode(const uint64_t *sums, uint64_t n, uint8_t **blk, size_t *len);

#endif
