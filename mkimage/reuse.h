/* SPDX-License-Identifier: BSD-2-Clause */
/* --reuse: the old image's blocks and fragments offered to the new build (reuse.c). */
#ifndef SQK_MK_REUSE_H
#define SQK_MK_REUSE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "sqk/sqk.h"

struct mk_ctx;

/* The old file matched with the file being read now. */
struct mk_reuse_file {
	bool have;
	struct sqk_inode ino;
	uint32_t *words, nblocks;
	size_t cap;            /* words allocated (mem_grow) */
	uint32_t next_k;       /* blocks before next_pos */
	uint64_t next_pos;
};

/* An old fragment block: bytes of it the new image refers to, how far they reach, and its index
 * in the new image once copied (SQK_NONE32 until then). */
struct mk_reuse_frag {
	uint64_t live;
	uint32_t end;
	uint32_t new_idx;
};

struct mk_reuse {
	struct sqk_image *img;
	struct mk_reuse_file file;
	struct mk_reuse_frag *frags;
	uint32_t nfrags;
	uint8_t *tail;         /* one block: an old tail read back */
	uint64_t blocks, bytes, frag_blocks; /* reused, for the summary (writer's, then main's) */
	char *dir_path;        /* the old directory looked up last (files come a directory at a */
	size_t dir_len, dir_cap; /* time), and its inode when dir_ok */
	struct sqk_inode dir;
	bool dir_ok;
	atomic_bool opened;    /* the open is over: the library's lines are printed, not kept */
	char why[256];         /* the library's first line while it opened OLD */
};

/* Opens the old image (verified reads). *out stays NULL (with a note on stderr) when its block
 * size or compressor differ, so nothing can be reused. Caller owns *out (mk_reuse_close). */
int mk_reuse_open(struct mk_ctx *c, const char *path, struct mk_reuse **out);
void mk_reuse_close(struct mk_reuse *r);

/* Matches the file at path (image-relative) with the old file there, if any. */
int mk_reuse_lookup(struct mk_ctx *c, struct mk_reuse *r, const char *path);

/* Whether block k (len bytes) has an old stored block of the same length: its position and word.
 * Blocks are asked for in increasing k. */
bool mk_reuse_block(struct mk_ctx *c, struct mk_reuse *r, uint32_t k, size_t len, uint64_t *pos,
		    uint32_t *word);

/* Whether the tail equals the old file's tail (read back and compared): its old fragment. */
bool mk_reuse_tail(struct mk_ctx *c, struct mk_reuse *r, const uint8_t *tail, uint32_t len,
		   uint64_t size, uint32_t *old_idx, uint32_t *old_off);

#endif
