/* SPDX-License-Identifier: BSD-2-Clause */
/* The plain data libsqk's API hands out, shared with the codecs that fill it: the SquashFS 4.0
 * constants, the superblock's fields, the compressor settings, the integrity trailer's summary
 * and the prefetch hint's ranges. Declarations only (no functions): installed with the public
 * headers as <sqk/types.h>, while the encoders and decoders of these structs
 * (format.h, compressor.h, integrity.h, hint.h) stay private to the tree. */
#ifndef SQK_TYPES_H
#define SQK_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- SquashFS 4.0 (format.h has the on-disk codecs) ---- */

#define SQK_MAGIC 0x73717368u
#define SQK_NONE64 UINT64_MAX
#define SQK_NONE32 UINT32_MAX
#define SQK_PAD 4096u
#define SQK_MIN_BLOCK 4096u
#define SQK_MAX_BLOCK 1048576u
#define SQK_BLOCK_RAW 0x01000000u
#define SQK_BLOCK_SIZE_MASK 0x00FFFFFFu
#define SQK_DIR_RUN_MAX 256u
#define SQK_NAME_MAX 256u
#define SQK_SYMLINK_MAX 4096u
#define SQK_XATTR_OOL_MIN 129u /* values this long or longer go out of line */

enum sqk_flag {
	SQK_FLAG_UNCOMP_INODES = 0x0001,
	SQK_FLAG_UNCOMP_DATA = 0x0002,
	SQK_FLAG_CHECK = 0x0004,
	SQK_FLAG_UNCOMP_FRAGS = 0x0008,
	SQK_FLAG_NO_FRAGS = 0x0010,
	SQK_FLAG_ALWAYS_FRAGS = 0x0020,
	SQK_FLAG_DUPLICATES = 0x0040,
	SQK_FLAG_EXPORTABLE = 0x0080,
	SQK_FLAG_UNCOMP_XATTRS = 0x0100,
	SQK_FLAG_NO_XATTRS = 0x0200,
	SQK_FLAG_COMP_OPTS = 0x0400,
	SQK_FLAG_UNCOMP_IDS = 0x0800,
};

enum sqk_inode_type {
	SQK_T_DIR = 1, SQK_T_FILE, SQK_T_SYMLINK, SQK_T_BLKDEV, SQK_T_CHRDEV, SQK_T_FIFO,
	SQK_T_SOCKET,
	SQK_T_LDIR, SQK_T_LFILE, SQK_T_LSYMLINK, SQK_T_LBLKDEV, SQK_T_LCHRDEV, SQK_T_LFIFO,
	SQK_T_LSOCKET,
};

struct sqk_super {
	uint32_t magic;
	uint32_t inode_count;
	uint32_t mkfs_time;
	uint32_t block_size;
	uint32_t fragment_count;
	uint16_t compressor;
	uint16_t block_log;
	uint16_t flags;
	uint16_t id_count;
	uint16_t version_major;
	uint16_t version_minor;
	uint64_t root_inode;
	uint64_t bytes_used;
	uint64_t id_table_start;
	uint64_t xattr_id_table_start;
	uint64_t inode_table_start;
	uint64_t directory_table_start;
	uint64_t fragment_table_start;
	uint64_t export_table_start;
};
#define SQK_SUPER_SIZE 96

/* Device numbers as SquashFS stores them (sqk_inode.rdev), and the inode types. */
static inline uint32_t sqk_rdev_encode(uint32_t major, uint32_t minor)
{
	return (minor & 0xFFu) | ((major & 0xFFFu) << 8) | ((minor & ~0xFFu) << 12);
}

static inline uint32_t sqk_rdev_major(uint32_t rdev)
{
	return (rdev >> 8) & 0xFFFu;
}

static inline uint32_t sqk_rdev_minor(uint32_t rdev)
{
	return (rdev & 0xFFu) | ((rdev >> 12) & 0xFFF00u);
}

