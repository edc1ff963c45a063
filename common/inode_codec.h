/* SPDX-License-Identifier: BSD-2-Clause */
/* The one encoding of inode bodies (the bytes after the 16-byte header, SQUASHFS-FORMAT §7) for
 * all 14 types: the builder encodes with it, the reader and the checker decode with it. The
 * variable parts (a file's size words, a symlink's target, a directory's index) follow the fixed
 * body and are handled by the caller; an extended symlink's xattr index follows its target. */
#ifndef SQK_INODE_CODEC_H
#define SQK_INODE_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* The fixed body of any type, decoded. Fields a type does not store are left untouched by
 * decode and ignored by encode. Basic files have no nlink (1) and no xattr. */
struct inode_body {
	uint32_t nlink;
	uint64_t size;          /* file bytes; directory listing bytes + 3; symlink target length */
	uint64_t blocks_start;  /* files */
	uint32_t frag_index;    /* files */
	uint32_t frag_offset;
	uint64_t sparse;        /* extended files */
	uint32_t dir_block;     /* directories */
	uint16_t dir_offset;
	uint32_t parent;
	uint16_t index_count;   /* extended directories */
	uint32_t rdev;          /* devices */
	uint32_t xattr_idx;     /* extended types (symlinks: the 4 bytes after the target) */
};

/* Bytes of the fixed body of type (1..14) before any variable part; 0 for a bad type. */
size_t inode_body_size(uint16_t type);

/* Encodes b as type's fixed body into out (inode_body_size(type) bytes). */
void inode_body_encode(uint16_t type, const struct inode_body *b, uint8_t *out);

/* Decodes type's fixed body from in (inode_body_size(type) bytes) into *b. */
void inode_body_decode(uint16_t type, const uint8_t *in, struct inode_body *b);

#endif
