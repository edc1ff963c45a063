/* SPDX-License-Identifier: BSD-2-Clause */
/* Table validation at open, back to front as the kernel does it (xattr, id, export, fragment,
 * then directory/inode ordering), and loading of the id and fragment tables. Every count is
 * checked against the bytes the image really has before anything is allocated for it. */
#include <stdlib.h>
#include <string.h>

#include "common/endian.h"
#include "internal.h"
#include "common/meta.h"
#include "common/format.h"

#define SQK_MIN_INODE_SIZE 20u /* header + nlink (fifo, socket) */

/* Reads nblocks u64 positions at pos and checks them: strictly increasing, gaps ≤ 8194, the
 * last one below table_end and within 8194 of it. Caller owns *out. */
static int read_index(struct sqk_image *img, const char *what, uint64_t pos, uint64_t nblocks,
		      uint64_t table_end, uint64_t **out)
{
	uint64_t *idx;
	int rc;

	*out = NULL;
	if (nblocks == 0 || nblocks > img->sb.bytes_used / 8)
		return SQK_ECORRUPT;
	idx = malloc(nblocks * 8);
	if (!idx)
		return SQK_ENOMEM;
	rc = img_read(img, pos, idx, nblocks * 8);
	for (uint64_t i = 0; rc == 0 && i < nblocks; i++) {
		uint64_t a = get_le64(&idx[i]);
		uint64_t b = i + 1 < nblocks ? get_le64(&idx[i + 1]) : table_end;

		idx[i] = a;
		if (a >= b || b - a > SQK_META_SIZE + 2) {
			img_logf(img, "%s table index entry %llu at offset %llu is out of order",
				 what, (unsigned long long)i, (unsigned long long)(pos + 8 * i));
			rc = SQK_ECORRUPT;
		}
	}
	if (rc) {
		free(idx);
		return rc == SQK_EBOUNDS ? SQK_ECORRUPT : rc;
	}
	*out = idx;
	return 0;
}

/* Whether the index of nblocks at start ends exactly at next. */
static bool index_ends_at(uint64_t start, uint64_t nblocks, uint64_t next)
{
	return start < next && (next - start) / 8 == nblocks && (next - start) % 8 == 0;
}

/* Reads a whole lookup table of count entries of size bytes through its index. Caller owns
 * *out. The allocation is grown as blocks decode (at most doubled), never sized from the count
 * up front. */
static int read_lookup(struct sqk_image *img, const uint64_t *idx, uint64_t nblocks,
		       uint64_t end, uint64_t count, unsigned size, void **out)
{
	uint64_t total = count * size, done = 0, cap = 0;
	uint8_t *buf = NULL;
	int rc = 0;

	for (uint64_t i = 0; i < nblocks && rc == 0; i++) {
		uint64_t want = total - done < SQK_META_SIZE ? total - done : SQK_META_SIZE;
		struct mcur c = { .pos = idx[i], .off = 0,
				      .end = i + 1 < nblocks ? idx[i + 1] : end };

		/* Doubling (up to total): growing by a block per step copies quadratically. Not
		 * mem_grow, which would double past total: the table ends exactly total bytes. */
		if (done + want > cap) {
			void *n;

			cap = done + want > total / 2 ? total : 2 * (done + want);
			n = realloc(buf, cap);
			if (!n) {
				rc = SQK_ENOMEM;
				break;
			}
			buf = n;
		}
		rc = meta_read(img, &c, buf + done, want);
		if (rc == 0 && c.off != want)
			rc = SQK_ECORRUPT;
		done += want;
	}
	if (rc) {
		free(buf);
		return rc;
	}
	*out = buf;
	return 0;
}

static int check_xattr(struct sqk_image *img, uint64_t *next)
{
	struct sqk_super *sb = &img->sb;
	struct xattr_header h;
	uint8_t raw[SQK_XATTR_HEADER_SIZE];
	uint64_t nb, start = sb->xattr_id_table_start;
	int rc;

	if (start == SQK_NONE64)
		return 0;
	if (start > sb->bytes_used || sb->bytes_used - start < SQK_XATTR_HEADER_SIZE)
		return SQK_ECORRUPT;
	rc = img_read(img, start, raw, sizeof(raw));
	if (rc)
		return rc;
	xattr_header_decode(raw, &h);
	nb = table_blocks(h.count, SQK_XATTR_ID_SIZE);
	if (h.count == 0 || !index_ends_at(start + SQK_XATTR_HEADER_SIZE, nb, sb->bytes_used))
		return SQK_ECORRUPT;
	rc = read_index(img, "xattr id", start + SQK_XATTR_HEADER_SIZE, nb, start,
			&img->xattr_index);
	if (rc)
		return rc;
	if (h.kv_start >= img->xattr_index[0])
		return SQK_ECORRUPT;
	img->xattr_count = h.count;
	img->xattr_kv_start = h.kv_start;
	img->xattr_kv_end = img->xattr_index[0];
	img->xattr_ids_end = start;
	*next = h.kv_start;
	return 0;
}

