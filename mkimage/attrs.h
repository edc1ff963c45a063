/* SPDX-License-Identifier: BSD-2-Clause */
/* The id table and the xattr sets (attrs.c). */
#ifndef SQK_MK_ATTRS_H
#define SQK_MK_ATTRS_H

#include <stddef.h>
#include <stdint.h>

#include "mk.h"

struct mk_xattr_kv;
struct meta_writer;

/* attrs.c: id table and xattr sets. */
int mk_ids_create(struct mk_ids **out);
void mk_ids_destroy(struct mk_ids *ids);
int mk_ids_index(struct mk_ctx *c, uint32_t id, uint16_t *idx);
uint32_t mk_ids_count(const struct mk_ids *ids);
const uint32_t *mk_ids_values(const struct mk_ids *ids);

int mk_xattrs_create(struct mk_xattrs **out);
void mk_xattrs_destroy(struct mk_xattrs *x);
/* Interns the set kv[0..n) (borrowed; names with their namespace, those SquashFS cannot store are
 * left out); *idx = SQK_NONE32 when nothing is left. origin names the file in messages. */
int mk_xattrs_intern(struct mk_ctx *c, const char *origin, const struct mk_xattr_kv *kv,
		     size_t n, uint32_t *idx);
uint32_t mk_xattrs_count(const struct mk_xattrs *x);
/* Interns the set idx (SQK_NONE32: none) with kv (borrowed) added, a pair of the same name
 * replaced: *out = the new set's index. */
int mk_xattrs_add_one(struct mk_ctx *c, const char *origin, uint32_t idx,
		      const struct mk_xattr_kv *kv, uint32_t *out);
/* Encodes the kv stream and the xattr id entries (refs relative to kv start). */
int mk_xattrs_encode(struct mk_ctx *c, struct meta_writer *kv, struct meta_writer *ids);

#endif