/* Basic inode type for an extended one (and identity for basic types). */
static inline uint16_t sqk_basic_type(uint16_t type)
{
	return type > SQK_T_SOCKET ? (uint16_t)(type - 7) : type;
}

/* S_IFMT bits (Linux values) of an inode type, basic or extended; 0 for an invalid type. */
static inline uint32_t sqk_type_ifmt(uint16_t type)
{
	static const uint32_t ifmt[8] = { 0, 0040000, 0100000, 0120000, 0060000, 0020000,
					  0010000, 0140000 };
	uint16_t b = sqk_basic_type(type);
	return b >= 1 && b <= 7 ? ifmt[b] : 0;
}

/* ---- compressor settings (compressor.h has the codecs) ---- */

enum sqk_comp_id {
	SQK_COMP_GZIP = 1,
	SQK_COMP_LZMA = 2,
	SQK_COMP_LZO = 3,
	SQK_COMP_XZ = 4,
	SQK_COMP_LZ4 = 5,
	SQK_COMP_ZSTD = 6,
};

/* xz BCJ filter bits as stored in the options block. */
enum sqk_xz_bcj {
	SQK_BCJ_X86 = 0x01,
	SQK_BCJ_POWERPC = 0x02,
	SQK_BCJ_IA64 = 0x04,
	SQK_BCJ_ARM = 0x08,
	SQK_BCJ_ARMTHUMB = 0x10,
	SQK_BCJ_SPARC = 0x20,
};

/* LZO algorithms (mksquashfs -Xalgorithm). The options block stores the value minus one
 * (0 lzo1x_1 .. 4 lzo1x_999); 0 here is the default, lzo1x_999. */
enum sqk_lzo_algorithm {
	SQK_LZO_DEFAULT = 0,
	SQK_LZO1X_1 = 1,
	SQK_LZO1X_1_11 = 2,
	SQK_LZO1X_1_12 = 3,
	SQK_LZO1X_1_15 = 4,
	SQK_LZO1X_999 = 5,
};

struct sqk_comp_config {
	uint16_t id;         /* enum sqk_comp_id */
	int level;           /* 0 = the codec's SquashFS default (zstd 15, xz 6, gzip 9, lz4 normal,
			      * lzo1x_999 8; the other lzo algorithms take no level) */
	uint32_t block_size; /* data block size of the image (xz dictionary default) */
	uint32_t xz_bcj;     /* OR of enum sqk_xz_bcj; xz tries each and keeps the smallest */
	uint32_t xz_dict;    /* 0 = block_size */
	int gzip_window;     /* 0 = 15 */
	uint16_t gzip_strategies;
	bool lz4_hc;         /* lz4 high-compression mode (also set by level > 0) */
	int lzo_algorithm;   /* enum sqk_lzo_algorithm */
};

/* ---- the integrity trailer's summary (integrity.h has the format and its codecs) ---- */

#define SQK_INTEG_VERSION 1u      /* flat: the root covers the chunk digest array */
#define SQK_INTEG_VERSION_TREE 2u /* a digest tree: the root covers the group digests */
#define SQK_INTEG_DIGEST_SIZE 32u

struct sqk_integ_trailer {
	uint32_t version;
	uint32_t chunk_size;
	uint64_t covered;
	uint64_t hashes_at;
	uint64_t nchunks;
	uint8_t root[SQK_INTEG_DIGEST_SIZE];
	/* version 2 (a digest tree); all 0 in version 1 */
	uint32_t group_chunks;
	uint64_t groups_at;
	uint64_t ngroups;
};

/* ---- the prefetch hint's ranges (hint.h has the block format and its codec) ---- */

#define SQK_HINT_FOOTER_SIZE 32u
#define SQK_HINT_MAX_LEN 65536u
/* The most ranges a block of SQK_HINT_MAX_LEN holds. */
#define SQK_HINT_MAX_RANGES ((SQK_HINT_MAX_LEN - SQK_HINT_FOOTER_SIZE) / 16u)

struct sqk_hint_range {
	uint64_t start;
	uint64_t length;
};

#ifdef __cplusplus
}
#endif

#endif