static int check_ids(struct sqk_image *img, uint64_t *next)
{
	struct sqk_super *sb = &img->sb;
	uint64_t nb = table_blocks(sb->id_count, 4), *idx;
	void *ids;
	int rc;

	if (sb->id_count == 0 || !index_ends_at(sb->id_table_start, nb, *next))
		return SQK_ECORRUPT;
	rc = read_index(img, "id", sb->id_table_start, nb, sb->id_table_start, &idx);
	if (rc)
		return rc;
	rc = read_lookup(img, idx, nb, sb->id_table_start, sb->id_count, 4, &ids);
	*next = idx[0];
	free(idx);
	if (rc)
		return rc;
	img->ids = ids;
	for (uint32_t i = 0; i < sb->id_count; i++)
		img->ids[i] = get_le32(&img->ids[i]);
	return 0;
}

static int check_export(struct sqk_image *img, uint64_t *next)
{
	struct sqk_super *sb = &img->sb;
	uint64_t nb = table_blocks(sb->inode_count, 8), *idx;
	int rc;

	if (sb->export_table_start == SQK_NONE64)
		return 0;
	if (sb->inode_count == 0 || !index_ends_at(sb->export_table_start, nb, *next))
		return SQK_ECORRUPT;
	rc = read_index(img, "export", sb->export_table_start, nb, sb->export_table_start, &idx);
	if (rc)
		return rc;
	*next = idx[0];
	free(idx);
	return 0;
}

static int check_frags(struct sqk_image *img, uint64_t *next)
{
	struct sqk_super *sb = &img->sb;
	uint64_t nb = table_blocks(sb->fragment_count, SQK_FRAG_ENTRY_SIZE), *idx;
	uint8_t *raw;
	int rc;

	if (sb->fragment_count == 0)
		return 0;
	if (sb->fragment_table_start >= *next || (*next - sb->fragment_table_start) / 8 < nb)
		return SQK_ECORRUPT;
	rc = read_index(img, "fragment", sb->fragment_table_start, nb, sb->fragment_table_start,
			&idx);
	if (rc)
		return rc;
	rc = read_lookup(img, idx, nb, sb->fragment_table_start, sb->fragment_count,
			 SQK_FRAG_ENTRY_SIZE, (void **)&raw);
	*next = idx[0];
	free(idx);
	if (rc)
		return rc;
	img->frags = (struct frag_entry *)calloc(sb->fragment_count, sizeof(*img->frags));
	if (!img->frags) {
		free(raw);
		return SQK_ENOMEM;
	}
	for (uint32_t i = 0; i < sb->fragment_count; i++)
		frag_entry_decode(raw + (size_t)i * SQK_FRAG_ENTRY_SIZE, &img->frags[i]);
	free(raw);
	return 0;
}

/* Validates the table layout back to front and loads the id and fragment tables. */
/* The number of failed chunk checks kept so far (verified reads). */
static unsigned mismatches(struct sqk_image *img)
{
	unsigned n;

	pthread_mutex_lock(&img->bad_mu);
	n = img->nbad;
	pthread_mutex_unlock(&img->bad_mu);
	return n;
}

int load_tables(struct sqk_image *img)
{
	struct sqk_super *sb = &img->sb;
	uint64_t next = sb->bytes_used;
	unsigned bad = mismatches(img);
	int rc = check_xattr(img, &next);

	if (rc == 0)
		rc = check_ids(img, &next);
	if (rc == 0)
		rc = check_export(img, &next);
	if (rc == 0)
		rc = check_frags(img, &next);
	if (rc == 0 && (sb->directory_table_start > next ||
			sb->inode_table_start >= sb->directory_table_start))
		rc = SQK_ECORRUPT;
	/* Each metadata block (3 bytes at least) holds at most 8192 / 20 inodes: callers size
	 * per-inode arrays from inode_count, so it must be what the inode table can hold. */
	if (rc == 0 && sb->inode_count > ((sb->directory_table_start - sb->inode_table_start) / 3 +
					  1) * (SQK_META_SIZE / SQK_MIN_INODE_SIZE))
		rc = SQK_ECORRUPT;
	if (rc) {
		/* a chunk that failed its checksum is already named: the layout is not to blame */
		if (mismatches(img) == bad)
			img_logf(img, "bad table layout: %s", sqk_strerror(rc));
		return rc == SQK_EBOUNDS ? SQK_ECORRUPT : rc;
	}
	img->inode_end = sb->directory_table_start;
	img->dir_end = next;
	return 0;
}
