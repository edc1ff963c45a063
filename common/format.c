/* SPDX-License-Identifier: BSD-2-Clause */
/* Field-by-field little-endian (de)serialisation of the fixed-size on-disk structures. */
#include "format.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "bytes.h"
#include "endian.h"
#include "sqk/error.h"
#include "integrity.h"
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
_Static_assert(sizeof(struct inode_header) == SQK_INODE_HEADER_SIZE, "inode header fields");
_Static_assert(sizeof(struct dir_header) == SQK_DIR_HEADER_SIZE, "dir header fields");
_Static_assert(sizeof(struct dir_entry) == SQK_DIR_ENTRY_SIZE, "dir entry fields");
_Static_assert(sizeof(struct frag_entry) == SQK_FRAG_ENTRY_SIZE, "frag entry fields");
_Static_assert(sizeof(struct xattr_id) == SQK_XATTR_ID_SIZE, "xattr id fields");

/* ---- what a file that does not open holds ---- */

#define MAGIC_BE 0x68737173u       /* "sqsh": a big-endian image (SquashFS 1.x to 3.x) */
#define MAGIC_LZMA 0x71736873u     /* "shsq": 3.x images of the squashfs-lzma patches */
#define MAGIC_LZMA_BE 0x73687371u  /* "qshs" */

struct magic {
	size_t at;
	size_t len;
	const char *bytes;
	const char *what;
};

static const struct magic magics[] = {
	{ 0, 2, "\x1f\x8b", "gzip data" },
	{ 0, 6, "\xfd" "7zXZ\0", "xz data" },
	{ 0, 4, "\x28\xb5\x2f\xfd", "zstd data" },
	{ 0, 3, "BZh", "bzip2 data" },
	{ 0, 4, "\x04\x22\x4d\x18", "lz4 data" },
	{ 0, 4, "\x89LZO", "lzop data" },
	{ 0, 4, "\x7f" "ELF", "an ELF file" },
	{ 0, 4, "PK\x03\x04", "a zip archive" },
	{ 0, 8, "!<arch>\n", "an ar archive" },
	{ 0, 5, "07070", "a cpio archive" },
	{ 0, 4, "\x45\x3d\xcd\x28", "a cramfs image" },
	{ 257, 5, "ustar", "a tar archive" },
	{ 1024, 4, "\xe2\xe1\xf5\xe0", "an EROFS image" },
	{ 1080, 2, "\x53\xef", "an ext2/3/4 file system" },
	{ 510, 2, "\x55\xaa", "a disk image (an MBR boot signature)" },
};

/* Borrows head. */
const char *magic_name(const uint8_t *head, size_t n)
{
	for (size_t i = 0; i < sizeof(magics) / sizeof(magics[0]); i++) {
		const struct magic *m = &magics[i];

		if (n >= m->at + m->len && !memcmp(head + m->at, m->bytes, m->len))
			return m->what;
	}
	return NULL;
}

/* "'name' (at offset K)" or "'name'" into out. */
static void who(char *out, size_t len, const char *name, uint64_t offset, bool quote)
{
	const char *q = quote ? "'" : "";

	if (offset)
		snprintf(out, len, "%s%s%s at offset %llu", q, name, q, (unsigned long long)offset);
	else
		snprintf(out, len, "%s%s%s", q, name, q);
}

/* A magic of some SquashFS version other than 4.0: which, in which byte order. */
static int diagnose_version(const char *w, const uint8_t *head, size_t n, char *why, size_t len)
{
	uint32_t m = get_le32(head);
	bool be = m == MAGIC_BE || m == MAGIC_LZMA_BE;
	const char *lzma = m == MAGIC_LZMA || m == MAGIC_LZMA_BE ? " (squashfs-lzma variant)" : "";
	unsigned major, minor;

	if (n < 32) {
		snprintf(why, len, "%s: SquashFS image of an unknown version%s%s, cut short at %zu "
			 "bytes: only 4.0 is supported", w, be ? ", big-endian" : "", lzma, n);
		return SQK_EVERSION;
	}
	major = be ? (unsigned)head[28] << 8 | head[29] : get_le16(head + 28);
	minor = be ? (unsigned)head[30] << 8 | head[31] : get_le16(head + 30);
	snprintf(why, len, "%s: SquashFS %u.%u image%s%s: only 4.0 is supported", w, major, minor,
		 be ? ", big-endian" : "", lzma);
	return SQK_EVERSION;
}

static int diagnose_magic(const char *name, uint64_t offset, const uint8_t *head, size_t n,
			  char *why, size_t len)
{
	const char *what = magic_name(head, n);
	char w[320];

	who(w, sizeof(w), name, offset, true);
	if (what)
		snprintf(why, len, "%s is not a SquashFS image: it is %s", w, what);
	else if (bytes_all_zero(head, n))
		snprintf(why, len, "%s is not a SquashFS image: its first %zu bytes are zero", w,
			 n);
	else
		snprintf(why, len, "%s is not a SquashFS image (no SquashFS magic)", w);
	return SQK_ENOTSQFS;
}

