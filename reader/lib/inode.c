/* Inode decoding: the 16-byte header and the 14 type-specific bodies, read from the inode table
 * through the metadata cache and validated as the kernel does (type, number, ids, fragment,
 * sizes, symlink length, xattr index, block list that fits in the inode table). */
#include <string.h>
#include <sys/stat.h>

#include "common/endian.h"
#include "internal.h"
#include "common/meta.h"

static const uint32_t ifmt[8] = { 0, S_IFDIR, S_IFREG, S_IFLNK, S_IFBLK, S_IFCHR, S_IFIFO,
				  S_IFSOCK };

/* Cursor at an inode reference (relative to the inode table). */
void sqk_inode_cursor(const struct sqk_image *img, uint64_t ref, struct sqk_mcur *c)
{
	c->pos = img->sb.inode_table_start + (ref >> 16);
	c->off = (uint32_t)(ref & 0xFFFF);
	c->end = img->inode_end;
}

static int decode_dir(struct sqk_image *img, struct sqk_mcur *c, struct sqk_inode *o, bool ext)
{
	uint8_t b[24];
	int rc = sqk_meta_read(img, c, b, ext ? 24 : 16);

	if (rc)
		return rc;
	if (ext) {
		o->nlink = sqk_get_le32(b);
		o->size = sqk_get_le32(b + 4);
		o->dir_block = sqk_get_le32(b + 8);
		o->parent = sqk_get_le32(b + 12);
		o->index_count = sqk_get_le16(b + 16);
		o->dir_offset = sqk_get_le16(b + 18);
		o->xattr_idx = sqk_get_le32(b + 20);
	} else {
		o->dir_block = sqk_get_le32(b);
		o->nlink = sqk_get_le32(b + 4);
		o->size = sqk_get_le16(b + 8);
		o->dir_offset = sqk_get_le16(b + 10);
		o->parent = sqk_get_le32(b + 12);
	}
	return o->dir_offset >= SQK_META_SIZE ? SQK_ECORRUPT : 0;
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

static int decode_file(struct sqk_image *img, struct sqk_mcur *c, struct sqk_inode *o, bool ext)
{
	uint8_t b[40];
	int rc = sqk_meta_read(img, c, b, ext ? 40 : 16);

	if (rc)
		return rc;
	if (ext) {
		o->blocks_start = sqk_get_le64(b);
		o->size = sqk_get_le64(b + 8);
		o->sparse = sqk_get_le64(b + 16);
		o->nlink = sqk_get_le32(b + 24);
		o->frag_index = sqk_get_le32(b + 28);
		o->frag_offset = sqk_get_le32(b + 32);
		o->xattr_idx = sqk_get_le32(b + 36);
	} else {
		o->blocks_start = sqk_get_le32(b);
		o->frag_index = sqk_get_le32(b + 4);
		o->frag_offset = sqk_get_le32(b + 8);
		o->size = sqk_get_le32(b + 12);
		o->nlink = 1;
	}
	return check_file(img, o);
}

static int decode_other(struct sqk_image *img, struct sqk_mcur *c, struct sqk_inode *o,
			uint16_t basic, bool ext)
{
	uint8_t b[8];
	bool dev = basic == SQK_T_BLKDEV || basic == SQK_T_CHRDEV;
	size_t fixed = basic == SQK_T_SYMLINK || dev ? 8 : 4;
	int rc = sqk_meta_read(img, c, b, fixed);

	if (rc)
		return rc;
	o->nlink = sqk_get_le32(b);
	if (dev)
		o->rdev = sqk_get_le32(b + 4);
	if (basic == SQK_T_SYMLINK) {
		o->size = sqk_get_le32(b + 4);
		if (o->size > SQK_SYMLINK_MAX)
			return SQK_ECORRUPT;
		o->body_ref = ((c->pos - img->sb.inode_table_start) << 16) | c->off;
		rc = sqk_meta_read(img, c, NULL, (size_t)o->size);
	}
	if (rc == 0 && ext) {
		rc = sqk_meta_read(img, c, b, 4);
		o->xattr_idx = sqk_get_le32(b);
	}
	return rc;
}

static int decode_body(struct sqk_image *img, struct sqk_mcur *c, struct sqk_inode *o)
{
	uint16_t basic = sqk_basic_type(o->type);
	bool ext = o->type != basic;
	int rc;

	if (basic == SQK_T_DIR)
		rc = decode_dir(img, c, o, ext);
	else if (basic == SQK_T_FILE)
		rc = decode_file(img, c, o, ext);
	else
		rc = decode_other(img, c, o, basic, ext);
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
	struct sqk_inode_header h;
	struct sqk_mcur c;
	uint8_t raw[SQK_INODE_HEADER_SIZE];
	int rc;

	memset(out, 0, sizeof(*out));
	out->xattr_idx = out->frag_index = SQK_NONE32;
	out->ref = ref;
	if ((ref & 0xFFFF) >= SQK_META_SIZE)
		return SQK_ECORRUPT;
	sqk_inode_cursor(img, ref, &c);
	rc = sqk_meta_read(img, &c, raw, sizeof(raw));
	if (rc)
		return rc;
	sqk_inode_header_decode(raw, &h);
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
		sqk_logf(img, "bad inode at table offset %llu+%u: %s",
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
