/* SPDX-License-Identifier: BSD-2-Clause */
/* Inode bodies (see inode_codec.h): one table of field offsets per type, used both ways. */
#include "inode_codec.h"

#include <stdbool.h>

#include "endian.h"
#include "format.h"

size_t inode_body_size(uint16_t type)
{
	static const uint8_t size[15] = { 0, 16, 16, 8, 8, 8, 4, 4, 24, 40, 8, 12, 12, 8, 8 };

	return type < 15 ? size[type] : 0;
}

static void dir_code(bool enc, bool ext, uint8_t *p, struct inode_body *b)
{
	if (enc && ext) {
		put_le32(p, b->nlink);
		put_le32(p + 4, (uint32_t)b->size);
		put_le32(p + 8, b->dir_block);
		put_le32(p + 12, b->parent);
		put_le16(p + 16, b->index_count);
		put_le16(p + 18, b->dir_offset);
		put_le32(p + 20, b->xattr_idx);
	} else if (enc) {
		put_le32(p, b->dir_block);
		put_le32(p + 4, b->nlink);
		put_le16(p + 8, (uint16_t)b->size);
		put_le16(p + 10, b->dir_offset);
		put_le32(p + 12, b->parent);
	} else if (ext) {
		b->nlink = get_le32(p);
		b->size = get_le32(p + 4);
		b->dir_block = get_le32(p + 8);
		b->parent = get_le32(p + 12);
		b->index_count = get_le16(p + 16);
		b->dir_offset = get_le16(p + 18);
		b->xattr_idx = get_le32(p + 20);
	} else {
		b->dir_block = get_le32(p);
		b->nlink = get_le32(p + 4);
		b->size = get_le16(p + 8);
		b->dir_offset = get_le16(p + 10);
		b->parent = get_le32(p + 12);
	}
}

static void file_code(bool enc, bool ext, uint8_t *p, struct inode_body *b)
{
	if (enc && ext) {
		put_le64(p, b->blocks_start);
		put_le64(p + 8, b->size);
		put_le64(p + 16, b->sparse);
		put_le32(p + 24, b->nlink);
		put_le32(p + 28, b->frag_index);
		put_le32(p + 32, b->frag_offset);
		put_le32(p + 36, b->xattr_idx);
	} else if (enc) {
		put_le32(p, (uint32_t)b->blocks_start);
		put_le32(p + 4, b->frag_index);
		put_le32(p + 8, b->frag_offset);
		put_le32(p + 12, (uint32_t)b->size);
	} else if (ext) {
		b->blocks_start = get_le64(p);
		b->size = get_le64(p + 8);
		b->sparse = get_le64(p + 16);
		b->nlink = get_le32(p + 24);
		b->frag_index = get_le32(p + 28);
		b->frag_offset = get_le32(p + 32);
		b->xattr_idx = get_le32(p + 36);
	} else {
		b->blocks_start = get_le32(p);
		b->frag_index = get_le32(p + 4);
		b->frag_offset = get_le32(p + 8);
		b->size = get_le32(p + 12);
		b->nlink = 1;
	}
}

/* Symlinks, devices, fifos and sockets: nlink, then size (symlinks) or rdev (devices), then
 * the xattr index of extended devices and IPC (a symlink's follows its target). */
static void other_code(bool enc, uint16_t basic, bool ext, uint8_t *p, struct inode_body *b)
{
	bool second = basic == SQK_T_SYMLINK || basic == SQK_T_BLKDEV || basic == SQK_T_CHRDEV;
	uint32_t *word = basic == SQK_T_SYMLINK ? NULL : &b->rdev;
	size_t x = second ? 8 : 4;

	if (enc) {
		put_le32(p, b->nlink);
		if (second)
			put_le32(p + 4, word ? *word : (uint32_t)b->size);
		if (ext && basic != SQK_T_SYMLINK)
			put_le32(p + x, b->xattr_idx);
		return;
	}
	b->nlink = get_le32(p);
	if (second && word)
		*word = get_le32(p + 4);
	else if (second)
		b->size = get_le32(p + 4);
	if (ext && basic != SQK_T_SYMLINK)
		b->xattr_idx = get_le32(p + x);
}

static void code(bool enc, uint16_t type, uint8_t *p, struct inode_body *b)
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

void inode_body_encode(uint16_t type, const struct inode_body *b, uint8_t *out)
{
	struct inode_body copy = *b;

	code(true, type, out, &copy);
}

void inode_body_decode(uint16_t type, const uint8_t *in, struct inode_body *b)
{
	code(false, type, (uint8_t *)in, b);
}
