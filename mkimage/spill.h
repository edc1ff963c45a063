/* SPDX-License-Identifier: BSD-2-Clause */
/* The spill store of byte strings (spill.c). */
#ifndef SQK_MK_SPILL_H
#define SQK_MK_SPILL_H

#include <stddef.h>
#include <stdint.h>

#include "mk.h"

/* spill.c: the spill store of byte strings (file tails for the fragment blocks, digests,
 * directory entries), in memory up to budget bytes, then in an unnamed temporary file; what
 * names it in messages. put copies data and gives its ref (the bytes put before it); get
 * copies it back. */
struct mk_spill;
int mk_spill_create(struct mk_ctx *c, const char *what, size_t budget, struct mk_spill **out);
void mk_spill_destroy(struct mk_spill *t);
int mk_spill_put(struct mk_ctx *c, struct mk_spill *t, const void *data, size_t len,
		 uint64_t *ref);
int mk_spill_get(struct mk_ctx *c, struct mk_spill *t, uint64_t ref, void *buf, size_t len);
/* Writes out the bytes buffered for the file, so that any range put can be read back (get
 * reads a range either from the file or from the write buffer, not from both). */
int mk_spill_flush(struct mk_ctx *c, struct mk_spill *t);
/* Forgets everything put so far (refs start again from 0); the memory and file are reused. */
void mk_spill_reset(struct mk_spill *t);

#endif
