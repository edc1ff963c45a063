/* Field-by-field little-endian (de)serialisation of the fixed-size on-disk structures. */
#include "format.h"

#include <string.h>

#include "endian.h"
#include "meta.h"

_Static_assert(SQK_SUPER_SIZE == 96, "superblock is 96 bytes");
_Static_assert(SQK_INODE_HEADER_SIZE == 16, "inode header is 16 bytes");
_Static_assert(SQK_DIR_HEADER_SIZE == 12, "directory header is 12 bytes");
_Static_assert(SQK_DIR_ENTRY_SIZE == 8, "directory entry is 8 bytes");
_Static_assert(SQK_DIR_INDEX_SIZE == 12, "directory index is 12 bytes");
_Static_assert(SQK_FRAG_ENTRY_SIZE == 16, "fragment entry is 16 bytes");
_Static_assert(SQK_XATTR_ID_SIZE == 16, "xattr id entry is 16 bytes");
_Static_assert(SQK_XATTR_HEADER_SIZE == 16, "xattr header is 16 bytes");
/* The in-memory structs hold every field; their padding-free sizes match the disk layout. */
_Static_assert(sizeof(struct sqk_super) == SQK_SUPER_SIZE, "super fields");
_Static_assert(sizeof(struct sqk_inode_header) == SQK_INODE_HEADER_SIZE, "inode header fields");
_Static_assert(sizeof(struct sqk_dir_header) == SQK_DIR_HEADER_SIZE, "dir header fields");
_Static_assert(sizeof(struct sqk_dir_entry) == SQK_DIR_ENTRY_SIZE, "dir entry fields");
_Static_assert(sizeof(struct sqk_frag_entry) == SQK_FRAG_ENTRY_SIZE, "frag entry fields");
_Static_assert(sizeof(struct sqk_xattr_id) == SQK_XATTR_ID_SIZE, "xattr id fields");

void sqk_super_encode(const struct sqk_super *s, uint8_t out[SQK_SUPER_SIZE])
{
	sqk_put_le32(out + 0, s->magic);
	sqk_put_le32(out + 4, s->inode_count);
	sqk_put_le32(out + 8, s->mkfs_time);
	sqk_put_le32(out + 12, s->block_size);
	sqk_put_le32(out + 16, s->fragment_count);
	sqk_put_le16(out + 20, s->compressor);
	sqk_put_le16(out + 22, s->block_log);
	sqk_put_le16(out + 24, s->flags);
	sqk_put_le16(out + 26, s->id_count);
	sqk_put_le16(out + 28, s->version_major);
	sqk_put_le16(out + 30, s->version_minor);
	sqk_put_le64(out + 32, s->root_inode);
	sqk_put_le64(out + 40, s->bytes_used);
	sqk_put_le64(out + 48, s->id_table_start);
	sqk_put_le64(out + 56, s->xattr_id_table_start);
	sqk_put_le64(out + 64, s->inode_table_start);
	sqk_put_le64(out + 72, s->directory_table_start);
	sqk_put_le64(out + 80, s->fragment_table_start);
	sqk_put_le64(out + 88, s->export_table_start);
}

void sqk_super_decode(const uint8_t in[SQK_SUPER_SIZE], struct sqk_super *s)
{
	s->magic = sqk_get_le32(in + 0);
	s->inode_count = sqk_get_le32(in + 4);
	s->mkfs_time = sqk_get_le32(in + 8);
	s->block_size = sqk_get_le32(in + 12);
	s->fragment_count = sqk_get_le32(in + 16);
	s->compressor = sqk_get_le16(in + 20);
	s->block_log = sqk_get_le16(in + 22);
	s->flags = sqk_get_le16(in + 24);
	s->id_count = sqk_get_le16(in + 26);
	s->version_major = sqk_get_le16(in + 28);
	s->version_minor = sqk_get_le16(in + 30);
	s->root_inode = sqk_get_le64(in + 32);
	s->bytes_used = sqk_get_le64(in + 40);
	s->id_table_start = sqk_get_le64(in + 48);
	s->xattr_id_table_start = sqk_get_le64(in + 56);
	s->inode_table_start = sqk_get_le64(in + 64);
	s->directory_table_start = sqk_get_le64(in + 72);
	s->fragment_table_start = sqk_get_le64(in + 80);
	s->export_table_start = sqk_get_le64(in + 88);
}

void sqk_inode_header_encode(const struct sqk_inode_header *h, uint8_t *out)
{
	sqk_put_le16(out + 0, h->type);
	sqk_put_le16(out + 2, h->mode);
	sqk_put_le16(out + 4, h->uid_idx);
	sqk_put_le16(out + 6, h->gid_idx);
	sqk_put_le32(out + 8, h->mtime);
	sqk_put_le32(out + 12, h->inode_number);
}