/* Where the image covered by the integrity trailer in tail (the file's last bytes) starts: the
 * trailer ends on a 4 KiB boundary of the image. SQK_NONE64 when tail holds no valid trailer. */
static uint64_t trailer_start(const uint8_t *tail, size_t tail_len, uint64_t size)
{
	struct sqk_integ_trailer t;
	uint64_t len;

	if (!tail || tail_len != SQK_INTEG_TRAILER_SIZE || size < tail_len ||
	    integ_trailer_decode(tail, &t) || t.covered > size)
		return SQK_NONE64;
	len = integ_end(&t);
	return len && len <= size ? size - len : SQK_NONE64;
}

/* Not a 4.0 superblock, but sqk's integrity data ends the file: the image it covers starts here
 * (a damaged superblock: 0, the callers say more) or further on (named, for --offset). */
static int diagnose_trailer(const char *name, uint64_t offset, const uint8_t *tail,
			    size_t tail_len, uint64_t size, int rc, char *why, size_t len)
{
	uint64_t at = trailer_start(tail, tail_len, size);

	if (at == 0)
		return 0;
	if (at != SQK_NONE64)
		snprintf(why, len,
			 "'%s' is not a SquashFS image at offset %llu: its integrity data "
			 "covers an image at offset %llu (--offset %llu)",
			 name, (unsigned long long)offset, (unsigned long long)(offset + at),
			 (unsigned long long)(offset + at));
	return rc;
}

/* super_diagnose without the trailer. */
static int diagnose_head(const char *name, uint64_t offset, const uint8_t *head, size_t n,
			 uint64_t size, char *why, size_t len)
{
	char w[320], q[320];
	uint32_t m = n >= 4 ? get_le32(head) : 0;
	uint64_t used;

	who(w, sizeof(w), name, offset, false);
	who(q, sizeof(q), name, offset, true);
	if (size == 0) {
		snprintf(why, len, "%s is empty: not a SquashFS image", q);
		return SQK_EEMPTY;
	}
	if (m == MAGIC_BE || m == MAGIC_LZMA || m == MAGIC_LZMA_BE)
		return diagnose_version(w, head, n, why, len);
	if (m != SQK_MAGIC)
		return diagnose_magic(name, offset, head, n, why, len);
	if (n >= 32 && (get_le16(head + 28) != 4 || get_le16(head + 30) != 0))
		return diagnose_version(w, head, n, why, len);
	if (n < SQK_SUPER_SIZE) {
		snprintf(why, len,
			 "%s: truncated image: file is %llu bytes, less than a superblock "
			 "(%u)",
			 w, (unsigned long long)size, SQK_SUPER_SIZE);
		return SQK_ETRUNCATED;
	}
	used = get_le64(head + 40);
	if (used > size) {
		snprintf(why, len,
			 "%s: truncated image: file is %llu bytes, the superblock says %llu", w,
			 (unsigned long long)size, (unsigned long long)used);
		return SQK_ETRUNCATED;
	}
	return 0;
}

/* Borrows name, head and tail; writes why. */
int super_diagnose(const char *name, uint64_t offset, const uint8_t *head, size_t n,
		       const uint8_t *tail, size_t tail_len, uint64_t size, char *why, size_t len)
{
	int rc = diagnose_head(name, offset, head, n, size, why, len);

	if (rc == SQK_ENOTSQFS || rc == SQK_EVERSION)
		rc = diagnose_trailer(name, offset, tail, tail_len, size, rc, why, len);
	return rc;
}

void super_encode(const struct sqk_super *s, uint8_t out[SQK_SUPER_SIZE])
{
	put_le32(out + 0, s->magic);
	put_le32(out + 4, s->inode_count);
	put_le32(out + 8, s->mkfs_time);
	put_le32(out + 12, s->block_size);
	put_le32(out + 16, s->fragment_count);
	put_le16(out + 20, s->compressor);
	put_le16(out + 22, s->block_log);
	put_le16(out + 24, s->flags);
	put_le16(out + 26, s->id_count);
	put_le16(out + 28, s->version_major);
	put_le16(out + 30, s->version_minor);
	put_le64(out + 32, s->root_inode);
	put_le64(out + 40, s->bytes_used);
	put_le64(out + 48, s->id_table_start);
	put_le64(out + 56, s->xattr_id_table_start);
	put_le64(out + 64, s->inode_table_start);
	put_le64(out + 72, s->directory_table_start);
	put_le64(out + 80, s->fragment_table_start);
	put_le64(out + 88, s->export_table_start);
}

