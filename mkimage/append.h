/* SPDX-License-Identifier: BSD-2-Clause */
/* Append (append.c): an existing image's tree taken into the build as already-placed entries,
 * its data region copied byte for byte in front of the new data, the source's entries added to
 * its root (a clashing name renamed name_1, name_2... as mksquashfs does). */
#ifndef SQK_MK_APPEND_H
#define SQK_MK_APPEND_H

#include <stdbool.h>
#include <stdint.h>

#include "mk.h"

struct mk_append;
struct mk_source;

/* Opens the image opt->append (verified reads when it has integrity data) and checks that it
 * can be appended to (its tables after all its data, a compressor this build has); its
 * compressor, options and block size replace c's (recreating c->comp; a note for each setting
 * opt->append_given marks); its fragment table becomes the first entries of c->frags. Caller
 * owns *out (mk_append_close). Errors through mk_fail, naming the image and the reason. */
int mk_append_open(struct mk_ctx *c, struct mk_append **out);
void mk_append_close(struct mk_append *a);

/* Writes the old image's bytes after its superblock up to the end of its data (the compressor
 * options, every data and fragment block) at the same offsets, through mk_write (hashed as any
 * other byte); *comp_opts = whether they hold a compressor options block. */
int mk_append_copy(struct mk_ctx *c, struct mk_append *a, bool *comp_opts);

/* The source of an append: every entry of the old tree (under root_becomes when set), then
 * inner's, its root-level names renamed where they clash. Borrows inner and a; the result
 * lives in a (never destroyed by the caller). */
struct mk_source *mk_append_source(struct mk_append *a, struct mk_source *inner);

/* Whether the entry the append source gave last is one of the old image: its file content is
 * placed (mk_append_place), never read. */
bool mk_append_is_old(const struct mk_append *a);

/* Points fr->file (the old file the source gave last) at the old image's blocks and fragment,
 * checking they lie in the copied data. */
int mk_append_place(struct mk_ctx *c, struct mk_append *a, const struct mk_file_ref *fr);

/* Before a new file of size bytes is read: every old file of that size not hashed yet is read
 * (decompressed) and offered to the duplicate index (mk_data_known), so dedup spans old and
 * new without reading old files no new file could equal. */
int mk_append_dedup(struct mk_ctx *c, struct mk_append *a, uint64_t size);

/* The prefetch hint of the appended image (sb: its finished tables) in r (caller's array of
 * MK_APPEND_HINT_MAX + 2): the old image's hint ranges that lie in the copied data (they name
 * the same bytes), then the new tables as --order names them, checked (hint_check) against
 * sb->bytes_used. Returns how many; 0 when the old image had no hint (or NULL a). Borrows all. */
#define MK_APPEND_HINT_MAX 256
struct sqk_hint_range;
size_t mk_append_hint(const struct mk_ctx *c, const struct mk_append *a,
		      const struct sqk_super *sb, struct sqk_hint_range *r);

/* Entries kept from the old image and added from the source. */
void mk_append_counts(const struct mk_append *a, uint64_t *kept, uint64_t *added);

#endif
