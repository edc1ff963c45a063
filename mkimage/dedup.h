/* SPDX-License-Identifier: BSD-2-Clause */
/* Duplicate files found by size and SHA-256 (dedup.c). */
#ifndef SQK_MK_DEDUP_H
#define SQK_MK_DEDUP_H

#include <stdbool.h>
#include <stdint.h>

#include "mk.h"

/* dedup.c: the index of file contents by (size, SHA-256); *orig is the earlier file with the
 * same content, or NULL after n was added. */
struct mk_dedup;
int mk_dedup_create(struct mk_ctx *c, struct mk_dedup **out);
void mk_dedup_destroy(struct mk_dedup *d);
bool mk_dedup_size_seen(const struct mk_dedup *d, uint64_t size);
int mk_dedup_find(struct mk_ctx *c, const struct mk_dedup *d, uint64_t size,
		  const uint8_t *digest, const struct mk_file **orig);
int mk_dedup_find_or_add(struct mk_ctx *c, struct mk_dedup *d, const struct mk_file *f,
			 const uint8_t *digest, const struct mk_file **orig);

#endif