void sqk_inode_header_decode(const uint8_t *in, struct sqk_inode_header *h)
{
	h->type = sqk_get_le16(in + 0);
	h->mode = sqk_get_le16(in + 2);
	h->uid_idx = sqk_get_le16(in + 4);
	h->gid_idx = sqk_get_le16(in + 6);
	h->mtime = sqk_get_le32(in + 8);
	h->inode_number = sqk_get_le32(in + 12);
}

void sqk_dir_header_encode(const struct sqk_dir_header *h, uint8_t *out)
{
	sqk_put_le32(out + 0, h->count);
	sqk_put_le32(out + 4, h->start_block);
	sqk_put_le32(out + 8, h->inode_number);
}

void sqk_dir_header_decode(const uint8_t *in, struct sqk_dir_header *h)
{
	h->count = sqk_get_le32(in + 0);
	h->start_block = sqk_get_le32(in + 4);
	h->inode_number = sqk_get_le32(in + 8);
}

void sqk_dir_entry_encode(const struct sqk_dir_entry *e, uint8_t *out)
{
	sqk_put_le16(out + 0, e->offset);
	sqk_put_le16(out + 2, (uint16_t)e->inode_delta);
	sqk_put_le16(out + 4, e->type);
	sqk_put_le16(out + 6, e->name_size);
}

void sqk_dir_entry_decode(const uint8_t *in, struct sqk_dir_entry *e)
{
	e->offset = sqk_get_le16(in + 0);
	e->inode_delta = (int16_t)sqk_get_le16(in + 2);
	e->type = sqk_get_le16(in + 4);
	e->name_size = sqk_get_le16(in + 6);
}

void sqk_dir_index_encode(const struct sqk_dir_index *e, uint8_t *out)
{
	sqk_put_le32(out + 0, e->index);
	sqk_put_le32(out + 4, e->start_block);
	sqk_put_le32(out + 8, e->name_size);
}

void sqk_dir_index_decode(const uint8_t *in, struct sqk_dir_index *e)
{
	e->index = sqk_get_le32(in + 0);
	e->start_block = sqk_get_le32(in + 4);
	e->name_size = sqk_get_le32(in + 8);
}

void sqk_frag_entry_encode(const struct sqk_frag_entry *e, uint8_t *out)
{
	sqk_put_le64(out + 0, e->start);
	sqk_put_le32(out + 8, e->size);
	sqk_put_le32(out + 12, e->unused);
}

void sqk_frag_entry_decode(const uint8_t *in, struct sqk_frag_entry *e)
{
	e->start = sqk_get_le64(in + 0);
	e->size = sqk_get_le32(in + 8);
	e->unused = sqk_get_le32(in + 12);
}

void sqk_xattr_id_encode(const struct sqk_xattr_id *e, uint8_t *out)
{
	sqk_put_le64(out + 0, e->ref);
	sqk_put_le32(out + 8, e->count);
	sqk_put_le32(out + 12, e->size);
}

void sqk_xattr_id_decode(const uint8_t *in, struct sqk_xattr_id *e)
{
	e->ref = sqk_get_le64(in + 0);
	e->count = sqk_get_le32(in + 8);
	e->size = sqk_get_le32(in + 12);
}

void sqk_xattr_header_encode(const struct sqk_xattr_header *h, uint8_t *out)
{
	sqk_put_le64(out + 0, h->kv_start);
	sqk_put_le32(out + 8, h->count);
	sqk_put_le32(out + 12, h->unused);
}

void sqk_xattr_header_decode(const uint8_t *in, struct sqk_xattr_header *h)
{
	h->kv_start = sqk_get_le64(in + 0);
	h->count = sqk_get_le32(in + 8);
	h->unused = sqk_get_le32(in + 12);
}

int sqk_name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int r = memcmp(a, b, alen < blen ? alen : blen);

	if (r)
		return r;
	return (alen > blen) - (alen < blen);
}

const char *sqk_xattr_prefix(unsigned id)
{
	static const char *const prefixes[SQK_XATTR_NPREFIX] = { "user.", "trusted.", "security." };

	return id < SQK_XATTR_NPREFIX ? prefixes[id] : NULL;
}

uint64_t sqk_table_blocks(uint64_t count, unsigned size)
{
	return (count * size + SQK_META_SIZE - 1) / SQK_META_SIZE;
}

uint64_t sqk_table_index_bytes(uint64_t count, unsigned size)
{
	return sqk_table_blocks(count, size) * 8;
}
