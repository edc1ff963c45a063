/* SPDX-License-Identifier: BSD-2-Clause */
/* Near-duplicate fragment pieces (similar.c). */
#ifndef SQK_MK_SIMILAR_H
#define SQK_MK_SIMILAR_H

#include <stddef.h>
#include <stdint.h>

#include "mk.h"

/* similar.c: near-duplicate fragment pieces. A sketch is the MK_SKETCH_K smallest distinct
 * hashes of a tail's 8-byte shingles; a later tail whose full sketch shares MK_SKETCH_NEAR values
 * with a piece's (among MK_SKETCH_SCAN candidates per value) is its near-duplicate. Looser
 * thresholds break up directories and pack worse than the type-and-directory order alone. */
#define MK_SKETCH_K 16
#define MK_SKETCH_NEAR 12
#define MK_SKETCH_SCAN 64     /* candidates looked at per sketch value */
#define MK_SKETCH_WINDOW 65536u /* pieces clustered together (bounds the index's memory) */
/* Shorter tails get no sketch and stay where the type-and-directory order puts them: what a
 * near-duplicate could save on them is under their length, while sketching and clustering
 * cost as much per piece as for a large one (a tree of many tiny files is all such tails). */
#define MK_SKETCH_MIN 256u
struct mk_sketch {
	uint32_t v[MK_SKETCH_K];
	uint8_t n;
};
/* Fills *s with the sketch of b[0..len); tails under 8 bytes get an empty one. */
void mk_sketch_of(const uint8_t *b, size_t len, struct mk_sketch *s);
/* Orders n pieces (sketches sk, lengths len; borrowed) for packing: perm[0..n) lists them with
 * each piece followed by the later near-duplicates that fit one block of bs bytes with it;
 * grp[k] is the position in perm of the cluster's first piece for a clustered piece at
 * position k, SQK_NONE32 for one left alone. perm and grp are the caller's (n entries). */
int mk_cluster(struct mk_ctx *c, const struct mk_sketch *sk, const uint32_t *len, size_t n,
	       uint32_t bs, uint32_t *perm, uint32_t *grp);

#endif
