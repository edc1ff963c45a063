/* SPDX-License-Identifier: BSD-2-Clause */
/* The checker's table pass: names the byte range of the superblock, the compressor options and
 * every table (for mapping corrupt ranges), and walks the metadata block headers of the inode,
 * directory and xattr key/value tables, decompressing each block and checking that every block
 * but the last holds exactly 8192 bytes. */
#include <stdlib.h>
#include <string.h>

#include "check_internal.h"
#include "common/endian.h"
#include "common/meta.h"
#include "common/format.h"

static int region(struct chk *c, uint64_t start, uint64_t end, const char *name)
{
	uint32_t l;
	int rc = chk_label(c, name, &l);

	return rc ? rc : chk_ival_add(c, start, end, l);
}

/* End of the compressor options block (or of the superblock without one). */
static uint64_t options_end(struct chk *c)
{
	const struct sqk_super *sb = sqk_image_super(c->img);
	uint8_t h[2];

	if (!(sb->flags & SQK_FLAG_COMP_OPTS) ||
	    sqk_io_read_at(c->io, c->offset + SQK_SUPER_SIZE, h, 2))
		return SQK_SUPER_SIZE;
	return SQK_SUPER_SIZE + 2 + (get_le16(h) & 0x7FFF);
}

/* The lookup tables follow the directory table back to back (validated at open). */
static int table_regions(struct chk *c)
{
	const struct sqk_super *sb = sqk_image_super(c->img);
	uint64_t at = c->img->dir_end, end;
	int rc = 0;

	if (sb->fragment_count) {
		end = sb->fragment_table_start + table_index_bytes(sb->fragment_count, 16);
		rc = region(c, at, end, "fragment table");
		at = end;
	}
	if (rc == 0 && sb->export_table_start != SQK_NONE64) {
		end = sb->export_table_start + table_index_bytes(sb->inode_count, 8);
		rc = region(c, at, end, "export table");
		at = end;
	}
	if (rc == 0) {
		end = sb->id_table_start + table_index_bytes(sb->id_count, 4);
		rc = region(c, at > end ? c->img->dir_end : at, end, "id table");
		at = end;
	}
	if (rc == 0 && sb->xattr_id_table_start != SQK_NONE64)
		rc = region(c, at, sb->bytes_used, "xattr table");
	return rc;
}

/* Walks the metadata blocks of [start, end) named what; *decoded (may be NULL) = the bytes they
 * hold up to the first bad block. */
static int walk_meta(struct chk *c, uint64_t start, uint64_t end, const char *what,
		     uint64_t *decoded)
{
	size_t len = (size_t)(end - start), used;
	uint8_t *buf = malloc(len ? len : 1), out[SQK_META_SIZE];
	struct compressor *comp = NULL;
	uint64_t p = 0;
	int rc = buf ? sqk_io_read_at(c->io, c->offset + start, buf, len) : SQK_ENOMEM;

	if (rc == 0)
		rc = compressor_create(sqk_image_comp(c->img), &comp);
	while (rc == 0 && p < len) {
		ssize_t n = meta_decode_block(comp, buf + p, len - p, out, 0, &used);
		uint64_t at = c->offset + start + p;

		if (n < 0) {
			chk_report(c, true, at, at + 2, what, "metadata block at offset %llu: %s",
				   (unsigned long long)at, sqk_strerror((int)n));
			break;
		}
		c->res->metadata_blocks++;
		if (decoded)
			*decoded += (uint64_t)n;
		if (p + used < len && n != SQK_META_SIZE)
			chk_report(c, true, at, at + used, what,
				   "metadata block at offset %llu holds %zd bytes, not 8192",
				   (unsigned long long)at, n);
		p += used;
	}
	compressor_destroy(comp);
	free(buf);
	return rc;
}

/* First u64 of the index at pos (the table's first metadata block), or fallback. */
static uint64_t first_block(struct chk *c, uint64_t pos, uint64_t fallback)
{
	uint8_t raw[8];
	uint64_t v;

	if (pos > c->file_size || sqk_io_read_at(c->io, c->offset + pos, raw, 8))
		return fallback;
	v = get_le64(raw);
	return v < pos ? v : fallback;
}

/* Table regions from the raw superblock, for mapping corrupt ranges of an image that does not
 * open (nothing here is trusted beyond naming byte ranges). */
int chk_fallback_regions(struct chk *c)
{
	uint8_t raw[SQK_SUPER_SIZE];
	struct sqk_super sb;
	uint64_t at, end, starts[3];
	static const char *const names[3] = { "fragment table", "export table", "id table" };
	int rc = region(c, 0, SQK_SUPER_SIZE, "superblock");

	if (rc || sqk_io_read_at(c->io, c->offset, raw, sizeof(raw)))
		return rc;
	super_decode(raw, &sb);
	if (sb.magic != SQK_MAGIC)
		return 0;
	starts[0] = sb.fragment_count ? sb.fragment_table_start : SQK_NONE64;
	starts[1] = sb.export_table_start;
	starts[2] = sb.id_table_start;
	at = SQK_NONE64;
	for (int i = 0; i < 3 && at == SQK_NONE64; i++)
		if (starts[i] != SQK_NONE64)
			at = first_block(c, starts[i], starts[i]);
	if (at == SQK_NONE64)
		at = sb.bytes_used;
	rc = region(c, sb.inode_table_start, sb.directory_table_start, "inode table");
	if (rc == 0)
		rc = region(c, sb.directory_table_start, at, "directory table");
	for (int i = 0; i < 3 && rc == 0; i++) {
		if (starts[i] == SQK_NONE64)
			continue;
		end = starts[i] + table_index_bytes(i == 0 ? sb.fragment_count :
					      i == 1 ? sb.inode_count : sb.id_count,
					      i == 0 ? 16 : i == 1 ? 8 : 4);
		rc = region(c, at, end, names[i]);
		at = end;
	}
	if (rc == 0 && sb.xattr_id_table_start != SQK_NONE64)
		rc = region(c, at, sb.bytes_used, "xattr table");
	return rc;
}

int chk_tables(struct chk *c)
{
	const struct sqk_super *sb = sqk_image_super(c->img);
	uint64_t opt = options_end(c);
	int rc = region(c, 0, SQK_SUPER_SIZE, "superblock");

	if (rc == 0 && opt > SQK_SUPER_SIZE)
		rc = region(c, SQK_SUPER_SIZE, opt, "compressor options");
	if (rc == 0)
		rc = region(c, sb->inode_table_start, sb->directory_table_start, "inode table");
	if (rc == 0)
		rc = region(c, sb->directory_table_start, c->img->dir_end, "directory table");
	if (rc == 0)
		rc = table_regions(c);
	if (rc == 0)
		rc = region(c, sb->bytes_used, (sb->bytes_used + SQK_PAD - 1) / SQK_PAD * SQK_PAD,
			    "padding");
	c->data_start = opt;
	c->data_end = sb->inode_table_start;
	if (rc == 0)
		rc = walk_meta(c, sb->inode_table_start, sb->directory_table_start, "inode table",
			       NULL);
	if (rc == 0)
		rc = walk_meta(c, sb->directory_table_start, c->img->dir_end, "directory table",
			       NULL);
	/* Its size bounds every xattr value (checked before a value is allocated). */
	if (rc == 0 && sb->xattr_id_table_start != SQK_NONE64)
		rc = walk_meta(c, c->img->xattr_kv_start, c->img->xattr_kv_end, "xattr table",
			       &c->xattr_bytes);
	return rc;
}
