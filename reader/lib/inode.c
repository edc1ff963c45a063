/* SPDX-License-Identifier: BSD-2-Clause */
/* Inode decoding: the 16-byte header and the 14 type-specific bodies, read from the inode table
 * through the metadata cache and validated as the kernel does (type, number, ids, fragment,
 * sizes, symlink length, xattr index, block list that fits in the inode table). */
#include <string.h>
#include <sys/stat.h>

#include "common/endian.h"
#include "internal.h"
#include "common/inode_codec.h"
#include "common/meta.h"
#include "common/format.h"

static const uint32_t ifmt[8] = { 0, S_IFDIR, S_IFREG, S_IFLNK, S_IFBLK, S_IFCHR, S_IFIFO,
				  S_IFSOCK };

/* Cursor at an inode reference (relative to the inode table). */
void inode_cursor(const struct sqk_image *img, uint64_t ref, struct mcur *c)
{
	c->pos = img->sb.inode_table_start + (ref >> 16);
	c->off = (uint32_t)(ref & 0xFFFF);
	c->end = img->inode_end;
}

/* The size words of a file must fit in what the inode table can decompress to. */
static int check_file(struct sqk_image *img, struct sqk_inode *o)
{
	const struct sqk_super *sb = &img->sb;
	uint64_t nblocks = o->size >> sb->block_log;
	uint64_t table = img->inode_end - sb->inode_table_start;

	if ((int64_t)o->size < 0)
		return SQK_ECORRUPT;
	if (o->frag_index != SQK_NONE32) {
		if (o->frag_index >= sb->fragment_count || o->size % sb->block_size == 0)
			return SQK_ECORRUPT;
	} else if (o->size % sb->block_size) {
		nblocks++;
	}
	if (nblocks * 4 > (table / 3 + 1) * SQK_META_SIZE)
		return SQK_ECORRUPT;
	if (o->blocks_start > sb->bytes_used)
		return SQK_ECORRUPT;
	return 0;
}

static void copy_body(const struct inode_body *b, struct sqk_inode *o)
{
	o->nlink = b->nlink;
	o->size = b->size;
	o->blocks_start = b->blocks_start;
	o->frag_index = b->frag_index;
	o->frag_offset = b->frag_offset;
	o->sparse = b->sparse;
	o->dir_block = b->dir_block;
	o->dir_offset = b->dir_offset;
	o->parent = b->parent;
	o->index_count = b->index_count;
	o->rdev = b->rdev;
	o->xattr_idx = b->xattr_idx;
}

/* A symlink's target (skipped here, located by body_ref) and an extended one's xattr index. */
static int symlink_rest(struct sqk_image *img, struct mcur *c, struct sqk_inode *o)
{
	uint8_t b[4];
	int rc;

	if (o->size > SQK_SYMLINK_MAX)
		return SQK_ECORRUPT;
	o->body_ref = ((c->pos - img->sb.inode_table_start) << 16) | c->off;
	rc = meta_read(img, c, NULL, (size_t)o->size);
	if (rc == 0 && o->type == SQK_T_LSYMLINK) {
		rc = meta_read(img, c, b, 4);
		o->xattr_idx = get_le32(b);
	}
	return rc;
}

static int decode_body(struct sqk_image *img, struct mcur *c, struct sqk_inode *o)
{
	struct inode_body body = { .frag_index = SQK_NONE32, .xattr_idx = SQK_NONE32 };
	uint16_t basic = sqk_basic_type(o->type);
	uint8_t raw[40];
	int rc = meta_read(img, c, raw, inode_body_size(o->type));

	if (rc)
		return rc;
	inode_body_decode(o->type, raw, &body);
	copy_body(&body, o);
	if (basic == SQK_T_DIR && o->dir_offset >= SQK_META_SIZE)
		rc = SQK_ECORRUPT;
	else if (basic == SQK_T_FILE)
		rc = check_file(img, o);
	else if (basic == SQK_T_SYMLINK)
		rc = symlink_rest(img, c, o);
	if (rc == 0 && basic != SQK_T_SYMLINK)
		o->body_ref = ((c->pos - img->sb.inode_table_start) << 16) | c->off;
	if (rc == 0 && o->xattr_idx != SQK_NONE32 && o->xattr_idx >= img->xattr_count)
		rc = SQK_ECORRUPT;
	return rc;
}

/* Fills the caller's *out with the inode at ref. */
int sqk_inode_get(struct sqk_image *img, uint64_t ref, struct sqk_inode *out)
{
	const struct sqk_super *sb = &img->sb;
	struct inode_header h;
	struct mcur c;
	uint8_t raw[SQK_INODE_HEADER_SIZE];
	int rc;

	memset(out, 0, sizeof(*out));
	out->xattr_idx = out->frag_index = SQK_NONE32;
	out->ref = ref;
	if ((ref & 0xFFFF) >= SQK_META_SIZE)
		return SQK_ECORRUPT;
	inode_cursor(img, ref, &c);
	rc = meta_read(img, &c, raw, sizeof(raw));
	if (rc)
		return rc;
	inode_header_decode(raw, &h);
	if (h.type < SQK_T_DIR || h.type > SQK_T_LSOCKET || h.inode_number == 0 ||
	    h.inode_number > sb->inode_count || h.uid_idx >= sb->id_count ||
	    h.gid_idx >= sb->id_count)
		rc = SQK_ECORRUPT;
	if (rc == 0) {
		out->type = h.type;
		out->ino = h.inode_number;
		out->mode = (h.mode & 07777) | ifmt[sqk_basic_type(h.type)];
		out->uid = img->ids[h.uid_idx];
		out->gid = img->ids[h.gid_idx];
		out->mtime = h.mtime;
		rc = decode_body(img, &c, out);
	}
	if (rc)
		img_logf(img, "bad inode at table offset %llu+%u: %s",
			 (unsigned long long)(ref >> 16), (unsigned)(ref & 0xFFFF),
			 sqk_strerror(rc));
	return rc;
}

/* Fills the caller's *out with the root directory. */
int sqk_image_root(struct sqk_image *img, struct sqk_inode *out)
{
	int rc = sqk_inode_get(img, img->sb.root_inode, out);

	if (rc == 0 && sqk_basic_type(out->type) != SQK_T_DIR)
		return SQK_ECORRUPT;
	return rc;
}