void super_decode(const uint8_t in[SQK_SUPER_SIZE], struct sqk_super *s)
{
	s->magic = get_le32(in + 0);
	s->inode_count = get_le32(in + 4);
	s->mkfs_time = get_le32(in + 8);
	s->block_size = get_le32(in + 12);
	s->fragment_count = get_le32(in + 16);
	s->compressor = get_le16(in + 20);
	s->block_log = get_le16(in + 22);
	s->flags = get_le16(in + 24);
	s->id_count = get_le16(in + 26);
	s->version_major = get_le16(in + 28);
	s->version_minor = get_le16(in + 30);
	s->root_inode = get_le64(in + 32);
	s->bytes_used = get_le64(in + 40);
	s->id_table_start = get_le64(in + 48);
	s->xattr_id_table_start = get_le64(in + 56);
	s->inode_table_start = get_le64(in + 64);
	s->directory_table_start = get_le64(in + 72);
	s->fragment_table_start = get_le64(in + 80);
	s->export_table_start = get_le64(in + 88);
}

void inode_header_encode(const struct inode_header *h, uint8_t *out)
{
	put_le16(out + 0, h->type);
	put_le16(out + 2, h->mode);
	put_le16(out + 4, h->uid_idx);
	put_le16(out + 6, h->gid_idx);
	put_le32(out + 8, h->mtime);
	put_le32(out + 12, h->inode_number);
}

void inode_header_decode(const uint8_t *in, struct inode_header *h)
{
	h->type = get_le16(in + 0);
	h->mode = get_le16(in + 2);
	h->uid_idx = get_le16(in + 4);
	h->gid_idx = get_le16(in + 6);
	h->mtime = get_le32(in + 8);
	h->inode_number = get_le32(in + 12);
}

void dir_header_encode(const struct dir_header *h, uint8_t *out)
{
	put_le32(out + 0, h->count);
	put_le32(out + 4, h->start_block);
	put_le32(out + 8, h->inode_number);
}

void dir_header_decode(const uint8_t *in, struct dir_header *h)
{
	h->count = get_le32(in + 0);
	h->start_block = get_le32(in + 4);
	h->inode_number = get_le32(in + 8);
}

void dir_entry_encode(const struct dir_entry *e, uint8_t *out)
{
	put_le16(out + 0, e->offset);
	put_le16(out + 2, (uint16_t)e->inode_delta);
	put_le16(out + 4, e->type);
	put_le16(out + 6, e->name_size);
}

void dir_entry_decode(const uint8_t *in, struct dir_entry *e)
{
	e->offset = get_le16(in + 0);
	e->inode_delta = (int16_t)get_le16(in + 2);
	e->type = get_le16(in + 4);
	e->name_size = get_le16(in + 6);
}

void dir_index_encode(const struct sqk_dir_index *e, uint8_t *out)
{
	put_le32(out + 0, e->index);
	put_le32(out + 4, e->start_block);
	put_le32(out + 8, e->name_size);
}

void dir_index_decode(const uint8_t *in, struct sqk_dir_index *e)
{
	e->index = get_le32(in + 0);
	e->start_block = get_le32(in + 4);
	e->name_size = get_le32(in + 8);
}

void frag_entry_encode(const struct frag_entry *e, uint8_t *out)
{
	put_le64(out + 0, e->start);
	put_le32(out + 8, e->size);
	put_le32(out + 12, e->unused);
}

void frag_entry_decode(const uint8_t *in, struct frag_entry *e)
{
	e->start = get_le64(in + 0);
	e->size = get_le32(in + 8);
	e->unused = get_le32(in + 12);
}

void xattr_id_encode(const struct xattr_id *e, uint8_t *out)
{
	put_le64(out + 0, e->ref);
	put_le32(out + 8, e->count);
	put_le32(out + 12, e->size);
}

void xattr_id_decode(const uint8_t *in, struct xattr_id *e)
{
	e->ref = get_le64(in + 0);
	e->count = get_le32(in + 8);
	e->size = get_le32(in + 12);
}

void xattr_header_encode(const struct xattr_header *h, uint8_t *out)
{
	put_le64(out + 0, h->kv_start);
	put_le32(out + 8, h->count);
	put_le32(out + 12, h->unused);
}

void xattr_header_decode(const uint8_t *in, struct xattr_header *h)
{
	h->kv_start = get_le64(in + 0);
	h->count = get_le32(in + 8);
	h->unused = get_le32(in + 12);
}

int dir_name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int r = memcmp(a, b, alen < blen ? alen : blen);

	if (r)
		return r;
	return (alen > blen) - (alen < blen);
}

const char *xattr_prefix(unsigned id)
{
	static const char *const prefixes[SQK_XATTR_NPREFIX] = { "user.", "trusted.", "security." };

	return id < SQK_XATTR_NPREFIX ? prefixes[id] : NULL;
}

uint64_t table_blocks(uint64_t count, unsigned size)
{
	return (count * size + SQK_META_SIZE - 1) / SQK_META_SIZE;
}

uint64_t table_index_bytes(uint64_t count, unsigned size)
{
	return table_blocks(count, size) * 8;
}
