/* SPDX-License-Identifier: BSD-2-Clause */
/* Inode bodies (see inode_codec.h): one table of field offsets per type, used both ways. */
#include "inode_codec.h"

#include <stdbool.h>

#include "endian.h"
#include "format.h"

size_t sqk_inode_body_size(uint16_t type)
{
	static const uint8_t size[15] = { 0, 16, 16, 8, 8, 8, 4, 4, 24, 40, 8, 12, 12, 8, 8 };

	return type < 15 ? size[type] : 0;
}

static void dir_code(bool enc, bool ext, uint8_t *p, struct sqk_inode_body *b)
{
	if (enc && ext) {
		sqk_put_le32(p, b->nlink);
		sqk_put_le32(p + 4, (uint32_t)b->size);
		sqk_put_le32(p + 8, b->dir_block);
		sqk_put_le32(p + 12, b->parent);
		sqk_put_le16(p + 16, b->index_count);
		sqk_put_le16(p + 18, b->dir_offset);
		sqk_put_le32(p + 20, b->xattr_idx);
	} else if (enc) {
		sqk_put_le32(p, b->dir_block);
		sqk_put_le32(p + 4, b->nlink);
		sqk_put_le16(p + 8, (uint16_t)b->size);
		sqk_put_le16(p + 10, b->dir_offset);
		sqk_put_le32(p + 12, b->parent);
	} else if (ext) {
		b->nlink = sqk_get_le32(p);
		b->size = sqk_get_le32(p + 4);
		b->dir_block = sqk_get_le32(p + 8);
		b->parent = sqk_get_le32(p + 12);
		b->index_count = sqk_get_le16(p + 16);
		b->dir_offset = sqk_get_le16(p + 18);
		b->xattr_idx = sqk_get_le32(p + 20);
	} else {
		b->dir_block = sqk_get_le32(p);
		b->nlink = sqk_get_le32(p + 4);
		b->size = sqk_get_le16(p + 8);
		b->dir_offset = sqk_get_le16(p + 10);
		b->parent = sqk_get_le32(p + 12);
	}
}

static void file_code(bool enc, bool ext, uint8_t *p, struct sqk_inode_body *b)
{
	if (enc && ext) {
		sqk_put_le64(p, b->blocks_start);
		sqk_put_le64(p + 8, b->size);
		sqk_put_le64(p + 16, b->sparse);
		sqk_put_le32(p + 24, b->nlink);
		sqk_put_le32(p + 28, b->frag_index);
		sqk_put_le32(p + 32, b->frag_offset);
		sqk_put_le32(p + 36, b->xattr_idx);
	} else if (enc) {
		sqk_put_le32(p, (uint32_t)b->blocks_start);
		sqk_put_le32(p + 4, b->frag_index);
		sqk_put_le32(p + 8, b->frag_offset);
		sqk_put_le32(p + 12, (uint32_t)b->size);
	} else if (ext) {
		b->blocks_start = sqk_get_le64(p);
		b->size = sqk_get_le64(p + 8);
		b->sparse = sqk_get_le64(p + 16);
		b->nlink = sqk_get_le32(p + 24);
		b->frag_index = sqk_get_le32(p + 28);
		b->frag_offset = sqk_get_le32(p + 32);
		b->xattr_idx = sqk_get_le32(p + 36);
	} else {
		b->blocks_start = sqk_get_le32(p);
		b->frag_index = sqk_get_le32(p + 4);
		b->frag_offset = sqk_get_le32(p + 8);
		b->size = sqk_get_le32(p + 12);
		b->nlink = 1;
	}
}

/* Symlinks, devices, fifos and sockets: nlink, then size (symlinks) or rdev (devices), then
 * the xattr index of extended devices and IPC (a symlink's follows its target). */
static void other_code(bool enc, uint16_t basic, bool ext, uint8_t *p, struct sqk_inode_body *b)
{
	bool second = basic == SQK_T_SYMLINK || basic == SQK_T_BLKDEV || basic == SQK_T_CHRDEV;
	uint32_t *word = basic == SQK_T_SYMLINK ? NULL : &b->rdev;
	size_t x = second ? 8 : 4;

	if (enc) {
		sqk_put_le32(p, b->nlink);
		if (second)
			sqk_put_le32(p + 4, word ? *word : (uint32_t)b->size);
		if (ext && basic != SQK_T_SYMLINK)
			sqk_put_le32(p + x, b->xattr_idx);
		return;
	}
	b->nlink = sqk_get_le32(p);
	if (second && word)
		*word = sqk_get_le32(p + 4);
	else if (second)
		b->size = sqk_get_le32(p + 4);
	if (ext && basic != SQK_T_SYMLINK)
		b->xattr_idx = sqk_get_le32(p + x);
}

static void code(bool enc, uint16_t type, uint8_t *p, struct sqk_inode_body *b)
{
	uint16_t basic = sqk_basic_type(type);
	bool ext = type != basic;

	if (basic == SQK_T_DIR)
		dir_code(enc, ext, p, b);
	else if (basic == SQK_T_FILE)
		file_code(enc, ext, p, b);
	else if (basic >= SQK_T_SYMLINK && basic <= SQK_T_SOCKET)
		other_code(enc, basic, ext, p, b);
}

void sqk_inode_body_encode(uint16_t type, const struct sqk_inode_body *b, uint8_t *out)
{
	struct sqk_inode_body copy = *b;

	code(true, type, out, &copy);
}

void sqk_inode_body_decode(uint16_t type, const uint8_t *in, struct sqk_inode_body *b)
{
	code(false, type, (uint8_t *)in, b);
}
